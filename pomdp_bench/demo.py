"""A short tour of the environments: ``python -m pomdp_bench.demo``.

For every registered env it prints the card's facts (memory horizon, optimal
return, feedforward ceiling), the mean return of a uniformly random policy over
256 episodes, and the vector twin's throughput at 1024 copies.
"""

from __future__ import annotations

import time

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode

from pomdp_bench.envs.cards import is_shipped, load_cards
from pomdp_bench.envs.controllers import run_episodes


def _random_policy(space: gym.Space):
    def act(obs: np.ndarray, env: gym.vector.VectorEnv) -> np.ndarray:
        return space.sample()

    return act


def main() -> None:
    header = f"{'env id':20s} {'horizon':>7s} {'optimal':>9s} {'ceiling':>9s} {'random':>9s} {'steps/s @1024':>14s}"
    print(header)
    print("-" * len(header))
    for env_id, card in sorted(load_cards().items()):
        if card.superseded_by is not None or not is_shipped(env_id):  # old ids warn; cards added at run time
            continue
        vec = gym.make_vec(
            env_id,
            num_envs=256,
            vectorization_mode="vector_entry_point",
            autoreset_mode=AutoresetMode.SAME_STEP,
        )
        vec.action_space.seed(0)
        random_return = run_episodes(vec, _random_policy(vec.action_space), 1, seed=0).mean()
        fast = gym.make_vec(env_id, num_envs=1024, vectorization_mode="vector_entry_point")
        fast.reset(seed=0)
        fast.action_space.seed(0)
        actions = [fast.action_space.sample() for _ in range(16)]
        start, steps = time.perf_counter(), 500
        for t in range(steps):
            fast.step(actions[t % 16])
        rate = 1024 * steps / (time.perf_counter() - start)
        # At the card's default kwargs; 3 significant digits, so CueRecall's 1/4 reads 0.25.
        print(
            f"{env_id:20s} {card.horizon_for(card.kwargs):7d} {card.optimal_return:9.3g} "
            f"{card.ceiling_for(card.kwargs):9.3g} {random_return:9.3g} {rate / 1e6:12.1f}M"
        )
    print(
        "\nThe full sweep: `python -m pomdp_bench.run --suite memory` (`--dry-run` first estimates its time)."
    )


if __name__ == "__main__":
    main()
