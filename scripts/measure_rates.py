"""Regenerate ``--dry-run``'s measured times from the published run CSVs.

Reads ``leaderboards/*_runs.csv`` (every finished run of each published suite) and writes:

- ``agents/rates.yaml``: per agent, env family and memory kind, the median wall-clock
  speed (timesteps / wall_seconds, env steps/s), with a provenance line naming the CSVs
  and the machines;
- ``agents/published_runs.csv``: each run's suite, cell, cap, steps trained and wall
  seconds, from which ``--dry-run`` expects the share of the cap a cell trains.

Run it after republishing the leaderboards (``tests/test_estimate.py`` checks that the
files match the CSVs):

    python scripts/measure_rates.py
"""

from __future__ import annotations

import argparse
from pathlib import Path

from pomdp_bench.harness.rates import (
    PUBLISHED_RUNS_FILE,
    RATES_FILE,
    rates_document,
    read_run_csvs,
    write_published_runs,
)

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument(
        "--leaderboards",
        default=str(ROOT / "leaderboards"),
        help="the folder holding the <suite>_runs.csv files (default: the repository's leaderboards/)",
    )
    parser.add_argument(
        "--out",
        default=str(ROOT / "agents"),
        help="the folder to write rates.yaml and published_runs.csv to (default: agents/)",
    )
    args = parser.parse_args()
    paths = sorted(Path(args.leaderboards).glob("*_runs.csv"))
    if not paths:
        parser.error(f"no *_runs.csv in {args.leaderboards}")
    runs, machines = read_run_csvs(paths)
    sources = [f"leaderboards/{p.name}" for p in paths]
    out = Path(args.out)
    (out / RATES_FILE).write_text(rates_document(runs, sources, machines))
    write_published_runs(runs, out / PUBLISHED_RUNS_FILE)
    print(f"{len(runs)} runs from {len(paths)} CSVs -> {out / RATES_FILE}, {out / PUBLISHED_RUNS_FILE}")


if __name__ == "__main__":
    main()
