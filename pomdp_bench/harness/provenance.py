"""Where a result came from: the git commit, the machine and the time."""

from __future__ import annotations

import datetime as _dt
import os
import platform
import subprocess
import sys
from collections.abc import Mapping
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


#: Environment settings that cap or fix the CPU kernels torch runs: oneDNN's ISA cap (its
#: old name too), MKL's conditional bitwise reproducibility, and ATen's kernel choice.
ISA_SETTINGS = ("ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA", "MKL_CBWR", "ATEN_CPU_CAPABILITY")


def cpu_info(text: str) -> dict[str, str]:
    """``model name``, ``cpu family`` and ``model`` of the first processor in ``text`` (the
    text of /proc/cpuinfo); a field the text lacks is absent (ARM gives no family)."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if found:
                break  # the first processor's block ends
            continue
        name, _, value = line.partition(":")
        name = name.strip()
        if name in ("model name", "cpu family", "model") and name not in found:
            found[name] = value.strip()
    return found


def _read_cpuinfo() -> dict[str, str]:
    try:
        return cpu_info(Path("/proc/cpuinfo").read_text())
    except OSError:
        return {}


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo, else the platform's processor string."""
    return _read_cpuinfo().get("model name") or platform.processor() or platform.machine()


def kernel_isa() -> str:
    """The CPU capability ATen dispatches its kernels to (``torch.backends.cpu.
    get_cpu_capability()``: ``AVX2``, ``AVX512``, ``DEFAULT``, ...), or ``""`` without torch."""
    try:
        import torch

        return str(torch.backends.cpu.get_cpu_capability())
    except (ImportError, AttributeError):
        return ""


def _field(value: object) -> str:
    """``value`` as one ``;``-free field of the one-line machine string."""
    return " ".join(str(value).replace(";", ",").split())


def machine_line(
    cpu: dict[str, str],
    cores: int | None,
    python: str,
    torch_version: str,
    isa: str,
    environ: Mapping[str, str],
) -> str:
    """The machine string from its parts (:func:`machine` reads them from this machine).

    ``; ``-separated fields: the CPU model; ``family F model M`` where /proc/cpuinfo gives
    them; the cores; Python; torch; ``ISA X`` (ATen's kernels) where torch gives it; and
    ``NAME=value`` for each of :data:`ISA_SETTINGS` that is set.
    """
    fields = [_field(cpu.get("model name") or platform.processor() or platform.machine())]
    if "cpu family" in cpu and "model" in cpu:
        fields.append(f"family {_field(cpu['cpu family'])} model {_field(cpu['model'])}")
    fields += [f"{cores} cores", f"Python {python}", f"torch {torch_version}"]
    if isa:
        fields.append(f"ISA {_field(isa)}")
    fields += [f"{name}={_field(environ[name])}" for name in ISA_SETTINGS if environ.get(name)]
    return "; ".join(fields)


def machine(kernels: str = "native") -> str:
    """The machine, on one line: CPU model, family and model numbers, cores, Python and
    torch versions, the kernel ISA torch ran and the settings that cap it
    (:func:`machine_line`).

    ``kernels``: the kernel setting (:mod:`~pomdp_bench.harness.kernels`) the runs train
    under. A setting other than ``native`` is read in a fresh Python that takes it before
    torch starts, as a sweep's workers do, so the string names the ISA they ran.
    """
    from pomdp_bench.harness.kernels import KERNEL_SETTINGS, check_setting

    setting = KERNEL_SETTINGS[check_setting(kernels)]
    if setting and any(os.environ.get(name) != value for name, value in setting.items()):
        code = "from pomdp_bench.harness.provenance import machine; print(machine())"
        done = subprocess.run(
            [sys.executable, "-c", code],
            env={**os.environ, **setting},
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stdout.strip()
    try:
        import torch

        torch_version = torch.__version__
    except ImportError:
        torch_version = "absent"
    return machine_line(
        _read_cpuinfo(), os.cpu_count(), platform.python_version(), torch_version, kernel_isa(), os.environ
    )


def now() -> str:
    """The current UTC time, ISO 8601 to the second."""
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
