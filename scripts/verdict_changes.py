"""List the cells whose ``learned`` verdict differs between two copies of the cell tables.

    python scripts/verdict_changes.py OLD_DIR NEW_DIR [SUITE ...]

Reads ``<suite>.csv`` from both folders (default suites: those in both), matches cells
by ``(env_id, env_kwargs, agent, memory, bptt_length)`` and prints a Markdown table of
the cells whose verdict changed, with the new table's mean, t interval, seeds above the
line and majority p-value; then, for ``<suite>_horizon.csv``, the lines whose limit or
next outcome changed.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

KEYS = ["env_id", "env_kwargs", "agent", "memory", "bptt_length"]


def changes(old: pd.DataFrame, new: pd.DataFrame) -> pd.DataFrame:
    both = old[[*KEYS, "learned"]].merge(new, on=KEYS, suffixes=("_old", ""), how="outer")
    old_text = both["learned_old"].astype("string").fillna("")
    return both[old_text != both["learned"].astype("string").fillna("")]


def main(argv: list[str]) -> None:
    old_dir, new_dir, *suites = argv
    suites = suites or sorted(
        p.stem
        for p in Path(new_dir).glob("*.csv")
        if (Path(old_dir) / p.name).is_file() and "_" not in p.stem
    )
    print(
        "| suite | env | kwargs | agent | memory | bptt | old | new | mean | t interval | above line | majority p |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for suite in suites:
        old, new = (pd.read_csv(Path(d) / f"{suite}.csv") for d in (old_dir, new_dir))
        if "learned" not in old or "learned" not in new:
            continue
        for _, c in changes(old, new).iterrows():
            bptt = "" if pd.isna(c["bptt_length"]) else int(c["bptt_length"])
            print(
                f"| {suite} | {c['env_id']} | `{c['env_kwargs']}` | {c['agent']} | {c['memory']} | {bptt} "
                f"| {c['learned_old']} | {c['learned']} | {c['return_mean']:.3f} "
                f"| [{c['return_ci_low']:.3f}, {c['return_ci_high']:.3f}] "
                f"| {c['seeds_above_line']:.0f}/{c['n_seeds']} | {c['majority_p']:.3f} |"
            )
    print(
        "\n| suite | env | agent | memory | pieces | old limit | old outcome | new limit | max learned | new outcome |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    line = ["env_id", "agent", "memory", "pieces"]
    for suite in suites:
        paths = [Path(d) / f"{suite}_horizon.csv" for d in (old_dir, new_dir)]
        if not all(p.is_file() for p in paths):
            continue
        old, new = (pd.read_csv(p) for p in paths)
        both = old[[*line, "longest_horizon_learned", "next_outcome"]].merge(
            new, on=line, suffixes=("_old", "")
        )
        for _, h in both.iterrows():
            if (h["longest_horizon_learned_old"], h["next_outcome_old"]) == (
                h["longest_horizon_learned"],
                h["next_outcome"],
            ):
                continue
            top = "" if pd.isna(h["max_horizon_learned"]) else int(h["max_horizon_learned"])
            print(
                f"| {suite} | {h['env_id']} | {h['agent']} | {h['memory']} | {h['pieces']} "
                f"| {h['longest_horizon_learned_old']} | {h['next_outcome_old']} | {h['longest_horizon_learned']} "
                f"| {top} | {h['next_outcome']} |"
            )


if __name__ == "__main__":
    main(sys.argv[1:])
