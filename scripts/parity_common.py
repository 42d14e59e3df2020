"""What the SB3 parity scripts share: timing a training, one CSV row, and the
alternating comparison of ours against SB3's (``parity_sb3_sac.py``, ``parity_sb3_dqn.py``)."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import torch

import pomdp_bench
from pomdp_bench.harness.provenance import git_commit
from pomdp_bench.reporting.statistics import interval as mean_interval


class Timer:
    """Wall-clock and process CPU seconds of a block. On a shared machine the CPU time
    is the fairer measure: other processes stretch the wall clock, not it."""

    def __enter__(self) -> Timer:
        self._wall, self._cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self._wall
        self.cpu = time.process_time() - self._cpu


# A training function: (seed, timesteps) -> (deterministic policy, its training Timer).
Trainer = Callable[[int, int], tuple[Callable[[np.ndarray], np.ndarray], Timer]]


def row(
    env_id: str,
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
        env=env_id,
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


def run_parity(
    description: str,
    env_id: str,
    command: str,
    train_ours: Trainer,
    train_sb3: Trainer,
    evaluate_policy: Callable[[Callable[[np.ndarray], np.ndarray], int, int], np.ndarray],
    timesteps: int,
    out: Path,
    argv: list[str] | None = None,
) -> int:
    """Train ours and SB3's agent seed by seed, alternating which goes first, evaluate
    each on the same episodes, write the per-seed and summary rows to ``out`` (a CSV),
    print the comparison, and return 0 when our mean is within SB3's interval or above.

    ``train_*(seed, timesteps)`` returns a deterministic policy and the :class:`Timer` of
    its training; ``evaluate_policy(act, n_episodes, seed)`` returns episode returns.
    ``timesteps`` and ``out`` are the defaults of ``--timesteps`` and ``--out``.
    """
    parser = argparse.ArgumentParser(
        description=description, formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False
    )
    parser.add_argument("--timesteps", type=int, default=timesteps, help="env steps per run")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="seeds to run")
    parser.add_argument("--eval-episodes", type=int, default=50, help="final evaluation episodes per run")
    parser.add_argument("--out", type=Path, default=out, help="the CSV to write")
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
            rows.append(row(env_id, agent, str(seed), args.timesteps, returns, timer.wall, timer.cpu))
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
        rows.append(
            row(env_id, agent, "all", args.timesteps * len(runs), pooled, wall, cpu, interval, seed_interval)
        )
    table = pd.DataFrame(rows)
    table["version"] = pomdp_bench.__version__
    table["commit"] = git_commit()
    table["command"] = command
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
