"""Published runs as text records written once, and the local index built from them.

A sweep writes into a working :class:`~pomdp_bench.harness.store.ResultStore` (SQLite,
never committed). Publishing turns each run of a suite into one immutable JSON record,
and the suite's index into a small JSON file that names its records::

    leaderboards/records/
        runs/<key[:2]>/<key>-<digest>.json   one run: spec, result, curve, analyses, weights' digest
        suites/<suite>.json                  the suite's index: its runs' records, cells, sweeps
    leaderboards/weights/
        <key>.pt                             one run's agent save (see weight_files.py)
        manifest.csv                         key, sha256 and bytes of every published save

A record's file name holds a digest of its content, so a record is never rewritten: a
run whose analyses change gets a new record, and the suite index moves to it. Only the
suite indexes are edited. Records no index names are deleted at publish.

A store folder that holds ``published.json`` (``leaderboards/store/`` in the repository)
is the *index* of the published records: opening it imports every record it lacks
(:func:`sync`), so a fresh clone reports, resumes and analyses from the records. The
SQLite file beside it is git-ignored; delete it to rebuild it from the records.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pomdp_bench.harness.store import ResultStore

RECORDS_LAYOUT = 1
"""The record and suite-index layout this package writes and reads (``"layout"`` in each
file). A file of a newer layout is refused with :class:`RecordError`."""

POINTER_FILE = "published.json"
"""The file that makes a store folder the index of published records. It is data:
``{"records": "<folder>", "weights": "<folder>"}``, each relative to the store folder."""

_RUN_FIELDS = ("status", "final_return", "steps_per_second", "wall_seconds", "error", "git_commit", "machine")
_REQUIRED = ("layout", "key", "spec", "result", "created_at", "curve", "analyses", *_RUN_FIELDS)


class RecordError(ValueError):
    """A published record or suite index that cannot be read: damaged, truncated, of a
    newer layout, or missing. The message names the file and what to do."""


@dataclass(frozen=True)
class PublishedFolders:
    """Where a store folder's published records and weights live.

    Attributes:
        records: the records folder (``runs/`` and ``suites/`` inside).
        weights: the weights folder (one ``<key>.pt`` per run and ``manifest.csv``).
    """

    records: Path
    weights: Path

    @classmethod
    def of_store(cls, store_folder: str | Path) -> PublishedFolders | None:
        """The folders named by ``store_folder/published.json``, or ``None`` when the folder
        has no such file (a plain working store).

        Raises:
            RecordError: the file is not a JSON object with string ``records`` and ``weights``.
        """
        pointer = Path(store_folder) / POINTER_FILE
        if not pointer.is_file():
            return None
        try:
            data = json.loads(pointer.read_text())
        except (OSError, ValueError) as err:
            raise RecordError(f"{pointer} is not valid JSON ({err}); restore it from git") from err
        if not isinstance(data, dict) or not all(
            isinstance(data.get(k), str) for k in ("records", "weights")
        ):
            raise RecordError(
                f'{pointer} must be a JSON object {{"records": "<folder>", "weights": "<folder>"}}, got {data!r}'
            )
        base = pointer.parent
        return cls(records=(base / data["records"]).resolve(), weights=(base / data["weights"]).resolve())


def _dumps(data: Any, indent: int | None = None) -> str:
    """JSON text as published: sorted keys, NaN kept (Python's json reads it back)."""
    separators = (",", ":") if indent is None else (",", ": ")
    return json.dumps(data, sort_keys=True, indent=indent, separators=separators) + "\n"


def _read_json(path: Path, what: str) -> dict[str, Any]:
    """A JSON object from ``path``, its layout checked.

    Raises:
        RecordError: missing, unreadable, damaged or truncated, or of a newer layout.
    """
    try:
        text = path.read_text()
    except OSError as err:
        raise RecordError(
            f"{what} {path} cannot be read ({err}); restore it with `git checkout -- {path}`"
        ) from err
    try:
        data = json.loads(text)
    except ValueError as err:
        raise RecordError(
            f"{what} {path} is damaged or truncated ({err}); restore it with `git checkout -- {path}`"
        ) from err
    if not isinstance(data, dict):
        raise RecordError(f"{what} {path} is not a JSON object; restore it with `git checkout -- {path}`")
    layout = data.get("layout")
    if not isinstance(layout, int) or isinstance(layout, bool):
        raise RecordError(f"{what} {path} has no integer layout; restore it with `git checkout -- {path}`")
    if layout > RECORDS_LAYOUT:
        raise RecordError(
            f"{what} {path} has layout {layout}, written by a newer pomdp-bench; this one reads layouts "
            f"up to {RECORDS_LAYOUT}: upgrade pomdp-bench"
        )
    return data


def read_record(path: Path) -> dict[str, Any]:
    """One run's record.

    Raises:
        RecordError: see :func:`_read_json`; also a record that lacks a field, or whose
            file name does not hold the digest of its content (edited after publishing).
    """
    data = _read_json(path, "record")
    missing = [f for f in _REQUIRED if f not in data]
    if missing:
        raise RecordError(f"record {path} lacks {missing}; restore it with `git checkout -- {path}`")
    if not path.name.startswith(f"{data['key']}-") or path.stem.rsplit("-", 1)[-1] != _digest(data):
        raise RecordError(
            f"record {path} does not match its name (edited after publishing?); records are written "
            f"once: restore it with `git checkout -- {path}`"
        )
    return data


def _digest(record: dict[str, Any]) -> str:
    return hashlib.sha256(_dumps(record).encode()).hexdigest()[:16]


def record_path(record: dict[str, Any]) -> str:
    """The record's path inside the records folder: ``runs/<key[:2]>/<key>-<digest>.json``."""
    key = record["key"]
    return f"runs/{key[:2]}/{key}-{_digest(record)}.json"


def suite_index_path(records: Path, suite: str) -> Path:
    return records / "suites" / f"{suite}.json"


def published_suites(records: Path) -> list[str]:
    """The suites with an index in ``records``, sorted."""
    return sorted(p.stem for p in (records / "suites").glob("*.json"))


def read_suite_index(records: Path, suite: str) -> dict[str, Any]:
    """A suite's index: ``runs`` ({key: record path}), ``cells`` and ``sweeps``.

    Raises:
        RecordError: see :func:`_read_json`, or an index without those fields.
    """
    path = suite_index_path(records, suite)
    data = _read_json(path, "suite index")
    if not isinstance(data.get("runs"), dict) or not isinstance(data.get("sweeps"), list):
        raise RecordError(
            f"suite index {path} lacks runs or sweeps; restore it with `git checkout -- {path}`"
        )
    return data


# --- publishing: working store -> records --------------------------------------------------


def _records_of(
    store: ResultStore, keys: list[str], manifest: dict[str, tuple[str, int]]
) -> list[dict[str, Any]]:
    """The records of the runs ``keys`` as they stand in ``store``."""
    columns = (
        "key, spec, status, final_return, steps_per_second, wall_seconds, result, error, git_commit, machine"
    )
    runs = store._select_keys(f"SELECT {columns}, created_at FROM runs WHERE key IN ({{}})", keys)
    curves: dict[str, list[list[Any]]] = {}
    for key, t, r in store.curves(keys):
        curves.setdefault(key, []).append([int(t), r])
    analyses: dict[str, dict[str, Any]] = {}
    for key, name, status, value, error, commit, machine, created in store._analyses_rows(keys):
        analyses.setdefault(key, {})[name] = {
            "status": status,
            "value": json.loads(value),
            "error": error,
            "git_commit": commit,
            "machine": machine,
            "created_at": created,
        }
    out = []
    for key, spec, status, final, sps, wall, result, error, commit, machine, created in runs:
        digest = manifest.get(key)
        out.append(
            {
                "layout": RECORDS_LAYOUT,
                "key": key,
                "spec": json.loads(spec),
                "status": status,
                "final_return": final,
                "steps_per_second": sps,
                "wall_seconds": wall,
                "result": json.loads(result),
                "error": error,
                "git_commit": commit,
                "machine": machine,
                "created_at": created,
                "curve": curves.get(key, []),
                "analyses": analyses.get(key, {}),
                "weights": None if digest is None else {"sha256": digest[0], "bytes": digest[1]},
            }
        )
    return out


def write_atomic(path: Path, data: str | bytes) -> None:
    """Write ``data`` to ``path`` whole: into a temporary file beside it, then renamed, so
    a reader never sees half a file (the folder is created if missing)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    if isinstance(data, bytes):
        tmp.write_bytes(data)
    else:
        tmp.write_text(data)
    os.replace(tmp, path)


@dataclass(frozen=True)
class PublishSummary:
    """What :func:`publish` wrote: new records, records dropped, new weight files."""

    records_written: int
    records_dropped: int
    weights_written: int


def publish(store: ResultStore, suites: Iterable[str], folders: PublishedFolders) -> PublishSummary:
    """Publish ``suites`` from the working ``store``: a record for each of their runs (new
    files only where a run changed), each suite's index, and each run's weights as a file
    with its manifest row. Records that no suite index names any more are deleted.

    Raises:
        ValueError: a suite with no runs in ``store``.
    """
    from pomdp_bench.harness import weight_files

    written = weights_written = 0
    for suite in suites:
        keys = [
            r[0]
            for r in store._conn.execute("SELECT key FROM suite_runs WHERE suite = ? ORDER BY key", (suite,))
        ]
        if not keys:
            raise ValueError(f"suite {suite!r} has no runs in {store.path}; suites there: {store.suites()}")
        weights_written += weight_files.export(store, keys, folders.weights)
        manifest = weight_files.read_manifest(folders.weights)
        index: dict[str, str] = {}
        for record in _records_of(store, keys, manifest):
            relative = record_path(record)
            path = folders.records / relative
            if not path.exists():  # its name holds its content's digest: written once
                write_atomic(path, _dumps(record))
                written += 1
            index[record["key"]] = relative
        sweeps = [{k: v for k, v in sweep.items() if k != "suite"} for sweep in store.sweeps(suite)]
        suite_index = {
            "layout": RECORDS_LAYOUT,
            "suite": suite,
            "runs": index,
            "cells": store.declared_cells(suite),
            "sweeps": sweeps,
        }
        path = suite_index_path(folders.records, suite)
        text = _dumps(suite_index, indent=1)
        if not path.exists() or path.read_text() != text:
            write_atomic(path, text)
    return PublishSummary(written, prune(folders.records), weights_written)


def prune(records: Path) -> int:
    """Delete record files that no suite index names; returns how many."""
    named: set[str] = set()
    for suite in published_suites(records):
        named |= set(read_suite_index(records, suite)["runs"].values())
    dropped = 0
    for path in sorted((records / "runs").glob("*/*.json")):
        if path.relative_to(records).as_posix() not in named:
            path.unlink()
            dropped += 1
    return dropped


# --- the index: records -> local store ------------------------------------------------------


def fingerprint(records: Path) -> str:
    """A digest of every suite index in ``records``: the local index is rebuilt when it changes."""
    h = hashlib.sha256()
    for suite in published_suites(records):
        h.update(suite.encode() + b"\0" + suite_index_path(records, suite).read_bytes() + b"\0")
    return h.hexdigest()


def sync(store: ResultStore, records: Path) -> int:
    """Bring the local index ``store`` up to the published ``records``; returns the number
    of records imported. Cheap when nothing changed (one digest of the suite indexes).

    A record replaces the store's run of the same key when it is at least as new
    (``created_at``); so does each of its analyses. A suite's links follow its index:
    runs the index dropped are unlinked, runs linked only locally stay. Every readable
    record is imported before an unreadable one is reported.

    Raises:
        RecordError: a damaged, truncated or newer-layout record or index (the others are
            imported first; the next open tries again).
    """
    digest = fingerprint(records)
    if store._published_fingerprint() == digest:
        return 0
    errors: list[str] = []
    imported = 0
    with store._immediate() as conn:
        done = {r[0] for r in conn.execute("SELECT file FROM published_records")}
        for suite in published_suites(records):
            try:
                index = read_suite_index(records, suite)
            except RecordError as err:
                errors.append(str(err))
                continue
            for relative in sorted(set(index["runs"].values()) - done):
                try:
                    record = read_record(records / relative)
                except RecordError as err:
                    errors.append(str(err))
                    continue
                _import_record(conn, record)
                conn.execute("INSERT OR IGNORE INTO published_records (file) VALUES (?)", (relative,))
                done.add(relative)
                imported += 1
            _link_suite(conn, suite, index)
        if not errors:
            conn.execute(
                "INSERT OR REPLACE INTO published_meta (name, value) VALUES ('fingerprint', ?)", (digest,)
            )
    if errors:
        raise RecordError(f"{len(errors)} published file(s) could not be read:\n" + "\n".join(errors))
    return imported


def _import_record(conn: Any, record: dict[str, Any]) -> None:
    key = record["key"]
    row = conn.execute("SELECT created_at FROM runs WHERE key = ?", (key,)).fetchone()
    if row is None or row[0] <= record["created_at"]:
        conn.execute(
            "INSERT OR REPLACE INTO runs (key, spec, status, final_return, steps_per_second, wall_seconds,"
            " result, error, git_commit, machine, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                key,
                json.dumps(record["spec"], sort_keys=True),
                *(record[f] for f in ("status", "final_return", "steps_per_second", "wall_seconds")),
                json.dumps(record["result"]),
                *(record[f] for f in ("error", "git_commit", "machine", "created_at")),
            ),
        )
        conn.execute("DELETE FROM curves WHERE key = ?", (key,))
        conn.executemany(
            "INSERT INTO curves (key, timesteps, mean_return) VALUES (?, ?, ?)",
            [(key, int(t), r) for t, r in record["curve"]],
        )
    for name, a in record["analyses"].items():
        row = conn.execute(
            "SELECT created_at FROM analyses WHERE key = ? AND analysis = ?", (key, name)
        ).fetchone()
        if row is None or row[0] <= a["created_at"]:
            conn.execute(
                "INSERT OR REPLACE INTO analyses (key, analysis, status, value, error, git_commit, machine,"
                " created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    key,
                    name,
                    a["status"],
                    json.dumps(a["value"], sort_keys=True),
                    a["error"],
                    a.get("git_commit", ""),
                    a.get("machine", ""),
                    a["created_at"],
                ),
            )


def _link_suite(conn: Any, suite: str, index: dict[str, Any]) -> None:
    """Make ``suite``'s links, cells and sweeps follow its index."""
    keys = set(index["runs"])
    before = {r[0] for r in conn.execute("SELECT key FROM published_suite_runs WHERE suite = ?", (suite,))}
    dropped = sorted(before - keys)
    conn.executemany("DELETE FROM suite_runs WHERE suite = ? AND key = ?", [(suite, k) for k in dropped])
    conn.execute("DELETE FROM published_suite_runs WHERE suite = ?", (suite,))
    rows = [(suite, k) for k in sorted(keys)]
    conn.executemany("INSERT OR IGNORE INTO suite_runs (suite, key) VALUES (?, ?)", rows)
    conn.executemany("INSERT INTO published_suite_runs (suite, key) VALUES (?, ?)", rows)
    if index.get("cells") is not None:
        conn.execute("DELETE FROM suite_cells WHERE suite = ?", (suite,))
        conn.executemany(
            "INSERT INTO suite_cells (suite, cell) VALUES (?, ?)",
            [(suite, c) for c in sorted({json.dumps(cell, sort_keys=True) for cell in index["cells"]})],
        )
    have = {
        (r[0], r[1]) for r in conn.execute("SELECT started_at, command FROM sweeps WHERE suite = ?", (suite,))
    }
    for sweep in index["sweeps"]:
        if (sweep["started_at"], sweep["command"]) in have:
            continue
        conn.execute(
            "INSERT INTO sweeps (suite, command, git_commit, machine, started_at, finished_at, wall_seconds,"
            " n_runs) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                suite,
                *(
                    sweep.get(f)
                    for f in (
                        "command",
                        "git_commit",
                        "machine",
                        "started_at",
                        "finished_at",
                        "wall_seconds",
                        "n_runs",
                    )
                ),
            ),
        )
