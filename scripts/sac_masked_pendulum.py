"""Does memory pay off for SAC? GRU against no memory on MaskedPendulum-v0.

Trains SAC with ``agents/sac.yaml``'s MaskedPendulum-v0 settings, once per seed and
memory kind (seed-major, so a partial run stays balanced), and evaluates each
policy deterministically from zero memory on the same episodes. The CSV is
rewritten after every run.

Rows: one per run (``seed`` = the seed), and one summary per memory kind
(``seed = all``): mean over seeds, the leaderboards' 95% two-level bootstrap
interval of that mean (seeds, then each seed's evaluation episodes, resampled:
``leaderboard.two_level_interval``), the interval over all evaluation episodes
pooled (BCa), the card's feedforward ceiling, ``learned`` (the two-level
interval's lower end above the midpoint between the ceiling and the optimum) and ``above_none`` (its lower end above
memory none's upper end).

    python scripts/sac_masked_pendulum.py     # -> leaderboards/sac_masked_pendulum.csv
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch
import yaml

import pomdp_bench
from pomdp_bench.agents.sac import SAC
from pomdp_bench.data import data_dir
from pomdp_bench.envs.cards import get_card
from pomdp_bench.harness.provenance import git_commit
from pomdp_bench.reporting.statistics import interval, two_level_interval

ENV_ID = "MaskedPendulum-v0"
COMMAND = "python scripts/sac_masked_pendulum.py"


def summarise(runs: pd.DataFrame, episodes: dict[str, list[np.ndarray]], ceiling: float) -> pd.DataFrame:
    rows = []
    for memory, group in runs.groupby("memory", sort=False):
        seed_means = group.mean_return.to_numpy()
        low, high = two_level_interval(episodes[memory])
        pooled_low, pooled_high = interval(np.concatenate(episodes[memory]), "BCa")
        rows.append(
            dict(
                env=ENV_ID,
                agent="sac",
                memory=memory,
                seed="all",
                timesteps=int(group.timesteps.iloc[0]),
                eval_episodes=int(group.eval_episodes.sum()),
                mean_return=seed_means.mean(),
                ci_low=low,
                ci_high=high,
                pooled_ci_low=pooled_low,
                pooled_ci_high=pooled_high,
                ff_ceiling=ceiling,
                learned=bool(low > (ceiling + get_card(ENV_ID).optimal_return) / 2),
                train_seconds=group.train_seconds.sum(),
                steps_per_second=group.timesteps.sum() / group.train_seconds.sum(),
            )
        )
    summary = pd.DataFrame(rows)
    if {"none", "gru"} <= set(summary.memory):
        none_high = summary.loc[summary.memory == "none", "ci_high"].iloc[0]
        summary["above_none"] = [
            None if m == "none" else bool(low > none_high)
            for m, low in zip(summary.memory, summary.ci_low, strict=True)
        ]
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False
    )
    parser.add_argument("--timesteps", type=int, default=20_000, help="env steps per run")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4], help="seeds to run")
    parser.add_argument("--memories", nargs="+", default=["gru", "none"], help="memory kinds to train")
    parser.add_argument("--eval-episodes", type=int, default=50, help="final evaluation episodes per run")
    parser.add_argument(
        "--out", type=Path, default=Path("leaderboards/sac_masked_pendulum.csv"), help="the CSV to write"
    )
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    hp = yaml.safe_load((data_dir("agents") / "sac.yaml").read_text())[ENV_ID]
    ceiling = get_card(ENV_ID).ff_ceiling

    runs: list[dict] = []
    episodes: dict[str, list[np.ndarray]] = {m: [] for m in args.memories}
    for seed in args.seeds:
        for memory in args.memories:
            model = SAC(ENV_ID, None if memory == "none" else memory, seed=seed, device="cpu", **hp)
            t0 = time.perf_counter()
            model.learn(args.timesteps)
            seconds = time.perf_counter() - t0
            returns = model.evaluate(args.eval_episodes)  # gru and none: the same episodes
            episodes[memory].append(returns)
            runs.append(
                dict(
                    env=ENV_ID,
                    agent="sac",
                    memory=memory,
                    seed=str(seed),
                    timesteps=model.num_timesteps,
                    eval_episodes=len(returns),
                    mean_return=returns.mean(),
                    train_seconds=seconds,
                    steps_per_second=model.num_timesteps / seconds,
                )
            )
            print(f"{memory:5s} seed {seed}: {returns.mean():8.1f} ({seconds:.0f} s)", flush=True)
            per_run = pd.DataFrame(runs)
            table = pd.concat([per_run, summarise(per_run, episodes, ceiling)], ignore_index=True)
            table["version"] = pomdp_bench.__version__
            table["commit"] = git_commit()
            table["command"] = COMMAND
            args.out.parent.mkdir(parents=True, exist_ok=True)
            table.to_csv(args.out, index=False, float_format="%.6g")
    print(table.to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
