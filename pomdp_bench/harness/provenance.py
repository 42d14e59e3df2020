"""Where a result came from: the git commit, the machine and the time."""

from __future__ import annotations

import datetime as _dt
import os
import platform
import subprocess
from pathlib import Path


def git_commit(path: str | Path | None = None) -> str:
    """The commit of the source tree (``+dirty`` if it has uncommitted changes), or ``""``.

    Changes under ``leaderboards/`` do not count: the scripts write their results
    there, so a second run into the same CSV would otherwise call itself dirty.
    """
    where = Path(path) if path else Path(__file__).resolve().parent
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=where, capture_output=True, text=True, check=True, timeout=10
        ).stdout.strip()
        dirty = subprocess.run(
            [
                "git",
                "status",
                "--porcelain",
                "--untracked-files=no",
                "--",
                ":(top)",
                ":(top,exclude)leaderboards",
            ],
            cwd=where,
            capture_output=True,
            text=True,
            check=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""
    return commit + ("+dirty" if dirty else "")


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo, else the platform's processor string."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine() -> str:
    """CPU model, core count, Python and torch versions, on one line."""
    try:
        import torch

        torch_version = torch.__version__
    except ImportError:
        torch_version = "absent"
    return f"{cpu_model()}; {os.cpu_count()} cores; Python {platform.python_version()}; torch {torch_version}"


def now() -> str:
    """The current UTC time, ISO 8601 to the second."""
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
