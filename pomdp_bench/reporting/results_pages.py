"""One Markdown results page per suite, for the docs site, from the suite's tables.

``python -m pomdp_bench.report --docs docs/results`` writes ``<suite>.md`` beside the
CSVs it writes. A page holds what the suite backs (the longest horizon learned per
kind, or the cells learned per env), its cells, its figures and its provenance. Every
number comes from the tables, so regenerating the pages from the same store gives the
same bytes. The provenance (commits, machines) sits in one list at the bottom, never in
sentences.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import pandas as pd

CELL_COLUMNS = {
    "env_kwargs": "kwargs",
    "agent": "agent",
    "memory": "memory",
    "bptt_length": "bptt",
    "n_seeds": "seeds",
    "return_mean": "mean",
    "interval": "95% interval",
    "ff_ceiling": "ceiling",
    "learned": "learned",
    "seeds_above_line": "above line",
    "solved_fraction": "solved",
    "solved_interval": "solved 95%",
    "steps_to_solve": "steps to solve",
    "parameters": "parameters",
    "total_timesteps": "cap",
}
"""Cell columns a page shows (CSV name: heading); the CSV holds the rest."""

HORIZON_COLUMNS = {
    "agent": "agent",
    "memory": "memory",
    "pieces": "pieces",
    "horizons": "horizons: above line / seeds",
    "longest_horizon_learned": "longest learned",
    "max_horizon_learned": "maximum learned",
    "next_horizon": "next",
    "next_outcome": "next outcome",
}
"""Horizon columns a page shows, with the cells behind each limit."""


def cell_text(value: object) -> str:
    """A table value: empty for missing, 3 significant digits below 1,000, thousands
    separators above, text with its pipes escaped."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if value.is_integer() and abs(value) >= 1000:
            return f"{value:,.0f}"
        return f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value).replace("|", "\\|").replace("\n", " ")


def markdown_table(frame: pd.DataFrame) -> str:
    """A Markdown table of ``frame``, every value formatted by :func:`cell_text`."""
    lines = ["| " + " | ".join(frame.columns) + " |", "|" + "---|" * len(frame.columns)]
    for row in frame.itertuples(index=False):
        lines.append("| " + " | ".join(cell_text(_plain(v)) for v in row) + " |")
    return "\n".join(lines)


def _plain(value: object) -> object:
    """numpy and pandas scalars as Python ones, so that :func:`cell_text` formats them alike."""
    if value is pd.NA:
        return None
    return value.item() if hasattr(value, "item") else value


def _interval(low: object, high: object) -> str:
    low, high = _plain(low), _plain(high)
    if low is None or high is None or (isinstance(low, float) and math.isnan(low)):
        return ""
    return f"[{cell_text(low)}, {cell_text(high)}]"


def _horizon_cells(cells: pd.DataFrame, row: pd.Series) -> str:
    """``h: a/n`` for each horizon of one kind and pieces: seeds above the line of n."""
    mine = cells[
        (cells["env_id"] == row["env_id"])
        & (cells["agent"] == row["agent"])
        & (cells["memory"] == row["memory"])
        & (cells["pieces"] == row["pieces"])
    ].sort_values("horizon")
    return ", ".join(
        f"{int(c.horizon)}: {cell_text(_plain(c.seeds_above_line))}/{int(c.n_seeds)}"
        for c in mine.itertuples(index=False)
    )


def _horizon_section(cells: pd.DataFrame, horizon: pd.DataFrame) -> list[str]:
    out = [
        "## Longest horizon learned",
        "",
        "The limit is the longest horizon whose cell is learned, with every shorter one learned too.",
        "The maximum shows only where a longer horizon was learned past a gap.",
        "Each row lists its cells: horizon, then seeds above the line of seeds run.",
        "",
    ]
    for env_id, group in horizon.groupby("env_id", sort=True):
        group = group.assign(horizons=[_horizon_cells(cells, r) for _, r in group.iterrows()])
        group = group.assign(
            max_horizon_learned=[
                None if pd.isna(m) or m == lim else m
                for m, lim in zip(group["max_horizon_learned"], group["longest_horizon_learned"], strict=True)
            ]
        )
        out += [
            f"### {env_id}",
            "",
            markdown_table(group[list(HORIZON_COLUMNS)].rename(columns=HORIZON_COLUMNS)),
            "",
        ]
    return out


def _learned_section(cells: pd.DataFrame) -> list[str]:
    out = [
        "## Learned cells",
        "",
        "Per env variant and agent, the cells called learned: memory kind, BPTT length, seeds above the line.",
        "",
    ]
    rows = []
    for (env_id, env_kwargs, agent), group in cells.groupby(["env_id", "env_kwargs", "agent"], sort=True):
        learned = group[group["learned"] == True]  # noqa: E712 (NA stays out)
        names = [
            f"{c.memory}"
            + ("" if pd.isna(c.bptt_length) else f" ({int(c.bptt_length)})")
            + f" {cell_text(_plain(c.seeds_above_line))}/{int(c.n_seeds)}"
            for c in learned.itertuples(index=False)
        ]
        rows.append(
            {
                "env": env_id,
                "kwargs": env_kwargs,
                "agent": agent,
                "cells": len(group),
                "learned": "; ".join(names) or "none",
            }
        )
    return [*out, markdown_table(pd.DataFrame(rows)), ""]


def suite_markdown(
    suite: str,
    cells: pd.DataFrame,
    horizon: pd.DataFrame,
    figures: list[str],
    provenance: list[str],
    leaderboards: str,
) -> str:
    """The page of ``suite``.

    Args:
        suite: its name.
        cells: its cell table (:func:`~pomdp_bench.reporting.leaderboard.cells_frame`).
        horizon: its horizon table (:func:`~pomdp_bench.reporting.leaderboard.horizon_frame`).
        figures: its figures, as paths relative to the leaderboards folder.
        provenance: its provenance lines (:func:`~pomdp_bench.reporting.report.provenance_lines`).
        leaderboards: the leaderboards folder, relative to the page.
    """
    lead = leaderboards.rstrip("/")
    page = [
        f"# The {suite} suite",
        "",
        "`python -m pomdp_bench.report --docs` wrote this page from the results store.",
        "No number on it is typed by hand.",
        f"Download the [cells]({lead}/{suite}.csv) and the [runs]({lead}/{suite}_runs.csv).",
        "The column schema is in `leaderboards/README.md`.",
        "",
    ]
    several = not horizon.empty and horizon["horizons_tried"].astype(str).str.contains(";").any()
    page += _horizon_section(cells, horizon) if several else _learned_section(cells)
    table = cells.assign(
        interval=[
            _interval(lo, hi) for lo, hi in zip(cells["return_ci_low"], cells["return_ci_high"], strict=True)
        ],
        solved_interval=[
            _interval(lo, hi) for lo, hi in zip(cells["solved_ci_low"], cells["solved_ci_high"], strict=True)
        ],
    )
    page += ["## Cells", ""]
    for env_id, group in table.groupby("env_id", sort=True):
        page += [
            f"### {env_id}",
            "",
            markdown_table(group[list(CELL_COLUMNS)].rename(columns=CELL_COLUMNS)),
            "",
        ]
    if figures:
        page += ["## Figures", ""]
        for f in figures:  # a paragraph each
            page += [f"![{Path(f).stem.replace('_', ' ')}]({lead}/{f})", ""]
    # A table, not prose: each line is a record (command, commit, machine).
    page += [
        "## Provenance",
        "",
        "| how it was made |",
        "|---|",
        *(f"| {cell_text(line)} |" for line in provenance),
        "",
    ]
    return "\n".join(page)


def relative(target: Path, start: Path) -> str:
    """``target`` relative to the folder ``start``, with forward slashes."""
    return Path(os.path.relpath(target.resolve(), start.resolve())).as_posix()
