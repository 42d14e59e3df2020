"""scripts/compare_stores.py lines up a suite's cells from two stores: a store against
itself agrees everywhere."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
from compare_stores import compare  # noqa: E402  (scripts/ is not a package)

STORE = ROOT / "leaderboards" / "store"


@pytest.mark.skipif(not (STORE / "published.json").is_file(), reason="no published records")
def test_a_store_against_itself_agrees_cell_for_cell() -> None:
    cells = compare(str(STORE), str(STORE), "memory")
    assert len(cells) > 0
    assert (cells["learned_a"] == cells["learned_b"]).all()
    assert (cells["solved_fraction_a"] == cells["solved_fraction_b"]).all()
    assert (cells["return_mean_a"] == cells["return_mean_b"]).all()


@pytest.mark.skipif(not (STORE / "published.json").is_file(), reason="no published records")
def test_a_store_against_itself_pairs_every_run_with_itself() -> None:
    from compare_stores import compare_runs

    runs = compare_runs(str(STORE), str(STORE), "memory-long")
    assert len(runs) > 0 and runs["same_run"].all()
    assert (runs["run_key_a"] == runs["run_key_b"]).all()


@pytest.mark.skipif(not (STORE / "published.json").is_file(), reason="no published records")
def test_an_earlier_runs_table_stands_in_for_a_store_that_is_gone(tmp_path: Path) -> None:
    from compare_stores import RUN_SHOWN, compare_runs, table_side

    from pomdp_bench.reporting.leaderboard import CELL_KEYS

    table = tmp_path / "runs.csv"
    compare_runs(str(STORE), str(STORE), "memory-long").to_csv(table, index=False)
    side_b = table_side(f"{table}:b", [*CELL_KEYS, "seed"], RUN_SHOWN)
    runs = compare_runs(str(STORE), side_b, "memory-long")
    assert len(runs) > 0 and runs["same_run"].all()
    with pytest.raises(SystemExit, match=r"PATH\.csv:a or PATH\.csv:b"):
        table_side(str(table), CELL_KEYS, RUN_SHOWN)
