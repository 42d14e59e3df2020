"""Pinned CPU kernel paths: one floating-point path for a run on any x86-64 CPU.

torch picks its CPU kernels from the CPU: oneDNN's RNN and matmul primitives, MKL and
ATen's vectorised ops. So one seed follows another trajectory on an AVX-512 Intel
machine than on an AVX2 AMD one (docs/reproducibility.md). A *kernel setting* caps
all three at one instruction set, through the variables they read when they start:

=========  ==============================================================================
setting    variables
=========  ==============================================================================
native     none: the CPU's own choice (and whatever the environment sets)
avx2       ``ONEDNN_MAX_CPU_ISA=AVX2 MKL_CBWR=AVX2 ATEN_CPU_CAPABILITY=avx2``
sse41      ``ONEDNN_MAX_CPU_ISA=SSE41 MKL_CBWR=COMPATIBLE ATEN_CPU_CAPABILITY=default``
=========  ==============================================================================

``sse41`` is the setting that repeats across vendors: a short run trained the same
weights on an AVX-512 Intel Xeon and an AVX2-only AMD EPYC, for every kind compared
(``leaderboards/replication/kernel_paths_across_cpus.csv``); ``avx2`` did not. A suite
names its setting (``kernels:`` in its file); none pins one yet, since ``sse41`` costs
about 1.45x the time (``docs/reproducibility.md``).

A run's setting is part of its spec (:attr:`RunSpec.kernels`) and of its key when not
``native``. A sweep's workers take the setting before they import torch (:func:`apply`),
whatever their parent's environment holds, and each run checks that it holds
(:func:`check_active`). ``scripts/kernel_pinning_cost.py`` measures what each costs.
"""

from __future__ import annotations

import os
from pathlib import Path

KERNEL_VARIABLES = ("ONEDNN_MAX_CPU_ISA", "MKL_CBWR", "ATEN_CPU_CAPABILITY")
"""The environment variables a kernel setting sets."""

KERNEL_SETTINGS: dict[str, dict[str, str]] = {
    "native": {},
    "avx2": {"ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_CBWR": "AVX2", "ATEN_CPU_CAPABILITY": "avx2"},
    "sse41": {"ONEDNN_MAX_CPU_ISA": "SSE41", "MKL_CBWR": "COMPATIBLE", "ATEN_CPU_CAPABILITY": "default"},
}
"""Each setting's variables (``native``: none)."""

_CPU_FLAG = {"avx2": "avx2", "sse41": "sse4_1"}
_ATEN_NAME = {"avx2": "AVX2", "default": "DEFAULT"}


def check_setting(name: object) -> str:
    """``name`` if it is a kernel setting.

    Raises:
        ValueError: anything else (the message lists the settings).
    """
    if not isinstance(name, str) or name not in KERNEL_SETTINGS:
        raise ValueError(f"kernels must be one of {sorted(KERNEL_SETTINGS)}, got {name!r}")
    return name


def cpu_flags(cpuinfo: str | None = None) -> set[str]:
    """The CPU's feature flags from /proc/cpuinfo text (read when not given); empty when
    there is none (not Linux, or not x86)."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            return set()
    for line in cpuinfo.splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


def check_supported(name: str, cpuinfo: str | None = None) -> None:
    """Refuse a setting this CPU cannot run.

    Raises:
        ValueError: an unknown setting, or a CPU without its instruction set (the message
            names what this CPU can run).
    """
    check_setting(name)
    flag = _CPU_FLAG.get(name)
    flags = cpu_flags(cpuinfo)
    if flag is not None and flag not in flags:
        runnable = ["native"] + [s for s, f in _CPU_FLAG.items() if f in flags]
        raise ValueError(f"kernels {name!r} needs a CPU with {flag}; this one can run {runnable}")


def apply(name: str) -> None:
    """Set this process's variables for the setting ``name``. Call it before torch is
    imported: torch's kernels read them once. ``native`` changes nothing."""
    for variable, value in KERNEL_SETTINGS[check_setting(name)].items():
        os.environ[variable] = value


def check_active(name: str) -> None:
    """Check that this process runs the setting ``name``: its variables are set, and ATen
    runs the capability they name. ``native`` always passes.

    Raises:
        RuntimeError: the process runs another setting (torch was imported before
            :func:`apply`, or the variables were changed); the message says what is set.
    """
    wanted = KERNEL_SETTINGS[check_setting(name)]
    if not wanted:
        return
    import torch

    have = {v: os.environ.get(v) for v in KERNEL_VARIABLES}
    aten = torch.backends.cpu.get_cpu_capability()
    if have != wanted or aten != _ATEN_NAME[wanted["ATEN_CPU_CAPABILITY"]]:
        raise RuntimeError(
            f"this run asks for kernels {name!r} ({wanted}), but its process has {have} and ATen "
            f"capability {aten}: set the variables before torch is imported (a sweep's workers do)"
        )
