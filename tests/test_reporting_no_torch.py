"""Reporting reads a results store and never builds an agent, so it never imports torch
(docs/DESIGN.md, "Data flow"); nor do the store's records it reads."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pomdp_bench.memory_names import MEMORY_KINDS


def _imports_torch(module: str) -> bool:
    """Whether importing ``module`` in a fresh interpreter loads torch."""
    code = f"import sys, {module}; print('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()[-1] == "True"


@pytest.mark.parametrize(
    "module",
    [
        "pomdp_bench.reporting.report",
        "pomdp_bench.harness.store",
        "pomdp_bench.harness.spec",
        "pomdp_bench.harness.cells",
        "pomdp_bench.harness.analysis_records",
        "pomdp_bench.harness.published",
        "pomdp_bench.weights",
    ],
)
def test_reporting_and_the_records_it_reads_import_without_torch(module: str) -> None:
    assert not _imports_torch(module), f"importing {module} imports torch"


def test_the_kind_names_are_the_registrys_order() -> None:
    """Reporting's torch-free names (:mod:`pomdp_bench.memory_names`) are the memory
    package's ``MEMORY_KINDS``, the shipped kinds the registry holds first, in order."""
    from pomdp_bench.memory import MEMORY_KINDS as REGISTERED
    from pomdp_bench.memory import memory_kinds

    assert REGISTERED == MEMORY_KINDS
    assert memory_kinds()[: len(MEMORY_KINDS)] == MEMORY_KINDS
