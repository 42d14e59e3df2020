"""Write the docs' per-kind tables: every memory kind side by side, and the throughput table.

Two generated blocks, each between its markers:

- in ``docs/memory-kinds.md`` (``<!-- kinds:start -->`` to ``<!-- kinds:end -->``), per
  memory kind: its parameters at hidden size 64 (the default) on a 64-wide input; PPO's
  cost per env step (rollout and update, µs) at 16 copies and its update's share of the arithmetic limit at 256, from
  ``leaderboards/throughput.csv``; the longest T-Maze corridor and cue-recall delay PPO
  learned with pieces that cover an episode, from ``leaderboards/horizon_horizon.csv``
  and, past the horizon suite's last horizon, ``leaderboards/horizon-long_horizon.csv``;
  and its memory-suite verdicts (cells learned of cells run), from
  ``leaderboards/memory.csv``;
- in ``docs/throughput.md`` (``<!-- throughput:start -->`` to ``<!-- throughput:end -->``),
  every row of ``leaderboards/throughput.csv`` with the machine it was measured on.

``scripts/arithmetic_limit.py --csv`` writes the throughput CSV; ``report`` writes the
others. ``tests/test_memory_kinds_table.py`` checks that both blocks equal what this writes.

Usage: ``python scripts/memory_kinds_table.py`` (rewrites both pages), ``--check`` (exit 1
if either is stale).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd
import torch

from pomdp_bench.memory import MEMORY_KINDS, build_memory

ROOT = Path(__file__).resolve().parent.parent
THROUGHPUT = "leaderboards/throughput.csv"
HORIZON = "leaderboards/horizon_horizon.csv"
HORIZON_LONG = "leaderboards/horizon-long_horizon.csv"
MEMORY = "leaderboards/memory.csv"
KINDS_PAGE = "docs/memory-kinds.md"
THROUGHPUT_PAGE = "docs/throughput.md"
KINDS_MARKERS = ("<!-- kinds:start -->", "<!-- kinds:end -->")
THROUGHPUT_MARKERS = ("<!-- throughput:start -->", "<!-- throughput:end -->")
TASKS = {"TMaze-v1": "T-Maze corridor", "CueRecall-v0": "cue-recall delay"}
HIDDEN = 64  # MemoryConfig's default hidden size


def parameters(kind: str, hidden_size: int = HIDDEN) -> int:
    """Trainable parameters of one memory module of ``kind`` on a ``hidden_size``-wide input."""
    if kind == "none":
        return 0
    torch.manual_seed(0)
    memory = build_memory({"kind": kind, "hidden_size": hidden_size}, input_size=hidden_size)
    return sum(p.numel() for p in memory.parameters() if p.requires_grad)


def _read(root: Path, name: str) -> pd.DataFrame:
    path = root / name
    # "n/a" is a value here (the pieces of a kind without memory), not a missing one
    return pd.read_csv(path, keep_default_na=False, na_values=[""]) if path.is_file() else pd.DataFrame()


def _censored(row: pd.Series) -> bool:
    return str(row["limit_censored"]) == "True"


def _longest(short: pd.Series | None, long: pd.Series | None) -> str:
    """The longest horizon learned, across the horizon suite (``short``) and horizon-long.

    horizon-long counts only when the horizon suite learned its own last horizon (its
    next outcome is "not tried"): the two suites then form one ladder, and horizon-long
    says what happened next. ``≥`` marks a limit that may be the budget's rather than
    the kind's (the CSVs' ``limit_censored``).
    """
    if short is None and long is None:
        return "—"
    horizon, censored = 0, True
    if short is not None:
        horizon, censored = int(short["longest_horizon_learned"] or 0), _censored(short)
    if long is not None and (short is None or short["next_outcome"] == "not tried"):
        if int(long["longest_horizon_learned"] or 0) > horizon:
            horizon = int(long["longest_horizon_learned"])
        censored = _censored(long)
    if horizon == 0:
        # A kind that failed the first horizon tried but learned a longer one says so.
        longer = [
            r["max_horizon_learned"]
            for r in (short, long)
            if r is not None and _number(r.get("max_horizon_learned"))
        ]
        return f"none (learned at {int(max(longer))})" if longer else "none"
    return f"≥ {horizon}" if censored else str(horizon)


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not pd.isna(value) and value > 0


def kinds_block(root: Path = ROOT) -> str:
    """The generated per-kind table for docs/memory-kinds.md, markers included."""
    throughput = _read(root, THROUGHPUT)
    horizon = _read(root, HORIZON)
    horizon_long = _read(root, HORIZON_LONG)
    memory = _read(root, MEMORY)

    def ppo_long(table: pd.DataFrame, kind: str, env: str) -> pd.Series | None:
        if table.empty:
            return None
        rows = table[
            (table["agent"] == "ppo")
            & (table["memory"] == kind)
            & (table["env_id"] == env)
            & table["pieces"].isin(["long", "n/a"])
        ]
        return None if rows.empty else rows.iloc[0]

    def speed(kind: str) -> tuple[str, str]:
        if throughput.empty:
            return "—", "—"
        rows = throughput[throughput["memory"] == kind].set_index("copies")
        cost = "—"
        if 16 in rows.index:  # a run trains at 1 / (1/rollout + 1/update) steps/s
            r = rows.loc[16]
            cost = f"{1e6 * (1 / r['rollout_steps_per_second'] + 1 / r['update_steps_per_second']):,.0f}"
        share = f"{rows.loc[256, 'share_of_limit']:.0%}" if 256 in rows.index else "—"
        return cost, share

    def verdicts(kind: str) -> str:
        if memory.empty:
            return "—"
        cells = memory[(memory["memory"] == kind) & (memory["agent"] == "ppo")]
        if cells.empty:
            return "—"
        return f"{int((cells['learned'].astype(str) == 'True').sum())} of {len(cells)}"

    lines = [
        KINDS_MARKERS[0],
        f"<!-- generated by scripts/memory_kinds_table.py from {THROUGHPUT}, {HORIZON}, {HORIZON_LONG} "
        f"and {MEMORY}; do not edit by hand -->",
        "",
        "| kind | parameters | µs per env step, 16 copies | share of the arithmetic limit, 256 copies | "
        + " | ".join(f"longest {name} learned" for name in TASKS.values())
        + " | memory-suite cells learned |",
        "|---|---|---|---|" + "---|" * len(TASKS) + "---|",
    ]
    for kind in MEMORY_KINDS:
        cost, share = speed(kind)
        reach = [_longest(ppo_long(horizon, kind, env), ppo_long(horizon_long, kind, env)) for env in TASKS]
        lines.append(
            f"| `{kind}` | {parameters(kind):,} | {cost} | {share} | "
            + " | ".join(reach)
            + f" | {verdicts(kind)} |"
        )
    machines = sorted(set(throughput["cpu"])) if not throughput.empty else []
    lines += [
        "",
        f"Parameters: one memory module at hidden size {HIDDEN} on a {HIDDEN}-wide input "
        "(rwkv7 with one head of 64, its default). "
        "Cost: a PPO run's wall time per env step, rollout and update. "
        f"Speeds: `scripts/arithmetic_limit.py` on {', '.join(machines) or 'no machine yet'}, one thread, "
        "PPO on TMaze-v1 at hidden size 64 ([Throughput](throughput.md)). "
        "Horizons: pieces that cover an episode, the horizon suite then horizon-long; ≥ marks a limit "
        "that may be the budget's (not tried further, or stopped by a cap short of ten times the steps "
        "that solved the horizon below), "
        "none a kind that failed the first horizon tried (with a longer one it learned in brackets). Verdicts: PPO cells of the memory suite.",
        KINDS_MARKERS[1],
    ]
    return "\n".join(lines)


def throughput_block(root: Path = ROOT) -> str:
    """The generated throughput table for docs/throughput.md, markers included."""
    table = _read(root, THROUGHPUT)
    lines = [
        THROUGHPUT_MARKERS[0],
        f"<!-- generated by scripts/memory_kinds_table.py from {THROUGHPUT}; do not edit by hand -->",
        "",
        "| memory | copies | rollout steps/s | update steps/s | update MFLOP | update GFLOP/s "
        "| arithmetic limit, steps/s | share of the limit |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in table.itertuples():
        lines.append(
            f"| `{r.memory}` | {r.copies} | {r.rollout_steps_per_second:,.0f} | {r.update_steps_per_second:,.0f} "
            f"| {r.update_mflop:,.1f} | {r.update_gflop_per_second:.1f} | {r.limit_steps_per_second:,.0f} "
            f"| {r.share_of_limit:.0%} |"
        )
    if not table.empty:
        peaks = ", ".join(f"{p:.1f}" for p in sorted(set(table["matmul_peak_gflop_per_second"].round(1))))
        lines += [
            "",
            f"Measured on {', '.join(sorted(set(table['machine'])))}, alone, one torch thread; "
            f"matmul peak {peaks} GFLOP/s. Each row's commit and date are in `{THROUGHPUT}`.",
        ]
    lines.append(THROUGHPUT_MARKERS[1])
    return "\n".join(lines)


def rewrite(text: str, block: str, markers: tuple[str, str]) -> str:
    """``text`` with the block between ``markers`` replaced by ``block``."""
    start, end = markers
    if start not in text or end not in text:
        raise ValueError(f"the page lacks the markers {start} and {end}")
    return text[: text.index(start)] + block + text[text.index(end) + len(end) :]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument(
        "--check", action="store_true", help="exit 1 if a page's block is stale; write nothing"
    )
    args = parser.parse_args()
    stale = []
    for page, block, markers in (
        (KINDS_PAGE, kinds_block(), KINDS_MARKERS),
        (THROUGHPUT_PAGE, throughput_block(), THROUGHPUT_MARKERS),
    ):
        path = ROOT / page
        text = path.read_text(encoding="utf-8")
        new = rewrite(text, block, markers)
        if new != text:
            stale.append(page)
            if not args.check:
                path.write_text(new, encoding="utf-8")
    if args.check and stale:
        print(f"stale: {', '.join(stale)}; rerun python scripts/memory_kinds_table.py", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
