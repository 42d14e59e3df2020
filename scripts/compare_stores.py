"""Does a suite's answer hold on another machine? Compares one suite's cells in two stores.

The same run key gives the same run only on the same CPU: torch takes other kernel paths
on other machines (AVX-512 against AVX2, Intel against AMD), so a suite run again from
an empty store elsewhere is a replication, not a copy. This prints, cell by cell, the
solved seeds, the mean final return and the *learned* verdict in both stores, and how
many verdicts agree; ``--out`` also writes them as a CSV. ``--runs-out`` lines up the
runs themselves, seed by seed in each cell (their keys differ where a kernel setting
does), and writes each pair's final return and steps: the run-for-run replication table.

    python scripts/compare_stores.py --suite horizon leaderboards/store /tmp/hzfresh/store
"""

from __future__ import annotations

import argparse

import pandas as pd

from pomdp_bench.harness.store import ResultStore
from pomdp_bench.reporting import leaderboard
from pomdp_bench.reporting.report import suite_tables

SHOWN = ["n_seeds", "solved_fraction", "return_mean", "return_ci_low", "return_ci_high", "learned", "machine"]


def compare(first: str, second: str, suite: str) -> pd.DataFrame:
    """One row per cell present in both stores: ``SHOWN`` of each, suffixed ``_a`` and ``_b``."""
    a, b = (suite_tables(ResultStore(path), suite).cells for path in (first, second))
    keys = leaderboard.CELL_KEYS
    return a[keys + SHOWN].merge(b[keys + SHOWN], on=keys, suffixes=("_a", "_b"))


RUN_SHOWN = ["run_key", "status", "final_return", "timesteps", "stop_reason", "machine"]


def compare_runs(first: str, second: str, suite: str) -> pd.DataFrame:
    """One row per (cell, seed) run in both stores: ``RUN_SHOWN`` of each, suffixed ``_a``
    and ``_b``, and ``same_run``: the two ended with the same status, final return and steps."""
    keys = [*leaderboard.CELL_KEYS, "seed"]
    a, b = (suite_tables(ResultStore(path), suite).runs for path in (first, second))
    pairs = a[keys + RUN_SHOWN].merge(b[keys + RUN_SHOWN], on=keys, suffixes=("_a", "_b"))
    pairs["same_run"] = (
        (pairs["status_a"] == pairs["status_b"])
        & (pairs["final_return_a"] == pairs["final_return_b"])
        & (pairs["timesteps_a"] == pairs["timesteps_b"])
    )
    return pairs.sort_values(keys).reset_index(drop=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False
    )
    parser.add_argument("first", help="results folder A (holding results.sqlite)")
    parser.add_argument("second", help="results folder B")
    parser.add_argument("--suite", required=True, help="the suite whose cells to compare")
    parser.add_argument("--out", default=None, help="CSV of the cells side by side")
    parser.add_argument("--runs-out", default=None, help="CSV of the runs side by side, seed by seed")
    args = parser.parse_args()
    cells = compare(args.first, args.second, args.suite)
    same = cells["learned_a"] == cells["learned_b"]
    solved_a = (cells["solved_fraction_a"] * cells["n_seeds_a"]).round().astype(int)
    solved_b = (cells["solved_fraction_b"] * cells["n_seeds_b"]).round().astype(int)
    print(f"{len(cells)} cells in both; learned verdict the same in {int(same.sum())}")
    print(f"learned in A: {int(cells['learned_a'].sum())}, in B: {int(cells['learned_b'].sum())}")
    print(
        f"solved seeds equal in {int((solved_a == solved_b).sum())}; |difference| <= 1 in "
        f"{int(((solved_a - solved_b).abs() <= 1).sum())}"
    )
    columns = [*leaderboard.CELL_KEYS, "learned_a", "learned_b", "solved_fraction_a", "solved_fraction_b"]
    if (~same).any():
        print("verdicts that differ:")
        print(cells.loc[~same, columns].to_string(index=False))
    if args.out:
        cells.to_csv(args.out, index=False)
    if args.runs_out:
        runs = compare_runs(args.first, args.second, args.suite)
        print(
            f"{len(runs)} runs in both; {int(runs['same_run'].sum())} ended the same (status, return, steps)"
        )
        runs.to_csv(args.runs_out, index=False)


if __name__ == "__main__":
    main()
