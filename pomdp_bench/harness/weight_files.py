"""Published agent weights: one file per run, named by its key, and a manifest.

::

    leaderboards/weights/<key>.pt     Agent.save's archive of run <key> (optimiser states left out)
    leaderboards/weights/manifest.csv key,sha256,bytes: one row per published save, sorted by key

A run's weights never change (its key names everything that made them), so each file
is written once. The manifest is what a fetch checks a file against. Files can live in
the repository or on a remote: a folder, any fsspec URL, or a Hugging Face Hub dataset
(``hf://datasets/<owner>/<name>``, with the ``[hub]`` extra), as rl-zoo3 keeps its agents.
``python -m pomdp_bench.weights fetch`` gets the ones missing here
(:func:`fetch`); :meth:`ResultStore.load_agent` reads a local file first.
"""

from __future__ import annotations

import csv
import hashlib
import io
import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from pomdp_bench.harness.published import write_atomic

if TYPE_CHECKING:
    from pomdp_bench.harness.store import ResultStore

MANIFEST = "manifest.csv"
MAX_FILE_BYTES = 1_000_000
"""No weight file may exceed this (1 MB): the published tree stays within what a git host takes."""

REMOTE_ENV = "POMDP_BENCH_WEIGHTS_REMOTE"
"""The environment variable naming the default remote of :func:`fetch`."""


class WeightsError(ValueError):
    """A weight file or manifest that cannot be used: a digest or size that does not match
    the manifest, a damaged manifest, or no remote to fetch from. The message names the
    file and what to do; nothing is overwritten."""


def weight_path(folder: Path, key: str) -> Path:
    return folder / f"{key}.pt"


def read_manifest(folder: Path) -> dict[str, tuple[str, int]]:
    """``{key: (sha256, bytes)}`` from ``folder/manifest.csv`` (empty when there is none).

    Raises:
        WeightsError: a manifest that is not ``key,sha256,bytes`` rows.
    """
    path = folder / MANIFEST
    if not path.is_file():
        return {}
    out: dict[str, tuple[str, int]] = {}
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        if reader.fieldnames != ["key", "sha256", "bytes"]:
            raise WeightsError(
                f"{path} must have the header key,sha256,bytes, got {reader.fieldnames}; "
                f"restore it with `git checkout -- {path}`"
            )
        for line, row in enumerate(reader, start=2):
            digest, size = row["sha256"], row["bytes"]
            if len(digest or "") != 64 or not (size or "").isdigit():
                raise WeightsError(
                    f"{path} line {line} is damaged ({row}); restore it with `git checkout -- {path}`"
                )
            out[row["key"]] = (digest, int(size))
    return out


def _write_manifest(folder: Path, manifest: dict[str, tuple[str, int]]) -> None:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["key", "sha256", "bytes"])
    for key in sorted(manifest):
        writer.writerow([key, *manifest[key]])
    path = folder / MANIFEST
    if not (path.is_file() and path.read_text() == buf.getvalue()):
        write_atomic(path, buf.getvalue())


def _check(key: str, save: bytes, expected: tuple[str, int], where: str) -> None:
    digest = hashlib.sha256(save).hexdigest()
    if (digest, len(save)) != expected:
        raise WeightsError(
            f"weights of run {key!r} at {where} do not match the manifest (sha256 {digest[:12]}…, "
            f"{len(save)} bytes; manifest: {expected[0][:12]}…, {expected[1]} bytes); delete the file "
            "and fetch it again with `python -m pomdp_bench.weights fetch`"
        )


def export(store: ResultStore, keys: Iterable[str], folder: Path) -> int:
    """Write the stored weights of the runs ``keys`` as files in ``folder`` and add them to
    its manifest. A run already in the manifest keeps its row; its file is written again
    only when it is not in ``folder`` (a clone that has not fetched it). Returns the files
    written.

    Raises:
        WeightsError: a save over :data:`MAX_FILE_BYTES`, or one whose manifest row differs.
    """
    manifest = read_manifest(folder)
    written = 0
    for key, save in store._weights_rows(list(keys)):
        save = bytes(save)
        row = (hashlib.sha256(save).hexdigest(), len(save))
        if key in manifest:
            _check(key, save, manifest[key], str(store.path))
            if not weight_path(folder, key).is_file():
                write_atomic(weight_path(folder, key), save)
                written += 1
            continue
        if len(save) > MAX_FILE_BYTES:
            raise WeightsError(
                f"weights of run {key!r} are {len(save)} bytes, over the {MAX_FILE_BYTES} limit"
            )
        write_atomic(weight_path(folder, key), save)
        manifest[key] = row
        written += 1
    _write_manifest(folder, manifest)
    return written


def local_weights(folder: Path, key: str) -> bytes | None:
    """Run ``key``'s published save from ``folder``, checked against the manifest; ``None``
    when the manifest has no such run or the file is not here (fetch it).

    Raises:
        WeightsError: the file does not match its manifest row.
    """
    expected = read_manifest(folder).get(key)
    path = weight_path(folder, key)
    if expected is None or not path.is_file():
        return None
    save = path.read_bytes()
    _check(key, save, expected, str(path))
    return save


def missing(folder: Path, keys: Iterable[str] | None = None) -> list[str]:
    """The manifest's runs (of ``keys``, default all) whose file is not in ``folder``."""
    manifest = read_manifest(folder)
    wanted = sorted(manifest if keys is None else set(keys) & set(manifest))
    return [k for k in wanted if not weight_path(folder, k).is_file()]


def default_remote(folder: Path) -> str | None:
    """The remote :func:`fetch` uses when given none: ``$POMDP_BENCH_WEIGHTS_REMOTE``, else
    the first line of ``folder/REMOTE`` (a URL or path), else ``None``."""
    remote = os.environ.get(REMOTE_ENV, "").strip()
    if remote:
        return remote
    path = folder / "REMOTE"
    if path.is_file():
        lines = [
            line.strip()
            for line in path.read_text().splitlines()
            if line.strip() and not line.startswith("#")
        ]
        return lines[0] if lines else None
    return None


def _read_remote(remote: str, name: str) -> bytes:
    """The bytes of ``remote/name``: a local folder, or any URL fsspec opens."""
    if "://" not in remote:
        return (Path(remote) / name).read_bytes()
    import fsspec

    with fsspec.open(f"{remote.rstrip('/')}/{name}", "rb") as f:
        return f.read()


def fetch(
    folder: Path, remote: str | None = None, keys: Iterable[str] | None = None
) -> tuple[int, list[str]]:
    """Fetch the manifest's weight files missing from ``folder`` (of runs ``keys``, default
    all) from ``remote`` (default :func:`default_remote`), each checked against the manifest
    before it is written. Returns ``(files fetched, errors)``: one file that fails does not
    stop the rest.

    Raises:
        WeightsError: no remote given or configured.
    """
    remote = remote or default_remote(folder)
    if not remote:
        raise WeightsError(
            f"no remote to fetch weights from: pass --remote (a folder, an fsspec URL or "
            f"hf://datasets/<owner>/<name>), set {REMOTE_ENV}, or write one in {folder / 'REMOTE'}"
        )
    manifest = read_manifest(folder)
    fetched, errors = 0, []
    for key in missing(folder, keys):
        name = weight_path(Path(), key).name
        try:
            save = _read_remote(remote, name)
            _check(key, save, manifest[key], f"{remote}/{name}")
        except (OSError, WeightsError) as err:
            errors.append(f"{key}: {err}")
            continue
        write_atomic(weight_path(folder, key), save)
        fetched += 1
    return fetched, errors
