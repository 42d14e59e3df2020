"""Where a result came from: the commit, and whether the source had changed."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from pomdp_bench.harness.provenance import git_commit

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.email=t@example.invalid", "-c", "user.name=t", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def test_results_written_to_leaderboards_do_not_make_the_tree_dirty(tmp_path: Path) -> None:
    (tmp_path / "leaderboards").mkdir()
    (tmp_path / "pkg").mkdir()
    (tmp_path / "leaderboards" / "runs.csv").write_text("a\n")
    (tmp_path / "pkg" / "code.py").write_text("x = 1\n")
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-q", "-m", "start")
    head = git(tmp_path, "rev-parse", "HEAD")

    assert git_commit(tmp_path / "pkg") == head
    (tmp_path / "leaderboards" / "runs.csv").write_text("a\nb\n")  # a script's output
    assert git_commit(tmp_path / "pkg") == head
    (tmp_path / "pkg" / "code.py").write_text("x = 2\n")  # the code itself
    assert git_commit(tmp_path / "pkg") == head + "+dirty"
