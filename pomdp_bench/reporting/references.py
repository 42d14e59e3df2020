"""Our horizon limits beside published ones (``references/*.yaml``), as one table.

``report`` writes ``reference_<name>.csv``: per memory kind of a reference row, our
longest horizon learned on the reference's env, with the agent, budget and seeds that
learned it, next to the published limit. Both sides come from data: the horizon tables
(those ``report`` writes as ``<suite>_horizon.csv``, passed in memory) and the reference
file. Nothing is typed by hand.

Our limit's text (column ``limit_text``, the table's "our limit") is
:func:`pomdp_bench.reporting.limits.limit_text` over the suites of the horizon ladder
(:data:`~pomdp_bench.reporting.limits.LADDERS`) with pieces that cover an episode, the
rule of every answer table, so this table agrees with them cell for cell
(``tests/test_answer_tables.py``). The numeric columns are those of the row with the
longest monotone limit among the rows that text reads.
"""

from __future__ import annotations

import numbers
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from pomdp_bench.data import data_dir
from pomdp_bench.reporting import limits

COLUMNS = (
    "reference_model",
    "reference_agent",
    "reference_longest_horizon",
    "reference_budget_steps",
    "memory",
    "agent",
    "suite",
    "longest_horizon_learned",
    "limit_censored",
    "next_horizon",
    "next_outcome",
    "agreement",
    "limit_text",
)

LADDER = "horizon"
"""The ladder of suites (:data:`limits.LADDERS`) whose horizon tables give our limits, as
in the answer tables."""


def load_reference(name: str) -> dict[str, Any]:
    """The parsed ``references/<name>.yaml``.

    Raises:
        ValueError: no such reference (the message lists those shipped).
    """
    folder = data_dir("references")
    path = folder / f"{name}.yaml"
    if not path.is_file():
        known = sorted(p.stem for p in folder.glob("*.yaml"))
        raise ValueError(f"unknown reference {name!r}; references: {known}")
    return yaml.safe_load(path.read_text())


def _agreement(text: str, theirs: float | None) -> str:
    """Our limit's text (:func:`limits.limit_text`) against the published limit: its
    monotone limit reaches theirs or not; ``≥`` makes ours a lower bound."""
    if text == limits.NOT_TRIED or text.startswith("none"):
        return "not learned here"
    if theirs is None:
        return "no published limit read"
    if limits.sort_value(text) >= theirs:
        return "reaches theirs"
    return "below theirs (ours a lower bound)" if text.startswith("≥") else "below theirs"


def comparison_table(reference: dict[str, Any], horizon_tables: list[pd.DataFrame]) -> pd.DataFrame:
    """One row per (reference row, memory kind, agent) that our horizon tables hold for the
    reference's env: our limit beside the published one. Ours are the rows of the suites of
    the horizon ladder (:data:`LADDER`) with pieces that cover an episode, read as the
    answer tables read them (:func:`limits.limit_text`). A kind with no row of ours gets
    one row with empty columns of ours.

    Args:
        reference: a parsed reference file (:func:`load_reference`).
        horizon_tables: ``<suite>_horizon.csv`` frames (columns as ``report`` writes them).
    """
    ours = pd.concat(horizon_tables, ignore_index=True) if horizon_tables else pd.DataFrame()
    if not ours.empty:
        ours = ours[
            (ours["env_id"] == reference["env_id"])
            & ours["suite"].isin(limits.LADDERS.get(LADDER, (LADDER,)))
            & ours["pieces"].astype(str).isin(limits.COVERING_PIECES)
        ]
    rows = []
    for ref in reference["rows"]:
        theirs = ref.get("longest_horizon")
        head = {
            "reference_model": ref["model"],
            "reference_agent": ref["agent"],
            "reference_longest_horizon": theirs,
            "reference_budget_steps": ref.get("budget_steps"),
        }
        for kind in ref["kinds"]:
            mine = ours[ours["memory"] == kind] if not ours.empty else ours
            if mine.empty:
                rows.append({**head, "memory": kind, "agreement": "not run here"})
                continue
            # Per agent: the limit's text over the ladder, the numbers of its longest row.
            for (agent,), group in mine.groupby(["agent"], sort=True):
                text = limits.limit_text(group.to_dict("records"))
                best = group.sort_values("longest_horizon_learned", na_position="first").iloc[-1]
                learned = best["longest_horizon_learned"]
                censored = bool(best["limit_censored"])
                rows.append(
                    {
                        **head,
                        "memory": kind,
                        "agent": agent,
                        "suite": best["suite"],
                        "longest_horizon_learned": learned,
                        "limit_censored": censored,
                        "next_horizon": best["next_horizon"],
                        "next_outcome": best["next_outcome"],
                        "agreement": _agreement(text, theirs),
                        "limit_text": text,
                    }
                )
    return pd.DataFrame(rows, columns=list(COLUMNS))


def comparisons(horizon_tables: list[pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """Every shipped reference's :func:`comparison_table`, by reference name, from the
    suites' horizon tables (``report``'s, the ``<suite>_horizon.csv`` it writes, in the
    order of their file names); none when there is no such table."""
    if not horizon_tables:
        return {}
    return {
        path.stem: comparison_table(load_reference(path.stem), horizon_tables)
        for path in sorted(data_dir("references").glob("*.yaml"))
    }


def write_comparisons(leaderboards: str | Path, horizon_tables: list[pd.DataFrame]) -> list[Path]:
    """Write ``reference_<name>.csv`` into ``leaderboards`` for every shipped reference
    (:func:`comparisons` of ``horizon_tables``; none without a horizon table); returns the
    paths written."""
    paths: list[Path] = []
    for name, table in comparisons(horizon_tables).items():
        paths.append(Path(leaderboards) / f"reference_{name}.csv")
        table.to_csv(paths[-1], index=False)
    return paths


def markdown(table: pd.DataFrame) -> str:
    """``table`` as a Markdown table: ours beside theirs, one line per kind and agent."""
    lines = [
        "| their model | their limit | their budget | our kind | our agent | our limit | next tried | outcome |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in table.itertuples():

        def text(value: Any, fmt: str = "{}") -> str:
            return "" if value is None or (isinstance(value, float) and pd.isna(value)) else fmt.format(value)

        ours = getattr(row, "limit_text", None)  # a bare number reads back from a CSV as one
        ours = text(ours, "{:.0f}" if isinstance(ours, numbers.Real) else "{}")
        lines.append(
            f"| {row.reference_model} | {text(row.reference_longest_horizon, '{:.0f}') or 'not read'} "
            f"| {text(row.reference_budget_steps, '{:.0e}')} | `{row.memory}` | {text(row.agent)} | {ours} "
            f"| {text(row.next_horizon, '{:.0f}')} | {row.agreement} |"
        )
    return "\n".join(lines)
