"""An own env in a suite at the first try (issue 51): a suite needs no ``seeds:``, a
missing key is named with an example, and an env without a ceiling gets a converged
empirical ceiling and a verdict from its first sweep."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from pomdp_bench.harness import run
from pomdp_bench.harness.stopping import StopMonitor, StopRule
from pomdp_bench.harness.suites import DEFAULT_SEEDS, expand, load_suite

# Small PPO settings for a 3-step task (tests/test_outside_envs.py's, with a wider head).
TINY = {
    "n_envs": 8,
    "n_steps": 16,
    "num_minibatches": 2,
    "n_epochs": 4,
    "learning_rate": 3.0e-3,
    "net_arch": [16],
}


def _write(tmp_path: Path, suite: dict) -> Path:
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(suite, sort_keys=False))
    return path


def _newcomer_suite(steps: int) -> dict:
    """What a newcomer writes: no seeds, stop: true, their module and a minimal card."""
    return {
        "name": "mine",
        "stop": True,
        "groups": [
            {
                "agent": "ppo",
                "memory": ["none", "gru"],
                "hyperparams": TINY,
                "envs": [
                    {
                        "id": "NewcomerCue-v0",
                        "import": "newcomer_env",
                        "card": {"optimal_return": 1.0},
                        "steps": steps,
                    }
                ],
            }
        ],
    }


@pytest.mark.trajectory
def test_a_newcomers_env_gets_a_ceiling_and_a_verdict_on_the_first_sweep(tmp_path, capsys) -> None:
    """The path for an own env: its module, a suite naming it with import:, a card giving
    only the optimum, one `run` call. The memory=none runs stop on a plateau, so the
    ceiling counts (empirical, not a lower bound) and the gru cell gets a verdict.
    Measured: gru scores 1.0 from its first evaluation (1,024 steps) on every seed; the
    cap is 6,000 and a plateau may stop a run from 3,000."""
    path = _write(tmp_path, _newcomer_suite(steps=6000))
    out = tmp_path / "results"
    assert run.main(["--suite", str(path), "--results", str(out), "--workers", "1"]) == 0
    err = capsys.readouterr().err
    assert "This suite imports code from: newcomer_env" in err
    assert "estimated time:" in err  # printed before the sweep starts
    table = pd.read_csv(out / "leaderboards" / "mine.csv").set_index("memory")
    none, gru = table.loc["none"], table.loc["gru"]
    assert none["n_seeds"] == gru["n_seeds"] == DEFAULT_SEEDS
    runs = pd.read_csv(out / "leaderboards" / "mine_runs.csv")
    assert set(runs.loc[runs["memory"] == "none", "stop_reason"]) == {"plateaued"}
    assert gru["ff_ceiling_source"] == "empirical" and gru["ff_ceiling"] == none["return_mean"]
    assert 0.3 <= gru["ff_ceiling"] <= 0.7  # a memoryless policy guesses the cue
    assert isinstance(gru["verdict_note"], float) and math.isnan(
        gru["verdict_note"]
    )  # no note: nothing missing
    assert (gru["learned"], none["learned"]) == (True, False)  # verdicts, not empty


def test_a_suite_without_seeds_takes_five_and_seeds_overrides_it(tmp_path, capsys) -> None:
    suite = {
        "name": "s",
        "groups": [{"agent": "ppo", "memory": ["none"], "envs": [{"id": "TMaze-v1", "steps": 500}]}],
    }
    path = _write(tmp_path, suite)
    assert load_suite(str(path)).seeds == DEFAULT_SEEDS == 5
    assert [s.seed for s in expand(load_suite(str(path)))] == [0, 1, 2, 3, 4]
    assert [s.seed for s in expand(load_suite(str(path)), seeds=2)] == [0, 1]
    assert run.main(["--suite", str(path), "--seeds", "2", "--dry-run", "--results", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "seed=1" in out and "seed=2" not in out


@pytest.mark.parametrize(
    ("remove", "example"),
    [
        (("name",), "name: my-suite"),
        (("groups",), "groups: [{agent: ppo"),
        (("groups", 0, "agent"), "agent: ppo"),
        (("groups", 0, "envs"), "envs: [{id: TMaze-v1"),
        (("groups", 0, "envs", 0, "id"), "id: TMaze-v1"),
        (("groups", 0, "memory"), "memory: [none, gru]"),
    ],
)
def test_a_missing_required_key_is_named_with_an_example(tmp_path, remove, example) -> None:
    suite = {"name": "s", "groups": [{"agent": "ppo", "memory": ["none"], "envs": [{"id": "TMaze-v1"}]}]}
    *parents, key = remove
    holder = suite
    for step in parents:
        holder = holder[step]
    del holder[key]
    with pytest.raises(ValueError, match=re.escape(f"missing required key '{key}', e.g. {example}")):
        load_suite(str(_write(tmp_path, suite)))


def test_memory_may_come_from_each_env_entry_and_a_wrong_type_is_named(tmp_path) -> None:
    suite = {"name": "s", "groups": [{"agent": "ppo", "envs": [{"id": "TMaze-v1", "memory": ["gru"]}]}]}
    assert load_suite(str(_write(tmp_path, suite))).groups[0]["envs"][0]["memory"] == ["gru"]
    suite["groups"] = {"agent": "ppo"}
    with pytest.raises(TypeError, match=r"groups must be a non-empty list, e\.g\. groups:"):
        load_suite(str(_write(tmp_path, suite)))
    (tmp_path / "empty.yaml").write_text("")
    with pytest.raises(ValueError, match="must be a mapping of keys"):
        load_suite(str(tmp_path / "empty.yaml"))


def _flat_run(rng: np.random.Generator, rule: StopRule, cap: int, optimum: float) -> StopMonitor:
    """A memoryless run of a binary task whose card knows no ceiling: every evaluation
    scores Binomial(32, 0.5) / 32."""
    monitor = StopMonitor(rule, threshold=math.nan, ceiling=math.nan, optimum=optimum, cap=cap)
    steps = 0
    while steps < cap and monitor.reason is None:
        steps += 128
        if monitor.due(steps):
            monitor.update(steps, 0.0, rng.binomial(monitor.episodes, 0.5) / monitor.episodes)
    return monitor


def test_without_a_ceiling_flat_runs_plateau_so_a_five_seed_cell_converges() -> None:
    """2,000 simulated flat runs: at least 99.5% stop as plateaued (so 5 of 5 seeds
    about 97.5% of the time; the rule of a known ceiling left about 5% at the cap),
    none before half the cap; with no optimum either, every run trains to its cap."""
    rng, rule = np.random.default_rng(3), StopRule()
    monitors = [_flat_run(rng, rule, 20_000, optimum=1.0) for _ in range(2000)]
    assert sum(m.reason == "plateaued" for m in monitors) >= 1990
    assert min(m.evaluations[-1][0] for m in monitors if m.reason) >= 10_000
    assert all(m.reason is None for m in (_flat_run(rng, rule, 20_000, optimum=math.nan) for _ in range(50)))


def test_without_a_ceiling_a_run_still_rising_goes_on() -> None:
    """Success rising linearly from 0.5 to 1.0 over the cap, 256-episode evaluations,
    the ceiling unknown: at least 80% of 300 runs go on to their cap (as
    tests/test_stopping.py asks of the rule with a known ceiling)."""
    rng, rule, cap = np.random.default_rng(4), StopRule(eval_episodes=256), 400_000
    capped = 0
    for _ in range(300):
        monitor = StopMonitor(rule, threshold=math.nan, ceiling=math.nan, optimum=1.0, cap=cap)
        steps = 0
        while steps < cap and monitor.reason is None:
            steps += 512
            if monitor.due(steps):
                monitor.update(steps, 0.0, rng.binomial(256, 0.5 + 0.5 * steps / cap) / 256)
        capped += monitor.reason is None
    assert capped >= 240, capped


def test_the_plateau_allowance_without_a_ceiling_is_the_way_left_plus_one_standard_error() -> None:
    monitor = StopMonitor(StopRule(), threshold=math.nan, ceiling=math.nan, optimum=1.0, cap=1000)
    recent, before = [0.6, 0.4, 0.5], [0.5, 0.5, 0.5]
    error = math.sqrt(np.var(recent, ddof=1) / 3)
    assert monitor.plateau_allowance(recent, before) == pytest.approx(0.05 * 0.5 + error)
    assert monitor.plateau_allowance([1.0], [1.2]) == 0.0  # past the optimum: nothing left
    known = StopMonitor(StopRule(), threshold=0.75, ceiling=0.5, optimum=1.0, cap=1000)
    assert known.plateau_allowance(recent, before) == pytest.approx(0.05 * 0.5)  # as before
