"""``python -m pomdp_bench.tune`` (harness/tuning.py): a small study runs end to end and
writes an ``agents/*.yaml`` entry that the settings accept; the objective censors
unsolved runs."""

from __future__ import annotations

import math
import subprocess
import sys

import optuna
import pytest
import yaml

from pomdp_bench.agents.ppo import PPOSettings
from pomdp_bench.agents.sac import SACSettings
from pomdp_bench.harness.spec import RunResult
from pomdp_bench.harness.tuning import memory_config, run_value, sample_settings
from pomdp_bench.memory import MemoryConfig


def test_an_unsolved_run_counts_as_its_cap_times_the_penalty() -> None:
    assert run_value(RunResult(status="ok", solved_steps=1234), cap=10_000, penalty=2.0) == 1234.0
    assert run_value(RunResult(status="ok", solved_steps=None), cap=10_000, penalty=2.0) == 20_000.0
    assert math.isinf(run_value(RunResult(status="failed"), cap=10_000, penalty=2.0))
    solved = RunResult(status="ok", solved_steps=1234, solved_seconds=3.5, steps_per_second=500.0)
    assert run_value(solved, cap=10_000, penalty=2.0, objective="seconds") == 3.5
    unsolved = RunResult(status="ok", steps_per_second=500.0)
    assert (
        run_value(unsolved, cap=10_000, penalty=2.0, objective="seconds") == 40.0
    )  # the cap at its speed, x2


@pytest.mark.parametrize(("agent", "settings_class"), [("ppo", PPOSettings), ("sac", SACSettings)])
def test_every_sampled_setting_is_a_field_of_the_agents_settings(agent, settings_class) -> None:
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    for _ in range(20):
        hp, hidden = sample_settings(study.ask(), agent, horizon=10)
        assert hidden in (32, 64, 128)
        settings = settings_class.make(**hp)  # the names and values are valid
        if agent == "ppo":  # 8 | n_envs: every sampled minibatch count divides the rollout
            settings.resolve(hp["n_envs"])


def test_every_sampled_memory_is_a_valid_config_and_the_search_reaches_each_choice() -> None:
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    seen: dict[str, set] = {
        "lru": set(),
        "s5": set(),
        "linear_attention": set(),
        "gtrxl": set(),
        "gru": set(),
        "mingru": set(),
        "mlstm": set(),
        "slstm": set(),
        "mamba2": set(),
        "gated_deltanet": set(),
        "rwkv7": set(),
    }
    for _ in range(40):
        trial = study.ask()
        for kind, values in seen.items():
            memory = memory_config(trial, kind, hidden=32)
            config = MemoryConfig.from_any(memory)  # the names and values are valid
            own = {
                "gru": "init",
                "gtrxl": "gate_bias",
                "mingru": "expand",
                "mlstm": "num_heads",
                "slstm": "num_heads",
                "mamba2": "d_state",
                "gated_deltanet": "num_heads",
                "rwkv7": "head_size",
            }
            values.add(getattr(config, own.get(kind, "timescales")))
    assert seen["lru"] == {None, (2.0, 100.0), (2.0, 1000.0)} == seen["s5"] == seen["linear_attention"]
    assert seen["gtrxl"] == {2.0, 0.0} and seen["gru"] == {None, "forget_bias"}
    assert seen["mingru"] == {1, 2} and seen["mlstm"] == {1, 4} == seen["slstm"]
    assert seen["mamba2"] == {16, 128} and seen["gated_deltanet"] == {1, 4} and seen["rwkv7"] == {8, 32}


def test_a_small_study_writes_an_entry_the_settings_accept(tmp_path) -> None:
    args = ["--env", "CueRecall-v0", "--env-kwargs", "delay=1", "--memory", "gru", "--trials", "2"]
    args += ["--seeds", "1", "--steps", "8000", "--results", str(tmp_path)]  # seconds: the default objective
    done = subprocess.run(
        [sys.executable, "-m", "pomdp_bench.tune", *args],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (written,) = tmp_path.glob("*.yaml")
    text = written.read_text()
    assert text.startswith("# Tuned: python -m pomdp_bench.tune --env CueRecall-v0")
    assert "# best: mean seconds to solve" in text
    # Measured: trial 0 solves, trial 1 reaches its cap faster than trial 0 solves. A run
    # at its cap scores a penalty, not a time to solve, so trial 1 is not the best.
    assert "some seeds did not solve" not in text
    entry = yaml.safe_load(text)["CueRecall-v0"]
    PPOSettings.make(**entry).resolve(entry["n_envs"])
    assert (tmp_path / "optuna.sqlite").is_file()
