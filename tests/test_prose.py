"""The prose of the README, the docs and the folder READMEs reads: short sentences, few asides.

Targets, close to well-kept READMEs in the field (SB3, CleanRL, Gymnasium): a mean sentence
of at most 20 words, a 90th percentile of at most 35, at most 1.5 parentheses per 100 words,
and no commit hash in running prose. Only prose is measured: fenced code, tables, headings,
HTML, link targets and inline code are removed first, and so are lines that start with
"Provenance". A sentence ends at '.', '!' or '?' followed by a space and a capital letter or
an opening bracket, or at the end of a paragraph or list item.

Research logs (``docs/notes/``) are exempt: they record what was measured, as it was written.
"""

from __future__ import annotations

import re
import statistics
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MEAN, P90, PARENS_PER_100 = 20.0, 35.0, 1.5
HASH = re.compile(r"\b[0-9a-f]{7,40}\b")


def checked_files() -> list[str]:
    docs = [
        p
        for p in sorted((ROOT / "docs").rglob("*.md"))
        if not {"notes", "_build", "_generated"} & set(p.relative_to(ROOT / "docs").parts)
    ]
    paths = [ROOT / "README.md", *docs, ROOT / "suites" / "README.md", ROOT / "agents" / "README.md"]
    return [str(p.relative_to(ROOT)) for p in paths]


def prose_blocks(text: str) -> list[str]:
    """Paragraphs and list items of prose, with code, tables and markup removed."""
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    blocks, current = [], []
    for line in text.splitlines():
        stripped = line.strip()
        starts_item = re.match(r"^([-*+]|\d+\.)\s", stripped)
        skip = (
            not stripped
            or stripped.startswith(("#", "|", "<", ">"))
            or stripped.lower().startswith("provenance")
        )
        if skip or starts_item:
            if current:
                blocks.append(" ".join(current))
                current = []
            if skip:
                continue
            stripped = stripped[starts_item.end() :]
        current.append(stripped)
    if current:
        blocks.append(" ".join(current))
    cleaned = []
    for block in blocks:
        block = re.sub(r"`[^`]*`", "CODE", block)
        block = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", block)
        block = re.sub(r"[*_]{1,3}", "", block)
        cleaned.append(block)
    return cleaned


def sentences(block: str) -> list[str]:
    parts = re.split(r"(?<=[.!?])\s+(?=[A-Z(\[])", block)
    return [p for p in parts if re.search(r"[A-Za-z]", p)]


def measure(text: str) -> dict[str, float]:
    """Mean and 90th-percentile sentence length, parentheses per 100 words, commit hashes."""
    blocks = prose_blocks(text)
    lengths = sorted(len(s.split()) for b in blocks for s in sentences(b))
    words = sum(len(b.split()) for b in blocks)
    return {
        "mean": statistics.fmean(lengths) if lengths else 0.0,
        "p90": float(lengths[int(0.9 * (len(lengths) - 1))]) if lengths else 0.0,
        "parens_per_100": 100.0 * sum(b.count("(") for b in blocks) / words if words else 0.0,
        "hashes": sum(len(HASH.findall(b)) for b in blocks),
    }


def test_the_measure_counts_what_it_should() -> None:
    text = "# Head\n\nOne two three. Four (five) six seven.\n\n```\nnot (counted)\n```\n\n| a (b) |\n"
    figures = measure(text)
    assert figures["mean"] == 3.5 and figures["p90"] == 3.0
    assert figures["parens_per_100"] == pytest.approx(100 / 7)
    assert measure("Fixed at abc1234 here.\n\nProvenance: abc1234.\n")["hashes"] == 1


@pytest.mark.parametrize("name", checked_files())
def test_prose_meets_the_targets(name: str) -> None:
    figures = measure((ROOT / name).read_text(encoding="utf-8"))
    assert figures["hashes"] == 0, f"{name}: a commit hash in prose"
    assert figures["mean"] <= MEAN, f"{name}: mean sentence {figures['mean']:.1f} words"
    assert figures["p90"] <= P90, f"{name}: 90th percentile {figures['p90']:.0f} words"
    assert figures["parens_per_100"] <= PARENS_PER_100, (
        f"{name}: {figures['parens_per_100']:.2f} ( per 100 words"
    )
