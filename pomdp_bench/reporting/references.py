"""Our horizon limits beside published ones (``references/*.yaml``), as one table.

``report`` writes ``reference_<name>.csv``: per memory kind of a reference row, our
longest horizon learned on the reference's env, with the agent, budget and seeds that
learned it, next to the published limit. Both sides come from data: the horizon tables
(those ``report`` writes as ``<suite>_horizon.csv``, passed in memory) and the reference
file. Nothing is typed by hand.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from pomdp_bench.data import data_dir

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
)


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


def _agreement(ours: float, censored: bool, theirs: float | None) -> str:
    if pd.isna(ours) or ours == 0:
        return "not learned here"
    if theirs is None:
        return "no published limit read"
    if ours >= theirs:
        return "reaches theirs"
    return "below theirs (ours a lower bound)" if censored else "below theirs"


def comparison_table(reference: dict[str, Any], horizon_tables: list[pd.DataFrame]) -> pd.DataFrame:
    """One row per (reference row, memory kind, agent) that our horizon tables hold for the
    reference's env: our longest horizon learned beside the published one. A kind with no
    row of ours gets one row with empty columns of ours.

    Args:
        reference: a parsed reference file (:func:`load_reference`).
        horizon_tables: ``<suite>_horizon.csv`` frames (columns as ``report`` writes them).
    """
    ours = pd.concat(horizon_tables, ignore_index=True) if horizon_tables else pd.DataFrame()
    if not ours.empty:
        ours = ours[ours["env_id"] == reference["env_id"]]
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
            # The longest limit over suites and pieces, per agent.
            for (agent,), group in mine.groupby(["agent"], sort=True):
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
                        "agreement": _agreement(learned, censored, theirs),
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

        ours = text(row.longest_horizon_learned, "{:.0f}")
        if ours == "0":
            ours = "none"
        elif ours and bool(row.limit_censored):
            ours = "≥ " + ours
        lines.append(
            f"| {row.reference_model} | {text(row.reference_longest_horizon, '{:.0f}') or 'not read'} "
            f"| {text(row.reference_budget_steps, '{:.0e}')} | `{row.memory}` | {text(row.agent)} | {ours} "
            f"| {text(row.next_horizon, '{:.0f}')} | {row.agreement} |"
        )
    return "\n".join(lines)
