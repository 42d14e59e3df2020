"""The dry-run's time estimate (pomdp_bench.harness.estimate) and its data (harness.rates)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from pomdp_bench.harness import run
from pomdp_bench.harness.estimate import RUN_OVERHEAD_SECONDS, describe, estimate
from pomdp_bench.harness.rates import (
    PUBLISHED_RUNS_FILE,
    RATES_FILE,
    PublishedRun,
    env_family,
    published_runs,
    rate_for,
    rates_document,
    read_run_csvs,
    write_published_runs,
)
from pomdp_bench.harness.spec import RunResult, RunSpec
from pomdp_bench.harness.store import ResultStore
from pomdp_bench.harness.suites import expand, load_suite

ROOT = Path(__file__).resolve().parent.parent
OVER = RUN_OVERHEAD_SECONDS
RATES = {"ppo": {"TMaze": {"gru": 1000.0, "lstm": 400.0}, "CueRecall": {"none": 5000.0}}, "sac": {}}


def _spec(kind: str = "gru", env_id: str = "TMaze-v1", seed: int = 0, cap: int = 100_000, **kw) -> RunSpec:
    base = dict(env_id=env_id, env_kwargs={}, agent="ppo", memory={"kind": kind}, bptt_length=11, stop={})
    return RunSpec(**{**base, **kw}, seed=seed, total_timesteps=cap)


def _published(suite: str, kind: str, trained: int, wall: float, cap: int = 100_000) -> PublishedRun:
    return PublishedRun(suite, "TMaze-v1", "{}", "ppo", kind, 11, cap, trained, wall)


# Two published runs of (ppo, TMaze-v1, gru, bptt 11): 20% of the cap in 10 s, 60% in 60 s.
PUBLISHED = [_published("memory", "gru", 20_000, 10.0), _published("memory", "gru", 60_000, 60.0)]


@pytest.mark.parametrize(
    ("env_id", "family"),
    [
        ("TMaze-v1", "TMaze"),
        ("TMaze-v0", "TMaze"),
        ("TMazeActive-v1", "TMazeActive"),
        ("MaskedCartPole-v0", "MaskedCartPole"),
        ("popgym-RepeatFirstEasy-v0", "popgym-RepeatFirstEasy"),
        ("NoVersion", "NoVersion"),
    ],
)
def test_an_env_family_is_the_id_without_its_version(env_id: str, family: str) -> None:
    assert env_family(env_id) == family


def test_a_bad_env_id_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="env_id"):
        env_family("")


def test_an_unmeasured_rate_falls_back_to_the_slowest_and_says_so() -> None:
    assert rate_for("ppo", "TMaze-v0", "gru", RATES) == (1000.0, None)  # -v0 and -v1 share a family
    assert rate_for("ppo", "TMaze-v1", "mamba", RATES) == (400.0, "slowest of ppo on TMaze")
    assert rate_for("ppo", "TMazeActive-v1", "gru", RATES) == (400.0, "slowest of ppo")
    assert rate_for("dqn", "CueRecall-v0", "gru", RATES) == (5000.0, "slowest on CueRecall")
    assert rate_for("sac", "Other-v0", "gru", RATES) == (400.0, "slowest of all")
    with pytest.raises(ValueError, match="no training rate"):
        rate_for("ppo", "TMaze-v1", "gru", {})


def test_an_unmeasured_difficulty_takes_the_same_kinds_rate_at_another() -> None:
    table = {
        "ppo": {
            "popgym-RepeatFirstEasy": {"gru": 5000.0, "none": 20000.0},
            "popgym-RepeatFirstHard": {"gru": 4000.0},
        }
    }
    assert rate_for("ppo", "popgym-RepeatFirstMedium-v0", "gru", table) == (
        4000.0,
        "ppo gru on popgym-RepeatFirst at another difficulty",
    )
    assert rate_for("ppo", "popgym-RepeatFirstMedium-v0", "none", table)[0] == 20000.0
    assert rate_for("ppo", "popgym-RepeatFirstMedium-v0", "lstm", table) == (
        4000.0,
        "slowest of ppo on popgym-RepeatFirst at any difficulty",
    )


def test_published_shares_and_speeds_give_the_estimate() -> None:
    """Two runs to do of the published cell: each expects the mean of (10 s, 60 s); a
    run of an unpublished cell trains its cap at the rates file's 1000 steps/s."""
    specs = [_spec(seed=0), _spec(seed=1), _spec(kind="gru", bptt_length=5, cap=50_000)]
    est = estimate(specs, [], suite="memory", published=PUBLISHED, rates=RATES)
    by_bptt = {c.bptt_length: c for c in est.cells}
    cell = by_bptt[11]
    assert (cell.runs, cell.share_source, cell.rate_source) == (2, "published", "published")
    assert cell.share == pytest.approx(0.4)
    assert sorted(cell.times) == pytest.approx([10 + OVER, 60 + OVER])
    assert cell.rate == pytest.approx(40_000 / 35)  # mean steps over mean seconds
    other = by_bptt[5]
    assert (other.share_source, other.rate_source, other.rate) == ("cap", "rates file", 1000.0)
    assert other.seconds == pytest.approx(50 + OVER)
    assert est.worker_seconds == pytest.approx(2 * (35 + OVER) + 50 + OVER)
    assert est.longest_seconds == pytest.approx(50 + OVER)


def test_published_runs_of_another_suite_do_not_count() -> None:
    est = estimate([_spec()], [], suite="horizon", published=PUBLISHED, rates=RATES)
    (cell,) = est.cells
    assert (cell.share_source, cell.rate_source, cell.seconds) == ("cap", "rates file", 100 + OVER)
    pooled = estimate([_spec()], [], suite=None, published=PUBLISHED, rates=RATES)
    assert pooled.cells[0].share_source == "published"


def test_a_run_without_a_stop_rule_trains_its_cap_at_the_published_speeds() -> None:
    est = estimate([_spec(stop=None)], [], suite="memory", published=PUBLISHED, rates=RATES)
    (cell,) = est.cells
    assert cell.share_source == "no stop rule"
    assert sorted(cell.times) == pytest.approx([100_000 * 10 / 20_000 + OVER, 100_000 * 60 / 60_000 + OVER])


def test_the_store_takes_precedence_over_the_published_runs(tmp_path: Path) -> None:
    """Two stored runs of the cell trained 20% and 60% of their cap at 1000 steps/s: a new
    run of it expects 40%; a run of another cell (corridor 20) takes the published share
    with the store's speed; one of a cell with neither trains its whole cap."""
    specs = [_spec(env_kwargs={"corridor_length": 10}, seed=s) for s in range(3)]
    with ResultStore(tmp_path) as store:
        for spec, trained in zip(specs[:2], (20_000, 60_000), strict=True):
            result = RunResult(
                status="ok", final_return=1.0, wall_seconds=trained / 1000, stop_reason="solved"
            )
            result.timesteps = trained
            store.write(spec, result)
        rows = store.rows()
    published = [
        PublishedRun("memory", "TMaze-v1", '{"corridor_length": 20}', "ppo", "gru", 11, 100_000, 10_000, 1.0)
    ]
    todo = [
        specs[2],
        _spec(env_kwargs={"corridor_length": 20}),
        _spec(env_kwargs={"corridor_length": 30}),
    ]
    est = estimate(todo, rows, suite="memory", published=published, rates=RATES)
    cells = {json.loads(c.env_kwargs)["corridor_length"]: c for c in est.cells}
    assert {c.rate_source for c in est.cells} == {"store"}
    assert [c.rate for c in est.cells] == pytest.approx([1000.0] * 3)
    assert (cells[10].share_source, cells[10].share) == ("store", pytest.approx(0.4))
    assert (cells[20].share_source, cells[20].share) == ("published", pytest.approx(0.1))
    assert (cells[30].share_source, cells[30].share) == ("cap", 1.0)
    assert est.worker_seconds == pytest.approx((40 + OVER) + (10 + OVER) + (100 + OVER))


def test_a_fallback_rate_is_marked_in_the_output() -> None:
    est = estimate([_spec(kind="mamba")], [], published=[], rates=RATES)
    (cell,) = est.cells
    assert cell.fallback and cell.rate_source == "fallback: slowest of ppo on TMaze"
    assert est.fallback_runs == 1
    text = "\n".join(describe(est, "local", 2, 2))
    assert "1 run(s) use a fallback rate" in text and "fallback: slowest of ppo on TMaze" in text


def test_the_interval_is_the_percentiles_of_the_resampled_times() -> None:
    """One run to do, drawing 10.5 s or 60.5 s with even odds: its 10th percentile is
    10.5 s, its 90th 60.5 s, and the point (the mean, 35.5 s) lies between."""
    est = estimate([_spec()], [], suite="memory", published=PUBLISHED, rates=RATES)
    assert est.worker_interval() == pytest.approx((10 + OVER, 60 + OVER))
    point, low, high = est.wall_seconds(workers=1)
    assert (point, low, high) == pytest.approx((35 + OVER, 10 + OVER, 60 + OVER))


def test_the_interval_contains_the_point_even_when_skewed() -> None:
    """One slow run among 19 fast ones: the mean lies above the 90th percentile of the
    draws, so the interval is widened to contain it."""
    runs = [_published("memory", "gru", 10_000, 1.0)] * 19 + [_published("memory", "gru", 100_000, 100.0)]
    est = estimate([_spec()], [], suite="memory", published=runs, rates=RATES)
    low, high = est.worker_interval()
    assert low <= est.worker_seconds <= high
    assert high == pytest.approx(est.worker_seconds)
    for workers in (1, 2, 8):
        point, low, high = est.wall_seconds(workers, cpus=2)
        assert low <= point <= high


def test_an_estimate_without_spread_has_a_point_interval() -> None:
    est = estimate([_spec(seed=s) for s in range(4)], [], published=[], rates=RATES)
    assert est.worker_seconds == pytest.approx(4 * (100 + OVER))
    assert est.worker_interval() == pytest.approx((4 * (100 + OVER),) * 2)


def test_the_wall_time_is_at_least_the_longest_run_and_workers_share_the_cpus() -> None:
    """Runs of 100.5 s (x2) and 400.5 s (x1, lstm at 400 steps/s), 601.5 s in all."""
    specs = [_spec(seed=0), _spec(seed=1), _spec(kind="lstm", cap=160_000)]
    est = estimate(specs, [], published=[], rates=RATES)
    total, longest = 2 * (100 + OVER) + 400 + OVER, 400 + OVER
    assert est.worker_seconds == pytest.approx(total)
    assert est.wall_seconds(1)[0] == pytest.approx(total)
    assert est.wall_seconds(2)[0] == pytest.approx(max(total / 2, longest))  # the longest run
    assert est.wall_seconds(2, cpus=1)[0] == pytest.approx(2 * longest)  # two workers on one CPU
    assert est.wall_seconds(4, cpus=8)[0] == pytest.approx(longest)
    with pytest.raises(ValueError, match="workers"):
        est.wall_seconds(0)
    with pytest.raises(ValueError, match="cpus"):
        est.wall_seconds(2, cpus=0)


def test_no_run_to_do_costs_nothing() -> None:
    est = estimate([], [], published=PUBLISHED, rates=RATES)
    assert (est.worker_seconds, est.longest_seconds, est.cells) == (0.0, 0.0, [])
    assert est.wall_seconds(2) == (0.0, 0.0, 0.0)


def test_an_empty_store_estimates_the_memory_suite_from_the_shipped_runs() -> None:
    """Every cell of the memory suite is published: on an empty store the estimate is the
    published runs' wall seconds of each cell, scaled to the run count, plus the overhead."""
    specs = expand(load_suite("memory"))
    est = estimate(specs, [], suite="memory")
    assert est.fallback_runs == 0
    assert {(c.share_source, c.rate_source) for c in est.cells} == {("published", "published")}
    walls: dict[tuple, list[float]] = {}
    for r in published_runs():
        if r.suite == "memory":
            walls.setdefault((r.agent, r.env_id, r.memory, r.env_kwargs, r.bptt_length), []).append(
                r.wall_seconds
            )
    expected = sum(
        c.runs * (np.mean(walls[(c.agent, c.env_id, c.kind, c.env_kwargs, c.bptt_length)]) + OVER)
        for c in est.cells
    )
    assert est.worker_seconds == pytest.approx(expected, rel=1e-6)
    low, high = est.worker_interval()
    assert low < est.worker_seconds < high


@pytest.mark.parametrize(
    "name", ["memory", "memory-long", "horizon", "horizon-long", "popgym", "popgym-40k", "parity"]
)
def test_every_cell_of_the_shipped_suites_has_a_measured_rate(name: str) -> None:
    if name.startswith("popgym"):
        pytest.importorskip("popgym")
    for spec in expand(load_suite(name), seeds=1):
        assert rate_for(spec.agent, spec.env_id, spec.memory_kind).fallback is None, spec.label()


@pytest.mark.skipif(not (ROOT / "leaderboards").is_dir(), reason="needs the repository's leaderboards/")
def test_the_shipped_files_match_the_published_csvs(tmp_path: Path) -> None:
    """agents/rates.yaml and agents/published_runs.csv are what scripts/measure_rates.py
    writes from leaderboards/*_runs.csv: rerun it after republishing."""
    paths = sorted((ROOT / "leaderboards").glob("*_runs.csv"))
    runs, machines = read_run_csvs(paths)
    write_published_runs(runs, tmp_path / PUBLISHED_RUNS_FILE)
    assert (tmp_path / PUBLISHED_RUNS_FILE).read_text() == (ROOT / "agents" / PUBLISHED_RUNS_FILE).read_text()
    text = rates_document(runs, [f"leaderboards/{p.name}" for p in paths], machines)
    assert text == (ROOT / "agents" / RATES_FILE).read_text()


def test_the_dry_run_prints_the_estimate_with_its_interval(tmp_path: Path, capsys) -> None:
    argv = ["--suite", "memory", "--dry-run", "--results", str(tmp_path)]
    assert run.main([*argv, "--workers", "2"]) == 0
    out = capsys.readouterr().out
    assert "min on 2 worker(s), 80% interval" in out and "fallback" not in out
    assert run.main([*argv, "--backend", "ray"]) == 0
    out = capsys.readouterr().out
    assert "worker-minutes" in out and "its longest run alone" in out
    assert not any(tmp_path.iterdir())  # a dry run writes nothing
