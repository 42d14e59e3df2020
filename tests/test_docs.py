"""The docs site builds as CI builds it: offline, every warning an error, every reference resolved.

``make test`` runs this (the ``docs`` extra is in the Makefile's EXTRAS); without Sphinx it skips.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytest.importorskip("sphinx")
pytest.importorskip("myst_parser")
pytest.importorskip("furo")


def test_the_docs_build_without_warnings(tmp_path) -> None:
    out = tmp_path / "html"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "sphinx",
            "-b",
            "html",
            "-W",
            "--keep-going",
            "-n",
            "-q",
            "-d",
            str(tmp_path / "doctrees"),
            str(ROOT / "docs"),
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-5000:]
    for page in (
        "index",
        "install",
        "envs",
        "agents",
        "memory-kinds",
        "harness",
        "statistics",
        "results",
        "findings",
        "time-to-an-answer",
        "throughput",
        "reproducibility",
        "DESIGN",
        "api",
        "notes/index",
    ):
        assert (out / f"{page}.html").is_file(), page
    assert (out / "_generated" / "envs" / "TMaze-v1.html").is_file()
    assert (out / "results" / "horizon.html").is_file()
    cli = (out / "_generated" / "cli.html").read_text(encoding="utf-8")
    assert "--suite" in cli and "--results" in cli
    api = (out / "api.html").read_text(encoding="utf-8")
    for name in ("PPO", "SAC", "DQN", "MemoryConfig", "build_memory", "TMazeEnv", "RunSpec", "ResultStore"):
        assert name in api, name
