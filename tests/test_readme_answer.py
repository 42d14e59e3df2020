"""The README's headline answer is the one scripts/readme_answer.py generates from the leaderboard."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _script():
    spec = importlib.util.spec_from_file_location("readme_answer", ROOT / "scripts" / "readme_answer.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_readmes_answer_block_is_generated() -> None:
    script = _script()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert script.START in readme and script.END in readme
    assert script.rewrite(readme, script.block()) == readme, "rerun: python scripts/readme_answer.py"


def test_the_block_reads_the_csv_and_names_the_figure() -> None:
    script = _script()
    block = script.block()
    assert "| `lstm` |" in block and "| `gru` |" in block
    assert f"]({script.FIGURE})" in block and (ROOT / script.FIGURE).is_file()
