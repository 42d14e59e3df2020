"""docs/DESIGN.md's "Reliability" section names tests that exist."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_test_the_reliability_section_names_exists() -> None:
    design = (ROOT / "docs" / "DESIGN.md").read_text()
    section = design.split("\n## Reliability\n", 1)[1].split("\n## ", 1)[0]
    named = re.findall(r"`(tests/[\w/]+\.py)::(\w+)`", section)
    assert len(named) >= 10
    for path, name in named:
        tree = ast.parse((ROOT / path).read_text())
        defined = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
        assert name in defined, f"docs/DESIGN.md names {path}::{name}, which does not exist"
