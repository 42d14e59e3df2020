"""The results store: an embedded SQLite database, one row per finished run.

Each run is written in one transaction together with its evaluation curve, when
it finishes, so a sweep that is killed at any moment loses only the runs in
flight: a rerun skips every finished row and never writes one twice (the spec
hash is the primary key). A failed run is stored with its error; it is skipped
too unless the sweep asks to retry failures.

A run being trained is *claimed* (table ``claims``): its owner (host, pid and a
random token) refreshes a heartbeat while it trains, and the claim goes away in
the transaction that writes the run. Another process sharing the store skips a
claimed run; a claim whose heartbeat is older than the claim timeout belongs to
a dead process and is taken over, at once if the owner was a process of this
host that no longer exists. See :meth:`ResultStore.claim`.

The file carries a layout version (``PRAGMA user_version``, :data:`STORE_VERSION`).
A store of an older layout is migrated in place the first time a run, claim or
link is written to it; reading never changes the file. A file that is not a
store, is damaged, or comes from a newer pomdp-bench raises :class:`StoreError`
and is left untouched.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

from pomdp_bench.harness import weight_files
from pomdp_bench.harness.provenance import now
from pomdp_bench.harness.published import PublishedFolders, sync
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
CREATE TABLE IF NOT EXISTS suite_cells (
    suite TEXT NOT NULL,
    cell TEXT NOT NULL,
    PRIMARY KEY (suite, cell)
);
CREATE TABLE IF NOT EXISTS weights (
    key TEXT PRIMARY KEY,
    save BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS analyses (
    key TEXT NOT NULL,
    analysis TEXT NOT NULL,
    status TEXT NOT NULL,
    value TEXT NOT NULL,
    error TEXT NOT NULL DEFAULT '',
    git_commit TEXT NOT NULL DEFAULT '',
    machine TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL,
    PRIMARY KEY (key, analysis)
);
CREATE TABLE IF NOT EXISTS published_records (
    file TEXT PRIMARY KEY
);
CREATE TABLE IF NOT EXISTS published_suite_runs (
    suite TEXT NOT NULL,
    key TEXT NOT NULL,
    PRIMARY KEY (suite, key)
);
CREATE TABLE IF NOT EXISTS published_meta (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS claims (
    key TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    claimed_at REAL NOT NULL,
    heartbeat REAL NOT NULL
);
"""

STORE_FILENAME = "results.sqlite"

STORE_VERSION = 5
"""The store layout this package writes (``PRAGMA user_version``). 0: a store from
before the marker (runs, curves, sweeps, suite_runs); 1: adds ``claims``; 2: adds
``suite_cells`` (the cells a suite declared when it was last swept); 3: adds
``weights`` (each run's agent save, see :meth:`ResultStore.load_agent`); 4: adds
``analyses`` (what an analysis of a run's trained agent found, see
:meth:`ResultStore.write_analysis`); 5: adds ``published_records``, ``published_suite_runs``
and ``published_meta`` (what the index of published records imported, see
:mod:`pomdp_bench.harness.published`)."""

ANALYSIS_STATUSES = ("ok", "failed", "skipped")
"""How an analysis of a run ended: ``ok`` (its value is stored), ``failed`` (an error,
stored), ``skipped`` (it does not apply to the run; the reason is stored as the error)."""

DEFAULT_CLAIM_TIMEOUT = 120.0
"""Seconds without a heartbeat after which a claim counts as abandoned (its owner
died) and another process may take the run over. The owner refreshes its claims
every quarter of the timeout. Override with ``--claim-timeout`` or the environment
variable ``POMDP_BENCH_CLAIM_TIMEOUT``."""

CLAIM_TIMEOUT_ENV = "POMDP_BENCH_CLAIM_TIMEOUT"

_SQLITE_MAGIC = b"SQLite format 3\x00"
_WHAT_TO_DO = "move it aside or pass another --results folder"

ClaimOutcome = Literal["claimed", "done", "held"]


class StoreError(ValueError):
    """A results store file that this package cannot use: not an SQLite database, a
    damaged one, another program's database, or a store of a newer layout. The
    message names the file and what to do; the file is left as it was."""


def claim_timeout(value: float | str | None = None) -> float:
    """The claim timeout in seconds: ``value`` if given, else the environment variable
    ``POMDP_BENCH_CLAIM_TIMEOUT``, else :data:`DEFAULT_CLAIM_TIMEOUT`.

    Raises:
        ValueError: the value is not a number of seconds above 0.
    """
    source = "the claim timeout"
    if value is None:
        value = os.environ.get(CLAIM_TIMEOUT_ENV)
        source = CLAIM_TIMEOUT_ENV
    if value is None or value == "":
        return DEFAULT_CLAIM_TIMEOUT
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{source} must be a number of seconds above 0, got {value!r}") from None
    if not seconds > 0 or seconds == float("inf"):
        raise ValueError(f"{source} must be a number of seconds above 0, got {value!r}")
    return seconds


def new_owner() -> str:
    """A claim owner name unique to this process and call: ``host:pid:token`` (the
    random token keeps a reused pid from passing for a dead owner)."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


def owner_alive(owner: str) -> bool:
    """False when ``owner`` (:func:`new_owner`'s ``host:pid:token``) names a process of this
    host that no longer exists, so its claims are free at once; True otherwise (another
    host's process: only its heartbeat tells)."""
    host, _, rest = owner.partition(":")
    pid = rest.partition(":")[0]
    if host != socket.gethostname() or not pid.isdigit():
        return True
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


# Stores this process has open, by resolved path: how many connections each.
_OPEN_IN_PROCESS: Counter[str] = Counter()
_OPEN_LOCK = threading.Lock()  # heartbeat threads open stores beside the main thread


def _check_file(path: Path) -> None:
    """Refuse a file that is not an SQLite database, before SQLite touches it.

    Call it only while this process holds no connection to ``path``: closing any file
    handle on the database drops every POSIX lock this process holds on it, SQLite's
    included. Another process's connection could then take the database for the last
    one, checkpoint and delete the WAL under a live writer, and lose its later writes.

    Raises:
        StoreError: the file is neither empty nor an SQLite database.
    """
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return
    if size == 0:  # SQLite's own reading of an empty file: a new database
        return
    with path.open("rb") as handle:
        head = handle.read(len(_SQLITE_MAGIC))
    if head != _SQLITE_MAGIC:
        raise StoreError(
            f"{path} is not a pomdp-bench results store (file is not an SQLite database); {_WHAT_TO_DO}"
        )


class ResultStore:
    """A results store in ``<out>/results.sqlite``.

    Opening checks the file and reads it only: a new (missing or empty) file gets the
    current layout at once, an older layout is migrated when this store first writes.
    A folder holding ``published.json`` is the index of the published records
    (:mod:`pomdp_bench.harness.published`): opening it first imports the records it
    lacks, and :meth:`pomdp_bench.harness.store.ResultStore.load_agent` reads the published
    weight files.

    Args:
        out: the output folder (created if missing).
        owner: the name under which this store's claims are held (default:
            :func:`new_owner`, unique to this object).
        clock: seconds since the epoch, for heartbeats (tests pass a fake one).

    Raises:
        StoreError: the file is not a pomdp-bench results store, is damaged, or was
            written by a newer pomdp-bench (the message names the file and what to do).
        pomdp_bench.harness.published.RecordError: a published record or suite index is damaged or of a newer layout
            (the readable ones are imported first).
    """

    def __init__(
        self, out: str | Path, owner: str | None = None, clock: Callable[[], float] = time.time
    ) -> None:
        self.path = Path(out) / STORE_FILENAME
        self.owner = owner or new_owner()
        self._clock = clock
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._process_key = str(self.path.resolve())
        with _OPEN_LOCK:
            if not _OPEN_IN_PROCESS[self._process_key]:  # checked when first opened (see _check_file)
                _check_file(self.path)
            self._conn = sqlite3.connect(self.path, timeout=60.0)
            _OPEN_IN_PROCESS[self._process_key] += 1
        self._open = True
        try:
            self.version = self._read_version_retrying()
        except BaseException:
            self.close()
            raise
        if self.version is None:  # a new store
            self._migrate()
        self.published = PublishedFolders.of_store(out)
        if self.published is not None:
            try:
                self._migrate()
                sync(self, self.published.records)
            except BaseException:
                self.close()
                raise

    def _published_fingerprint(self) -> str | None:
        """The digest of the suite indexes this store last imported in full (None: never)."""
        if not self._has_table("published_meta"):
            return None
        row = self._conn.execute("SELECT value FROM published_meta WHERE name = 'fingerprint'").fetchone()
        return None if row is None else str(row[0])

    def _read_version_retrying(self, attempts: int = 5) -> int | None:
        """:meth:`_read_version`, retried on a transient I/O error: another process may be
        creating the file or switching it to WAL at that moment (seen with two sweeps
        starting on one new store). A file still unreadable after ``attempts`` is damaged."""
        for attempt in range(attempts):
            try:
                return self._read_version()
            except StoreError as err:
                transient = isinstance(err.__cause__, sqlite3.OperationalError) and "disk I/O" in str(err)
                if not transient or attempt == attempts - 1:
                    raise
                time.sleep(0.2 * 2**attempt)
                self._conn.close()
                self._conn = sqlite3.connect(self.path, timeout=60.0)
        raise AssertionError("unreachable")

    def _read_version(self) -> int | None:
        """The file's layout version (None: a new, empty database), read without writing.

        Raises:
            StoreError: damaged, not a results store, or of a newer layout.
        """
        try:
            version = int(self._conn.execute("PRAGMA user_version").fetchone()[0])
            tables = {r[0] for r in self._conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            check = self._conn.execute("PRAGMA quick_check(1)").fetchone()[0]
        except sqlite3.DatabaseError as err:
            reason = "file is not a database" if "not a database" in str(err) else f"damaged: {err}"
            raise StoreError(
                f"{self.path} is not a usable pomdp-bench results store ({reason}); {_WHAT_TO_DO}"
            ) from err
        if check != "ok":
            raise StoreError(
                f"{self.path} is not a usable pomdp-bench results store (damaged: {check}); {_WHAT_TO_DO}"
            )
        if version > STORE_VERSION:
            raise StoreError(
                f"{self.path} is a results store of layout version {version}, written by a newer "
                f"pomdp-bench; this one reads versions up to {STORE_VERSION}: upgrade pomdp-bench to use it"
            )
        if not tables and version == 0:
            return None
        if "runs" not in tables:
            raise StoreError(
                f"{self.path} is an SQLite database but not a pomdp-bench results store (it has no runs "
                f"table; tables: {', '.join(sorted(tables))}); {_WHAT_TO_DO}"
            )
        return version

    def _migrate(self) -> None:
        """Bring the file to :data:`STORE_VERSION` (idempotent; safe when several
        processes open the same store at once)."""
        if self.version == STORE_VERSION:
            return
        self._conn.execute("PRAGMA journal_mode=WAL")
        with self._immediate():
            current = int(self._conn.execute("PRAGMA user_version").fetchone()[0])
            if current < STORE_VERSION:
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        self._conn.execute(statement)
                self._conn.execute(f"PRAGMA user_version = {STORE_VERSION}")
        self.version = STORE_VERSION

    def _has_claims(self) -> bool:
        """Whether the file has the claims table yet (another process may have migrated it)."""
        if self.version < 1:
            self.version = int(self._conn.execute("PRAGMA user_version").fetchone()[0]) or self.version
        return self.version >= 1  # layout 1 added claims

    @contextmanager
    def _immediate(self) -> Iterator[sqlite3.Connection]:
        """One write transaction that takes the write lock at its start, so its reads and
        writes are atomic against other processes."""
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            yield self._conn
        except BaseException:
            self._conn.rollback()
            raise
        self._conn.commit()

    def close(self) -> None:
        """Close the connection (claims stay: release them first, or let them go stale)."""
        self._conn.close()
        if self._open:
            self._open = False
            with _OPEN_LOCK:
                _OPEN_IN_PROCESS[self._process_key] -= 1

    def __enter__(self) -> ResultStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def status(self, keys: Iterable[str]) -> dict[str, str]:
        """``{key: status}`` for the keys that have a row."""
        return dict(self._select_keys("SELECT key, status FROM runs WHERE key IN ({})", keys))

    def link(self, suite: str, specs: Iterable[RunSpec]) -> None:
        """Record that ``specs`` belong to ``suite`` (a run may serve several suites)."""
        self._migrate()
        with self._conn:
            self._conn.executemany(
                "INSERT OR IGNORE INTO suite_runs (suite, key) VALUES (?, ?)",
                [(suite, s.key()) for s in specs],
            )

    def declare_cells(self, suite: str, cells: Iterable[Any]) -> None:
        """Record the cells ``suite`` declares (replacing what it declared before), so that
        reports read its coverage from the store. A cell is any JSON value (the
        leaderboard's cell identity: :func:`~pomdp_bench.harness.cells.cell_id`)."""
        rows = sorted({json.dumps(cell, sort_keys=True) for cell in cells})
        self._migrate()
        with self._conn:
            self._conn.execute("DELETE FROM suite_cells WHERE suite = ?", (suite,))
            self._conn.executemany(
                "INSERT INTO suite_cells (suite, cell) VALUES (?, ?)", [(suite, c) for c in rows]
            )

    def declared_cells(self, suite: str) -> list[Any] | None:
        """The cells :meth:`declare_cells` recorded for ``suite``, or ``None`` when it
        recorded none (a store written before cells were recorded)."""
        tables = {r[0] for r in self._conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "suite_cells" not in tables:
            return None
        cells = [
            json.loads(r[0])
            for r in self._conn.execute(
                "SELECT cell FROM suite_cells WHERE suite = ? ORDER BY cell", (suite,)
            )
        ]
        return cells or None

    def write(self, spec: RunSpec, result: RunResult, git_commit: str = "", machine: str = "") -> None:
        """Store one run and its curve in one transaction (replacing a failed attempt), and
        release this store's claim on it in the same transaction."""
        key = spec.key()
        self._migrate()
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
                    json.dumps({k: v for k, v in result.to_dict().items() if k != "weights"}),
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
            self._conn.execute("DELETE FROM weights WHERE key = ?", (key,))
            if result.weights is not None:
                self._conn.execute("INSERT INTO weights (key, save) VALUES (?, ?)", (key, result.weights))
            self._conn.execute("DELETE FROM claims WHERE key = ? AND owner = ?", (key, self.owner))

    def weights(self, key: str) -> bytes | None:
        """The agent save of run ``key`` (``Agent.save``'s archive): the one stored in this
        file, else the published weight file (checked against its manifest), else None:
        no such run, a failed one, one stored before runs kept their weights, or a
        published save not fetched yet (:meth:`load_agent` says which).

        Raises:
            WeightsError: a published file that does not match its manifest.
        """
        if self._has_table("weights"):
            row = self._conn.execute("SELECT save FROM weights WHERE key = ?", (key,)).fetchone()
            if row is not None:
                return bytes(row[0])
        if self.published is not None:
            return weight_files.local_weights(self.published.weights, key)
        return None

    def load_agent(self, key: str, device: str = "cpu") -> Any:
        """The trained agent of run ``key``, rebuilt from its stored weights with its
        agent's ``load`` (the class named in the run's spec, from the agent registry),
        on the env its spec names.

        .. warning:: as ``load``: the save names modules to import (the env's and its
            wrappers'). Open only stores you trust.

        Raises:
            KeyError: no run ``key`` in this store.
            ValueError: the run has no stored weights (failed, or stored before runs
                kept them).
        """
        import io

        from pomdp_bench.agents.registry import get_agent

        row = self._conn.execute("SELECT spec FROM runs WHERE key = ?", (key,)).fetchone()
        if row is None:
            raise KeyError(f"no run {key!r} in {self.path}")
        save = self.weights(key)
        if (
            save is None
            and self.published is not None
            and weight_files.missing(self.published.weights, [key])
        ):
            raise ValueError(
                f"the published weights of run {key!r} are not in {self.published.weights}; get them with "
                f"`python -m pomdp_bench.weights fetch --results {self.path.parent}`"
            )
        if save is None:
            raise ValueError(
                f"run {key!r} in {self.path} has no stored weights (it failed, or was stored "
                "before runs kept their weights); rerun it to get them"
            )
        spec = RunSpec.from_dict(json.loads(row[0]))
        from pomdp_bench.harness.training import prepare_env

        prepare_env(spec)
        return get_agent(spec.agent).load_class().load(io.BytesIO(save), device=device)

    def _has_table(self, name: str) -> bool:
        return (
            self._conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
            ).fetchone()
            is not None
        )

    def _weights_rows(self, keys: Iterable[str]) -> list[tuple[Any, ...]]:
        if not self._has_table("weights"):
            return []
        return self._select_keys("SELECT key, save FROM weights WHERE key IN ({})", keys)

    def write_analysis(
        self,
        key: str,
        analysis: str,
        status: str,
        value: dict[str, Any] | None = None,
        error: str = "",
        git_commit: str = "",
        machine: str = "",
    ) -> None:
        """Store what the analysis ``analysis`` of run ``key`` found, replacing an earlier
        result of it (:mod:`pomdp_bench.harness.analysis` writes them).

        Args:
            key: a stored run's key.
            analysis: the analysis's name (``"probes"``, ``"generalisation"``).
            status: one of :data:`ANALYSIS_STATUSES`.
            value: its result as JSON-able data (``ok`` only).
            error: the error of a failed analysis, or why it was skipped.

        Raises:
            ValueError: an unknown status, or no run ``key`` in this store.
        """
        if status not in ANALYSIS_STATUSES:
            raise ValueError(f"analysis status must be one of {ANALYSIS_STATUSES}, got {status!r}")
        if not self.status([key]):
            raise ValueError(f"no run {key!r} in {self.path}")
        self._migrate()
        with self._conn:
            self._conn.execute(
                "INSERT OR REPLACE INTO analyses (key, analysis, status, value, error, git_commit, machine,"
                " created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    key,
                    analysis,
                    status,
                    json.dumps(value or {}, sort_keys=True),
                    error,
                    git_commit,
                    machine,
                    now(),
                ),
            )

    def analyses(self, keys: Iterable[str] | None = None) -> dict[str, dict[str, dict[str, Any]]]:
        """Stored analyses: ``{key: {analysis: {"status", "value", "error", "created_at"}}}``
        for the runs ``keys`` (default: every run); a store written before analyses were
        kept has none."""
        if not self._has_table("analyses"):
            return {}
        query = "SELECT key, analysis, status, value, error, created_at FROM analyses"
        found = (
            self._conn.execute(query + " ORDER BY key, analysis").fetchall()
            if keys is None
            else self._select_keys(query + " WHERE key IN ({}) ORDER BY key, analysis", keys)
        )
        out: dict[str, dict[str, dict[str, Any]]] = {}
        for key, analysis, status, value, error, created in found:
            out.setdefault(key, {})[analysis] = {
                "status": status,
                "value": json.loads(value),
                "error": error,
                "created_at": created,
            }
        return out

    def _insert_analyses(self, rows: list[tuple[Any, ...]]) -> None:
        """Insert rows of another store's ``analyses`` table (inside a transaction)."""
        if rows:
            self._conn.executemany(
                f"INSERT OR REPLACE INTO analyses VALUES ({','.join('?' * len(rows[0]))})", rows
            )

    def _analyses_rows(self, keys: Iterable[str]) -> list[tuple[Any, ...]]:
        if not self._has_table("analyses"):
            return []
        return self._select_keys("SELECT * FROM analyses WHERE key IN ({})", keys)

    def claim(
        self, key: str, timeout: float, retry_failed: bool = False, failed_before: str | None = None
    ) -> ClaimOutcome:
        """Claim the run ``key`` for training, atomically against other processes.

        Args:
            key: the run's key (:meth:`RunSpec.key`).
            timeout: seconds without a heartbeat after which another owner's claim is
                abandoned and taken over.
            retry_failed: a run stored as failed is to be trained again.
            failed_before: with ``retry_failed``, only a failure stored before this time
                (:func:`~pomdp_bench.harness.provenance.now`'s format) is retried: a newer
                one is another process's retry in this sweep.

        Returns:
            ``"claimed"``: this store now holds the claim (it had it already, the run was
            unclaimed, its owner's heartbeat was older than ``timeout``, or its owner was a
            process of this host that has exited, see :func:`owner_alive`); ``"done"``:
            the run is stored (and not to be retried); ``"held"``: another owner holds a
            live claim.
        """
        timeout = _positive(timeout, "timeout")
        self._migrate()
        with self._immediate() as conn:
            row = conn.execute("SELECT status, created_at FROM runs WHERE key = ?", (key,)).fetchone()
            if row is not None:
                status, created = row
                retry = status != "ok" and retry_failed and (failed_before is None or created < failed_before)
                if not retry:
                    conn.execute("DELETE FROM claims WHERE key = ? AND owner = ?", (key, self.owner))
                    return "done"
            now = self._clock()
            held = conn.execute("SELECT owner, heartbeat FROM claims WHERE key = ?", (key,)).fetchone()
            if (
                held is not None
                and held[0] != self.owner
                and now - held[1] < timeout
                and owner_alive(held[0])
            ):
                return "held"
            conn.execute(
                "INSERT OR REPLACE INTO claims (key, owner, claimed_at, heartbeat) VALUES (?, ?, ?, ?)",
                (key, self.owner, now, now),
            )
        return "claimed"

    def heartbeat(self) -> int:
        """Refresh the heartbeat of every claim this store holds; returns how many."""
        if not self._has_claims():
            return 0
        with self._conn:
            cur = self._conn.execute(
                "UPDATE claims SET heartbeat = ? WHERE owner = ?", (self._clock(), self.owner)
            )
        return cur.rowcount

    def release(self, keys: Iterable[str] | None = None) -> int:
        """Drop this store's claims on ``keys`` (default: all it holds), e.g. when runs
        are abandoned without a result; returns how many were dropped."""
        if not self._has_claims():
            return 0
        with self._conn:
            if keys is None:
                cur = self._conn.execute("DELETE FROM claims WHERE owner = ?", (self.owner,))
            else:
                cur = self._conn.executemany(
                    "DELETE FROM claims WHERE key = ? AND owner = ?", [(k, self.owner) for k in keys]
                )
        return cur.rowcount

    def claims(self) -> list[dict[str, Any]]:
        """Every claim in the store: ``key``, ``owner``, ``claimed_at`` and ``heartbeat``
        (seconds since the epoch), and ``age`` (seconds since the heartbeat)."""
        if not self._has_claims():
            return []
        now = self._clock()
        return [
            {"key": k, "owner": o, "claimed_at": c, "heartbeat": h, "age": now - h}
            for k, o, c, h in self._conn.execute(
                "SELECT key, owner, claimed_at, heartbeat FROM claims ORDER BY key"
            )
        ]

    def start_sweep(self, suite: str, command: str, git_commit: str, machine: str) -> int:
        """Record that a sweep of ``suite`` started; returns its id for :meth:`finish_sweep`."""
        self._migrate()
        with self._conn:
            cur = self._conn.execute(
                "INSERT INTO sweeps (suite, command, git_commit, machine, started_at) VALUES (?, ?, ?, ?, ?)",
                (suite, command, git_commit, machine, now()),
            )
        return int(cur.lastrowid)

    def finish_sweep(self, sweep_id: int, wall_seconds: float, n_runs: int) -> None:
        """Record that the sweep ``sweep_id`` ended after ``wall_seconds`` with ``n_runs`` runs."""
        self._migrate()
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
        """Every stored run (of ``suite``), as dicts with ``spec`` and ``result`` decoded, and
        ``analyses`` (:meth:`analyses`: ``{analysis: {...}}``, empty where none ran)."""
        query = (
            "SELECT r.key, r.spec, r.status, r.result, r.git_commit, r.machine, r.created_at FROM runs r"
            + (" JOIN suite_runs s ON s.key = r.key WHERE s.suite = ?" if suite else "")
            + " ORDER BY r.key"
        )
        out = []
        analyses = self.analyses()
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
                    "analyses": analyses.get(key, {}),
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
        self._migrate()
        linked = [r[0] for r in self._conn.execute("SELECT key FROM suite_runs WHERE suite = ?", (suite,))]
        stale = sorted(k for k in linked if k not in keep)
        with self._conn:
            self._conn.executemany(
                "DELETE FROM suite_runs WHERE suite = ? AND key = ?", [(suite, k) for k in stale]
            )
        return stale

    def rename_suite(self, old: str, new: str) -> int:
        """Move suite ``old``'s links, declared cells and sweeps to the name ``new``, in one
        transaction; returns the runs moved. For a suite whose file is renamed, so that
        its published cells keep their runs under the new name. The runs themselves do not
        change: their keys do not hold the suite's name.

        Raises:
            ValueError: ``old`` has no runs here, or ``new`` already has some.
        """
        linked = self._conn.execute("SELECT COUNT(*) FROM suite_runs WHERE suite = ?", (old,)).fetchone()[0]
        if not linked:
            raise ValueError(f"suite {old!r} has no runs in this store; suites here: {self.suites()}")
        if self._conn.execute("SELECT COUNT(*) FROM suite_runs WHERE suite = ?", (new,)).fetchone()[0]:
            raise ValueError(f"suite {new!r} already has runs in this store; pick a free name")
        self._migrate()
        with self._conn:
            for table in ("suite_runs", "suite_cells", "sweeps"):
                self._conn.execute(f"UPDATE {table} SET suite = ? WHERE suite = ?", (new, old))
        return int(linked)

    def copy_runs(self, suite: str, source: ResultStore, keys: Iterable[str]) -> int:
        """Copy the runs ``keys`` (their curves, weights and analyses) from ``source`` into
        this store and link them to ``suite``; returns the number copied.

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
        weights = source._weights_rows(keys)
        analyses = source._analyses_rows(keys)
        self._migrate()
        with self._conn:
            if runs:
                self._conn.executemany(f"INSERT INTO runs VALUES ({','.join('?' * len(runs[0]))})", runs)
            self._conn.executemany("INSERT OR REPLACE INTO weights (key, save) VALUES (?, ?)", weights)
            self._insert_analyses(analyses)
            self._conn.executemany(
                "INSERT INTO curves (key, timesteps, mean_return) VALUES (?, ?, ?)", curves
            )
            self._conn.executemany(
                "INSERT OR IGNORE INTO suite_runs (suite, key) VALUES (?, ?)", [(suite, k) for k in keys]
            )
        return len(runs)

    def replace_suite(self, suite: str, source: ResultStore) -> int:
        """Make ``suite`` here exactly what it is in ``source``: its runs, curves, weights,
        analyses, sweeps and links, in one transaction; returns the number of runs copied.

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
        weights = source._weights_rows(keys)
        analyses = source._analyses_rows(keys)
        sweeps = source._conn.execute(
            "SELECT * FROM sweeps WHERE suite = ? ORDER BY rowid", (suite,)
        ).fetchall()
        self._migrate()
        with self._conn:
            self._conn.execute("DELETE FROM suite_runs WHERE suite = ?", (suite,))
            self._conn.execute("DELETE FROM sweeps WHERE suite = ?", (suite,))
            orphans = "SELECT key FROM runs WHERE key NOT IN (SELECT key FROM suite_runs)"
            self._conn.execute(f"DELETE FROM curves WHERE key IN ({orphans})")
            self._conn.execute(f"DELETE FROM weights WHERE key IN ({orphans})")
            self._conn.execute(f"DELETE FROM analyses WHERE key IN ({orphans})")
            self._conn.execute(f"DELETE FROM runs WHERE key IN ({orphans})")
            self._conn.executemany("INSERT OR REPLACE INTO weights (key, save) VALUES (?, ?)", weights)
            self._conn.executemany("DELETE FROM analyses WHERE key = ?", [(k,) for k in keys])
            self._insert_analyses(analyses)
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
        self._migrate()
        with self._conn:
            self._conn.executemany(
                "UPDATE runs SET result = ? WHERE key = ?",
                [(json.dumps({**json.loads(rows[k]), **v}), k) for k, v in changes.items()],
            )
        return len(changes)


def _positive(value: float, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number of seconds, got {type(value).__name__} {value!r}")
    if not value > 0:
        raise ValueError(f"{name} must be above 0 seconds, got {value!r}")
    return float(value)


class Heartbeat:
    """Refreshes the claims of ``owner`` in the store at ``out`` every ``interval``
    seconds, on a thread with its own connection, until :meth:`stop` (or the end of a
    ``with`` block).

    Args:
        out: the results folder.
        owner: the claims' owner (:attr:`ResultStore.owner`).
        interval: seconds between refreshes (a quarter of the claim timeout).
    """

    def __init__(self, out: str | Path, owner: str, interval: float) -> None:
        self.interval = _positive(interval, "interval")
        self._out, self._owner = out, owner
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="pomdp-bench-heartbeat", daemon=True)
        self.beats = 0

    def start(self) -> Heartbeat:
        """Start the thread; returns self."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop refreshing and wait for the thread."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def __enter__(self) -> Heartbeat:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _loop(self) -> None:
        store = ResultStore(self._out, owner=self._owner)
        try:
            while not self._stop.wait(self.interval):
                try:
                    store.heartbeat()
                    self.beats += 1
                except sqlite3.OperationalError:  # locked past the busy timeout: try next time
                    continue
        finally:
            store.close()
