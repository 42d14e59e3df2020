"""Measure the empirical feedforward ceilings of MaskedCartPole-v0 and MaskedPendulum-v0.

The ceiling on each card is the mean return of the best memoryless controller
found by the grid searches below, on 1024 episodes with seed 1 (the search
itself uses seed 0, so the reported number is not the search's maximum).
The true-state controllers show what inferring the velocities is worth.

    python scripts/measure_ceilings.py
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from pomdp_bench.envs import controllers as c
from pomdp_bench.envs.masked_cartpole import MaskedCartPoleVectorEnv
from pomdp_bench.envs.masked_pendulum import MaskedPendulumVectorEnv


def cartpole(policy, n: int, seed: int) -> np.ndarray:
    env = MaskedCartPoleVectorEnv(num_envs=n, autoreset_mode="SameStep")
    return c.run_episodes(env, policy, 1, seed)


def pendulum(policy, n: int, seed: int) -> np.ndarray:
    env = MaskedPendulumVectorEnv(num_envs=n, autoreset_mode="SameStep")
    return c.run_episodes(env, policy, 1, seed)


def summary(name: str, returns: np.ndarray) -> None:
    ci = stats.bootstrap(
        (returns,), np.mean, confidence_level=0.95, method="percentile", random_state=0
    ).confidence_interval
    print(f"{name:40s} mean {returns.mean():9.2f}  95% CI [{ci.low:.2f}, {ci.high:.2f}]  n={len(returns)}")


def main() -> None:
    gains = np.linspace(-2.0, 1.0, 31)
    scores = [cartpole(lambda o, e, g=g: c.cartpole_memoryless(o, g), 512, 0).mean() for g in gains]
    best = gains[int(np.argmax(scores))]
    print(f"MaskedCartPole: best x_gain on the search seed: {best:.2f}")
    summary("MaskedCartPole memoryless (shipped)", cartpole(lambda o, e: c.cartpole_memoryless(o), 1024, 1))
    summary(
        "MaskedCartPole true state",
        cartpole(lambda o, e: c.cartpole_true_state(e._batch.state), 1024, 1),
    )
    gains = np.linspace(-20.0, 20.0, 41)
    scores = [pendulum(lambda o, e, g=g: c.pendulum_memoryless(o, g), 256, 0).mean() for g in gains]
    best = gains[int(np.argmax(scores))]
    print(f"MaskedPendulum: best gain on the search seed: {best:.2f}")
    summary("MaskedPendulum memoryless (shipped)", pendulum(lambda o, e: c.pendulum_memoryless(o), 1024, 1))
    summary(
        "MaskedPendulum true state",
        pendulum(lambda o, e: c.pendulum_true_state(e._batch.th, e._batch.thdot), 1024, 1),
    )


if __name__ == "__main__":
    main()
