"""The sequential seed rule (issue 70): borderline cells grow from 5 to 10 to 20 seeds.

The rule itself (``statistics.next_seed_stage``), its error rate at the line and its
power on the simulated families of ``tests/verdict_families.py``, a suite's
``seed_stages`` field, and a sweep that grows its cells (runs faked, verdicts real).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from verdict_families import FAMILIES

from pomdp_bench.harness import run, seed_stages
from pomdp_bench.harness.spec import RunResult, RunSpec
from pomdp_bench.harness.store import ResultStore
from pomdp_bench.harness.suites import load_suite
from pomdp_bench.reporting.statistics import (
    next_seed_stage,
    sequential_verdict,
    verdict_passes,
    verdict_survives_one_flip,
)


def test_a_cell_grows_only_while_its_verdict_does_not_hold() -> None:
    assert next_seed_stage(3, holds=True) == 5  # short of the first stage
    assert next_seed_stage(5, holds=True) is None
    assert next_seed_stage(5, holds=False) == 10
    assert next_seed_stage(10, holds=False) == 20
    assert next_seed_stage(20, holds=False) is None  # the last stage decides
    assert next_seed_stage(12, holds=False, stages=(5, 10, 20)) == 20


def _cells(name: str, cells: int, seed: int) -> tuple[np.ndarray, float, float]:
    family = FAMILIES[name]
    episodes = family.episodes(np.random.default_rng(seed), cells, 20, 100)  # [cells, seeds, episodes]
    ceiling = 0.25 if name.startswith("cue") else 0.5
    return episodes.mean(axis=-1), family.line, ceiling


@pytest.mark.parametrize("name", ["tmaze_ceiling", "tmaze_zero", "cue_partial", "normal_wide"])
def test_at_the_line_the_rule_calls_at_most_5_percent_learned(name: str) -> None:
    means, line, ceiling = _cells(name, 300, seed=1)
    learned, used = sequential_verdict(means, line, ceiling, 1.0)
    assert learned.mean() <= 0.05, (name, learned.mean())
    assert set(used) <= {5, 10, 20}


def test_the_rule_has_more_power_than_five_seeds_and_stops_at_ten_for_clean_cells() -> None:
    means, line, ceiling = _cells("tmaze_solve_0.9", 300, seed=2)
    learned, used = sequential_verdict(means, line, ceiling, 1.0)
    fixed = verdict_passes(means[:, :5], line)
    assert learned.mean() > fixed.mean() + 0.15, (learned.mean(), fixed.mean())
    assert 10 <= used.mean() <= 20
    always = np.ones((50, 20))  # every seed at the optimum: learned at 10 seeds, 10 of 10
    learned, used = sequential_verdict(always, line, ceiling, 1.0)
    assert learned.all() and (used == 10).all()
    never = np.full((50, 20), 0.5)  # every seed at the ceiling: holds at 5
    learned, used = sequential_verdict(never, line, ceiling, 1.0)
    assert not learned.any() and (used == 5).all()


def test_the_vectorised_rule_equals_the_rule_cell_by_cell() -> None:
    """sequential_verdict against next_seed_stage and verdict_survives_one_flip, one cell
    at a time, on cells of every kind of outcome."""
    means, line, ceiling = _cells("tmaze_solve_0.8", 150, seed=3)
    learned, used = sequential_verdict(means, line, ceiling, 1.0)
    for cell, got, seeds in zip(means, learned, used, strict=True):
        n = 5
        while (
            grow := next_seed_stage(n, verdict_survives_one_flip(cell[:n], line, ceiling, 1.0))
        ) is not None:
            n = grow
        assert (seeds, got) == (n, verdict_passes(cell[:n], line))
    assert set(used) == {5, 10, 20}


def test_sequential_verdict_refuses_too_few_seeds() -> None:
    with pytest.raises(ValueError, match=r"\[cells, 20\]"):
        sequential_verdict(np.ones((3, 10)), 0.75, 0.5, 1.0)


def _suite_file(tmp_path: Path, **extra: Any) -> Path:
    suite = {
        "name": "stages",
        "seeds": 5,
        "groups": [
            {"agent": "ppo", "envs": [{"id": "TMaze-v1", "bptt": [4], "memory": ["none", "gru", "lstm"]}]}
        ],
        **extra,
    }
    path = tmp_path / "stages.yaml"
    path.write_text(yaml.safe_dump(suite))
    return path


@pytest.mark.parametrize(
    ("stages", "error"),
    [([10, 10], ValueError), ([4], ValueError), ("10", TypeError), ([10.0], TypeError)],
)
def test_a_suite_refuses_seed_stages_that_do_not_rise(tmp_path: Path, stages: Any, error: type) -> None:
    with pytest.raises(error, match="seed_stages"):
        load_suite(str(_suite_file(tmp_path, seed_stages=stages)))


def _fake_return(spec: RunSpec) -> float:
    """none: the ceiling; gru: every seed solves; lstm: seeds 4, 9, 14 and 19 fail."""
    if spec.memory_kind == "none":
        return 0.5
    if spec.memory_kind == "gru":
        return 1.0
    return 0.5 if spec.seed % 5 == 4 else 1.0


def _fake_runs(backend: Any, store: Any, todo: list[RunSpec], progress: Any, *args: Any) -> Any:
    for spec in todo:
        value = _fake_return(spec)
        yield (
            spec,
            RunResult(
                status="ok", final_return=value, final_returns=[value] * 4, curve=[(10, value)], timesteps=10
            ),
        )


def test_a_sweep_grows_borderline_cells_and_a_resume_finishes_a_cut_stage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _suite_file(tmp_path, seed_stages=[10, 20])
    monkeypatch.setattr(run, "_claimed_runs", _fake_runs)
    out = tmp_path / "store"
    args = ["--suite", str(path), "--results", str(out), "--workers", "1", "--no-report"]
    assert run.main(args) == 0
    with ResultStore(out) as store:
        seeds: dict[str, list[int]] = {}
        for row in store.rows("stages"):
            seeds.setdefault(row["spec"]["memory"]["kind"], []).append(row["spec"]["seed"])
    # none holds at 5; gru (5 of 5) grows to 10 and holds at 10 of 10; lstm is 4 of 5,
    # then 8 of 10 (one flip makes it learned), and is decided at 20 (16 of 20: learned).
    assert {kind: sorted(s) for kind, s in seeds.items()} == {
        "none": list(range(5)),
        "gru": list(range(10)),
        "lstm": list(range(20)),
    }
    # A stage cut short: drop two of gru's stage runs; the resume runs exactly them.
    with ResultStore(out) as store:
        specs = [
            RunSpec(**row["spec"]) for row in store.rows("stages") if row["spec"]["memory"]["kind"] == "gru"
        ]
        missing = [s for s in specs if s.seed in (6, 8)]
        store._conn.executemany("DELETE FROM runs WHERE key = ?", [(s.key(),) for s in missing])
        store._conn.commit()
        base = [s for s in specs if s.seed < 5]
        assert sorted(s.seed for s in seed_stages.unfinished_stage_runs(store, "stages", base)) == [6, 8]
    ran: list[int] = []

    def counting(*call: Any) -> Any:
        for spec, result in _fake_runs(*call):
            ran.append(spec.seed)
            yield spec, result

    monkeypatch.setattr(run, "_claimed_runs", counting)
    assert run.main(args) == 0
    assert sorted(ran) == [6, 8]


def test_fixed_seeds_on_the_command_line_turn_the_stages_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _suite_file(tmp_path, seed_stages=[10])
    monkeypatch.setattr(run, "_claimed_runs", _fake_runs)
    out = tmp_path / "store"
    assert run.main(["--suite", str(path), "--results", str(out), "--seeds", "5", "--no-report"]) == 0
    with ResultStore(out) as store:
        assert len(store.rows("stages")) == 15
