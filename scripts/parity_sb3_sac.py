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

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import torch

import pomdp_bench
from pomdp_bench.agents.common.evaluation import evaluate_episodes
from pomdp_bench.agents.sac import SAC
from pomdp_bench.harness.provenance import git_commit
from pomdp_bench.harness.statistics import interval as mean_interval

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


class Timer:
    """Wall-clock and process CPU seconds of a block. On a shared machine the CPU time
    is the fairer measure: other processes stretch the wall clock, not it."""

    def __enter__(self) -> Timer:
        self._wall, self._cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self._wall
        self.cpu = time.process_time() - self._cpu


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


def row(
    agent: str,
    seed: str,
    timesteps: int,
    returns: np.ndarray,
    wall_seconds: float,
    cpu_seconds: float,
    interval: tuple[float, float] = (np.nan, np.nan),
    seed_interval: tuple[float, float] = (np.nan, np.nan),
) -> dict:
    """One CSV row: per seed (no intervals) or the summary over seeds (``seed="all"``,
    ``timesteps`` and seconds summed over the seeds)."""
    return dict(
        env=ENV_ID,
        agent=agent,
        memory="none",
        seed=seed,
        timesteps=timesteps,
        eval_episodes=len(returns),
        mean_return=returns.mean(),
        ci_low=interval[0],
        ci_high=interval[1],
        seed_ci_low=seed_interval[0],
        seed_ci_high=seed_interval[1],
        train_seconds=wall_seconds,
        steps_per_second=timesteps / wall_seconds,
        train_cpu_seconds=cpu_seconds,
        steps_per_cpu_second=timesteps / cpu_seconds,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--timesteps", type=int, default=20_000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--eval-episodes", type=int, default=50)
    parser.add_argument("--out", type=Path, default=Path("leaderboards/sac_parity_sb3.csv"))
    args = parser.parse_args(argv)
    torch.set_num_threads(1)

    rows = []
    episodes: dict[str, list[np.ndarray]] = {"pomdp_bench": [], "sb3": []}
    agents = [("pomdp_bench", train_ours), ("sb3", train_sb3)]
    for i, seed in enumerate(args.seeds):
        # Alternate which agent goes first, so a change in the machine's load falls on both.
        for agent, train in agents if i % 2 == 0 else agents[::-1]:
            act, timer = train(seed, args.timesteps)
            returns = evaluate_policy(act, args.eval_episodes, seed=10_000 + seed)
            episodes[agent].append(returns)
            rows.append(row(agent, str(seed), args.timesteps, returns, timer.wall, timer.cpu))
            print(
                f"{agent:12s} seed {seed}: mean return {returns.mean():8.1f}, "
                f"{args.timesteps / timer.wall:6.1f} steps/s, {args.timesteps / timer.cpu:6.1f} steps/CPU-s",
                flush=True,
            )

    per_run = pd.DataFrame(rows)
    for agent, runs in episodes.items():
        pooled = np.concatenate(runs)
        seed_means = np.array([r.mean() for r in runs])
        interval = mean_interval(pooled, "BCa")
        seed_interval = mean_interval(seed_means, "percentile")
        mine = per_run[per_run.agent == agent]
        wall, cpu = mine.train_seconds.sum(), mine.train_cpu_seconds.sum()
        rows.append(row(agent, "all", args.timesteps * len(runs), pooled, wall, cpu, interval, seed_interval))
    table = pd.DataFrame(rows)
    table["version"] = pomdp_bench.__version__
    table["commit"] = git_commit()
    table["command"] = COMMAND
    args.out.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out, index=False, float_format="%.4g")
    print(table.to_string(index=False))

    ours = table[(table.agent == "pomdp_bench") & (table.seed == "all")].iloc[0]
    sb3 = table[(table.agent == "sb3") & (table.seed == "all")].iloc[0]
    returns_ok = ours.mean_return >= sb3.ci_low
    print(
        f"\nour mean {ours.mean_return:.1f} vs SB3's 95% interval [{sb3.ci_low:.1f}, {sb3.ci_high:.1f}]: "
        f"{'within or above' if returns_ok else 'BELOW'}; ours / SB3 steps per second "
        f"{ours.steps_per_second / sb3.steps_per_second:.2f} (wall clock), "
        f"{ours.steps_per_cpu_second / sb3.steps_per_cpu_second:.2f} (CPU time)"
    )
    return 0 if returns_ok else 1


if __name__ == "__main__":
    sys.exit(main())
