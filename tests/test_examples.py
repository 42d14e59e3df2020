"""Every example runs, on small budgets (``examples/``; docs/DESIGN.md, "Extending").

Each runs in its own process, as a user would run it, so registrations made by one
(a new env, a new memory kind) never leak into the other tests.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _run(*args: str, cwd: Path) -> str:
    done = subprocess.run(
        [sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, f"{args} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def test_train_ppo_from_python(tmp_path) -> None:
    out = _run(str(EXAMPLES / "train_ppo_tmaze.py"), "--steps", "1024", cwd=tmp_path)
    assert "gru: mean return" in out and "none: mean return" in out and "feedforward ceiling 0.500" in out


def test_a_new_env_with_a_card(tmp_path) -> None:
    out = _run(str(EXAMPLES / "new_env.py"), "--steps", "512", cwd=tmp_path)
    assert "Parity-v0: registered; Gymnasium's check_env passes" in out
    assert "gru: mean return" in out and "none: mean return" in out


def test_a_new_memory_kind_behind_the_contract(tmp_path) -> None:
    out = _run(str(EXAMPLES / "new_memory_kind.py"), "--steps", "512", cwd=tmp_path)
    assert "elman: passes the memory contract" in out and "elman: mean return" in out


def test_a_custom_suite_yaml(tmp_path) -> None:
    suite = str(EXAMPLES / "my_suite.yaml")
    args = ("-m", "pomdp_bench.run", "--suite", suite, "--seeds", "2", "--steps", "512", "--workers", "1")
    _run(*args, "--out", str(tmp_path / "results"), cwd=tmp_path)
    csvs = sorted(p.name for p in (tmp_path / "results" / "leaderboards").glob("*.csv"))
    assert csvs and all(name.startswith("my_suite") for name in csvs), csvs


@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.glob("*.py")))
def test_every_example_is_tested(example: str) -> None:
    tested = Path(__file__).read_text()
    assert f'"{example}"' in tested, f"examples/{example} has no test here"
