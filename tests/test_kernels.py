"""Pinned CPU kernel paths (harness/kernels.py): a run asks for one, its workers take it
before torch starts, whatever their parent's environment holds, and it counts in the key."""

from __future__ import annotations

import dataclasses
import sqlite3
from pathlib import Path

import pytest
from test_claims import tiny_suite

from pomdp_bench.harness import kernels, run
from pomdp_bench.harness.spec import RunSpec
from pomdp_bench.harness.training import execute

AVX2_CPU = "processor\t: 0\nflags\t\t: fpu sse4_1 avx avx2 fma\n"
OLD_CPU = "processor\t: 0\nflags\t\t: fpu sse4_1\n"


def spec(**changes: object) -> RunSpec:
    base = RunSpec(
        env_id="CueRecall-v0",
        env_kwargs={"delay": 2},
        agent="ppo",
        memory={"kind": "none"},
        bptt_length=None,
        seed=0,
        total_timesteps=64,
    )
    return dataclasses.replace(base, **changes)


def test_a_setting_is_checked_and_counts_in_the_key_only_when_pinned() -> None:
    native = spec()
    assert native.kernels == "native" and "kernels" not in native._identity()  # old keys hold
    assert spec(kernels="avx2").key() != native.key() != spec(kernels="sse41").key()
    with pytest.raises(
        ValueError, match=r"kernels must be one of \['avx2', 'native', 'sse41'\], got 'avx512'"
    ):
        spec(kernels="avx512")
    assert RunSpec.from_dict({k: v for k, v in native.to_dict().items() if k != "kernels"}) == native


def test_a_cpu_without_the_instruction_set_is_refused() -> None:
    kernels.check_supported("avx2", AVX2_CPU)
    kernels.check_supported("native", "")
    with pytest.raises(ValueError, match=r"needs a CPU with avx2; this one can run \['native', 'sse41'\]"):
        kernels.check_supported("avx2", OLD_CPU)
    assert kernels.cpu_flags("no flags here") == set()


def test_a_pinned_run_in_a_process_without_its_setting_fails_and_says_why(monkeypatch) -> None:
    for variable in kernels.KERNEL_VARIABLES:
        monkeypatch.delenv(variable, raising=False)
    kernels.check_active("native")  # nothing to check
    with pytest.raises(RuntimeError, match="set the variables before torch is imported"):
        kernels.check_active("avx2")
    result = execute(spec(kernels="avx2"))
    assert result.status == "failed" and "asks for kernels 'avx2'" in result.error


def _final_returns(results: Path) -> dict[str, float]:
    with sqlite3.connect(results / "results.sqlite") as conn:
        return dict(conn.execute("SELECT key, final_return FROM runs WHERE status = 'ok'"))


@pytest.mark.skipif("avx2" not in kernels.cpu_flags(), reason="this CPU has no AVX2")
def test_a_pinned_sweep_repeats_run_for_run_whatever_the_parents_kernel_variables(
    tmp_path, monkeypatch
) -> None:
    """The same suite pinned to avx2, from a clean environment and from one set to the
    SSE4.1 setting: the workers take avx2 either way, so every final return is equal."""
    suite = tiny_suite(tmp_path, steps=256)
    returns = []
    for name, outer in (("clean", {}), ("sse41", kernels.KERNEL_SETTINGS["sse41"])):
        for variable in kernels.KERNEL_VARIABLES:
            monkeypatch.delenv(variable, raising=False)
        for variable, value in outer.items():
            monkeypatch.setenv(variable, value)
        results = tmp_path / name
        argv = ["--suite", str(suite), "--results", str(results), "--kernels", "avx2", "--workers", "2"]
        assert run.main([*argv, "--no-report"]) in (0, None)
        returns.append(_final_returns(results))
    assert len(returns[0]) == 4 and returns[0] == returns[1]


def test_a_suite_names_its_kernels_and_the_command_line_overrides_them(tmp_path: Path) -> None:
    from pomdp_bench.harness.suites import expand, load_suite

    path = tmp_path / "pinned.yaml"
    path.write_text(
        "name: pinned\nkernels: avx2\ngroups:\n  - agent: ppo\n    memory: [none]\n    envs: [{id: TMaze-v1}]\n"
    )
    suite = load_suite(str(path))
    assert {s.kernels for s in expand(suite)} == {"avx2"}
    assert {s.kernels for s in expand(suite, kernels="native")} == {"native"}
    path.write_text(path.read_text().replace("avx2", "avx512"))
    with pytest.raises(ValueError, match="suite pinned: kernels must be one of"):
        load_suite(str(path))


def test_the_machine_string_names_the_pinned_path() -> None:
    from pomdp_bench.harness import provenance

    line = provenance.machine("sse41")
    assert "ISA DEFAULT" in line and "ONEDNN_MAX_CPU_ISA=SSE41" in line, line
