"""Claims on runs: processes sharing a results store train each run once, a dead
owner's runs are taken over, and the store's version marker and damage checks."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from pomdp_bench.harness import provenance, run
from pomdp_bench.harness.spec import RunResult, RunSpec
from pomdp_bench.harness.store import (
    CLAIM_TIMEOUT_ENV,
    DEFAULT_CLAIM_TIMEOUT,
    STORE_VERSION,
    Heartbeat,
    ResultStore,
    StoreError,
    claim_timeout,
    owner_alive,
)
from pomdp_bench.harness.suites import expand, load_suite

ROOT = Path(__file__).resolve().parents[1]
TINY_PPO = {"n_envs": 4, "n_steps": 8, "num_minibatches": 2, "n_epochs": 1}
DEADLINE = 240.0  # seconds: generous, for a loaded 2-core machine


def tiny_suite(tmp_path: Path, steps: int = 512) -> Path:
    """Four runs (two memory kinds, two seeds) of about a second each."""
    path = tmp_path / "tiny.yaml"
    path.write_text(
        textwrap.dedent(
            f"""\
            name: tiny
            description: four short runs
            seeds: 2
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
                    bptt: [4]
                    steps: {steps}
            """
        )
    )
    return path


def sweep_cmd(suite: Path, results: Path, timeout: float) -> list[str]:
    return [
        sys.executable,
        "-m",
        "pomdp_bench.run",
        "--suite",
        str(suite),
        "--results",
        str(results),
        "--workers",
        "1",
        "--no-report",
        "--claim-timeout",
        str(timeout),
    ]


def child_env() -> dict[str, str]:
    """The environment of a sweep subprocess: this worktree's package first."""
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": str(ROOT) + (os.pathsep + path if path else "")}


def query(results: Path, sql: str) -> list[tuple]:
    """Rows of ``sql`` on the store, or [] while the file or table is not there yet."""
    path = results / "results.sqlite"
    if not path.is_file():  # connecting would create it, as a database of another layout
        return []
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)) as conn:
            return conn.execute(sql).fetchall()
    except sqlite3.OperationalError:
        return []


def wait_until(condition, what: str, proc: subprocess.Popen | None = None) -> None:
    deadline = time.time() + DEADLINE
    while not condition():
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"the sweep ended (rc {proc.returncode}) before {what}")
        assert time.time() < deadline, f"timed out waiting until {what}"
        time.sleep(0.1)


def spec_of(tmp_path: Path) -> list[RunSpec]:
    return expand(load_suite(str(tiny_suite(tmp_path))))


# --- the store's claim semantics ------------------------------------------------------------


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_claim_heartbeat_takeover_and_release_between_two_connections(tmp_path: Path) -> None:
    clock = FakeClock()
    key = spec_of(tmp_path)[0].key()
    spec = spec_of(tmp_path)[0]
    with (
        ResultStore(tmp_path, owner="a", clock=clock) as a,
        ResultStore(tmp_path, owner="b", clock=clock) as b,
    ):
        assert a.claim(key, timeout=10) == "claimed"
        assert a.claim(key, timeout=10) == "claimed"  # its own claim: still its own
        assert b.claim(key, timeout=10) == "held"
        clock.now += 9
        assert b.claim(key, timeout=10) == "held"
        assert a.heartbeat() == 1 and b.heartbeat() == 0
        clock.now += 9  # 18 s after the claim, 9 s after the heartbeat
        assert b.claim(key, timeout=10) == "held"
        clock.now += 1.5  # the heartbeat is 10.5 s old: a is presumed dead
        assert b.claim(key, timeout=10) == "claimed"
        assert [(c["key"], c["owner"], c["age"]) for c in a.claims()] == [(key, "b", 0.0)]
        assert a.claim(key, timeout=10) == "held"  # a came back: the run is b's now
        assert a.release() == 0  # a holds nothing to release
        # b writes the run: the claim goes in the same transaction, and the run is done for all.
        b.write(spec, RunResult(status="ok", final_return=1.0, curve=[(8, 1.0)]))
        assert a.claims() == []
        assert a.claim(key, timeout=10) == "done" and b.claim(key, timeout=10) == "done"
        # A released claim is free at once.
        other = spec_of(tmp_path)[1].key()
        assert a.claim(other, timeout=10) == "claimed"
        assert a.release([other]) == 1
        assert b.claim(other, timeout=10) == "claimed"


def test_a_claim_of_an_exited_process_of_this_host_is_free_at_once(tmp_path: Path) -> None:
    key, second = (s.key() for s in spec_of(tmp_path)[:2])
    exited = subprocess.Popen([sys.executable, "-c", "pass"])
    exited.wait()
    host = socket.gethostname()
    assert not owner_alive(f"{host}:{exited.pid}:t0")
    assert owner_alive(f"{host}:{os.getpid()}:t1") and owner_alive(f"elsewhere:{exited.pid}:t2")
    with ResultStore(tmp_path, owner=f"{host}:{exited.pid}:t0") as dead, ResultStore(tmp_path) as other:
        assert dead.claim(key, timeout=600) == "claimed"
        assert other.claim(key, timeout=600) == "claimed"  # the heartbeat is fresh, its owner gone
    with ResultStore(tmp_path, owner=f"{host}:{os.getpid()}:t1") as live, ResultStore(tmp_path) as other:
        assert live.claim(second, timeout=600) == "claimed"
        assert other.claim(second, timeout=600) == "held"  # this process lives: wait for its heartbeat


def test_a_failed_run_is_retried_once_across_processes(tmp_path: Path) -> None:
    spec = spec_of(tmp_path)[0]
    key = spec.key()
    with ResultStore(tmp_path, owner="a") as a, ResultStore(tmp_path, owner="b") as b:
        a.write(spec, RunResult(status="failed", error="boom"))
        assert a.claim(key, timeout=10) == "done"  # failures are not retried unless asked
        time.sleep(1.1)  # the stored times have one-second resolution
        start = provenance.now()  # two sweeps with --retry-failed start
        assert a.claim(key, 10, retry_failed=True, failed_before=start) == "claimed"
        a.write(spec, RunResult(status="failed", error="boom again"))
        # b's sweep started at the same time: a's new failure is this sweep's retry.
        assert b.claim(key, 10, retry_failed=True, failed_before=start) == "done"


def test_heartbeat_thread_keeps_claims_fresh(tmp_path: Path) -> None:
    key = spec_of(tmp_path)[0].key()
    with ResultStore(tmp_path, owner="a") as a, ResultStore(tmp_path, owner="b") as b:
        assert a.claim(key, timeout=1.0) == "claimed"
        with Heartbeat(tmp_path, "a", interval=0.1) as beat:
            time.sleep(1.5)
            assert b.claim(key, timeout=1.0) == "held"
        assert beat.beats >= 3
        time.sleep(1.2)  # no heartbeat any more
        assert b.claim(key, timeout=1.0) == "claimed"


def test_claim_settings_are_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(CLAIM_TIMEOUT_ENV, raising=False)
    assert claim_timeout() == DEFAULT_CLAIM_TIMEOUT == 120.0
    monkeypatch.setenv(CLAIM_TIMEOUT_ENV, "7.5")
    assert claim_timeout() == 7.5
    assert claim_timeout(3) == 3.0  # the flag wins over the environment
    monkeypatch.setenv(CLAIM_TIMEOUT_ENV, "soon")
    with pytest.raises(
        ValueError, match=f"{CLAIM_TIMEOUT_ENV} must be a number of seconds above 0, got 'soon'"
    ):
        claim_timeout()
    with pytest.raises(ValueError, match="got -1"):
        claim_timeout(-1)
    with ResultStore(tmp_path) as store:
        with pytest.raises(ValueError, match="timeout must be above 0 seconds, got 0"):
            store.claim("k", 0)
        with pytest.raises(TypeError, match="timeout must be a number of seconds, got str"):
            store.claim("k", "10")  # type: ignore[arg-type]
    with pytest.raises(SystemExit):
        run.main(["--suite", "smoke", "--results", str(tmp_path), "--claim-timeout", "0"])


# --- sweeps sharing a store ------------------------------------------------------------------


def trained_per_sweep(results: Path) -> list[int | None]:
    return [r[0] for r in query(results, "SELECT n_runs FROM sweeps ORDER BY rowid")]


def test_two_sweeps_on_one_store_train_each_run_once(tmp_path: Path) -> None:
    suite = tiny_suite(tmp_path)
    results = tmp_path / "results"
    cmd = sweep_cmd(suite, results, timeout=60)
    logs = [tmp_path / "a.log", tmp_path / "b.log"]
    procs = [
        subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log.open("w"), env=child_env())
        for log in logs
    ]
    for proc, log in zip(procs, logs, strict=True):
        assert proc.wait(timeout=DEADLINE) == 0, log.read_text()
    keys = [r[0] for r in query(results, "SELECT key FROM runs WHERE status = 'ok'")]
    assert sorted(keys) == sorted(s.key() for s in expand(load_suite(str(suite))))
    # Each sweep records how many runs it trained: without claims both would train all 4.
    trained = trained_per_sweep(results)
    assert len(trained) == 2 and sum(trained) == 4, (trained, [log.read_text() for log in logs])
    assert query(results, "SELECT * FROM claims") == []


def test_a_killed_sweeps_claim_is_taken_over_by_the_other(tmp_path: Path) -> None:
    suite = tiny_suite(tmp_path)
    results = tmp_path / "results"
    timeout = 3.0
    cmd = sweep_cmd(suite, results, timeout)
    doomed = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=child_env(), start_new_session=True
    )
    wait_until(lambda: query(results, "SELECT key FROM claims"), "the first sweep claimed a run", doomed)
    os.killpg(doomed.pid, signal.SIGKILL)  # the sweep and its workers, mid-run
    doomed.wait()
    claimed = [r[0] for r in query(results, "SELECT key FROM claims")]
    stored_before = len(query(results, "SELECT key FROM runs"))
    assert len(claimed) == 1 and stored_before < 4
    survivor = subprocess.run(cmd, capture_output=True, text=True, env=child_env(), timeout=DEADLINE)
    assert survivor.returncode == 0, survivor.stderr
    rows = query(results, "SELECT key, status FROM runs")
    assert sorted(rows) == sorted((s.key(), "ok") for s in expand(load_suite(str(suite))))
    assert trained_per_sweep(results) == [None, 4 - stored_before]  # the killed sweep never finished
    assert query(results, "SELECT * FROM claims") == []


def test_sigterm_or_sigint_in_the_background_stops_a_sweep_and_releases_its_claims(tmp_path: Path) -> None:
    """A shell starts a background job with SIGINT ignored; the sweep takes SIGINT and
    SIGTERM back, so either stops it as Ctrl-C does: no claim left, the sweep closed."""
    for signum in (signal.SIGTERM, signal.SIGINT):
        suite, results = tiny_suite(tmp_path, steps=200_000), tmp_path / f"results-{signum}"
        ignore_int = lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)  # noqa: E731
        sweep = subprocess.Popen(
            sweep_cmd(suite, results, 30.0),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=child_env(),
            preexec_fn=ignore_int,
        )
        wait_until(lambda r=results: query(r, "SELECT key FROM claims"), "the sweep claimed a run", sweep)
        sweep.send_signal(signum)
        _, err = sweep.communicate(timeout=DEADLINE)
        assert sweep.returncode == 130, err
        assert f"stopped by signal {signal.Signals(signum).name} after 0 runs" in err
        assert query(results, "SELECT * FROM claims") == []
        assert trained_per_sweep(results) == [0]  # closed, with no run stored


def test_a_sweep_waits_for_a_live_claim_then_takes_it_over_when_its_owner_dies(tmp_path: Path) -> None:
    """Another process (here the test) holds one run with live heartbeats: the sweep trains
    the other three, waits, and takes the run over once the heartbeats stop."""
    suite = tiny_suite(tmp_path)
    results = tmp_path / "results"
    held = expand(load_suite(str(suite)))[2]
    with ResultStore(results, owner="other-host:1:dead") as other:
        assert other.claim(held.key(), timeout=4) == "claimed"
    stop = threading.Event()
    beats = threading.Thread(target=lambda: _beat(results, "other-host:1:dead", stop), daemon=True)
    beats.start()
    log = tmp_path / "sweep.log"
    proc = subprocess.Popen(
        sweep_cmd(suite, results, 4), stdout=subprocess.DEVNULL, stderr=log.open("w"), env=child_env()
    )
    try:
        wait_until(
            lambda: len(query(results, "SELECT key FROM runs")) == 3, "the three free runs are stored", proc
        )
        wait_until(lambda: "waiting for 1 run(s)" in log.read_text(), "the sweep says it waits", proc)
        assert query(results, f"SELECT key FROM runs WHERE key = '{held.key()}'") == []
    finally:
        stop.set()  # the other owner dies
        beats.join()
    assert proc.wait(timeout=DEADLINE) == 0, log.read_text()
    assert len(query(results, "SELECT key FROM runs WHERE status = 'ok'")) == 4
    assert trained_per_sweep(results) == [4]
    assert "other-host:1:dead" in log.read_text()


def test_a_sweep_waiting_for_a_claim_stops_when_its_owner_stores_the_run(tmp_path: Path) -> None:
    suite = tiny_suite(tmp_path)
    results = tmp_path / "results"
    held = expand(load_suite(str(suite)))[0]
    owner = "other-host:2:alive"
    with ResultStore(results, owner=owner) as other:
        assert other.claim(held.key(), timeout=4) == "claimed"
    stop = threading.Event()
    beats = threading.Thread(target=lambda: _beat(results, owner, stop), daemon=True)
    beats.start()
    log = tmp_path / "sweep.log"
    proc = subprocess.Popen(
        sweep_cmd(suite, results, 4), stdout=subprocess.DEVNULL, stderr=log.open("w"), env=child_env()
    )
    try:
        wait_until(lambda: "waiting for 1 run(s)" in log.read_text(), "the sweep says it waits", proc)
        with ResultStore(results, owner=owner) as other:  # the owner finishes its run
            other.write(held, RunResult(status="ok", final_return=0.25, curve=[(8, 0.25)]))
    finally:
        stop.set()
        beats.join()
    assert proc.wait(timeout=DEADLINE) == 0, log.read_text()
    assert trained_per_sweep(results) == [3]
    assert query(results, f"SELECT final_return FROM runs WHERE key = '{held.key()}'") == [(0.25,)]


def _beat(results: Path, owner: str, stop: threading.Event) -> None:
    with ResultStore(results, owner=owner) as store:
        while not stop.wait(0.2):
            store.heartbeat()


# --- the version marker and damaged stores ---------------------------------------------------

_V0_SCHEMA = """
CREATE TABLE runs (key TEXT PRIMARY KEY, spec TEXT NOT NULL, status TEXT NOT NULL, final_return REAL,
    steps_per_second REAL, wall_seconds REAL, result TEXT NOT NULL, error TEXT NOT NULL DEFAULT '',
    git_commit TEXT NOT NULL DEFAULT '', machine TEXT NOT NULL DEFAULT '', created_at TEXT NOT NULL);
CREATE TABLE curves (key TEXT NOT NULL, timesteps INTEGER NOT NULL, mean_return REAL, PRIMARY KEY (key, timesteps));
CREATE TABLE sweeps (suite TEXT NOT NULL, command TEXT NOT NULL, git_commit TEXT NOT NULL, machine TEXT NOT NULL,
    started_at TEXT NOT NULL, finished_at TEXT, wall_seconds REAL, n_runs INTEGER);
CREATE TABLE suite_runs (suite TEXT NOT NULL, key TEXT NOT NULL, PRIMARY KEY (suite, key));
INSERT INTO runs (key, spec, status, result, created_at) VALUES ('k0', '{}', 'ok', '{}', '2024-01-01');
"""


def v0_store(folder: Path) -> Path:
    """A store as the package wrote it before the version marker."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "results.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.executescript(_V0_SCHEMA)
    conn.close()
    return path


def test_a_new_store_carries_the_version(tmp_path: Path) -> None:
    with ResultStore(tmp_path) as store:
        assert store.version == STORE_VERSION
    assert query(tmp_path, "PRAGMA user_version") == [(STORE_VERSION,)]


def test_an_old_store_is_read_unchanged_and_migrated_on_its_first_write(tmp_path: Path) -> None:
    path = v0_store(tmp_path)
    before = path.read_bytes()
    with ResultStore(tmp_path) as store:
        assert store.version == 0
        assert [r["key"] for r in store.rows()] == ["k0"] and store.claims() == []
        assert store.heartbeat() == 0 and store.release() == 0
    assert path.read_bytes() == before, "reading an old store changed it"
    spec = spec_of(tmp_path)[0]
    with ResultStore(tmp_path) as store:
        assert store.claim(spec.key(), timeout=5) == "claimed"
        assert store.version == STORE_VERSION
        store.write(spec, RunResult(status="ok", final_return=1.0, curve=[(8, 1.0)]))
    assert query(tmp_path, "PRAGMA user_version") == [(STORE_VERSION,)]
    assert sorted(r[0] for r in query(tmp_path, "SELECT key FROM runs")) == sorted(["k0", spec.key()])


def _refused(tmp_path: Path, content: bytes, match: str) -> None:
    path = tmp_path / "results.sqlite"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    with pytest.raises(StoreError, match=match) as info:
        ResultStore(tmp_path)
    assert str(path) in str(info.value)
    assert isinstance(info.value, ValueError)
    assert path.read_bytes() == content, "a refused store was modified"
    # The command line says the same in one line and exits 2, the file still untouched.
    with pytest.raises(SystemExit) as exit_info:
        run.main(["--suite", "smoke", "--results", str(tmp_path), "--no-report"])
    assert exit_info.value.code == 2
    assert path.read_bytes() == content


def test_a_file_that_is_not_sqlite_is_refused_untouched(tmp_path: Path) -> None:
    _refused(
        tmp_path,
        b"run,return\n1,0.5\n" * 20,
        r"is not a pomdp-bench results store \(file is not an SQLite database\); move it aside or pass "
        r"another --results folder",
    )


def test_a_truncated_store_is_refused_untouched(tmp_path: Path) -> None:
    source = tmp_path / "full"
    with ResultStore(source) as store:
        for spec in spec_of(tmp_path):
            store.write(
                spec, RunResult(status="ok", final_return=1.0, curve=[(t, 1.0) for t in range(0, 4000, 8)])
            )
    with sqlite3.connect(source / "results.sqlite") as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    data = (source / "results.sqlite").read_bytes()
    assert len(data) > 3 * 4096
    _refused(
        tmp_path / "cut",
        data[: len(data) // 2],
        r"results.sqlite is not a usable pomdp-bench results store \(",
    )


def test_another_programs_database_is_refused_untouched(tmp_path: Path) -> None:
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE songs (title TEXT)")
    conn.close()
    _refused(tmp_path / "x", other.read_bytes(), "an SQLite database but not a pomdp-bench results store")


def test_a_store_of_a_newer_version_is_refused_untouched(tmp_path: Path) -> None:
    newer = tmp_path / "newer"
    with ResultStore(newer):
        pass
    with sqlite3.connect(newer / "results.sqlite") as conn:
        conn.execute(f"PRAGMA user_version = {STORE_VERSION + 1}")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    _refused(
        tmp_path / "x",
        (newer / "results.sqlite").read_bytes(),
        f"layout version {STORE_VERSION + 1}, written by a newer pomdp-bench; this one reads versions up to "
        f"{STORE_VERSION}: upgrade pomdp-bench",
    )


def test_a_reader_in_another_process_does_not_lose_a_sweeps_later_writes(tmp_path: Path) -> None:
    """A sweep holds two connections (its own and its heartbeat's). Opening the second
    must not drop the first's locks: else a reader's close elsewhere deletes the WAL under
    the live writer, and what the sweep writes next never reaches the file."""
    sweep = ResultStore(tmp_path)
    sweep.declare_cells("before", [["cell", 1]])
    heartbeat = ResultStore(tmp_path)  # as Heartbeat opens one in its thread
    reader = f"from pomdp_bench.harness.store import ResultStore\nResultStore({str(tmp_path)!r}).close()"
    subprocess.run([sys.executable, "-c", reader], check=True, env=child_env())
    sweep.declare_cells("after", [["cell", 2]])
    fresh = f"from pomdp_bench.harness.store import ResultStore\nprint(ResultStore({str(tmp_path)!r}).declared_cells('after'))"
    seen = subprocess.run(
        [sys.executable, "-c", fresh], check=True, env=child_env(), capture_output=True, text=True
    )
    heartbeat.close()
    sweep.close()
    assert seen.stdout.strip() == "[['cell', 2]]"
