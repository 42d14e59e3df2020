"""``python -m pomdp_bench.weights``: the published agent weights, one file per run.

::

    python -m pomdp_bench.weights status [--suite S]
    python -m pomdp_bench.weights fetch [--suite S] [--remote URL]

``--results`` names the index of published records (default ``leaderboards/store``);
its ``published.json`` says where the weight files and their manifest live. ``fetch``
gets the files missing there from a remote (a folder, any fsspec URL, or
``hf://datasets/<owner>/<name>`` with the ``[hub]`` extra), each checked against the
manifest's sha256 and size before it is written (see
:mod:`pomdp_bench.harness.weight_files`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pomdp_bench.harness import weight_files
from pomdp_bench.harness.published import PublishedFolders, published_suites, read_suite_index


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m pomdp_bench.weights``."""
    parser = argparse.ArgumentParser(
        prog="python -m pomdp_bench.weights", description=__doc__.splitlines()[0], allow_abbrev=False
    )
    parser.add_argument(
        "command", choices=("status", "fetch"), help="status: count what is here; fetch: get the rest"
    )
    parser.add_argument(
        "--results",
        default="leaderboards/store",
        help="the index of published records, a folder holding published.json (default: leaderboards/store)",
    )
    parser.add_argument("--suite", action="append", help="only the runs of this published suite (repeatable)")
    parser.add_argument(
        "--remote",
        help=f"where to fetch from: a folder, an fsspec URL or hf://datasets/<owner>/<name> "
        f"(default: ${weight_files.REMOTE_ENV}, else the weights folder's REMOTE file)",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        folders = PublishedFolders.of_store(args.results)
        if folders is None:
            parser.error(
                f"{Path(args.results)} holds no published.json: it is not the index of published records"
            )
        keys: set[str] | None = None
        if args.suite:
            keys = set()
            published = published_suites(folders.records)
            for suite in args.suite:
                if suite not in published:
                    parser.error(f"no published suite {suite!r} in {folders.records / 'suites'}")
                keys |= set(read_suite_index(folders.records, suite)["runs"])
        manifest = weight_files.read_manifest(folders.weights)
        wanted = len(manifest) if keys is None else len(keys & set(manifest))
        absent = weight_files.missing(folders.weights, keys)
        if args.command == "status":
            print(f"{wanted - len(absent)} of {wanted} published weight files are in {folders.weights}")
            return 0
        fetched, errors = weight_files.fetch(folders.weights, args.remote, keys)
    except ValueError as err:
        parser.error(str(err))
    for error in errors:
        print(error, file=sys.stderr)
    print(
        f"fetched {fetched} of {len(absent)} missing weight files into {folders.weights}; {len(errors)} failed"
    )
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
