"""Publish the suites of a results store as records and weight files, once.

The published store used to be one SQLite file in git (``leaderboards/store/results.sqlite``).
This turns such a store into the published records and weight files that replaced it
(:mod:`pomdp_bench.harness.published`), e.g. a version from git history::

    git show <commit>:leaderboards/store/results.sqlite > /tmp/old/results.sqlite
    python scripts/migrate_store_to_records.py /tmp/old --to leaderboards/store

Records and weight files already there are left alone (each is written once), so it
can run in parts: ``--suite`` picks suites.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from pomdp_bench.harness.published import PublishedFolders, publish
from pomdp_bench.harness.store import ResultStore


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("source", help="the folder holding the old results.sqlite")
    parser.add_argument(
        "--to", default="leaderboards/store", help="the published index folder (with published.json)"
    )
    parser.add_argument("--suite", action="append", help="only this suite (repeatable; default: every suite)")
    args = parser.parse_args(argv)
    folders = PublishedFolders.of_store(args.to)
    if folders is None:
        parser.error(f"{Path(args.to)} holds no published.json")
    if not (Path(args.source) / "results.sqlite").is_file():
        parser.error(f"no results.sqlite in {args.source}")
    with ResultStore(args.source) as store:
        suites = args.suite or store.suites()
        summary = publish(store, suites, folders)
    print(
        f"{len(suites)} suites: {summary.records_written} records written, {summary.records_dropped} dropped, "
        f"{summary.weights_written} weight files written"
    )


if __name__ == "__main__":
    main()
