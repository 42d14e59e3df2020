"""The analysis step (issue 53): ``python -m pomdp_bench.analyse`` reads a store's trained
runs, stores what the probes and the longer horizons find, resumes, records failures,
and the leaderboards read the stored values into their columns."""

from __future__ import annotations

import sqlite3
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from pomdp_bench.harness import analysis, probes, run
from pomdp_bench.harness.store import STORE_VERSION, ResultStore
from pomdp_bench.reporting import leaderboard
from pomdp_bench.reporting.report import write_reports

SMALL = ["--probe-episodes", "32", "--eval-episodes", "8", "--no-progress"]


def tiny_store(tmp_path: Path) -> Path:
    """A store with one tiny suite trained through the harness: PPO with gru and none on
    cue recall (delay 2), a none run on MaskedCartPole, which no analysis takes, and a gru
    run on a short Key-to-Door, which only the success analysis takes."""
    suite = tmp_path / "tiny53.yaml"
    suite.write_text(
        textwrap.dedent(
            """\
            name: tiny53
            description: the analysis step's test suite
            seeds: 1
            eval_episodes: 4
            eval_points: 2
            groups:
              - agent: ppo
                memory: [none, gru]
                hyperparams: {n_envs: 4, n_steps: 8, num_minibatches: 2, n_epochs: 1}
                envs:
                  - {id: CueRecall-v0, env_kwargs: {delay: 2}, horizon: 3, bptt: [4], steps: 64}
              - agent: ppo
                memory: [none]
                hyperparams: {n_envs: 4, n_steps: 8, batch_size: 16, n_epochs: 1}
                envs:
                  - {id: MaskedCartPole-v0, steps: 64}
              - agent: ppo
                memory: [gru]
                hyperparams: {n_envs: 4, n_steps: 14, num_minibatches: 2, n_epochs: 1}
                envs:
                  - {id: KeyToDoor-v0, env_kwargs: {explore: 8, distractor: 4, reward: 2}, bptt: [14], steps: 56}
            """
        )
    )
    results = tmp_path / "store"
    assert run.main(["--suite", str(suite), "--out", str(results), "--workers", "1", "--no-report"]) == 0
    return results


@pytest.fixture(scope="module")
def analysed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, Path]:
    """The tiny store, analysed once; returns the results folder, the command's output and
    the leaderboards written from it."""
    tmp_path = tmp_path_factory.mktemp("analysis")
    results = tiny_store(tmp_path)
    with ResultStore(results) as store:
        assert store.analyses() == {}
    first = _analyse(results, [])
    out = tmp_path / "lb"
    write_reports(results, out)
    return results, first, out


def _analyse(results: Path, extra: list[str]) -> str:
    import contextlib
    import io

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        assert analysis.main(["--results", str(results), *SMALL, *extra]) == 0
    return buffer.getvalue()


def test_the_analysis_stores_values_per_run_and_skips_what_does_not_apply(analysed) -> None:
    results, first, _ = analysed
    assert "probes ok 2" in first and "generalisation ok 2" in first and "success ok 1" in first
    assert "probes skipped 2" in first and "success skipped 3" in first
    with ResultStore(results) as store:
        rows = {r["spec"]["memory"]["kind"] + r["spec"]["env_id"]: r for r in store.rows()}
        stored = store.analyses()
    cue = rows["gruCueRecall-v0"]["key"]
    probe = stored[cue]["probes"]
    assert probe["status"] == "ok" and probe["value"]["steps"] == [1, 2, 2, 3]  # horizon 3
    assert probe["value"]["chance"] == 0.25 and probe["value"]["n_episodes"] == 32
    general = stored[cue]["generalisation"]["value"]
    assert general["factors"] == [2, 4] and general["horizons"] == [5, 9]  # delay 4 and 8, + 1
    assert general["limited_by"] == ["", ""] and general["n_episodes"] == 8
    cartpole = stored[rows["noneMaskedCartPole-v0"]["key"]]
    assert {a: e["status"] for a, e in cartpole.items()} == dict.fromkeys(analysis.ANALYSES, "skipped")
    assert "has no success measure" in cartpole["success"]["error"]
    door = stored[rows["gruKeyToDoor-v0"]["key"]]
    assert door["success"]["status"] == "ok" and door["probes"]["status"] == "skipped"
    found = door["success"]["value"]
    assert found["n_episodes"] == 8 and found["rate"] in {i / 8 for i in range(9)}
    assert (
        "MaskedCartPole-v0" in cartpole["probes"]["error"] and "CueRecall-v0" in cartpole["probes"]["error"]
    )


def test_the_values_land_in_the_run_cell_and_horizon_columns(analysed) -> None:
    _, _, out = analysed
    runs = pd.read_csv(out / "tiny53_runs.csv", keep_default_na=False, na_values=[""])
    assert list(runs.columns) == list(leaderboard.RUN_COLUMNS)
    cue = runs[runs["env_id"] == "CueRecall-v0"].set_index("memory")
    assert cue["cue_probe_accuracy"].between(0, 1).all() and (cue["cue_probe_chance"] == 0.25).all()
    assert cue["return_at_2x"].between(0, 1).all() and cue["return_at_4x"].between(0, 1).all()
    assert cue.loc["none", "cue_probe_accuracy"] <= 0.35  # memoryless: the cue is gone at the query
    cartpole = runs[runs["env_id"] == "MaskedCartPole-v0"].iloc[0]
    assert pd.isna(cartpole["cue_probe_accuracy"]) and pd.isna(cartpole["return_at_2x"])
    assert "generalisation: skipped: env 'MaskedCartPole-v0'" in cartpole["analysis_note"]
    assert cartpole["analysis_note"].startswith(
        "behaviour: skipped: the behaviour reads the bare passive T-Maze"
    )
    cells = pd.read_csv(out / "tiny53.csv", keep_default_na=False, na_values=[""])
    assert list(cells.columns) == list(leaderboard.CELL_COLUMNS)
    by_kind = cells[cells["env_id"] == "CueRecall-v0"].set_index("memory")
    assert by_kind.loc["gru", "cue_probe_accuracy"] == cue.loc["gru", "cue_probe_accuracy"]  # one seed
    assert by_kind["return_at_4x"].notna().all() and by_kind["cue_probe_ci_low"].isna().all()  # one seed
    assert cells[cells["env_id"] == "MaskedCartPole-v0"]["cue_probe_accuracy"].isna().all()
    door = cells[cells["env_id"] == "KeyToDoor-v0"].iloc[0]
    assert 0 <= door["success_rate"] <= 1 and pd.isna(door["success_ci_low"])  # one seed
    assert door["success_rate"] == runs[runs["env_id"] == "KeyToDoor-v0"]["success_rate"].iloc[0]
    assert cells[cells["env_id"] != "KeyToDoor-v0"]["success_rate"].isna().all()
    assert (out / "tiny53" / "tiny53_forgetting_gru.svg").is_file()
    assert (out / "tiny53" / "tiny53_generalisation_CueRecall-v0_ppo.svg").is_file()
    page = (out / "index.html").read_text()
    assert "tiny53/tiny53_forgetting_gru.svg" in page and "tiny53_generalisation_CueRecall-v0_ppo.svg" in page


def test_a_second_analysis_skips_every_run_already_analysed(analysed) -> None:
    results, _, _ = analysed
    with ResultStore(results) as store:
        before = store.analyses()
    second = _analyse(results, [])
    assert second.strip() == "already stored 16"  # 4 runs, 4 analyses
    with ResultStore(results) as store:
        assert store.analyses() == before


def test_the_same_run_analysed_in_another_store_gives_the_same_numbers(analysed, tmp_path) -> None:
    results, _, _ = analysed
    with ResultStore(results) as source, ResultStore(tmp_path) as copy:
        keys = [r["key"] for r in source.rows() if r["spec"]["memory"]["kind"] == "gru"]
        copy.copy_runs("tiny53", source, keys)
        assert copy.analyses()[keys[0]] == source.analyses()[keys[0]]  # analyses travel with runs
        with ResultStore(tmp_path / "replaced") as replaced:
            replaced.replace_suite("tiny53", copy)
            assert replaced.analyses()[keys[0]] == source.analyses()[keys[0]]
        with sqlite3.connect(copy.path) as conn:
            conn.execute("DELETE FROM analyses")
    _analyse(tmp_path, [])
    with ResultStore(results) as source, ResultStore(tmp_path) as copy:
        again, first = copy.analyses()[keys[0]], source.analyses()[keys[0]]
    assert {a: e["value"] for a, e in again.items()} == {a: e["value"] for a, e in first.items()}


def test_a_failing_analysis_is_recorded_and_the_step_goes_on(analysed, tmp_path, monkeypatch) -> None:
    results, _, _ = analysed
    with ResultStore(results) as source, ResultStore(tmp_path) as copy:
        keys = [r["key"] for r in source.rows("tiny53")]
        copy.copy_runs("tiny53", source, keys)
        with sqlite3.connect(copy.path) as conn:
            conn.execute("DELETE FROM analyses")

    def broken(*_args, **_kwargs):
        raise RuntimeError("probe broke")

    monkeypatch.setattr(probes, "probe_agent", broken)
    summary = analysis.analyse_store(tmp_path, analyses=["probes"], settings=analysis.AnalysisSettings(32, 8))
    assert summary.counts == {("probes", "failed"): 2, ("probes", "skipped"): 2}
    with ResultStore(tmp_path) as store:
        failed = [e["probes"] for e in store.analyses().values() if e["probes"]["status"] == "failed"]
    assert len(failed) == 2 and all("RuntimeError: probe broke" in e["error"] for e in failed)
    monkeypatch.undo()
    assert analysis.analyse_store(tmp_path, analyses=["probes"]).counts == {}  # stored failures stay
    retried = analysis.analyse_store(tmp_path, analyses=["probes"], retry_failed=True)
    assert retried.counts == {("probes", "ok"): 2} and retried.already == 2


def test_bad_input_names_the_value_and_what_is_valid(analysed, capsys) -> None:
    results, _, _ = analysed
    with pytest.raises(ValueError, match=r"holds no suite \['nope'\]; it holds \['tiny53'\]"):
        analysis.analyse_store(results, suites=["nope"])
    with pytest.raises(
        ValueError,
        match=r"unknown analysis \['probe'\]; valid: \['probes', 'generalisation', 'success', 'behaviour'\]",
    ):
        analysis.analyse_store(results, analyses=["probe"])
    with pytest.raises(ValueError, match="probe_episodes must be an int >= 2"):
        analysis.AnalysisSettings(probe_episodes=1)
    with pytest.raises(SystemExit):
        analysis.main(["--results", str(results), "--suite", "nope"])
    assert "holds no suite ['nope']" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        analysis.main(["--results", str(results), "--analysis", "probe"])
    with pytest.raises(SystemExit):
        analysis.main(["--results", str(results), "--probe-ep", "3"])  # no abbreviations


def test_a_store_before_analyses_reads_unchanged_and_gains_the_table_when_written(tmp_path) -> None:
    with ResultStore(tmp_path) as store:
        assert store.version == STORE_VERSION == 5
    with sqlite3.connect(tmp_path / "results.sqlite") as conn:
        conn.execute("DROP TABLE analyses")
        conn.execute("PRAGMA user_version = 3")
    before = (tmp_path / "results.sqlite").read_bytes()
    with ResultStore(tmp_path) as store:
        assert store.analyses() == {} and store.rows() == []
    assert (tmp_path / "results.sqlite").read_bytes() == before
    with ResultStore(tmp_path) as store, pytest.raises(ValueError, match="no run 'k'"):
        store.write_analysis("k", "probes", "ok", {})
    with ResultStore(tmp_path) as store, pytest.raises(ValueError, match="status must be one of"):
        store.write_analysis("k", "probes", "done", {})
