"""The docs' per-kind tables are the ones scripts/memory_kinds_table.py generates from the CSVs."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from pomdp_bench.memory import MEMORY_KINDS
from pomdp_bench.reporting import limits

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


def test_the_horizon_columns_are_the_rules() -> None:
    # One rule writes every limit (tests/test_answer_tables.py holds it to its cases).
    block = _script().kinds_block()
    texts = limits.answer_limits(limits.read_tables(ROOT))
    assert f"| {texts['TMaze-v1', 'ppo', 'gru']} |" in block


def test_a_page_without_markers_is_refused() -> None:
    script = _script()
    with pytest.raises(ValueError, match="markers"):
        script.rewrite("no markers here", "block", script.KINDS_MARKERS)
