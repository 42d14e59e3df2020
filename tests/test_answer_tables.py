"""Every answer table writes a horizon limit by one rule, and they agree cell for cell.

The rule is :func:`pomdp_bench.reporting.limits.limit_text`; the tables are the README's
answer block, its table beside Ni et al. (``leaderboards/reference_ni2023.csv``),
docs/memory-kinds.md, docs/findings.md's limits block and leaderboards/index.html's
answer table. The POPGym table's bold reads a verdict on MMER.
"""

from __future__ import annotations

import html
import importlib.util
import re
from pathlib import Path

import pandas as pd
import pytest

from pomdp_bench.reporting import limits, mmer, references

ROOT = Path(__file__).resolve().parent.parent
TASKS = {"TMaze-v1": 0, "CueRecall-v0": 1}


def _row(tried, longest, next_horizon=None, outcome="not tried", highest=None, note=""):
    return {
        "horizons_tried": ";".join(str(h) for h in tried),
        "longest_horizon_learned": longest,
        "max_horizon_learned": highest,
        "horizon_note": note,
        "next_horizon": next_horizon,
        "next_outcome": outcome,
        "pieces": "long",
    }


def test_a_monotone_limit_followed_by_a_counted_failure_is_a_bracket() -> None:
    assert limits.limit_text([_row([5, 10, 20], 10, 20, "failed")]) == "10, not 20 (failed)"


@pytest.mark.parametrize("outcome", ["plateaued", "budget"])
def test_a_next_horizon_stopped_by_its_cap_or_a_plateau_reads_cap(outcome: str) -> None:
    assert limits.limit_text([_row([5, 10, 20], 10, 20, outcome)]) == "10, not 20 (cap)"


def test_the_failure_classes_follow_how_the_next_horizon_ended() -> None:
    row = _row([10, 20], 10, 20, "budget") | {"next_failure_classes": "kept_cue_unused 3"}
    assert limits.limit_text([row]) == "10, not 20 (cap; kept_cue_unused 3)"


def test_a_limit_is_a_lower_bound_where_the_next_horizon_has_no_verdict() -> None:
    assert limits.limit_text([_row([5, 10, 20], 10, 20, "no verdict")]) == "≥ 10"


def test_a_limit_with_nothing_tried_above_is_censored() -> None:
    assert limits.limit_text([_row([5, 10], 10)]) == "≥ 10"


def test_a_longer_horizon_learned_above_one_not_is_a_bracket() -> None:
    row = _row([5, 10, 20], 0, 5, "plateaued", highest=10, note="learned at 10 but not at 5")
    assert limits.limit_text([row]) == "learned at 10, not at 5"


def test_a_bracket_follows_a_limit_above_zero() -> None:
    row = _row([5, 10, 20, 50], 5, 10, "failed", highest=20, note="learned at 20 but not at 10")
    assert limits.limit_text([row]) == "5 (learned at 20, not at 10)"  # the bracket says what failed


def test_none_only_when_nothing_was_learned() -> None:
    assert limits.limit_text([_row([5, 10, 100], 0, 5, "failed")]) == "none (tried 5…100)"
    assert limits.limit_text([_row([100], 0, 100, "budget")]) == "none (tried 100)"
    assert limits.limit_text([]) == "—"


def test_a_ladder_of_two_suites_reads_as_one() -> None:
    short = _row([5, 10], 10)
    longer = _row([20, 50], 20, 50, "failed")
    assert limits.limit_text([short, longer]) == "20, not 50 (failed)"
    # a failure at the first horizon does not hide a longer one learned in the next suite
    failed = _row([5], 0, 5, "plateaued")
    learned = _row([10, 20], 10, 20, "plateaued")
    assert limits.limit_text([failed, learned]) == "learned at 10, not at 5"


def test_sort_value_reads_the_monotone_limit() -> None:
    texts = ("101, not 200 (cap)", "≥ 51", "learned at 10, not at 5", "none (tried 5)")
    assert [limits.sort_value(t) for t in texts] == [101, 51, 0, 0]


def _expected() -> dict[tuple[str, str, str], str]:
    return limits.answer_limits(limits.read_tables(ROOT))


def _markdown_rows(text: str, start: str, end: str) -> list[list[str]]:
    block = text[text.index(start) : text.index(end)]
    rows = []
    for line in block.splitlines():
        if line.startswith("| `") or re.match(r"^\| \w+ \| `", line):
            rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    return rows


def test_the_readme_answer_agrees_with_the_rule() -> None:
    expected = _expected()
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text[text.index("<!-- answer:start -->") : text.index("Every agent's longest T-Maze")]
    seen = 0
    for line in block.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| `"):
            agent, kind, values = "ppo", cells[0].strip("`"), cells[1:3]
        elif re.match(r"^\| (pqn|sac|dqn) \| `", line):
            agent, kind, values = cells[0], cells[1].strip("`"), cells[2:4]
        else:
            continue
        for env, i in TASKS.items():
            assert values[i] == expected.get((env, agent, kind), "—"), (env, agent, kind)
            seen += 1
    assert seen >= 2 * 15


def _ni_cells(lines: list[str]) -> dict[tuple[str, str], str]:
    """The "our limit" cell of the Ni et al. table's lines, by (agent, kind)."""
    header = next(line for line in lines if line.startswith("| their model |"))
    names = [c.strip() for c in header.strip().strip("|").split("|")]
    cells = {}
    for line in lines[lines.index(header) + 2 :]:
        if not line.startswith("| "):
            break
        row = dict(zip(names, (c.strip() for c in line.strip().strip("|").split("|")), strict=True))
        if row["our agent"]:
            cells[row["our agent"], row["our kind"].strip("`")] = row["our limit"]
    return cells


def test_the_ni_table_reads_the_rule() -> None:
    """The table beside Ni et al., as report builds it from the horizon tables, writes
    every limit by the rule: its ``limit_text`` column and its Markdown, cell for cell."""
    expected = _expected()
    reference = references.load_reference("ni2023")
    # every horizon table, in the order of their file names, as report passes them
    tables = [pd.read_csv(path) for path in sorted((ROOT / "leaderboards").glob("*_horizon.csv"))]
    table = references.comparison_table(reference, tables)
    ours = table[table["agent"].notna()]
    assert len(ours) >= 8
    for row in ours.itertuples():
        key = (reference["env_id"], row.agent, row.memory)
        assert row.limit_text == expected[key], key
    cells = _ni_cells(references.markdown(table).splitlines())
    assert cells == {(r.agent, r.memory): r.limit_text for r in ours.itertuples()}
    kinds = {kind for ref in reference["rows"] for kind in ref["kinds"]}
    assert set(cells) == {(a, k) for e, a, k in expected if e == reference["env_id"] and k in kinds}


def test_the_readmes_ni_table_agrees_with_the_rule() -> None:
    """The published table beside Ni et al. (README and its CSV) agrees with the rule."""
    expected = _expected()
    env = references.load_reference("ni2023")["env_id"]
    published = pd.read_csv(ROOT / "leaderboards" / "reference_ni2023.csv")
    assert "limit_text" in published, "republish: the CSV predates its limit_text column"
    for row in published[published["agent"].notna()].itertuples():
        assert row.limit_text == expected[(env, row.agent, row.memory)], (row.agent, row.memory)
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text[text.index("Every agent's longest T-Maze") : text.index("<!-- answer:end -->")]
    cells = _ni_cells(block.splitlines())
    assert cells
    for (agent, kind), value in cells.items():
        assert value == expected[(env, agent, kind)], (agent, kind)


def test_memory_kinds_page_agrees_with_the_rule() -> None:
    expected = _expected()
    text = (ROOT / "docs" / "memory-kinds.md").read_text(encoding="utf-8")
    rows = _markdown_rows(text, "<!-- kinds:start -->", "<!-- kinds:end -->")
    assert rows
    for cells in rows:
        kind = cells[0].strip("`")
        for env, i in TASKS.items():
            assert cells[4 + i] == expected.get((env, "ppo", kind), "—"), (env, kind)


def test_findings_block_agrees_with_the_rule() -> None:
    expected = _expected()
    text = (ROOT / "docs" / "findings.md").read_text(encoding="utf-8")
    block = text[text.index("<!-- limits:start -->") : text.index("<!-- limits:end -->")]
    names = {"T-Maze corridor": "TMaze-v1", "cue-recall delay": "CueRecall-v0"}
    seen = set()
    for line in block.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 2 or cells[0] not in names:
            continue  # the rows of pieces half the horizon are checked below
        env = names[cells[0]]
        for entry in cells[1].split(" · "):
            kind, value = re.match(r"`([^`]+)` (.+)", entry).groups()
            assert value == expected[(env, "ppo", kind)], (env, kind)
            seen.add((env, kind))
    assert seen == {(env, kind) for env, agent, kind in expected if agent == "ppo"}
    short = limits.answer_limits(limits.read_tables(ROOT), ("short",))
    for line in block.splitlines():
        if ", pieces half the horizon |" in line:
            name, entries = [c.strip() for c in line.strip().strip("|").split("|")]
            env = names[name.removesuffix(", pieces half the horizon")]
            for entry in entries.split(" · "):
                kind, value = re.match(r"`([^`]+)` (.+)", entry).groups()
                assert value == short[(env, "ppo", kind)]


def test_the_html_answer_agrees_with_the_rule() -> None:
    expected = _expected()
    page = (ROOT / "leaderboards" / "index.html").read_text(encoding="utf-8")
    table = re.search(r'<table class="lb" id="table-answer">(.*?)</table>', page, re.S).group(1)
    envs = re.findall(r'data-key="h-[^"]*" data-type="num" title="[^"]*">([^<]+)</th>', table)
    rows = re.findall(r'<tr data-agent="([^"]+)" data-memory="([^"]+)">(.*?)</tr>', table, re.S)
    assert rows and set(envs) == set(TASKS)
    for agent, kind, body in rows:
        texts = [
            re.sub(r"<[^>]+>", "", html.unescape(t)) for t in re.findall(r"<td[^>]*>(.*?)</td>", body, re.S)
        ]
        for env, text in zip(envs, texts[2:], strict=True):
            assert text == expected.get((env, agent, kind), "not tried"), (env, agent, kind)
    assert {(a, k) for a, k, _ in rows} == {(a, k) for _, a, k in expected}


def test_popgym_bold_reads_the_mmer_verdict() -> None:
    assert mmer.above_line(0.8, 0.0, 1.0)
    assert not mmer.above_line(0.4, 0.0, 1.0)
    assert not mmer.above_line(float("nan"), 0.0, 1.0)
    spec = importlib.util.spec_from_file_location("readme_answer", ROOT / "scripts" / "readme_answer.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    cells = pd.read_csv(ROOT / script.POPGYM)
    lines = script._popgym(ROOT)
    header = next(line for line in lines if line.startswith("| memory |"))
    names = [c.strip() for c in header.strip("|").split("|")][1:]
    for line in lines:
        if not line.startswith("| `"):
            continue
        cells_text = [c.strip() for c in line.strip("|").split("|")]
        kind = cells_text[0].strip("`")
        for name, text in zip(names, cells_text[1:], strict=True):
            row = cells[(cells["memory"] == kind) & (cells["env_id"] == f"popgym-{name}-v0")].iloc[0]
            bold = mmer.above_line(row["mmer_ci_low"], row["ff_ceiling"], row["optimal_return"])
            assert text.startswith("**") == bold, (kind, name)
            assert text.strip("*") == f"{row['mmer_mean']:.2f}"
