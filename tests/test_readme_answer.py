"""The README's headline answer is the one scripts/readme_answer.py generates from the leaderboard."""

from __future__ import annotations

import importlib.util
import re
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


def test_every_generated_block_is_current() -> None:
    """README.md, docs/envs.md, docs/findings.md and docs/harness.md hold what the script
    writes today (its --check)."""
    assert _script().main(["--check"]) == 0, "rerun: python scripts/readme_answer.py"


def test_the_pqn_answer_brackets_each_kind_with_what_stopped_its_climb(tmp_path: Path) -> None:
    """On a simulated answer suite: a climb that failed at its next rung reads "L, not N
    (failed; failure classes)"; one still climbing reads "≥ L" with its next rung's cost; Ni et al.'s limit
    stands beside the kinds they ran; the parameters are the first rung's."""
    import shutil

    import pandas as pd

    script = _script()
    (tmp_path / "leaderboards").mkdir()
    (tmp_path / "references").mkdir()
    shutil.copy(ROOT / script.NI_REFERENCE, tmp_path / script.NI_REFERENCE)
    base = {
        "suite": "answer",
        "agent": "pqn",
        "pieces": "long",
        "horizon_note": "",
        "max_horizon_learned": "",
    }
    rows = [
        {**base, "env_id": "TMaze-v1", "memory": "lstm", "horizons_tried": "10;20;50",
         "longest_horizon_learned": 20, "next_horizon": 50, "next_outcome": "failed",
         "next_failure_classes": "kept_cue_unused", "limit_censored": False},
        {**base, "env_id": "TMaze-v1", "memory": "transformer", "horizons_tried": "10;20",
         "longest_horizon_learned": 20, "next_horizon": "", "next_outcome": "not tried",
         "next_failure_classes": "", "limit_censored": True},
        {**base, "env_id": "CueRecall-v0", "memory": "lstm", "horizons_tried": "11",
         "longest_horizon_learned": "", "next_horizon": "", "next_outcome": "not tried",
         "next_failure_classes": "", "limit_censored": False},
    ]  # fmt: skip
    pd.DataFrame(rows).to_csv(tmp_path / "leaderboards/answer_horizon.csv", index=False)
    cells = pd.DataFrame(
        [
            {"memory": "lstm", "horizon": 10, "parameters": 38000},
            {"memory": "lstm", "horizon": 20, "parameters": 38001},
            {"memory": "transformer", "horizon": 10, "parameters": 51000},
        ]
    )
    cells.to_csv(tmp_path / "leaderboards/answer.csv", index=False)
    block = script.pqn_answer_block(tmp_path)
    assert "| `lstm` | 20, not 50 (failed; kept_cue_unused) | none (tried 11) | 38,000 | not read |" in block
    # a lower bound carries its next rung's cost, the dry run's estimate of the suite's rung
    assert re.search(r"\| `transformer` \| ≥ 20 \(next 50: \d+\.\d worker-h\) \| — \| 51,000 \| 1,500", block)
    assert re.search(
        r"Every rung not yet run, as if each ran to its cap: \d+ cells, [\d,]+ worker-hours", block
    )
