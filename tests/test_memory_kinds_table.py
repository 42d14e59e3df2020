"""The docs' per-kind tables are the ones scripts/memory_kinds_table.py generates from the CSVs."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pandas as pd
import pytest

from pomdp_bench.memory import MEMORY_KINDS

ROOT = Path(__file__).resolve().parent.parent


def _script():
    spec = importlib.util.spec_from_file_location(
        "memory_kinds_table", ROOT / "scripts" / "memory_kinds_table.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_both_blocks_are_generated() -> None:
    script = _script()
    for page, block, markers in (
        (script.KINDS_PAGE, script.kinds_block(), script.KINDS_MARKERS),
        (script.THROUGHPUT_PAGE, script.throughput_block(), script.THROUGHPUT_MARKERS),
    ):
        text = (ROOT / page).read_text(encoding="utf-8")
        assert script.rewrite(text, block, markers) == text, "rerun: python scripts/memory_kinds_table.py"


def test_the_kinds_table_has_a_row_per_kind() -> None:
    block = _script().kinds_block()
    for kind in MEMORY_KINDS:
        assert block.count(f"| `{kind}` |") == 1, kind


def test_parameters_count_the_memory_module() -> None:
    script = _script()
    assert script.parameters("none") == 0
    # A GRU of width 64 on a 64-wide input: 3 gates, each 64 x (64 + 64) weights and two biases.
    assert script.parameters("gru") == 3 * (64 * 128 + 2 * 64)
    assert script.parameters("lstm") > script.parameters("gru")


def _row(longest: int, next_outcome: str, censored: bool = False) -> pd.Series:
    return pd.Series(
        {"longest_horizon_learned": longest, "next_outcome": next_outcome, "limit_censored": censored}
    )


def test_horizon_long_extends_the_ladder_only_past_the_last_horizon_learned() -> None:
    longest = _script()._longest
    # The horizon suite learned its last horizon (10); horizon-long learned 20, then failed.
    assert longest(_row(10, "not tried", True), _row(20, "plateaued")) == "20"
    assert longest(_row(10, "not tried", True), _row(20, "budget", True)) == "≥ 20"
    # horizon-long failed at the next horizon: the horizon suite's limit stands, as sure as that failure.
    assert longest(_row(10, "not tried", True), _row(0, "plateaued")) == "10"
    assert longest(_row(10, "not tried", True), None) == "≥ 10"
    # The horizon suite failed before its last horizon: horizon-long does not count.
    assert longest(_row(5, "plateaued"), _row(20, "plateaued")) == "5"
    assert longest(_row(0, "plateaued"), None) == "none"
    assert longest(None, None) == "—"
    assert longest(None, _row(20, "not tried", True)) == "≥ 20"
    # Failed the first horizon tried, learned a longer one: both are said.
    failed_first = pd.Series({**_row(0, "plateaued"), "max_horizon_learned": 10.0})
    assert longest(None, failed_first) == "none (learned at 10)"


def test_a_page_without_markers_is_refused() -> None:
    script = _script()
    with pytest.raises(ValueError, match="markers"):
        script.rewrite("no markers here", "block", script.KINDS_MARKERS)
