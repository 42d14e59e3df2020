"""The horizon climb (``climb: true``, harness/climb.py): a ladder's next horizon runs only
once the last one is a learned cell."""

from __future__ import annotations

from pathlib import Path

import pytest

from pomdp_bench import run
from pomdp_bench.harness import climb
from pomdp_bench.harness.cells import cell_id
from pomdp_bench.harness.spec import RunSpec
from pomdp_bench.harness.store import ResultStore
from pomdp_bench.harness.suites import expand, load_suite


def spec(kind: str, horizon: int, seed: int = 0, bptt: int | None = None, agent: str = "pqn") -> RunSpec:
    return RunSpec(
        env_id="TMaze-v1",
        env_kwargs={"corridor_length": horizon},
        agent=agent,
        memory={"kind": kind},
        bptt_length=horizon + 1 if bptt is None else bptt,
        seed=seed,
        total_timesteps=1000,
        horizon=horizon,
    )


class FakeStore:
    """What next_rungs reads of a store: the status of each run key."""

    def __init__(self, status: dict[str, str]) -> None:
        self._status = status

    def status(self, keys):
        return {k: self._status[k] for k in keys if k in self._status}

    def rows(self, suite=None):
        return []  # no seed stage begun and left unfinished


def test_ladders_group_by_agent_env_kind_and_pieces_lowest_horizon_first() -> None:
    specs = [
        spec("lstm", 20),
        spec("lstm", 10),
        spec("gru", 10),
        spec("lstm", 10, bptt=5),
        spec("lstm", 10, 1),
    ]
    ladders = climb.ladders(specs)
    assert set(ladders) == {
        ("pqn", "TMaze-v1", "lstm", "long"),
        ("pqn", "TMaze-v1", "gru", "long"),
        ("pqn", "TMaze-v1", "lstm", "short"),
    }
    rungs = ladders["pqn", "TMaze-v1", "lstm", "long"]
    assert [[s.horizon for s in r] for r in rungs] == [[10, 10], [20]]
    assert {s.horizon for s in climb.first_rungs(specs)} == {10}


def test_two_cells_of_one_ladder_at_one_horizon_are_refused() -> None:
    other = spec("lstm", 10)
    other = RunSpec(**{**other.__dict__, "env_kwargs": {"corridor_length": 10, "penalty": 0.1}})
    with pytest.raises(ValueError, match="two cells at horizon 10"):
        climb.ladders([spec("lstm", 10), other])


def test_the_climb_goes_up_only_past_learned_rungs(monkeypatch) -> None:
    specs = [spec(kind, h, seed) for kind in ("lstm", "gru") for h in (10, 20, 50) for seed in (0, 1)]
    stored = {s.key(): "ok" for s in specs if s.horizon <= 20}
    verdicts = {
        tuple(cell_id(spec("lstm", 10))): True,
        tuple(cell_id(spec("lstm", 20))): True,
        tuple(cell_id(spec("gru", 10))): False,
    }
    monkeypatch.setattr(climb, "learned_cells", lambda store, suite: verdicts)
    todo, where = climb.next_rungs(FakeStore(stored), "s", specs)
    assert [(s.memory_kind, s.horizon, s.seed) for s in todo] == [("lstm", 50, 0), ("lstm", 50, 1)]
    assert where == {
        ("pqn", "TMaze-v1", "lstm", "long"): "runs horizon 50",
        ("pqn", "TMaze-v1", "gru", "long"): "stopped at 10 (not learned)",
    }
    # A rung with a run missing runs that run first; a rung without a verdict stops.
    del stored[spec("lstm", 10, 1).key()]
    todo, where = climb.next_rungs(FakeStore(stored), "s", specs)
    assert [(s.horizon, s.seed) for s in todo] == [(10, 1)]
    verdicts[tuple(cell_id(spec("gru", 10)))] = None
    assert climb.next_rungs(FakeStore(stored), "s", specs)[1]["pqn", "TMaze-v1", "gru", "long"] == (
        "stopped at 10 (no verdict)"
    )


def test_a_borderline_rung_grows_by_the_seed_stages_before_the_climb_reads_it(monkeypatch) -> None:
    specs = [spec("gru", h, seed) for h in (10, 20) for seed in range(5)]
    stored = {s.key(): "ok" for s in specs if s.horizon == 10}
    cell, ladder = tuple(cell_id(spec("gru", 10))), ("pqn", "TMaze-v1", "gru", "long")
    monkeypatch.setattr(climb, "learned_cells", lambda store, suite: {cell: False})
    monkeypatch.setattr(climb, "borderline_cells", lambda store, suite: {cell: 5})  # 4 of 5, say
    store = FakeStore(stored)
    todo, where = climb.next_rungs(store, "s", specs, stages=(10, 20))
    assert [(s.horizon, s.seed, s.cell_seeds) for s in todo] == [(10, seed, 10) for seed in range(5, 10)]
    assert where[ladder] == "grows horizon 10 to 10 seeds"
    # without stages the same rung stops the climb at its 5-seed verdict
    assert climb.next_rungs(store, "s", specs)[1][ladder] == "stopped at 10 (not learned)"
    # grown, and learned at 10 seeds: the climb goes on
    stored.update({s.key(): "ok" for s in todo})
    monkeypatch.setattr(climb, "borderline_cells", lambda store, suite: {})
    monkeypatch.setattr(climb, "learned_cells", lambda store, suite: {cell: True})
    todo, where = climb.next_rungs(store, "s", specs, stages=(10, 20))
    assert {s.horizon for s in todo} == {20} and where[ladder] == "runs horizon 20"
    # still borderline at the last stage: its verdict decides
    monkeypatch.setattr(climb, "borderline_cells", lambda store, suite: {cell: 20})
    monkeypatch.setattr(climb, "learned_cells", lambda store, suite: {cell: False})
    assert climb.next_rungs(store, "s", specs, stages=(10, 20))[1][ladder] == "stopped at 10 (not learned)"


def _climb_suite(tmp_path: Path) -> Path:
    path = tmp_path / "climb.yaml"
    path.write_text(
        "name: climb\nseeds: 1\nclimb: true\neval_episodes: 4\neval_points: 2\n"
        "groups:\n  - agent: ppo\n    memory: [gru]\n"
        "    hyperparams: {n_envs: 4, n_steps: 8, num_minibatches: 2, n_epochs: 1}\n    envs:\n"
        + "".join(
            f"      - {{id: CueRecall-v0, env_kwargs: {{delay: {d}}}, horizon: {d + 1}, bptt: [8], steps: 64}}\n"
            for d in (1, 2, 3)
        )
    )
    return path


def test_a_climbing_sweep_stops_at_the_first_rung_not_learned_and_resumes(
    tmp_path, monkeypatch, capsys
) -> None:
    suite = _climb_suite(tmp_path)
    out = tmp_path / "results"
    args = ["--suite", str(suite), "--results", str(out), "--workers", "1", "--no-report"]
    assert run.main(["--dry-run", *args[:2]]) == 0
    assert "as the store stands (1 runs)" in capsys.readouterr().out
    # One seed a cell gives no verdict: the climb runs the first rung and stops there.
    assert run.main(args) == 0
    with ResultStore(out) as store:
        assert [r["spec"]["horizon"] for r in store.rows("climb")] == [2]
    assert "climb ppo CueRecall-v0 gru long: stopped at 2 (no verdict)" in capsys.readouterr().err
    # Rung 2 learned, rung 3 not: a new sweep on the same store goes on from there.
    specs = expand(load_suite(str(suite)))
    by_horizon = {s.horizon: tuple(cell_id(s)) for s in specs}
    monkeypatch.setattr(
        climb, "learned_cells", lambda store, name: {by_horizon[2]: True, by_horizon[3]: False}
    )
    # the dry run's least is the next rung as the store stands, rung 3, not the stored first
    assert run.main(["--dry-run", *args[:4]]) == 0
    assert "as the store stands (1 runs)" in capsys.readouterr().out
    assert run.main(args) == 0
    with ResultStore(out) as store:
        assert sorted(r["spec"]["horizon"] for r in store.rows("climb")) == [2, 3]
    assert "stopped at 3 (not learned)" in capsys.readouterr().err


def test_climb_must_be_a_bool_and_takes_seed_stages(tmp_path) -> None:
    path = _climb_suite(tmp_path)
    path.write_text(path.read_text().replace("climb: true", "climb: yes please"))
    with pytest.raises(TypeError, match="climb must be true or false"):
        load_suite(str(path))
    path.write_text(path.read_text().replace("climb: yes please", "climb: true\nseed_stages: [10]"))
    suite = load_suite(str(path))
    assert suite.climb and suite.seed_stages == (10,)


def test_the_answer_suite_climbs_every_registered_kind_on_equal_terms() -> None:
    """Every shipped kind on both tasks and every rung; caps from Ni et al.'s episode counts
    times the episode's steps, the same for every kind; windows cover the episode."""
    from pomdp_bench.memory import MEMORY_KINDS

    suite = load_suite("answer")
    assert suite.climb
    specs = expand(suite, seeds=1)
    corridors = [10, 20, 50, 100, 200, 500, 1000, 1500]
    delays = [10, 20, 50, 100, 200, 500, 1000]
    episodes = {10: 20000, 20: 20000, 50: 20000, 100: 20000, 200: 16000, 500: 8000, 1000: 8000, 1500: 6700}
    for env_id, lengths, key, extra in (
        ("TMaze-v1", corridors, "corridor_length", 1),
        ("CueRecall-v0", delays, "delay", 2),
    ):
        mine = [s for s in specs if s.env_id == env_id]
        assert {s.memory_kind for s in mine} == set(MEMORY_KINDS)
        for s in mine:
            length = s.env_kwargs[key]
            T = length + extra  # an episode's steps
            # below Ni et al.'s shortest length (50), the steps of 50
            assert s.total_timesteps == (episodes[length] * T if length >= 50 else 20000 * (50 + extra))
            assert s.bptt_length == T or (s.bptt_length is None and s.memory_kind in ("none", "framestack"))
            assert s.memory.get("hidden_size") == 64 or s.memory_kind == "none"
            if s.memory_kind in ("transformer", "gtrxl", "framestack"):
                assert s.memory["window"] == T
        assert sorted({s.env_kwargs[key] for s in mine}) == lengths
        assert len(climb.ladders(mine)) == len(MEMORY_KINDS)


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (("steps: 64", "steps: 2"), "below one episode"),
        (("memory: [gru]", "memory: [{kind: transformer, window: 2}]"), "window 2 cannot cover horizon 3"),
    ],
)
def test_a_climb_that_could_not_answer_is_refused_before_any_run(tmp_path, capsys, edit, match) -> None:
    suite = _climb_suite(tmp_path)
    suite.write_text(suite.read_text().replace(*edit))
    with pytest.raises(SystemExit) as exit_info:
        run.main(["--suite", str(suite), "--results", str(tmp_path / "r"), "--dry-run"])
    assert exit_info.value.code == 2
    assert match in capsys.readouterr().err
    assert not (tmp_path / "r").exists()
