"""Where a result came from: the commit, whether the source had changed, and the machine
(its CPU family and model numbers and the kernel ISA torch ran), as reporting reads it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from pomdp_bench.harness.provenance import cpu_info, git_commit, machine, machine_line
from pomdp_bench.reporting.leaderboard import cpu_of, machine_fields
from pomdp_bench.reporting.report import cpu_line

NEEDS_GIT = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.email=t@example.invalid", "-c", "user.name=t", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


@NEEDS_GIT
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


X86_CPUINFO = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 1
model name\t: AMD EPYC 7763 64-Core Processor
stepping\t: 1

processor\t: 1
vendor_id\t: AuthenticAMD
cpu family\t: 99
model\t\t: 99
model name\t: Another Processor
"""
ARM_CPUINFO = """processor\t: 0
BogoMIPS\t: 50.00
CPU implementer\t: 0x41
CPU part\t: 0xd0c
"""


def test_cpuinfo_gives_the_first_processors_model_family_and_model_number() -> None:
    assert cpu_info(X86_CPUINFO) == {
        "cpu family": "25",
        "model": "1",
        "model name": "AMD EPYC 7763 64-Core Processor",
    }
    assert cpu_info(ARM_CPUINFO) == {}  # no family, no model name: the fields stay out
    assert cpu_info("") == {}


def test_the_machine_line_names_family_model_isa_and_the_settings_that_cap_it() -> None:
    environ = {
        "ONEDNN_MAX_CPU_ISA": "AVX2",
        "MKL_CBWR": "COMPATIBLE",
        "HOME": "/root",
        "ATEN_CPU_CAPABILITY": "",
    }
    line = machine_line(cpu_info(X86_CPUINFO), 2, "3.11.7", "2.5.1", "AVX2", environ)
    assert line == (
        "AMD EPYC 7763 64-Core Processor; family 25 model 1; 2 cores; Python 3.11.7; torch 2.5.1; "
        "ISA AVX2; ONEDNN_MAX_CPU_ISA=AVX2; MKL_CBWR=COMPATIBLE"
    )
    bare = machine_line({"model name": "Xeon"}, 4, "3.11.7", "absent", "", {"MKL_CBWR": "AUTO;\nX"})
    assert (
        bare == "Xeon; 4 cores; Python 3.11.7; torch absent; MKL_CBWR=AUTO, X"
    )  # one line, ; only between fields
    assert "\n" not in machine() and machine().count(";") >= 3


def test_reporting_reads_the_new_fields_and_old_strings_alike() -> None:
    new = "AMD EPYC 7763; family 25 model 1; 2 cores; Python 3.11.7; torch 2.5.1; ISA AVX2; ONEDNN_MAX_CPU_ISA=AVX2"
    old = "AMD EPYC 7763; 2 cores; Python 3.11.7; torch 2.5.1"
    assert machine_fields(new) == {
        "cpu": "AMD EPYC 7763",
        "family": "25",
        "model": "1",
        "isa": "AVX2",
        "ONEDNN_MAX_CPU_ISA": "AVX2",
    }
    assert machine_fields(old) == {"cpu": "AMD EPYC 7763"}
    assert cpu_of(new) == "AMD EPYC 7763 (family 25 model 1, ISA AVX2, ONEDNN_MAX_CPU_ISA=AVX2)"
    assert cpu_of(old) == "AMD EPYC 7763"
    runs = pd.DataFrame(
        {
            "env_id": ["TMaze-v1"] * 3,
            "env_kwargs": ['{"corridor_length":5}'] * 3,
            "agent": ["ppo"] * 3,
            "memory": ["gru", "lstm", "lstm"],
            "bptt_length": [8, 8, 8],
            "machine": [new, old, old],
        }
    )
    assert cpu_line(runs[runs["memory"] == "gru"]) == f"cpu: {cpu_of(new)} (every cell)"
    assert cpu_line(runs[runs["memory"] == "lstm"]) == "cpu: AMD EPYC 7763 (every cell)"
    assert "family 25 model 1, ISA AVX2" in cpu_line(runs)
