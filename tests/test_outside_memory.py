"""A memory kind of a user's own, from a module outside the package (issue 69).

The module lives in a temporary folder on the path. A suite's ``import:`` (or
``--import``, or a ``module:kind`` name) brings it into the sweep's process and into
every spawned worker; its save names the module, so a new process loads it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pomdp_bench.harness import run
from pomdp_bench.harness.store import ResultStore
from pomdp_bench.harness.suites import expand, load_suite, suite_imports

# An exponential moving average of a projection of the input: about the smallest memory.
EMA_MODULE = '''
import torch
from torch import nn

from pomdp_bench.memory import Memory, register_memory


class EMAMemory(Memory):
    """[T, B, D] -> [T, B, H]: h_t = 0.5 h_(t-1) + 0.5 tanh(W x_t), zeroed at episode starts."""

    kind = "ema"
    trains_through_time = True

    def __init__(self, config, input_size):
        super().__init__(config, input_size, output_size=config.hidden_size)
        self.proj = nn.Linear(input_size, config.hidden_size)

    def state_spec(self):
        return (((self.config.hidden_size,), True),)

    def _forward(self, x, state, starts):
        h, out = state[0], []
        for t in range(x.shape[0]):
            h = h.masked_fill(starts[t, :, None], 0.0)
            h = 0.5 * h + 0.5 * torch.tanh(self.proj(x[t]))
            out.append(h)
        return torch.stack(out), (h,)


register_memory("ema", EMAMemory)
'''


@pytest.fixture
def ema_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``ema_kind.py`` in a folder on the path of this process and of spawned workers."""
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "ema_kind.py").write_text(EMA_MODULE)
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(folder), os.environ.get("PYTHONPATH", "")]))
    return folder


def _suite(tmp_path: Path, memory: list, **extra) -> str:
    suite = {
        "name": "mine",
        "seeds": 2,
        "groups": [
            {
                "agent": "ppo",
                "memory": memory,
                "envs": [{"id": "TMaze-v1", "env_kwargs": {"corridor_length": 2}, "bptt": [4], "steps": 512}],
            }
        ],
        **extra,
    }
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(suite))
    return str(path)


def test_a_suite_import_trains_the_kind_on_spawned_workers_and_a_new_process_loads_it(
    tmp_path: Path, ema_module: Path
) -> None:
    path = _suite(tmp_path, ["none", "ema"], **{"import": ["ema_kind"]})
    suite = load_suite(path)
    assert "ema_kind" in suite_imports(suite)
    specs = expand(suite)
    assert {(s.memory_kind, tuple(s.imports)) for s in specs} == {("none", ()), ("ema", ("ema_kind",))}
    out = tmp_path / "store"
    assert run.main(["--suite", path, "--results", str(out), "--workers", "2", "--no-report"]) == 0
    with ResultStore(out) as store:
        rows = store.rows("mine")
        assert {r["status"] for r in rows} == {"ok"}, [r["result"].get("error") for r in rows]
        key = next(r["key"] for r in rows if r["spec"]["memory"]["kind"] == "ema")
    code = (
        "from pomdp_bench.harness.store import ResultStore\n"
        f"agent = ResultStore({str(out)!r}).load_agent({key!r})\n"
        "print(agent.memory_config.kind, type(agent.policy).__name__)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=os.environ.copy())
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ema "), done.stdout


def test_a_module_kind_name_and_the_import_flag_bring_the_kind_in(tmp_path: Path, ema_module: Path) -> None:
    specs = expand(load_suite(_suite(tmp_path, ["ema_kind:ema"])))
    assert {(s.memory_kind, tuple(s.imports)) for s in specs} == {("ema", ("ema_kind",))}
    assert run._memory_filter(["ema_kind:ema"], []) == ["ema"]
    imports: list[str] = []
    assert run._memory_filter(["ema"], ["ema_kind"]) == ["ema"]
    assert run._memory_filter(None, imports) is None


def test_an_unknown_kind_says_how_to_bring_one_in(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"--import MODULE"):
        expand(load_suite(_suite(tmp_path, ["nosuchkind"])))
    with pytest.raises(ValueError, match=r"--import MODULE"):
        run._memory_filter(["nosuchkind"], [])


def test_a_module_that_does_not_import_stops_the_sweep_before_any_run(tmp_path: Path) -> None:
    (tmp_path / "broken_kind.py").write_text("raise RuntimeError('half-written')\n")
    sys.path.insert(0, str(tmp_path))
    try:
        with pytest.raises(ValueError, match=r"'broken_kind' does not import: RuntimeError: half-written"):
            expand(load_suite(_suite(tmp_path, ["none"], **{"import": ["broken_kind"]})))
        with pytest.raises(SystemExit):
            run.main(["--suite", "smoke", "--import", "broken_kind", "--dry-run"])
    finally:
        sys.path.remove(str(tmp_path))
    with pytest.raises(ValueError, match="import must be a module name"):
        load_suite(_suite(tmp_path, ["none"], **{"import": ["not a module"]}))


def test_beside_published_runs_only_the_new_kind_and_shares_the_published_table(
    tmp_path: Path, ema_module: Path, capsys: pytest.CaptureFixture
) -> None:
    from pomdp_bench.reporting.report import suite_tables

    path = _suite(tmp_path, [{"kind": "gru", "hidden_size": 8}, "none"])
    published = tmp_path / "published"
    assert run.main(["--suite", path, "--results", str(published), "--workers", "1", "--no-report"]) == 0
    with ResultStore(published) as store:
        baseline = {r["key"] for r in store.rows("mine")}
    mine = tmp_path / "mine_store"
    args = ["--suite", path, "--results", str(mine), "--workers", "1", "--no-report", "--import", "ema_kind"]
    ran: list[str] = []
    real = run._claimed_runs

    def counting(*call):
        for spec, result in real(*call):
            ran.append(spec.memory_kind)
            yield spec, result

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(run, "_claimed_runs", counting)
        assert run.main([*args, "--memory", "ema", "--beside-published", str(published)]) == 0
    assert ran == ["ema", "ema"]  # the published runs are copied, not retrained
    err = capsys.readouterr().err
    assert "2 of 2 runs of ema stand beside published runs" in err and "4 published runs copied" in err
    with ResultStore(mine) as store:
        cells = suite_tables(store, "mine").cells
        assert baseline <= {r["key"] for r in store.rows("mine")}
    assert sorted(cells["memory"]) == ["ema", "gru", "none"]  # one table
    with ResultStore(mine) as store:  # at the hidden size its entry's kinds use
        assert {
            r["spec"]["memory"]["hidden_size"]
            for r in store.rows("mine")
            if r["spec"]["memory"]["kind"] == "ema"
        } == {8}
    with pytest.raises(SystemExit):  # a budget of its own is not comparable
        run.main([*args, "--memory", "ema", "--steps", "256", "--beside-published", str(published)])
    assert "total_timesteps is 256 here and 512 there" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        run.main([*args, "--beside-published", str(published)])
    assert "--beside-published needs --memory" in capsys.readouterr().err


def test_a_cell_whose_runs_all_failed_is_reported_as_failed_runs(tmp_path: Path) -> None:
    from pomdp_bench.harness.spec import RunResult, RunSpec
    from pomdp_bench.reporting.report import write_suite

    with ResultStore(tmp_path / "store") as store:
        specs = [
            RunSpec("TMaze-v1", {}, "ppo", {"kind": "gru"}, 4, seed, 64, cell_seeds=5) for seed in range(5)
        ]
        for spec in specs:
            store.write(spec, RunResult(status="failed", error="Traceback\nValueError: kind must be one of"))
        store.link("s", specs)
        with pytest.warns(
            UserWarning, match=r"5 of their runs failed; the first, TMaze-v1 gru seed 0: ValueError"
        ):
            write_suite(store, "s", tmp_path / "out")


def test_an_sb3_vec_env_is_refused_with_what_to_pass_instead() -> None:
    pytest.importorskip("stable_baselines3")
    import gymnasium as gym
    from stable_baselines3.common.vec_env import DummyVecEnv

    from pomdp_bench import PPO

    with pytest.raises(
        TypeError, match=r"got DummyVecEnv\. It looks like a Stable-Baselines3 VecEnv: pass the env id"
    ):
        PPO(DummyVecEnv([lambda: gym.make("CartPole-v1")]))
