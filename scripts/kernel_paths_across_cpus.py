"""Does a kernel setting take the same floating-point path on two CPUs? (issue 70)

``scripts/kernel_pinning_cost.py`` trains a short fixed PPO run per memory kind under each
kernel setting and hashes the final weights. This lines up two CPUs' hashes, setting by
setting and kind by kind: equal hashes mean that setting trains the same weights on
both. Writes ``leaderboards/replication/kernel_paths_across_cpus.csv``:

    python scripts/kernel_paths_across_cpus.py leaderboards/kernel_pinning_cost.csv \\
        leaderboards/replication/kernel_pinning_cost_amd_milan.csv
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "leaderboards" / "replication" / "kernel_paths_across_cpus.csv"
KEYS = ["setting", "memory"]


def across(first: pd.DataFrame, second: pd.DataFrame) -> pd.DataFrame:
    """One row per setting and kind in both: each CPU's hash and machine (``_a``, ``_b``)
    and ``same_weights``."""
    shown = ["weights_sha256", "aten_capability", "machine"]
    pairs = first[KEYS + shown].merge(second[KEYS + shown], on=KEYS, suffixes=("_a", "_b"))
    pairs["same_weights"] = pairs["weights_sha256_a"] == pairs["weights_sha256_b"]
    return pairs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("first", help="one CPU's kernel_pinning_cost.py CSV (--csv or --paths-out)")
    parser.add_argument("second", help="another CPU's")
    parser.add_argument("--out", default=str(OUT), help=f"the table (default {OUT.relative_to(ROOT)})")
    args = parser.parse_args(argv)
    pairs = across(pd.read_csv(args.first, dtype=str), pd.read_csv(args.second, dtype=str))
    pairs.to_csv(args.out, index=False, lineterminator="\n")
    for setting, group in pairs.groupby("setting", sort=False):
        print(
            f"{setting}: the same weights on both CPUs for {int(group['same_weights'].sum())} of {len(group)} kinds"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
