"""Figures typed in README.md and docs/ (outside docs/notes/, the dated logs, and
docs/results/, which ``report --docs`` writes): each is generated, carries a marker that
agrees with its data (:mod:`pomdp_bench.reporting.figures`), or is in :data:`ALLOW`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pomdp_bench.reporting.figures import (
    Marked,
    agrees,
    check_markers,
    marked_figures,
    marker_value,
    parse_figure,
    typed_figures,
)

ROOT = Path(__file__).resolve().parent.parent

#: Figures that may stay typed: each pattern says why.
ALLOW = [
    re.compile(r"\b2(-core| cores| workers)\b"),  # the machine every figure was measured on
    re.compile(r"\b95%"),  # the interval level (statistics.md), an API default
    re.compile(r"Python (≥ )?\d+\.\d+"),  # the supported Python versions
    re.compile(r"\bet al\.,? \(?\d{4}\b|& \w+ \d{4}\b"),  # the year of a paper
    # A cell's name, not a measurement: the task parameter that labels it.
    re.compile(r"\b(corridor|delay|distractor|seed|horizon)s? \d+(,\d{3})?\b"),
    re.compile(r"\b\d+ (and \d+ )?copies\b"),  # a measured row's label: copies stepped together
    re.compile(r"^#+ \d+\. "),  # a numbered step's heading
    re.compile(r"\b\d+ by default\b"),  # an API default
    re.compile(r"\b\d-d\b"),  # a dimension's name (1-d spaces)
    re.compile(r"\bminigrid \d+\.\d+"),  # a package version
]

#: Pages fully checked: no typed figure outside a marker or ALLOW.
CHECKED = [
    "README.md",
    "docs/DESIGN.md",
    "docs/agents.md",
    "docs/envs.md",
    "docs/findings.md",
    "docs/harness.md",
    "docs/install.md",
    "docs/memory-kinds.md",
    "docs/reproducibility.md",
    "docs/statistics.md",
    "docs/throughput.md",
    "docs/time-to-an-answer.md",
    "docs/your-memory-kind.md",
]


def pages() -> list[Path]:
    """README.md and every docs page the rule covers."""
    docs = [p for p in sorted((ROOT / "docs").glob("*.md"))]
    return [ROOT / "README.md", *docs]


def test_every_page_is_checked() -> None:
    names = {str(p.relative_to(ROOT)) for p in pages()}
    fully = {"docs/api.md", "docs/index.md", "docs/results.md"}  # no figure in prose at all
    assert names <= set(CHECKED) | fully, sorted(names - set(CHECKED) - fully)
    for name in fully:
        assert typed_figures((ROOT / name).read_text(encoding="utf-8"), ALLOW) == []


@pytest.mark.parametrize("name", CHECKED)
def test_a_checked_page_types_no_figure_without_a_marker(name: str) -> None:
    found = typed_figures((ROOT / name).read_text(encoding="utf-8"), ALLOW)
    assert found == [], "\n".join(f"{name}:{f.line}: {f.text} in {f.context[:100]!r}" for f in found)


@pytest.mark.parametrize("path", pages(), ids=lambda p: p.name)
def test_every_marker_agrees_with_its_data(path: Path) -> None:
    assert check_markers(path.read_text(encoding="utf-8"), ROOT) == []


def test_a_planted_stale_figure_fails_in_findings_and_in_the_readme() -> None:
    findings = (ROOT / "docs/findings.md").read_text(encoding="utf-8")
    marked = marked_figures(findings)[0]
    stale = findings.replace(
        f"{marked.text} <!-- figure:", f"{int(parse_figure(marked.text)[0]) + 7} <!-- figure:", 1
    )
    assert check_markers(stale, ROOT), "a changed marked figure must disagree with its CSV"
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    planted = readme.replace("## Quickstart\n", "## Quickstart\n\nThe main job took 43 minutes.\n", 1)
    assert [f.text for f in typed_figures(planted, ALLOW)] == ["43"]
    planted = findings.replace("## By suite\n", "## By suite\n\nlstm solves 11 of 20 seeds.\n", 1)
    assert [f.text for f in typed_figures(planted, ALLOW)] == ["11", "20"]


def test_figures_are_found_outside_code_generated_blocks_names_and_links() -> None:
    text = "\n".join(
        [
            "lstm solves 8 of 20 seeds at 0.59, 1,490 runs, −148, 45%, 3.6× and 4.8M steps.",
            "Names keep their digits: TMaze-v1, Mamba-2, k3, `n_steps: 40`, [log](notes/2024.md).",
            "<!-- kinds:start -->",
            "| 99 |",
            "<!-- kinds:end -->",
            "```",
            "x = 77",
            "```",
        ]
    )
    assert [f.text for f in typed_figures(text)] == [
        "8",
        "20",
        "0.59",
        "1,490",
        "−148",
        "45%",
        "3.6×",
        "4.8M",
    ]
    assert typed_figures(text)[0].line == 1


@pytest.mark.parametrize(
    ("typed", "value", "ok"),
    [
        ("0.59", 0.5913, True),
        ("0.59", 0.5951, False),
        ("1,490", 1490, True),
        ("−148", -147.8, True),
        ("45%", 0.454, True),
        ("45%", 0.456, False),
        ("4.8M", 4_812_345, True),
        ("104", 104.44, True),
        ("3.6×", 3.64, True),
    ],
)
def test_a_typed_figure_agrees_with_its_value_to_its_own_decimals(typed, value, ok) -> None:
    assert agrees(typed, value) is ok


def test_markers_read_csv_rows_sums_counts_and_yaml_keys(tmp_path: Path) -> None:
    (tmp_path / "t.csv").write_text("env,kind,n,score\na,x,5,0.25\na,y,5,0.75\nb,x,20,0.5\n")
    (tmp_path / "s.yaml").write_text("seeds: 5\nbudget: {steps: 300000}\n")
    cases = {
        "0.75 <!-- figure: t.csv | env=a, kind=y | score -->": 0.75,
        "2 <!-- figure: t.csv | env=a | count -->": 2,
        "30 <!-- figure: t.csv | | sum:n -->": 30,
        "6 <!-- figure: t.csv | | sum:n/5 -->": 6,
        "20 <!-- figure: t.csv | kind~x | max:n -->": 20,
        "300k <!-- figure: s.yaml | | budget.steps -->": 300000,
    }
    for text, want in cases.items():
        (marked,) = marked_figures(text)
        assert marker_value(tmp_path, marked) == want
        assert check_markers(text, tmp_path) == []


@pytest.mark.parametrize(
    ("row", "value", "match"),
    [
        ("env=c", "score", "selects no row"),
        ("env=a", "score", "selects 2 rows"),
        ("env=a", "nope", "no column 'nope'"),
        ("kind", "score", "column=value"),
        ("env=a", "mean:n", "not one of count"),
    ],
)
def test_a_marker_that_cannot_be_read_says_why(tmp_path: Path, row, value, match) -> None:
    (tmp_path / "t.csv").write_text("env,kind,n,score\na,x,5,0.25\na,y,5,0.75\n")
    with pytest.raises(ValueError, match=match):
        marker_value(tmp_path, Marked(1, "1", "t.csv", row, value))
    assert check_markers(f"1 <!-- figure: t.csv | {row} | {value} -->", tmp_path)
    with pytest.raises(ValueError, match="does not exist"):
        marker_value(tmp_path, Marked(1, "1", "gone.csv", "", "count"))


def test_a_marker_without_a_figure_before_it_is_refused() -> None:
    with pytest.raises(ValueError, match="must follow its figure"):
        marked_figures("seeds <!-- figure: t.csv | | count --> here")


def test_every_log_opens_with_its_date_and_commit() -> None:
    """A page under docs/notes/ is a dated log: its first lines give the date and commit it
    was last written at (a generated page names its generator instead)."""
    dated = re.compile(r"^\*Log, last written \d{4}-\d{2}-\d{2} \(commit [0-9a-f]{7,}\)\.")
    for page in sorted((ROOT / "docs" / "notes").glob("*.md")):
        if page.name == "index.md":
            continue
        head = page.read_text(encoding="utf-8").splitlines()[:5]
        assert any(dated.match(line) or line.startswith("Generated by") for line in head), page.name
