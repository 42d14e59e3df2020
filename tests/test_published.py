"""Published runs as records written once, and the local index rebuilt from them
(harness/published.py), and the weight files beside them (harness/weight_files.py)."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from pomdp_bench import weights as weights_cli
from pomdp_bench.harness import weight_files
from pomdp_bench.harness.published import (
    POINTER_FILE,
    PublishedFolders,
    RecordError,
    publish,
    read_suite_index,
)
from pomdp_bench.harness.spec import RunResult, RunSpec
from pomdp_bench.harness.store import ResultStore
from pomdp_bench.harness.weight_files import WeightsError

ROOT = Path(__file__).resolve().parent.parent


def spec(seed: int) -> RunSpec:
    return RunSpec(
        env_id="TMaze-v1",
        env_kwargs={"corridor_length": 5},
        agent="ppo",
        memory={"kind": "gru"},
        bptt_length=None,
        seed=seed,
        total_timesteps=64,
    )


def working_store(folder: Path, seeds: range = range(3)) -> Path:
    """A working store with runs of suite ``s`` (weights on all but the last), an analysis,
    declared cells and a sweep."""
    with ResultStore(folder) as store:
        sweep = store.start_sweep("s", "python -m pomdp_bench.run --suite s", "abc", "test machine")
        for seed in seeds:
            weights = None if seed == seeds[-1] else bytes([seed]) * 100
            curve = [(8, 0.5 * seed), (16, float("nan"))]
            store.write(
                spec(seed), RunResult(status="ok", final_return=float(seed), curve=curve, weights=weights)
            )
        store.write(spec(99), RunResult(status="failed", error="boom"))
        store.link("s", [spec(s) for s in seeds] + [spec(99)])
        store.declare_cells("s", [["TMaze-v1", "gru"]])
        store.write_analysis(spec(0).key(), "probes", "ok", {"accuracy": 0.75})
        store.finish_sweep(sweep, 12.5, len(seeds) + 1)
    return folder


def published_folder(tmp_path: Path) -> tuple[Path, PublishedFolders]:
    """A store folder that indexes records in ``tmp_path/records`` and weights in ``tmp_path/weights``."""
    index = tmp_path / "index"
    index.mkdir()
    (index / POINTER_FILE).write_text(json.dumps({"records": "../records", "weights": "../weights"}))
    folders = PublishedFolders.of_store(index)
    assert folders is not None
    return index, folders


def snapshot(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def content(store: ResultStore) -> tuple:
    """Everything a report reads, in a comparable form."""
    rows = json.dumps(store.rows(), sort_keys=True)
    keys = [r["key"] for r in store.rows()]
    return rows, store.curves(keys).__repr__(), store.declared_cells("s"), store.sweeps("s"), store.suites()


def test_a_fresh_index_reads_what_the_working_store_held(tmp_path: Path) -> None:
    work = working_store(tmp_path / "work")
    index, folders = published_folder(tmp_path)
    with ResultStore(work) as store:
        summary = publish(store, ["s"], folders)
        expected = content(store)
        saves = {spec(s).key(): store.weights(spec(s).key()) for s in range(3)}
    assert (summary.records_written, summary.records_dropped, summary.weights_written) == (4, 0, 2)
    with ResultStore(index) as fresh:
        assert content(fresh) == expected
        for key, save in saves.items():  # the index's weights are the published files
            assert fresh.weights(key) == save
    manifest = weight_files.read_manifest(folders.weights)
    assert sorted(manifest) == sorted(k for k, v in saves.items() if v is not None)
    key = spec(0).key()
    assert manifest[key] == (hashlib.sha256(saves[key]).hexdigest(), 100)


def test_a_republish_without_new_runs_changes_no_file(tmp_path: Path) -> None:
    work = working_store(tmp_path / "work")
    _, folders = published_folder(tmp_path)
    with ResultStore(work) as store:
        publish(store, ["s"], folders)
        before = snapshot(tmp_path / "records") | snapshot(tmp_path / "weights")
        summary = publish(store, ["s"], folders)
    assert (summary.records_written, summary.records_dropped, summary.weights_written) == (0, 0, 0)
    assert snapshot(tmp_path / "records") | snapshot(tmp_path / "weights") == before


def test_a_new_analysis_adds_a_record_and_moves_the_index(tmp_path: Path) -> None:
    work = working_store(tmp_path / "work")
    index, folders = published_folder(tmp_path)
    key = spec(1).key()
    with ResultStore(work) as store:
        publish(store, ["s"], folders)
        old = read_suite_index(folders.records, "s")["runs"][key]
        others = {k: v for k, v in read_suite_index(folders.records, "s")["runs"].items() if k != key}
        with ResultStore(index):  # an index built before the change
            pass
        store.write_analysis(key, "probes", "ok", {"accuracy": 1.0})
        summary = publish(store, ["s"], folders)
    new_index = read_suite_index(folders.records, "s")["runs"]
    assert (summary.records_written, summary.records_dropped) == (1, 1)
    assert new_index[key] != old and not (folders.records / old).exists()
    assert {k: v for k, v in new_index.items() if k != key} == others  # the other records stay
    with ResultStore(index) as stale:  # the index catches up on its next open
        assert stale.analyses([key])[key]["probes"]["value"] == {"accuracy": 1.0}


def test_a_run_dropped_from_a_suite_is_unlinked_and_a_local_link_stays(tmp_path: Path) -> None:
    work = working_store(tmp_path / "work")
    index, folders = published_folder(tmp_path)
    with ResultStore(work) as store:
        publish(store, ["s"], folders)
    with ResultStore(index) as local:
        local.write(spec(7), RunResult(status="ok", final_return=7.0, curve=[(8, 7.0)]))
        local.link("s", [spec(7)])  # a local sweep's run, not published
    with ResultStore(work) as store:
        store.unlink_stale("s", [spec(s).key() for s in (0, 1)])
        publish(store, ["s"], folders)
    with ResultStore(index) as local:
        linked = {r["key"] for r in local.rows("s")}
    assert linked == {spec(0).key(), spec(1).key(), spec(7).key()}


def test_a_damaged_record_is_named_and_the_others_still_load(tmp_path: Path) -> None:
    work = working_store(tmp_path / "work")
    index, folders = published_folder(tmp_path)
    with ResultStore(work) as store:
        publish(store, ["s"], folders)
    runs = read_suite_index(folders.records, "s")["runs"]
    damaged = folders.records / runs[spec(0).key()]
    damaged.write_text(damaged.read_text()[:40])  # truncated
    before = snapshot(folders.records)
    with pytest.raises(RecordError, match="damaged or truncated") as info:
        ResultStore(index)
    assert str(damaged) in str(info.value) and "git checkout" in str(info.value)
    assert snapshot(folders.records) == before, "reading changed a record"
    # the readable records reached the index
    keys = {r[0] for r in sqlite3.connect(index / "results.sqlite").execute("SELECT key FROM runs")}
    assert keys == {spec(s).key() for s in (1, 2, 99)}


def test_an_edited_record_and_a_newer_layout_are_refused(tmp_path: Path) -> None:
    work = working_store(tmp_path / "work")
    index, folders = published_folder(tmp_path)
    with ResultStore(work) as store:
        publish(store, ["s"], folders)
    path = folders.records / read_suite_index(folders.records, "s")["runs"][spec(1).key()]
    record = json.loads(path.read_text())
    path.write_text(json.dumps({**record, "final_return": 5.0}, sort_keys=True))
    with pytest.raises(RecordError, match="does not match its name"):
        ResultStore(index)
    path.write_text(json.dumps({**record, "layout": 99}))
    with pytest.raises(RecordError, match="newer pomdp-bench"):
        ResultStore(index)


def test_weights_are_checked_against_the_manifest_and_fetched_from_a_folder(tmp_path: Path) -> None:
    work = working_store(tmp_path / "work")
    index, folders = published_folder(tmp_path)
    with ResultStore(work) as store:
        publish(store, ["s"], folders)
    remote = tmp_path / "remote"
    shutil.copytree(folders.weights, remote)
    key0, key1 = spec(0).key(), spec(1).key()
    for key in (key0, key1):
        weight_files.weight_path(folders.weights, key).unlink()
    with ResultStore(index) as store:
        assert store.weights(key0) is None
        with pytest.raises(ValueError, match=r"pomdp_bench\.weights fetch"):
            store.load_agent(key0)
    with pytest.raises(WeightsError, match="no remote"):
        weight_files.fetch(folders.weights)
    weight_files.weight_path(remote, key1).write_bytes(b"tampered")  # a remote file that does not match
    fetched, errors = weight_files.fetch(folders.weights, str(remote))
    assert fetched == 1 and len(errors) == 1 and key1 in errors[0] and "do not match" in errors[0]
    assert not weight_files.weight_path(folders.weights, key1).exists(), "a bad file was written"
    with ResultStore(index) as store:
        assert store.weights(key0) == bytes([0]) * 100
    weight_files.weight_path(folders.weights, key0).write_bytes(b"x" * 100)  # damaged locally
    with ResultStore(index) as store, pytest.raises(WeightsError, match="do not match the manifest"):
        store.weights(key0)


def test_the_weights_command_fetches_from_a_file_url(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    work = working_store(tmp_path / "work")
    index, folders = published_folder(tmp_path)
    with ResultStore(work) as store:
        publish(store, ["s"], folders)
    remote = tmp_path / "remote"
    shutil.move(folders.weights, remote)
    folders.weights.mkdir()
    shutil.copy(remote / "manifest.csv", folders.weights / "manifest.csv")
    assert weights_cli.main(["status", "--results", str(index)]) == 0
    assert "0 of 2 published weight files" in capsys.readouterr().out
    assert (
        weights_cli.main(["fetch", "--results", str(index), "--suite", "s", "--remote", remote.as_uri()]) == 0
    )
    assert "fetched 2 of 2" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        weights_cli.main(["fetch", "--results", str(index), "--suite", "nope", "--remote", str(remote)])
    assert "no published suite 'nope'" in capsys.readouterr().err


def test_a_republish_writes_back_a_weight_file_the_folder_lacks(tmp_path: Path) -> None:
    work = working_store(tmp_path / "work")
    _, folders = published_folder(tmp_path)
    key = spec(0).key()
    with ResultStore(work) as store:
        publish(store, ["s"], folders)
        manifest = (folders.weights / "manifest.csv").read_bytes()
        weight_files.weight_path(folders.weights, key).unlink()
        assert weight_files.export(store, [key], folders.weights) == 1
        assert weight_files.export(store, [key], folders.weights) == 0
    assert weight_files.local_weights(folders.weights, key) == bytes([0]) * 100
    assert (folders.weights / "manifest.csv").read_bytes() == manifest


def test_a_damaged_manifest_is_refused(tmp_path: Path) -> None:
    (tmp_path / "manifest.csv").write_text("key,sha256,bytes\nabc,123,notanumber\n")
    with pytest.raises(WeightsError, match="line 2 is damaged"):
        weight_files.read_manifest(tmp_path)


# --- the repository's published folder ---------------------------------------------------


def test_reading_the_published_records_leaves_them_unchanged(tmp_path: Path) -> None:
    """A fresh index (a copy of the pointer) builds from the records without touching them."""
    folders = PublishedFolders.of_store(ROOT / "leaderboards" / "store")
    assert folders is not None
    index = tmp_path / "store"
    index.mkdir()
    (index / POINTER_FILE).write_text(
        json.dumps({"records": str(folders.records), "weights": str(folders.weights)})
    )
    suites = folders.records / "suites"
    before = {p.name: p.read_bytes() for p in suites.iterdir()}
    with ResultStore(index) as store:
        assert "memory" in store.suites() and store.rows("memory")
        for suite in store.suites():
            assert len(store.rows(suite)) == len(read_suite_index(folders.records, suite)["runs"])
    assert {p.name: p.read_bytes() for p in suites.iterdir()} == before


def test_no_tracked_file_is_over_50_mb() -> None:
    """A git host refuses large files: the published tree keeps every file under 50 MB, and
    each weight file under 1 MB."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
        ).stdout.decode()
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    sizes = {
        name: (ROOT / name).stat().st_size for name in listed.split("\0") if name and (ROOT / name).is_file()
    }
    big = {name: size for name, size in sizes.items() if size > 50_000_000}
    assert not big, f"files over 50 MB: {big}"
    heavy = {
        n: s
        for n, s in sizes.items()
        if n.startswith("leaderboards/weights/") and s > weight_files.MAX_FILE_BYTES
    }
    assert not heavy, f"weight files over 1 MB: {heavy}"


def test_the_weights_module_runs_as_a_command() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "pomdp_bench.weights", "--help"], capture_output=True, text=True, check=True
    ).stdout
    assert "fetch" in out and "--remote" in out
