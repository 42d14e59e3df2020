"""Parity of our SAC (``memory=None``) with Stable-Baselines3's SAC on Pendulum-v1.

Both agents train in this one process, seed by seed and alternating, with rl-zoo3's
Pendulum-v1 hyperparameters (20k steps, learning rate 1e-3, everything else SB3's
defaults: buffer 1e6, batch 256 transitions, 100 random steps, one gradient step per
env step, tau 0.005, gamma 0.99, learned entropy coefficient, [256, 256] ReLU MLPs).
Ours runs the same update on windows of two rows (``burn_in=0, sequence_length=1``),
which are transitions. Each trained policy is evaluated deterministically on the
same episodes (same env, same reset seeds).

Writes one row per (agent, seed) and one summary row per agent (``seed = all``):
the mean evaluation return and the 95% bootstrap interval of the mean over all
evaluation episodes of all seeds (``scipy.stats.bootstrap``, BCa), the interval of
the mean over the per-seed means (percentile), and env steps per second of
training, per wall-clock second and per second of this process's CPU time (the
fairer measure on a shared machine; the agents also alternate which goes first). Pass: our mean lies within SB3's interval or above it, and our steps/s is
comparable or better.

    python scripts/parity_sb3_sac.py            # -> leaderboards/sac_parity_sb3.csv
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
from parity_common import Timer, run_parity

from pomdp_bench.agents.common.evaluation import evaluate_episodes
from pomdp_bench.agents.sac import SAC

ENV_ID = "Pendulum-v1"
# rl-zoo3's hyperparams/sac.yml for Pendulum-v1; the rest are SB3's defaults.
SB3_KWARGS = dict(learning_rate=1e-3, buffer_size=1_000_000, learning_starts=100, batch_size=256)
OURS_KWARGS = dict(
    burn_in=0, sequence_length=1, learning_rate=1e-3, buffer_size=1_000_000, learning_starts=100,
    batch_size=256, train_freq=1, gradient_steps=1, tau=0.005, gamma=0.99, net_arch=[256, 256],
)  # fmt: skip
COMMAND = "python scripts/parity_sb3_sac.py"


def evaluate_policy(
    act: Callable[[np.ndarray], np.ndarray], n_episodes: int, seed: int, n_copies: int = 16
) -> np.ndarray:
    """Returns of ``n_episodes`` episodes of ``ENV_ID`` under ``act`` (a memoryless,
    deterministic policy), each copy running its share, resets seeded by ``seed``."""
    return evaluate_episodes(
        lambda obs, starts: act(obs), n_episodes, seed=seed, env_id=ENV_ID, max_copies=n_copies
    )


def train_ours(seed: int, timesteps: int) -> tuple[Callable[[np.ndarray], np.ndarray], Timer]:
    model = SAC(ENV_ID, None, seed=seed, device="cpu", **OURS_KWARGS)
    with Timer() as timer:
        model.learn(timesteps)
    return (lambda obs: model.predict(obs, deterministic=True)[0]), timer


def train_sb3(seed: int, timesteps: int) -> tuple[Callable[[np.ndarray], np.ndarray], Timer]:
    from stable_baselines3 import SAC as SB3SAC

    model = SB3SAC("MlpPolicy", ENV_ID, seed=seed, device="cpu", verbose=0, **SB3_KWARGS)
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
        20_000,
        Path("leaderboards/sac_parity_sb3.csv"),
        argv,
    )


if __name__ == "__main__":
    sys.exit(main())
