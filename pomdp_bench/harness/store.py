"""The results store: an embedded SQLite database, one row per finished run.

Each run is written in one transaction together with its evaluation curve, when
it finishes, so a sweep that is killed at any moment loses only the runs in
flight: a rerun skips every finished row and never writes one twice (the spec
hash is the primary key). A failed run is stored with its error; it is skipped
too unless the sweep asks to retry failures.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pomdp_bench.harness.provenance import now
from pomdp_bench.harness.spec import RunResult, RunSpec

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    key TEXT PRIMARY KEY,
    spec TEXT NOT NULL,
    status TEXT NOT NULL,
    final_return REAL,
    steps_per_second REAL,
    wall_seconds REAL,
    result TEXT NOT NULL,
    error TEXT NOT NULL DEFAULT '',
    git_commit TEXT NOT NULL DEFAULT '',
    machine TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS curves (
    key TEXT NOT NULL,
    timesteps INTEGER NOT NULL,
    mean_return REAL,
    PRIMARY KEY (key, timesteps)
);
CREATE TABLE IF NOT EXISTS sweeps (
    suite TEXT NOT NULL,
    command TEXT NOT NULL,
    git_commit TEXT NOT NULL,
    machine TEXT NOT NULL,
    started_at TEXT NOT NULL,
    finished_at TEXT,
    wall_seconds REAL,
    n_runs INTEGER
);
CREATE TABLE IF NOT EXISTS suite_runs (
    suite TEXT NOT NULL,
    key TEXT NOT NULL,
    PRIMARY KEY (suite, key)
);
"""

STORE_FILENAME = "results.sqlite"


class ResultStore:
    """A results store in ``<out>/results.sqlite``.

    Args:
        out: the output folder (created if missing).
    """

    def __init__(self, out: str | Path) -> None:
        self.path = Path(out) / STORE_FILENAME
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(self.path, timeout=60.0)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.executescript(_SCHEMA)

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> ResultStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def status(self, keys: Iterable[str]) -> dict[str, str]:
        """``{key: status}`` for the keys that have a row."""
        return dict(self._select_keys("SELECT key, status FROM runs WHERE key IN ({})", keys))

    def link(self, suite: str, specs: Iterable[RunSpec]) -> None:
        """Record that ``specs`` belong to ``suite`` (a run may serve several suites)."""
        with self._conn:
            self._conn.executemany(
                "INSERT OR IGNORE INTO suite_runs (suite, key) VALUES (?, ?)",
                [(suite, s.key()) for s in specs],
            )

    def write(self, spec: RunSpec, result: RunResult, git_commit: str = "", machine: str = "") -> None:
        """Store one run and its curve in one transaction (replacing a failed attempt)."""
        key = spec.key()
        with self._conn:
            self._conn.execute(
                "INSERT OR REPLACE INTO runs (key, spec, status, final_return, steps_per_second, wall_seconds,"
                " result, error, git_commit, machine, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    key,
                    json.dumps(spec.to_dict(), sort_keys=True),
                    result.status,
                    result.final_return,
                    result.steps_per_second,
                    result.wall_seconds,
                    json.dumps(result.to_dict()),
                    result.error,
                    git_commit,
                    machine,
                    now(),
                ),
            )
            self._conn.execute("DELETE FROM curves WHERE key = ?", (key,))
            self._conn.executemany(
                "INSERT INTO curves (key, timesteps, mean_return) VALUES (?, ?, ?)",
                [(key, int(t), float(r)) for t, r in result.curve],
            )

    def start_sweep(self, suite: str, command: str, git_commit: str, machine: str) -> int:
        """Record that a sweep of ``suite`` started; returns its id for :meth:`finish_sweep`."""
        with self._conn:
            cur = self._conn.execute(
                "INSERT INTO sweeps (suite, command, git_commit, machine, started_at) VALUES (?, ?, ?, ?, ?)",
                (suite, command, git_commit, machine, now()),
            )
        return int(cur.lastrowid)

    def finish_sweep(self, sweep_id: int, wall_seconds: float, n_runs: int) -> None:
        with self._conn:
            self._conn.execute(
                "UPDATE sweeps SET finished_at = ?, wall_seconds = ?, n_runs = ? WHERE rowid = ?",
                (now(), wall_seconds, n_runs, sweep_id),
            )

    def sweeps(self, suite: str) -> list[dict[str, Any]]:
        """Every recorded sweep of ``suite``, oldest first."""
        cur = self._conn.execute(
            "SELECT suite, command, git_commit, machine, started_at, finished_at, wall_seconds, n_runs"
            " FROM sweeps WHERE suite = ? ORDER BY rowid",
            (suite,),
        )
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]

    def suites(self) -> list[str]:
        return [r[0] for r in self._conn.execute("SELECT DISTINCT suite FROM suite_runs ORDER BY suite")]

    def rows(self, suite: str | None = None) -> list[dict[str, Any]]:
        """Every stored run (of ``suite``), as dicts with ``spec`` and ``result`` decoded."""
        query = (
            "SELECT r.key, r.spec, r.status, r.result, r.git_commit, r.machine, r.created_at FROM runs r"
            + (" JOIN suite_runs s ON s.key = r.key WHERE s.suite = ?" if suite else "")
            + " ORDER BY r.key"
        )
        out = []
        for key, spec, status, result, commit, machine, created in self._conn.execute(
            query, (suite,) if suite else ()
        ):
            out.append(
                {
                    "key": key,
                    "spec": json.loads(spec),
                    "status": status,
                    "result": json.loads(result),
                    "git_commit": commit,
                    "machine": machine,
                    "created_at": created,
                }
            )
        return out

    def curves(self, keys: Iterable[str]) -> list[tuple[str, int, float]]:
        """``(key, timesteps, mean_return)`` for the runs ``keys``."""
        return self._select_keys(
            "SELECT key, timesteps, mean_return FROM curves WHERE key IN ({}) ORDER BY key, timesteps", keys
        )

    def _select_keys(self, query: str, keys: Iterable[str]) -> list[tuple[Any, ...]]:
        """Rows of ``query`` (whose ``{}`` takes the placeholders) over ``keys``, 500 at a
        time: SQLite caps the number of parameters in one statement."""
        keys = list(keys)
        out: list[tuple[Any, ...]] = []
        for i in range(0, len(keys), 500):
            chunk = keys[i : i + 500]
            out += self._conn.execute(query.format(",".join("?" * len(chunk))), chunk).fetchall()
        return out

    def unlink_stale(self, suite: str, keys: Iterable[str]) -> list[str]:
        """Unlink from ``suite`` every run whose key is not in ``keys`` (the keys of the
        suite as it now expands); returns the unlinked keys.

        For a cell whose settings changed: its old runs stop being part of the suite's
        tables. They stay stored (another suite may link them; git keeps the rest).
        """
        keep = set(keys)
        linked = [r[0] for r in self._conn.execute("SELECT key FROM suite_runs WHERE suite = ?", (suite,))]
        stale = sorted(k for k in linked if k not in keep)
        with self._conn:
            self._conn.executemany(
                "DELETE FROM suite_runs WHERE suite = ? AND key = ?", [(suite, k) for k in stale]
            )
        return stale

    def copy_runs(self, suite: str, source: ResultStore, keys: Iterable[str]) -> int:
        """Copy the runs ``keys`` (and their curves) from ``source`` into this store and
        link them to ``suite``; returns the number copied.

        For publishing the runs a suite gained (a cell's added seeds) from a sweep made
        in its own store, keeping the runs this store already publishes. A key this
        store holds already is refused: a run's published result is not overwritten.

        Raises:
            ValueError: ``source`` is this store, lacks a key, or this store has one.
        """
        if source.path.resolve() == self.path.resolve():
            raise ValueError(f"copy_runs: the source is this store itself ({self.path})")
        keys = sorted(set(keys))
        runs = source._select_keys("SELECT * FROM runs WHERE key IN ({})", keys)
        missing = sorted(set(keys) - {r[0] for r in runs})
        if missing:
            raise ValueError(f"copy_runs: {source.path} holds no run {missing[0]!r} ({len(missing)} missing)")
        held = sorted(self.status(keys))
        if held:
            raise ValueError(f"copy_runs: this store holds run {held[0]!r} already ({len(held)} held)")
        curves = source.curves(keys)
        with self._conn:
            if runs:
                self._conn.executemany(f"INSERT INTO runs VALUES ({','.join('?' * len(runs[0]))})", runs)
            self._conn.executemany(
                "INSERT INTO curves (key, timesteps, mean_return) VALUES (?, ?, ?)", curves
            )
            self._conn.executemany(
                "INSERT OR IGNORE INTO suite_runs (suite, key) VALUES (?, ?)", [(suite, k) for k in keys]
            )
        return len(runs)

    def replace_suite(self, suite: str, source: ResultStore) -> int:
        """Make ``suite`` here exactly what it is in ``source``: its runs, curves, sweeps
        and links, in one transaction; returns the number of runs copied.

        For publishing a suite measured afresh in its own store (a clean wall time).
        This store's earlier runs of ``suite`` that no other suite links are dropped
        (git keeps the committed store's history); runs shared with another suite stay.
        """
        if source.path.resolve() == self.path.resolve():
            raise ValueError(f"replace_suite: the source is this store itself ({self.path})")
        keys = [r[0] for r in source._conn.execute("SELECT key FROM suite_runs WHERE suite = ?", (suite,))]
        if not keys:
            raise ValueError(f"replace_suite: {source.path} holds no runs of suite {suite!r}")
        runs = source._select_keys("SELECT * FROM runs WHERE key IN ({})", keys)
        curves = source.curves(keys)
        sweeps = source._conn.execute(
            "SELECT * FROM sweeps WHERE suite = ? ORDER BY rowid", (suite,)
        ).fetchall()
        with self._conn:
            self._conn.execute("DELETE FROM suite_runs WHERE suite = ?", (suite,))
            self._conn.execute("DELETE FROM sweeps WHERE suite = ?", (suite,))
            orphans = "SELECT key FROM runs WHERE key NOT IN (SELECT key FROM suite_runs)"
            self._conn.execute(f"DELETE FROM curves WHERE key IN ({orphans})")
            self._conn.execute(f"DELETE FROM runs WHERE key IN ({orphans})")
            self._conn.executemany(
                f"INSERT OR REPLACE INTO runs VALUES ({','.join('?' * len(runs[0]))})", runs
            )
            self._conn.executemany("DELETE FROM curves WHERE key = ?", [(k,) for k in keys])
            self._conn.executemany(
                "INSERT INTO curves (key, timesteps, mean_return) VALUES (?, ?, ?)", curves
            )
            if sweeps:
                self._conn.executemany(
                    f"INSERT INTO sweeps VALUES ({','.join('?' * len(sweeps[0]))})", sweeps
                )
            self._conn.executemany(
                "INSERT INTO suite_runs (suite, key) VALUES (?, ?)", [(suite, k) for k in keys]
            )
        return len(runs)

    def update_results(self, changes: dict[str, dict[str, Any]]) -> int:
        """Merge ``changes[key]`` into the stored result of each run ``key``, in one
        transaction (a store migration: a field that older runs lack); returns the number
        of runs changed. Unknown keys are refused."""
        rows = dict(self._select_keys("SELECT key, result FROM runs WHERE key IN ({})", list(changes)))
        missing = sorted(set(changes) - set(rows))
        if missing:
            raise ValueError(f"update_results: no stored runs {missing[:5]} in {self.path}")
        with self._conn:
            self._conn.executemany(
                "UPDATE runs SET result = ? WHERE key = ?",
                [(json.dumps({**json.loads(rows[k]), **v}), k) for k, v in changes.items()],
            )
        return len(changes)
