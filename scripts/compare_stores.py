"""Does a suite's answer hold on another machine? Compares one suite's cells in two stores.

The same run key gives the same run only on the same CPU: torch takes other kernel paths
on other machines (AVX-512 against AVX2, Intel against AMD), so a suite run again from
an empty store elsewhere is a replication, not a copy. This prints, cell by cell, the
solved seeds, the mean final return and the *learned* verdict in both stores, and how
many verdicts agree; ``--out`` also writes them as a CSV. ``--runs-out`` lines up the
runs themselves, seed by seed in each cell (their keys differ where a kernel setting
does), and writes each pair's final return and steps: the run-for-run replication table.

    python scripts/compare_stores.py --suite horizon leaderboards/store /tmp/hzfresh/store

Side B may also be tables this script wrote before, when that store is gone:
``--b-cells OLD_CELLS.csv:b --b-runs OLD_RUNS.csv:b`` take side ``b`` of an earlier
``--out`` and ``--runs-out`` in place of a second store.
"""

from __future__ import annotations

import argparse

import pandas as pd

from pomdp_bench.harness.store import ResultStore
from pomdp_bench.reporting import leaderboard
from pomdp_bench.reporting.report import suite_tables

SHOWN = ["n_seeds", "solved_fraction", "return_mean", "return_ci_low", "return_ci_high", "learned", "machine"]


def table_side(spec: str, keys: list[str], shown: list[str]) -> pd.DataFrame:
    """``PATH.csv:SIDE``: the ``keys`` and the ``shown`` columns of side ``SIDE`` (``a`` or
    ``b``) of a table this script wrote, its suffixes dropped."""
    path, _, side = spec.rpartition(":")
    if side not in ("a", "b") or not path.endswith(".csv"):
        raise SystemExit(f"compare_stores: give a table as PATH.csv:a or PATH.csv:b, got {spec!r}")
    table = pd.read_csv(path, dtype={"env_kwargs": str})
    table["bptt_length"] = table["bptt_length"].astype("Int64")
    return table[keys + [f"{c}_{side}" for c in shown]].rename(columns={f"{c}_{side}": c for c in shown})


def compare(first: str, second: str | pd.DataFrame, suite: str) -> pd.DataFrame:
    """One row per cell present in both stores: ``SHOWN`` of each, suffixed ``_a`` and ``_b``.
    ``second`` may be a frame of cells in place of a store (:func:`table_side`)."""
    a = suite_tables(ResultStore(first), suite).cells
    b = second if isinstance(second, pd.DataFrame) else suite_tables(ResultStore(second), suite).cells
    keys = leaderboard.CELL_KEYS
    return a[keys + SHOWN].merge(b[keys + SHOWN], on=keys, suffixes=("_a", "_b"))


RUN_SHOWN = ["run_key", "status", "final_return", "timesteps", "stop_reason", "machine"]


def compare_runs(first: str, second: str | pd.DataFrame, suite: str) -> pd.DataFrame:
    """One row per (cell, seed) run in both stores: ``RUN_SHOWN`` of each, suffixed ``_a``
    and ``_b``, and ``same_run``: the two ended with the same status, final return and steps.
    ``second`` may be a frame of runs in place of a store (:func:`table_side`)."""
    keys = [*leaderboard.CELL_KEYS, "seed"]
    a = suite_tables(ResultStore(first), suite).runs
    b = second if isinstance(second, pd.DataFrame) else suite_tables(ResultStore(second), suite).runs
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
    parser.add_argument("second", nargs="?", help="results folder B (or --b-cells and --b-runs)")
    parser.add_argument("--b-cells", help="side B's cells from an earlier --out table, PATH.csv:a or :b")
    parser.add_argument("--b-runs", help="side B's runs from an earlier --runs-out table, PATH.csv:a or :b")
    parser.add_argument("--suite", required=True, help="the suite whose cells to compare")
    parser.add_argument("--out", default=None, help="CSV of the cells side by side")
    parser.add_argument("--runs-out", default=None, help="CSV of the runs side by side, seed by seed")
    args = parser.parse_args()
    if (args.second is None) == (args.b_cells is None):
        parser.error("give side B as a results folder or as --b-cells (and --b-runs), not both")
    keys = leaderboard.CELL_KEYS
    second = args.second or table_side(args.b_cells, keys, SHOWN)
    second_runs = args.second
    if second_runs is None and args.b_runs:
        second_runs = table_side(args.b_runs, [*keys, "seed"], RUN_SHOWN)
    if args.runs_out and second_runs is None:
        parser.error("--runs-out needs side B's runs: a results folder or --b-runs")
    cells = compare(args.first, second, args.suite)
    if cells.empty:
        print("no finished cell is in both")
    else:
        report_cells(cells, args.out)
    if args.runs_out:
        runs = compare_runs(args.first, second_runs, args.suite)
        print(
            f"{len(runs)} runs in both; {int(runs['same_run'].sum())} ended the same (status, return, steps)"
        )
        runs.to_csv(args.runs_out, index=False)


def report_cells(cells: pd.DataFrame, out: str | None) -> None:
    """Print how the cells' verdicts and solved seeds agree; write them to ``out``."""
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
    if out:
        cells.to_csv(out, index=False)


if __name__ == "__main__":
    main()
