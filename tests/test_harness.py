"""The harness: suites, store, resume after SIGKILL, failures, leaderboards, report, Ray."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from synthetic_rows import stored_row

from pomdp_bench.envs.cards import get_card
from pomdp_bench.harness import migrations, run
from pomdp_bench.harness.spec import RunResult, RunSpec
from pomdp_bench.harness.store import ResultStore
from pomdp_bench.harness.suites import TIME_KINDS, available_suites, expand, load_suite
from pomdp_bench.harness.training import build_agent, execute
from pomdp_bench.memory import MEMORY_KINDS
from pomdp_bench.reporting import leaderboard, statistics
from pomdp_bench.reporting.report import suite_tables, write_reports

TINY_PPO = {"n_envs": 4, "n_steps": 8, "num_minibatches": 2, "n_epochs": 1}


def tiny_suite(tmp_path: Path, name: str = "tiny", seeds: int = 2, steps: int = 64, extra: str = "") -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(
        textwrap.dedent(
            f"""\
            name: {name}
            description: a tiny test suite
            seeds: {seeds}
            eval_episodes: 4
            eval_points: 2
            groups:
              - agent: ppo
                memory: [none, gru]
                hyperparams: {json.dumps(TINY_PPO)}
                envs:
                  - id: CueRecall-v0
                    env_kwargs: {{delay: 2}}
                    horizon: 3
                    bptt: [4, 8]
                    steps: {steps}
            """
        )
        + extra
    )
    return path


def test_shipped_suites_parse_and_expand() -> None:
    assert {"smoke", "memory", "horizon", "parity"} <= set(available_suites())
    for name in available_suites():
        specs = expand(load_suite(name))
        assert specs, name
        assert len({s.key() for s in specs}) == len(specs), f"{name} has duplicate runs"


def test_runs_are_listed_seed_by_seed_so_compared_agents_take_turns() -> None:
    specs = expand(load_suite("parity"))
    assert [(s.seed, s.agent) for s in specs[:4]] == [(0, "ppo"), (0, "sb3_ppo"), (1, "ppo"), (1, "sb3_ppo")]
    assert [s.seed for s in specs] == sorted(s.seed for s in specs)


def test_memory_suite_covers_the_grid() -> None:
    suite = load_suite("memory")
    specs = expand(suite)
    assert suite.seeds >= 5
    ppo = [s for s in specs if s.agent == "ppo"]
    assert {s.env_id for s in ppo} == {"MaskedCartPole-v0", "TMaze-v1", "CueRecall-v0", "TMazeActive-v1"}
    # Every kind; the later ones (lru, s5, ..., rwkv7) on T-Maze and cue recall only.
    assert {s.memory_kind for s in ppo} == set(MEMORY_KINDS)
    for env_id in {s.env_id for s in ppo}:
        lengths = sorted({s.bptt_length for s in ppo if s.env_id == env_id and s.memory_kind in TIME_KINDS})
        horizon = next(s.horizon for s in ppo if s.env_id == env_id)
        assert len(lengths) >= 2, env_id
        assert lengths[0] < horizon + 1 <= lengths[-1], (
            f"{env_id}: {lengths} should straddle horizon {horizon}"
        )
    sac = [s for s in specs if s.agent == "sac" and s.memory_kind in TIME_KINDS]
    assert len({s.bptt_length for s in sac}) >= 2  # two sequence lengths or more
    assert all(s.stop is not None for s in specs)  # budgets are caps
    cells = {(s.env_id, s.agent, s.memory_kind, s.bptt_length) for s in specs}
    for cell in cells:
        assert sum((s.env_id, s.agent, s.memory_kind, s.bptt_length) == cell for s in specs) == suite.seeds


def test_suite_errors_are_clear(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown suite 'nope'; available suites"):
        load_suite("nope")
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "name: bad\nseeds: 1\ngroups:\n  - agent: ppo\n    memory: [gru]\n    envs: [{id: TMaze-v0, bpt: [4]}]\n"
    )
    with pytest.raises(ValueError, match=r"unknown keys \['bpt'\]"):
        load_suite(str(bad))


def test_budgets_come_from_the_card_scaled_by_env_then_suite(tmp_path: Path) -> None:
    path = tmp_path / "budgets.yaml"
    path.write_text(
        "name: budgets\nseeds: 1\nbudget_scale: 0.5\ngroups:\n  - agent: ppo\n    memory: [none]\n"
        "    envs:\n      - {id: TMaze-v0}\n      - {id: CueRecall-v0, budget_scale: 0.25}\n"
    )
    budgets = {s.env_id: s.total_timesteps for s in expand(load_suite(str(path)))}
    assert budgets == {
        "TMaze-v0": round(get_card("TMaze-v0").budget_for("ppo") * 0.5),
        "CueRecall-v0": round(get_card("CueRecall-v0").budget_for("ppo") * 0.25),
    }
    path.write_text(path.read_text().replace("0.25", "-1"))
    with pytest.raises(ValueError, match="budget_scale"):
        load_suite(str(path))


def test_an_env_entry_can_set_its_own_evaluation_episodes(tmp_path: Path) -> None:
    path = tmp_path / "episodes.yaml"
    path.write_text(
        "name: episodes\nseeds: 1\neval_episodes: 20\ngroups:\n  - agent: ppo\n    memory: [none]\n"
        "    envs:\n      - {id: TMaze-v0, eval_episodes: 100}\n      - {id: CueRecall-v0}\n"
    )
    episodes = {s.env_id: s.eval_episodes for s in expand(load_suite(str(path)))}
    assert episodes == {"TMaze-v0": 100, "CueRecall-v0": 20}
    path.write_text(path.read_text().replace("eval_episodes: 100", "eval_episodes: 0"))
    with pytest.raises(ValueError, match="TMaze-v0: eval_episodes must be >= 1, got 0"):
        load_suite(str(path))


def test_an_env_entry_can_set_its_own_seed_count(tmp_path: Path) -> None:
    """A cell whose verdict needs more seeds gets them without changing the others; a
    seed's run is the same spec whatever the count (its key and agent seed hold)."""
    path = tmp_path / "seeds.yaml"
    path.write_text(
        "name: seeds\nseeds: 2\ngroups:\n  - agent: ppo\n    memory: [none]\n"
        "    envs:\n      - {id: TMaze-v0, seeds: 4}\n      - {id: CueRecall-v0}\n"
    )
    specs = expand(load_suite(str(path)))
    seeds = {env: sorted(s.seed for s in specs if s.env_id == env) for env in ("TMaze-v0", "CueRecall-v0")}
    assert seeds == {"TMaze-v0": [0, 1, 2, 3], "CueRecall-v0": [0, 1]}
    assert [s.seed for s in specs] == [0, 0, 1, 1, 2, 3]  # seed by seed, as a sweep runs them
    assert {(s.env_id, s.cell_seeds) for s in specs} == {("TMaze-v0", 4), ("CueRecall-v0", 2)}
    two = {s.key(): s.agent_seed() for s in expand(load_suite(str(path)), seeds=2)}
    assert {s.key(): s.agent_seed() for s in specs if s.seed < 2} == two  # --seeds overrides the entry
    path.write_text(path.read_text().replace("seeds: 4", "seeds: 0"))
    with pytest.raises(ValueError, match="TMaze-v0: seeds must be >= 1, got 0"):
        load_suite(str(path))


def test_replace_suite_publishes_a_fresh_measurement_and_keeps_other_suites(tmp_path: Path) -> None:
    specs = expand(load_suite(str(tiny_suite(tmp_path))))
    old, shared, fresh = specs[0], specs[1], specs[2]
    with ResultStore(tmp_path / "published") as published, ResultStore(tmp_path / "fresh") as source:
        for spec in (old, shared):
            published.write(spec, RunResult(status="ok", final_return=0.0, curve=[(8, 0.0)]))
        published.link("tiny", [old, shared])
        published.link("other", [shared])
        published.finish_sweep(published.start_sweep("tiny", "old command", "a", "m"), 1.0, 2)
        source.write(fresh, RunResult(status="ok", final_return=1.0, curve=[(8, 0.5), (16, 1.0)]))
        source.link("tiny", [fresh])
        source.finish_sweep(source.start_sweep("tiny", "new command", "b", "m"), 2.0, 1)

        assert published.replace_suite("tiny", source) == 1
        assert [r["key"] for r in published.rows("tiny")] == [fresh.key()]
        assert [r["key"] for r in published.rows("other")] == [shared.key()]  # still linked: kept
        assert published.status([old.key(), shared.key(), fresh.key()]) == {
            shared.key(): "ok",
            fresh.key(): "ok",
        }
        assert published.curves([fresh.key()]) == [(fresh.key(), 8, 0.5), (fresh.key(), 16, 1.0)]
        assert [s["command"] for s in published.sweeps("tiny")] == ["new command"]
        with pytest.raises(ValueError, match="holds no runs of suite 'nope'"):
            published.replace_suite("nope", source)


def test_copy_runs_publishes_added_runs_and_keeps_the_published_ones(tmp_path: Path) -> None:
    specs = expand(load_suite(str(tiny_suite(tmp_path))))
    kept, added = specs[0], specs[1]
    with ResultStore(tmp_path / "published") as published, ResultStore(tmp_path / "fresh") as source:
        published.write(kept, RunResult(status="ok", final_return=0.0, curve=[(8, 0.0)]))
        published.link("tiny", [kept])
        for spec, value in ((kept, 1.0), (added, 0.5)):  # the sweep repeated the published run
            source.write(spec, RunResult(status="ok", final_return=value, curve=[(8, value)]))
        source.link("tiny", [kept, added])

        assert published.copy_runs("tiny", source, [added.key()]) == 1
        rows = {r["key"]: r["result"]["final_return"] for r in published.rows("tiny")}
        assert rows == {kept.key(): 0.0, added.key(): 0.5}  # the published run is untouched
        assert published.curves([added.key()]) == [(added.key(), 8, 0.5)]
        with pytest.raises(ValueError, match=r"holds run .* already"):
            published.copy_runs("tiny", source, [kept.key()])
        with pytest.raises(ValueError, match="holds no run 'nope'"):
            published.copy_runs("tiny", source, ["nope"])


def test_two_cells_of_one_leaderboard_row_are_refused(tmp_path: Path) -> None:
    """Cells that differ only in settings the leaderboard does not show (here the
    entropy bonus) would pool their runs into one row: the tables refuse them, naming
    the row; once the old cell is unlinked they are written."""
    path = tmp_path / "twins.yaml"
    path.write_text(
        "name: twins\nseeds: 1\ngroups:\n  - agent: ppo\n    memory: [gru]\n    envs:\n"
        "      - {id: TMaze-v1, bptt: [11], steps: 64, hyperparams: {ent_coef: 0.01}}\n"
        "      - {id: TMaze-v1, bptt: [11], steps: 64, hyperparams: {ent_coef: 0.03}}\n"
    )
    old, new = expand(load_suite(str(path)))
    with ResultStore(tmp_path / "store") as store:
        for spec in (old, new):
            store.write(spec, RunResult(status="ok", final_return=0.5, curve=[(64, 0.5)]))
        store.link("twins", [old, new])
        with pytest.raises(ValueError, match=r"TMaze-v1 .* ppo gru bptt=11 seed=0"):
            suite_tables(store, "twins")
        store.unlink_stale("twins", [new.key()])
        assert len(suite_tables(store, "twins").cells) == 1


def test_unlink_stale_drops_the_runs_of_changed_cells(tmp_path: Path) -> None:
    specs = expand(load_suite(str(tiny_suite(tmp_path))))
    old, kept = specs[0], specs[1]
    with ResultStore(tmp_path / "store") as store:
        for spec in (old, kept):
            store.write(spec, RunResult(status="ok", final_return=0.0, curve=[(8, 0.0)]))
        store.link("tiny", [old, kept])
        store.link("other", [old])
        assert store.unlink_stale("tiny", [kept.key()]) == [old.key()]
        assert [r["key"] for r in store.rows("tiny")] == [kept.key()]
        assert [r["key"] for r in store.rows("other")] == [old.key()]  # other suites keep it
        assert store.unlink_stale("tiny", [kept.key()]) == []


def test_spec_key_is_stable_and_complete() -> None:
    spec = expand(load_suite("smoke"))[0]
    assert spec.key() == RunSpec.from_dict(json.loads(json.dumps(spec.to_dict()))).key()
    for change in ({"seed": 7}, {"total_timesteps": 5}, {"hyperparams": {"n_epochs": 3}}, {"version": "9"}):
        assert RunSpec(**{**spec.to_dict(), **change}).key() != spec.key()


def test_store_writes_one_row_per_run_and_replaces_failures(tmp_path: Path) -> None:
    spec = expand(load_suite(str(tiny_suite(tmp_path))))[0]
    with ResultStore(tmp_path) as store:
        store.write(spec, RunResult(status="failed", error="boom"))
        assert store.status([spec.key()]) == {spec.key(): "failed"}
        store.write(spec, RunResult(status="ok", final_return=1.0, curve=[(8, 0.5), (16, 1.0)]))
        assert store.status([spec.key()]) == {spec.key(): "ok"}
        assert store.curves([spec.key()]) == [(spec.key(), 8, 0.5), (spec.key(), 16, 1.0)]
    with sqlite3.connect(tmp_path / "results.sqlite") as conn:
        assert conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 1


def test_a_failing_run_is_recorded_and_the_sweep_goes_on(tmp_path: Path) -> None:
    path = tiny_suite(tmp_path, seeds=1, extra="")
    text = path.read_text().replace("bptt: [4, 8]", "bptt: [4, 5]")  # 5 does not divide the piece length
    path.write_text(text)
    assert run.main(["--suite", str(path), "--out", str(tmp_path), "--workers", "1", "--no-report"]) == 0
    with ResultStore(tmp_path) as store:
        rows = store.rows()
    status = {(r["spec"]["memory"]["kind"], r["spec"]["bptt_length"]): r["status"] for r in rows}
    assert status == {("none", None): "ok", ("gru", 4): "ok", ("gru", 5): "failed"}
    failed = next(r for r in rows if r["status"] == "failed")
    assert "bptt_length" in failed["result"]["error"]
    # Rerunning skips everything; --retry-failed reruns only the failure (and it fails again).
    assert run.main(["--suite", str(path), "--out", str(tmp_path), "--dry-run"]) == 0
    assert run.main(["--suite", str(path), "--out", str(tmp_path), "--workers", "1", "--retry-failed"]) == 0
    with ResultStore(tmp_path) as store:
        assert len(store.rows()) == 3


def test_execute_turns_nan_into_a_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = RunSpec("CueRecall-v0", {"delay": 2}, "ppo", {"kind": "none"}, None, 0, 32, TINY_PPO, 4, 1, 3, "0")
    from pomdp_bench.agents.ppo import PPO

    monkeypatch.setattr(PPO, "evaluate", lambda self, n, **kw: np.full(n, np.nan))
    result = execute(spec)
    assert result.status == "failed" and "final evaluation return is nan" in result.error


def _finished(store_path: Path) -> int:
    if not store_path.is_file():  # connecting would create it, as a database of another layout
        return 0
    try:
        with contextlib.closing(sqlite3.connect(f"file:{store_path}?mode=ro", uri=True, timeout=5)) as conn:
            return conn.execute("SELECT COUNT(*) FROM runs WHERE status = 'ok'").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def test_sigkill_mid_sweep_then_resume(tmp_path: Path) -> None:
    path = tiny_suite(tmp_path, seeds=3, steps=1536)  # 9 runs of a second or two each
    cmd = [
        sys.executable,
        "-m",
        "pomdp_bench.run",
        "--suite",
        str(path),
        "--out",
        str(tmp_path),
        "--workers",
        "1",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 120
    while _finished(tmp_path / "results.sqlite") < 2 and time.time() < deadline and proc.poll() is None:
        time.sleep(0.2)
    assert proc.poll() is None, "the sweep ended before it could be killed"
    time.sleep(0.5)  # let the next run get under way
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    with ResultStore(tmp_path) as store:
        before = {r["key"]: r["created_at"] for r in store.rows()}
    assert 2 <= len(before) < 9
    subprocess.run([*cmd, "--no-report"], check=True, capture_output=True)
    with ResultStore(tmp_path) as store:
        rows = store.rows()
    keys = [r["key"] for r in rows]
    assert len(keys) == len(set(keys)) == 9
    assert {s.key() for s in expand(load_suite(str(path)))} == set(keys)
    after = {r["key"]: r["created_at"] for r in rows}
    assert all(after[k] == v for k, v in before.items()), "finished runs were run again"


def _synthetic_runs(returns: dict[tuple[str, int | None], list[float]], env_id: str) -> pd.DataFrame:
    rows = []
    for (kind, bptt), values in returns.items():
        for seed, value in enumerate(values):
            spec = RunSpec(env_id, {}, "ppo", {"kind": kind}, bptt, seed, 100, {}, 4, 1, 10, "0.1.0")
            result = RunResult(status="ok", final_return=value, steps_per_second=1000.0, wall_seconds=1.0)
            rows.append(stored_row(spec, result))
    return leaderboard.runs_frame(rows, "synthetic")


def test_cell_statistics_and_ceilings() -> None:
    runs = _synthetic_runs(
        {
            ("none", None): [0.5, 0.45, 0.55, 0.5, 0.5],
            ("gru", 4): [0.5, 0.6, 0.4, 0.5, 0.5],
            ("gru", 16): [1.0, 0.95, 1.0, 0.9, 1.0],
        },
        "TMaze-v0",
    )
    cells = leaderboard.cells_frame(runs).set_index(["memory", "bptt_length"])
    long = cells.loc[("gru", 16)]
    assert long["n_seeds"] == 5 and long["return_mean"] == pytest.approx(0.97)
    assert long["return_ci_low"] <= long["return_mean"] <= long["return_ci_high"]
    assert long["ff_ceiling"] == 0.5 and long["ff_ceiling_source"] == "analytic"
    assert long["normalized_score"] == pytest.approx((0.97 - 0.5) / 0.5)
    assert bool(long["learned"]) and "beats_ceiling" not in cells.columns
    assert not bool(cells.loc[("gru", 4)]["learned"])
    assert long["pieces"] == "long" and cells.loc[("gru", 4)]["pieces"] == "short"
    for _, cell in cells.iterrows():
        midpoint = (cell["ff_ceiling"] + cell["optimal_return"]) / 2
        assert bool(cell["learned"]) == bool(cell["return_ci_low"] > midpoint)


@pytest.mark.parametrize(("bptt", "expected"), [(4, 0.0), (8, 0.5), (12, 1.0)])
def test_cue_reach_is_what_ppo_measures_and_what_the_layout_gives(bptt: int, expected: float) -> None:
    """Corridor 5: episodes of 6 steps, the cue 5 steps before the decision. Pieces of 4
    never hold both; pieces of 8 hold both for every other episode (they are fixed
    windows of the rollout, not aligned to episodes); pieces of 12 for every episode."""
    spec = RunSpec(
        "TMaze-v1", {"corridor_length": 5}, "ppo", {"kind": "gru", "hidden_size": 8}, bptt, 0, 3 * 2 * 48,
        {"n_envs": 2, "n_steps": 48, "num_minibatches": 1}, 4, 1, 5, "test",
    )  # fmt: skip
    agent = build_agent(spec)
    agent.learn(spec.total_timesteps)
    assert agent.gradient_reach.tolist() == migrations.layout_reach(spec.to_dict())
    assert leaderboard.cue_reach(agent.gradient_reach, 5) == expected


def test_empirical_ceiling_is_the_best_memoryless_cell() -> None:
    runs = _synthetic_runs(
        {("none", None): [50.0, 40.0, 45.0, 55.0, 60.0], ("gru", 8): [480.0, 500, 490, 470, 500]},
        "MaskedCartPole-v0",
    )
    cells = leaderboard.cells_frame(runs)
    assert set(cells["ff_ceiling_source"]) == {"empirical"}
    assert set(cells["ff_ceiling"]) == {50.0}
    assert cells["optimal_return"].iloc[0] == get_card("MaskedCartPole-v0").optimal_return


def test_cells_are_published_only_once_every_seed_has_run() -> None:
    runs = _synthetic_runs(
        {("none", None): [0.5, 0.45, 0.55, 0.5, 0.5], ("gru", 4): [0.5, 0.6, 0.4]},  # a sweep cut mid-cell
        "TMaze-v0",
    )
    finished = leaderboard.finished_cells(runs)
    assert set(finished["memory"]) == {"none"} and len(finished) == 5
    assert set(leaderboard.cells_frame(finished)["n_seeds"]) == {5}


def test_a_cell_with_its_own_seed_count_waits_for_all_of_them() -> None:
    """Cells declare their seed counts (an env entry's ``seeds``): a 20-seed cell with 5
    run waits though the 5-seed cells are done, and is listed once its 20 have run,
    beside cells whose runs were stored before counts were recorded."""
    base = {("none", None): [0.5] * 5, ("gru", 4): [1.0] * 5}
    runs = _synthetic_runs({**base, ("lstm", 4): [1.0] * 5}, "TMaze-v0")
    runs["cell_seeds"] = np.where(runs["memory"] == "lstm", 20, 5)
    assert set(leaderboard.finished_cells(runs)["memory"]) == {"none", "gru"}
    runs = _synthetic_runs({**base, ("lstm", 4): [1.0] * 20}, "TMaze-v0")
    runs["cell_seeds"] = np.where(runs["memory"] == "lstm", 20, math.nan)  # the others: older runs
    finished = leaderboard.finished_cells(runs)
    assert dict(leaderboard.cells_frame(finished)[["memory", "n_seeds"]].values) == {
        "none": 5,
        "gru": 5,
        "lstm": 20,
    }


def test_interval_uses_the_bootstrap_and_handles_degenerate_cells() -> None:
    low, high = statistics.interval(np.array([1.0, 2.0, 3.0, 4.0, 5.0]))
    assert 1.0 < low < 3.0 < high < 5.0
    assert statistics.interval(np.array([500.0] * 5)) == (500.0, 500.0)
    assert all(math.isnan(v) for v in statistics.interval(np.array([])))


def test_sweep_writes_leaderboards_and_report_regenerates_them(tmp_path: Path) -> None:
    path = tiny_suite(tmp_path, seeds=2)
    out = tmp_path / "lb"
    assert (
        run.main(["--suite", str(path), "--out", str(tmp_path), "--workers", "2", "--leaderboards", str(out)])
        == 0
    )
    cells = pd.read_csv(out / "tiny.csv")
    assert list(cells.columns) == list(leaderboard.CELL_COLUMNS)
    assert len(cells) == 3 and set(cells["n_seeds"]) == {2}
    assert list(pd.read_csv(out / "tiny_runs.csv").columns) == list(leaderboard.RUN_COLUMNS)
    assert (out / "tiny" / "tiny_heatmap_CueRecall-v0_delay2_ppo.svg").stat().st_size > 1000
    assert (out / "tiny" / "tiny_curves_CueRecall-v0_delay2_ppo.svg").is_file()
    assert not list(out.glob("*.png")) and not list(out.glob("*.svg"))  # one format, in the suite's folder
    readme = (out / "README.md").read_text()
    assert "python -m pomdp_bench.run --suite" in readme and "| `return_ci_low` | float |" in readme
    regen = tmp_path / "regen"
    write_reports(tmp_path, regen)
    pd.testing.assert_frame_equal(pd.read_csv(regen / "tiny.csv"), cells)
    for svg in out.glob("*.svg"):  # the same store gives byte-identical figures
        assert (regen / svg.name).read_bytes() == svg.read_bytes(), svg.name


def test_cli_list_dry_run_and_bad_arguments(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run.main(["--list"]) == 0
    listed = capsys.readouterr().out
    assert "memory" in listed and "TMaze-v0" in listed and "mamba" in listed
    assert run.main(["--suite", "memory", "--dry-run", "--out", str(tmp_path)]) == 0
    assert "estimated time" in capsys.readouterr().out
    for argv, message in (
        (["--suite", "nope"], "unknown suite"),
        (["--suite", "memory", "--envs", "Nope-v0"], "are not in suite 'memory'"),
        (["--suite", "memory", "--workers", "0"], "--workers must be >= 1"),
        (["--suite", "memory", "--memory", "gru", "--envs", "TMaze-v1", "--agents", "sb3_ppo"], "no run"),
    ):
        with pytest.raises(SystemExit):
            run.main([*argv, "--out", str(tmp_path), "--dry-run"])
        assert message in capsys.readouterr().err
    # A suite naming an id without a card: one line saying how to give it one, no traceback.
    suite = tmp_path / "mine.yaml"
    suite.write_text(
        "name: mine\nseeds: 1\ngroups: [{agent: ppo, memory: [none], envs: [{id: RememberBit-v0}]}]\n"
    )
    with pytest.raises(SystemExit) as exit_info:
        run.main(["--suite", str(suite), "--out", str(tmp_path), "--dry-run"])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and "Traceback" not in err
    assert "no env card and no Gymnasium registration for 'RememberBit-v0'" in err
    assert "import:" in err and "register_card" in err


def test_ray_backend_runs_the_smoke_suite(tmp_path: Path) -> None:
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        assert run.main(["--suite", "smoke", "--backend", "ray", "--out", str(tmp_path), "--no-report"]) == 0
    finally:
        ray.shutdown()
    with ResultStore(tmp_path) as store:
        rows = store.rows("smoke")
    assert len(rows) == len(expand(load_suite("smoke")))
    assert all(r["status"] == "ok" for r in rows)


def _horizon_cells(rows: list[tuple[int, bool, str, float, int]]) -> pd.DataFrame:
    """Cells of one (env, agent, kind, pieces) line: ``(horizon, learned, stop_reasons,
    steps_to_solve, cap)`` each."""
    return pd.DataFrame(
        [
            {
                "suite": "h",
                "env_id": "TMaze-v1",
                "agent": "ppo",
                "memory": "lstm",
                "pieces": "long",
                "horizon": h,
                "learned": learned,
                "stop_reasons": reasons,
                "steps_to_solve": steps,
                "total_timesteps": cap,
                "cue_reach": 1.0,
            }
            for h, learned, reasons, steps, cap in rows
        ]
    )


@pytest.mark.parametrize(
    ("next_cell", "outcome"),
    [
        ((50, False, "plateaued 5", math.nan, 400_000), "plateaued"),  # a plateau is censored (issue 47)
        ((50, False, "solved 2;plateaued 3", 900_000.0, 400_000), "plateaued"),
        ((50, False, "solved 1;cap 4", math.nan, 2_000_000), "failed"),  # cap >= 10 x 200k
        ((50, False, "plateaued 3;cap 2", math.nan, 1_999_999), "budget"),  # cap < 10 x 200k
        ((50, False, "", math.nan, 30_000), "budget"),  # no stop rule: the budget ended it
    ],
)
def test_a_failure_counts_as_the_limit_only_with_a_large_enough_cap(next_cell, outcome) -> None:
    cells = _horizon_cells(
        [(10, True, "solved 5", 20_000.0, 300_000), (20, True, "solved 5", 200_000.0, 600_000), next_cell]
    )
    row = leaderboard.horizon_frame(cells).iloc[0]
    assert row["longest_horizon_learned"] == 20 and row["steps_to_solve_at_longest"] == 200_000
    assert row["next_horizon"] == 50 and row["next_outcome"] == outcome
    assert bool(row["limit_censored"]) == (outcome != "failed")


def test_the_horizon_limit_is_censored_when_nothing_longer_was_tried() -> None:
    row = leaderboard.horizon_frame(_horizon_cells([(10, True, "solved 5", 2e4, 3e5)])).iloc[0]
    assert row["longest_horizon_learned"] == 10 and pd.isna(row["next_horizon"])
    assert row["next_outcome"] == "not tried" and bool(row["limit_censored"])
    none = leaderboard.horizon_frame(_horizon_cells([(10, False, "plateaued 5", math.nan, 3e5)])).iloc[0]
    # Nothing learned: a plateau at the first horizon is censored, a cap has no reference.
    assert none["longest_horizon_learned"] == 0 and none["next_outcome"] == "plateaued"
    capped = leaderboard.horizon_frame(_horizon_cells([(10, False, "cap 5", math.nan, 3e5)])).iloc[0]
    assert capped["next_outcome"] == "budget" and bool(capped["limit_censored"])
    few = _horizon_cells([(10, True, "solved 5", 2e4, 3e5), (20, pd.NA, "plateaued 3", math.nan, 6e5)])
    row = leaderboard.horizon_frame(few).iloc[0]  # too few seeds at 20: neither learned nor failed
    assert row["next_outcome"] == "no verdict" and bool(row["limit_censored"])


def test_the_solve_cost_figure_draws_cells_with_a_median_and_skips_the_rest(tmp_path) -> None:
    from pomdp_bench.reporting import plots

    cells = _horizon_cells([(10, True, "solved 5", 2e4, 3e5), (20, True, "solved 5", 2e5, 6e5)])
    cells["steps_to_solve_ci_low"] = cells["steps_to_solve"] / 2
    cells["steps_to_solve_ci_high"] = [4e4, math.nan]  # an unbounded upper end is drawn too
    paths = plots.solve_cost_plot(cells, "h", tmp_path)
    assert [p.name for p in paths] == ["h_solve_cost.svg"]
    assert all(p.stat().st_size > 0 for p in paths)
    assert plots.solve_cost_plot(cells.assign(steps_to_solve=math.nan), "h", tmp_path) == []


def test_the_convergence_line_counts_cells_and_names_the_capped_ones() -> None:
    from pomdp_bench.reporting.report import convergence_line

    rows = []
    for memory, reasons, gains in (
        ("gru", ["solved"] * 3, [0.0] * 3),
        ("lstm", ["plateaued", "cap", "cap"], [0, 0.1, 0.2]),
    ):
        for seed, (reason, gain) in enumerate(zip(reasons, gains, strict=True)):
            rows.append(
                {"env_id": "TMaze-v1", "env_kwargs": "{}", "agent": "ppo", "memory": memory,
                 "bptt_length": 11, "seed": seed, "stop_reason": reason, "late_gain": gain}
            )  # fmt: skip
    line = convergence_line(pd.DataFrame(rows))
    # TMaze's gap is 0.5 (ceiling 0.5, optimum 1): a mean rise of 0.15 is 0.30 of it.
    assert line.startswith("converged: 1 of 2 cells")
    assert "TMaze-v1 ppo lstm bptt 11 (2 of 3 at the cap, last-quarter rise +0.30)" in line
    assert convergence_line(pd.DataFrame(rows).assign(stop_reason="")) == ""


def test_build_agent_takes_the_spec_seed_unless_given_one() -> None:
    """A run's draws follow ``RunSpec.agent_seed``, which changes with the stop rule; a
    probe that drops the rule passes the original seed to repeat the run's draws."""
    spec = RunSpec(
        "TMaze-v1", {"corridor_length": 5}, "ppo", {"kind": "gru", "hidden_size": 8}, None, 0, 64,
        {"n_envs": 2, "n_steps": 16}, stop={"plateau_after": 0.9},
    )  # fmt: skip
    unstopped = dataclasses.replace(spec, stop=None)
    assert unstopped.agent_seed() != spec.agent_seed()
    assert build_agent(spec).settings.seed == spec.agent_seed()
    assert build_agent(unstopped, seed=spec.agent_seed()).settings.seed == spec.agent_seed()


def test_rename_suite_moves_links_cells_and_sweeps_and_refuses_clashes(tmp_path: Path) -> None:
    specs = expand(load_suite(str(tiny_suite(tmp_path))))
    with ResultStore(tmp_path / "store") as store:
        store.write(specs[0], RunResult(status="ok", final_return=0.5, curve=[(8, 0.5)]))
        store.link("tiny", [specs[0]])
        store.link("other", [specs[0]])
        store.declare_cells("tiny", ["cell a"])
        store.finish_sweep(store.start_sweep("tiny", "cmd", "abc", "m"), 1.0, 1)
        assert store.rename_suite("tiny", "tiny-old") == 1
        assert store.rows("tiny") == [] and [r["key"] for r in store.rows("tiny-old")] == [specs[0].key()]
        assert store.declared_cells("tiny-old") == ["cell a"] and store.declared_cells("tiny") is None
        assert [s["command"] for s in store.sweeps("tiny-old")] == ["cmd"]
        with pytest.raises(ValueError, match="suite 'tiny' has no runs"):
            store.rename_suite("tiny", "x")
        with pytest.raises(ValueError, match="suite 'other' already has runs"):
            store.rename_suite("tiny-old", "other")
