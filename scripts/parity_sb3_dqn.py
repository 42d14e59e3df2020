"""Parity of our DQN (``memory=None``) with Stable-Baselines3's DQN on CartPole-v1.

Both agents train in this one process, seed by seed and alternating, with rl-zoo3's
CartPole-v1 hyperparameters (hyperparams/dqn.yml: 5e4 steps, learning rate 2.3e-3,
batch 64, buffer 1e5, 1000 random steps, gamma 0.99, target copied every 10 env steps,
128 gradient steps every 256 env steps, epsilon to 0.04 over the first 16%, [256, 256]
ReLU MLP; the rest SB3's defaults: Huber loss, gradient norm clipped at 10). Ours runs
the same update on sequences of two rows (``burn_in=0, sequence_length=1``), which are
transitions. Each trained policy is evaluated deterministically on the same episodes
(same env, same reset seeds).

Writes one row per (agent, seed) and one summary row per agent (``seed = all``):
the mean evaluation return and the 95% bootstrap interval of the mean over all
evaluation episodes of all seeds (``scipy.stats.bootstrap``, BCa), the interval of
the mean over the per-seed means (percentile), and env steps per second of
training, per wall-clock second and per second of this process's CPU time (the
fairer measure on a shared machine; the agents also alternate which goes first).
Pass: our mean lies within SB3's interval or above it; the speed ratio is printed.

    python scripts/parity_sb3_dqn.py            # -> leaderboards/dqn_parity_sb3.csv
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from parity_common import Timer, run_parity

from pomdp_bench.agents.common.evaluation import evaluate_episodes
from pomdp_bench.agents.dqn import DQN

ENV_ID = "CartPole-v1"
# rl-zoo3's hyperparams/dqn.yml for CartPole-v1; the rest are SB3's defaults.
ZOO = dict(
    learning_rate=2.3e-3, batch_size=64, buffer_size=100_000, learning_starts=1000, gamma=0.99,
    target_update_interval=10, train_freq=256, gradient_steps=128, exploration_fraction=0.16,
    exploration_final_eps=0.04,
)  # fmt: skip
SB3_KWARGS = dict(**ZOO, policy_kwargs=dict(net_arch=[256, 256]))
OURS_KWARGS = dict(**ZOO, burn_in=0, sequence_length=1, net_arch=[256, 256])
COMMAND = "python scripts/parity_sb3_dqn.py"


def evaluate_policy(
    act: Callable[[np.ndarray], np.ndarray], n_episodes: int, seed: int, n_copies: int = 16
) -> np.ndarray:
    """Returns of ``n_episodes`` episodes of ``ENV_ID`` under ``act`` (a memoryless,
    deterministic policy), each copy running its share, resets seeded by ``seed``."""
    env = SyncVectorEnv(
        [lambda: gym.make(ENV_ID) for _ in range(min(n_copies, n_episodes))],
        autoreset_mode=AutoresetMode.SAME_STEP,
    )
    try:
        return evaluate_episodes(
            lambda obs, starts: act(obs), n_episodes, seed=seed, env=env, max_copies=n_copies
        )
    finally:
        env.close()


def train_ours(seed: int, timesteps: int) -> tuple[Callable[[np.ndarray], np.ndarray], Timer]:
    # A factory: Gymnasium's CartPoleVectorEnv takes no autoreset_mode, so the id would fail.
    model = DQN(lambda: gym.make(ENV_ID), None, seed=seed, device="cpu", **OURS_KWARGS)
    with Timer() as timer:
        model.learn(timesteps)
    return (lambda obs: model.predict(obs, deterministic=True)[0]), timer


def train_sb3(seed: int, timesteps: int) -> tuple[Callable[[np.ndarray], np.ndarray], Timer]:
    from stable_baselines3 import DQN as SB3DQN

    model = SB3DQN("MlpPolicy", ENV_ID, seed=seed, device="cpu", verbose=0, **SB3_KWARGS)
    with Timer() as timer:
        model.learn(timesteps)
    return (lambda obs: model.predict(obs, deterministic=True)[0]), timer


def main(argv: list[str] | None = None) -> int:
    return run_parity(
        __doc__,
        ENV_ID,
        COMMAND,
        train_ours,
        train_sb3,
        evaluate_policy,
        50_000,
        Path("leaderboards/dqn_parity_sb3.csv"),
        argv,
    )


if __name__ == "__main__":
    sys.exit(main())
