"""docs/your-memory-kind.md: its module and its commands work as the page says (issue 69)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "your-memory-kind.md"


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", PAGE.read_text(), flags=re.S)


def _run(command: str, folder: Path) -> subprocess.CompletedProcess:
    """A page command in ``folder``, ``python`` as this interpreter, ``PYTHONPATH=.`` as given."""
    command = command.replace("PYTHONPATH=. ", "").replace("cd my_folder\n", "").strip()
    args = command.split(" ", 3) if command.startswith("python -c") else command.split()
    if args[:2] == ["python", "-c"]:
        args = ["python", "-c", command[len("python -c ") :].strip().strip('"')]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(folder), str(ROOT)])}
    return subprocess.run([sys.executable, *args[1:]], cwd=folder, env=env, capture_output=True, text=True)


def test_the_page_module_passes_the_contract_and_its_dry_run_lists_only_the_new_kind(tmp_path: Path) -> None:
    [module] = _blocks("python")[:1]
    (tmp_path / "my_memory.py").write_text(module)
    check, dry_run, _ = _blocks("bash")
    done = _run(check, tmp_path)
    assert done.returncode == 0 and "ema passes" in done.stdout, done.stderr
    done = _run(dry_run, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "stand beside published runs" in done.stderr, done.stderr
    listed = [line for line in done.stdout.splitlines() if line.startswith(("TMaze", "CueRecall", "Masked"))]
    assert listed and all(" ema " in line for line in listed), listed[:3]


def test_the_page_suite_reads_and_names_its_import(tmp_path: Path) -> None:
    from pomdp_bench.harness.suites import load_suite, suite_imports

    [suite] = _blocks("yaml")
    (tmp_path / "mine.yaml").write_text(suite)
    assert yaml.safe_load(suite)["import"] == ["my_memory"]
    assert suite_imports(load_suite(str(tmp_path / "mine.yaml"))) == ["my_memory"]
