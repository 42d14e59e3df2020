"""The docs' results pages (reporting/results_pages.py): written by ``report --docs``
from the store, the same bytes each time, every number from the tables."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from pomdp_bench.harness.store import ResultStore
from pomdp_bench.reporting import report, results_pages

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("suite", ["parity"])
def test_regenerating_a_published_page_and_its_csv_gives_the_same_bytes(suite: str) -> None:
    """The committed page and CSV of a published suite are what the store gives now."""
    with ResultStore(ROOT / "leaderboards" / "store") as store:
        tables = report.suite_tables(store, suite)
        page = report.suite_page(store, suite, tables, ROOT / "leaderboards")
    text = report.docs_markdown(page, tables, ROOT / "leaderboards", ROOT / "docs" / "results")
    assert text == (ROOT / "docs" / "results" / f"{suite}.md").read_text(encoding="utf-8")
    assert tables.cells.to_csv(index=False) == (ROOT / "leaderboards" / f"{suite}.csv").read_text(
        encoding="utf-8"
    )


def test_every_published_suite_has_its_page_and_its_figures_resolve() -> None:
    docs = ROOT / "docs" / "results"
    with ResultStore(ROOT / "leaderboards" / "store") as store:
        suites = store.suites()
    for suite in suites:
        text = (docs / f"{suite}.md").read_text(encoding="utf-8")
        for target in [
            line.split("](", 1)[1].rstrip(")") for line in text.splitlines() if line.startswith("![")
        ]:
            assert (docs / target).resolve().is_file(), target


def test_values_are_formatted_alike_and_pipes_escaped() -> None:
    assert results_pages.cell_text(math.nan) == "" and results_pages.cell_text(None) == ""
    assert (
        results_pages.cell_text(0.123456) == "0.123" and results_pages.cell_text(3_000_000.0) == "3,000,000"
    )
    assert results_pages.cell_text(True) == "yes" and results_pages.cell_text("a|b") == "a\\|b"
    assert results_pages.cell_text(20_000) == "20,000" and results_pages.cell_text(5) == "5"


def test_a_page_lists_each_horizon_limit_with_the_cells_behind_it() -> None:
    """Two horizons of one kind: the limit row names both cells, seeds above the line of
    seeds run, and the maximum is shown only where it differs from the limit."""
    cells = pd.DataFrame(
        {
            "env_id": ["TMaze-v1"] * 2,
            "env_kwargs": ['{"corridor_length": 5}', '{"corridor_length": 10}'],
            "agent": ["ppo"] * 2,
            "memory": ["gru"] * 2,
            "pieces": ["long"] * 2,
            "horizon": [5, 10],
            "bptt_length": pd.array([6, 11], dtype="Int64"),
            "n_seeds": [5, 5],
            "seeds_above_line": pd.array([5, 2], dtype="Int64"),
            "learned": [True, False],
            "return_mean": [1.0, 0.62],
            "return_ci_low": [1.0, 0.4],
            "return_ci_high": [1.0, 0.8],
            "ff_ceiling": [0.5, 0.5],
            "solved_fraction": [1.0, 0.4],
            "solved_ci_low": [0.48, 0.05],
            "solved_ci_high": [1.0, 0.85],
            "steps_to_solve": [20_000.0, math.nan],
            "parameters": pd.array([5733, 5733], dtype="Int64"),
            "total_timesteps": [100_000, 300_000],
        }
    )
    horizon = pd.DataFrame(
        {
            "env_id": ["TMaze-v1"],
            "agent": ["ppo"],
            "memory": ["gru"],
            "pieces": ["long"],
            "horizons_tried": ["5;10"],
            "longest_horizon_learned": [5],
            "max_horizon_learned": [5],
            "next_horizon": [10],
            "next_outcome": ["failed"],
        }
    )
    text = results_pages.suite_markdown(
        "h", cells, horizon, ["h/h_horizon.svg"], ["coverage: complete"], "../lb"
    )
    assert "| ppo | gru | long | 5: 5/5, 10: 2/5 | 5 |  | 10 | failed |" in text
    assert "| 5,733 | 300,000 |" in text and "[0.4, 0.8]" in text
    assert "![h horizon](../lb/h/h_horizon.svg)" in text and text.endswith("| coverage: complete |\n")
