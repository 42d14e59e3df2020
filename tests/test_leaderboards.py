"""The committed leaderboards agree with the schema that leaderboards/README.md documents.

For every suite leaderboard committed under ``leaderboards/`` (``<suite>.csv``,
``<suite>_runs.csv``, ``<suite>_horizon.csv`` and ``<suite>_improvement.csv`` for the
shipped suites):

* the columns are exactly the documented ones, in order, and each parses as its
  documented type;
* ``learned`` equals ``return_ci_low`` above the ceiling-optimum midpoint and
  ``majority_p <= 0.05`` (and no ``beats_ceiling`` column is published);
* every cell has at least 5 seeds;
* every cell's ``command`` is the one that reproduces the suite, not a sweep's (a
  sweep may have run part of it into a scratch store);
* every cell the suite declares is present, unless leaderboards/README.md says the
  publication is partial, in which case the cells present must be declared ones and
  their count must match what the README states.

With no committed suite leaderboard the tests skip (nothing is published yet).
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from pomdp_bench.agents.registry import agent_names
from pomdp_bench.harness.cells import cell_id
from pomdp_bench.harness.store import ResultStore
from pomdp_bench.harness.suites import available_suites, expand, load_suite
from pomdp_bench.reporting import leaderboard
from pomdp_bench.reporting.report import published_cells

ROOT = Path(__file__).resolve().parents[1] / "leaderboards"
SUITES = [s for s in available_suites() if (ROOT / f"{s}.csv").is_file()]
TABLES = {
    "": leaderboard.CELL_COLUMNS,
    "_runs": leaderboard.RUN_COLUMNS,
    "_horizon": leaderboard.HORIZON_COLUMNS,
    "_improvement": leaderboard.IMPROVEMENT_COLUMNS,
}
TITLES = {
    "": "`<suite>.csv`",
    "_runs": "`<suite>_runs.csv`",
    "_horizon": "`<suite>_horizon.csv`",
    "_improvement": "`<suite>_improvement.csv`",
}

pytestmark = pytest.mark.skipif(not SUITES, reason="no suite leaderboard committed under leaderboards/")


def documented_schema(readme: str, title_start: str) -> dict[str, str]:
    """``{column: type}`` from the README's Markdown table under the heading starting with ``title_start``."""
    section = readme.split(f"### {title_start}", 1)[1].split("\n### ", 1)[0]
    return dict(re.findall(r"^\| `([a-z0-9_]+)` \| (\w+) \|", section, flags=re.M))


def check_type(column: pd.Series, kind: str) -> None:
    values = column.dropna()
    if kind == "int":
        assert (pd.to_numeric(values) % 1 == 0).all(), f"{column.name}: not integers"
    elif kind == "float":
        pd.to_numeric(values)  # raises on anything not a number
    elif kind == "bool":
        assert set(values.astype(str)) <= {"True", "False"}, f"{column.name}: not booleans"
    else:
        assert kind == "str", kind


@pytest.fixture(scope="module")
def readme() -> str:
    return (ROOT / "README.md").read_text()


@pytest.mark.parametrize("suite", SUITES)
@pytest.mark.parametrize("suffix", list(TABLES))
def test_columns_and_types_match_the_documented_schema(readme: str, suite: str, suffix: str) -> None:
    path = ROOT / f"{suite}{suffix}.csv"
    if not path.is_file():
        assert suffix in ("_horizon", "_improvement"), f"{path} is missing"  # optional tables
        return
    table = pd.read_csv(path, keep_default_na=True)
    schema = documented_schema(readme, TITLES[suffix])
    assert schema == {k: v[0] for k, v in TABLES[suffix].items()}, "README schema differs from the code's"
    assert list(table.columns) == list(schema), f"{path.name}: columns differ from leaderboards/README.md"
    for name, kind in schema.items():
        check_type(table[name], kind)


@pytest.mark.parametrize("suite", SUITES)
def test_cells_are_consistent_and_complete(readme: str, suite: str) -> None:
    cells = pd.read_csv(ROOT / f"{suite}.csv")
    midpoint = (cells["ff_ceiling"] + cells["optimal_return"]) / 2
    judged = cells["learned"].notna()
    passed = (cells["return_ci_low"] > midpoint) & (cells["majority_p"] <= 0.05)
    assert (cells.loc[judged, "learned"].astype(bool) == passed[judged]).all(), (
        "learned != (return_ci_low > ceiling-optimum midpoint and majority_p <= 0.05)"
    )
    assert (
        cells["seeds_above_line"].dropna() <= cells.loc[cells["seeds_above_line"].notna(), "n_seeds"]
    ).all()
    ruled = cells["solved_fraction"].notna()
    assert (cells.loc[ruled, "solved_ci_low"] <= cells.loc[ruled, "solved_fraction"]).all()
    assert (cells.loc[ruled, "solved_fraction"] <= cells.loc[ruled, "solved_ci_high"]).all()
    assert cells["cpu"].notna().all()
    # A verdict is left empty only for a stated reason: a ceiling that is only a lower
    # bound (or unknown), or an unknown optimum; the note says which.
    unjudged = cells[~judged]
    assert (
        unjudged["ff_ceiling_source"].isin(["lower_bound", "unknown"]) | unjudged["optimal_return"].isna()
    ).all(), unjudged[leaderboard.CELL_KEYS]
    assert unjudged["verdict_note"].notna().all()
    assert "beats_ceiling" not in cells.columns, "the old beats_ceiling verdict is published again"
    assert (cells["n_seeds"] >= 5).all(), cells.loc[cells["n_seeds"] < 5, leaderboard.CELL_KEYS]
    assert (cells["command"] == f"python -m pomdp_bench.run --suite {suite}").all(), set(cells["command"])

    try:  # the suite file as shipped, expanded here: the store's record must agree with it
        declared = {tuple(cell_id(s)) for s in expand(load_suite(suite))}
    except ValueError as err:  # an outside env's package is not installed here
        pytest.skip(f"suite {suite} does not expand here: {err}")
    with ResultStore(ROOT / "store") as store:
        recorded = store.declared_cells(suite)
    assert recorded is not None and {tuple(c) for c in recorded} == declared
    present = published_cells(cells)
    assert present <= declared, f"cells not declared by suite {suite}: {sorted(present - declared)}"
    section = readme.split(f"### `{suite}`", 1)[1].split("\n### ", 1)[0]
    if present == declared:
        assert f"coverage: complete ({len(declared)} cells)" in section
    else:
        # A partial publication must say so, with the right count.
        assert f"coverage: partial, {len(present)} of {len(declared)} cells" in section, (
            f"suite {suite}: {len(declared - present)} declared cells missing and the README does not say partial"
        )


def test_no_column_meaning_names_an_agent() -> None:
    """The schema says what a column holds, not which agents exist today (the registry
    says that: an agent added later must not make the README stale)."""
    names = agent_names()
    found = [
        f"{column}: {meaning}"
        for table in TABLES.values()
        for column, (_, meaning) in table.items()
        if any(re.search(rf"\b{re.escape(name)}\b", meaning) for name in names)
    ]
    assert not found, found
