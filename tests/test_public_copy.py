"""scripts/public_copy.py writes a copy of a repository with no blob over the limit in its
history, every commit mapped to its new id, and the source left as it was."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import public_copy  # noqa: E402  (scripts/ is not a package)

pytest.importorskip(
    "git_filter_repo",
    reason="git-filter-repo is not installed (pip install git-filter-repo; in the [dev] extra)",
)

LIMIT_MB = 0.001  # 1048 bytes
LIMIT = int(LIMIT_MB * 1024**2)
BIG = "leaderboards/store/results.sqlite"
ENV = {
    **{k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.invalid",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(repo: Path, *args: str, stdin: str | None = None) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], input=stdin, capture_output=True, text=True, env=ENV, check=True
    ).stdout


def commit(repo: Path, message: str, files: dict[str, bytes | None]) -> None:
    for name, content in files.items():
        path = repo / name
        if content is None:
            git(repo, "rm", "-q", name)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
        git(repo, "add", name)
    git(repo, "commit", "-q", "-m", message)


def refs(repo: Path) -> tuple[str, str]:
    return git(repo, "symbolic-ref", "HEAD") + git(repo, "rev-parse", "HEAD"), git(repo, "show-ref")


@pytest.fixture(scope="module")
def copied(tmp_path_factory) -> dict:
    """A source with a big blob in two commits, a tag and a side branch, and its public copy."""
    tmp = tmp_path_factory.mktemp("public_copy")
    src = tmp / "src"
    git(tmp, "init", "-q", "-b", "main", str(src))
    # The store is small first: a big version must not leave this one behind in its commits.
    commit(src, "first: readme", {"README.md": b"# small\n", BIG: b"s" * (LIMIT // 4)})
    commit(src, "results store, too big", {BIG: os.urandom(3 * LIMIT), "notes.txt": b"kept\n"})
    commit(src, "store rewritten\n\nbody line", {BIG: os.urandom(2 * LIMIT), "README.md": b"# small 2\n"})
    commit(src, "store shrinks under the limit", {BIG: b"x" * (LIMIT // 2)})
    git(src, "tag", "v1")
    git(src, "checkout", "-q", "-b", "side")
    commit(src, "side branch: drops notes", {"notes.txt": None})
    git(src, "checkout", "-q", "main")
    before = refs(src)
    dest, map_out = tmp / "dest", tmp / "out" / "map.csv"
    pairs = public_copy.public_copy(src, dest, max_blob_mb=LIMIT_MB, map_out=map_out)
    return {"src": src, "dest": dest, "map_out": map_out, "pairs": pairs, "before": before}


def test_no_blob_over_the_limit_is_left_in_history(copied) -> None:
    dest = copied["dest"]
    objects = git(dest, "rev-list", "--objects", "--all")
    ids = "\n".join(line.split()[0] for line in objects.splitlines()) + "\n"
    sizes = git(dest, "cat-file", "--batch-check=%(objecttype) %(objectsize)", stdin=ids)
    blobs = [int(size) for kind, size in (line.split() for line in sizes.splitlines()) if kind == "blob"]
    assert blobs and max(blobs) <= LIMIT
    # The source still has them: the test's history does hold blobs over the limit.
    src_ids = "\n".join(
        line.split()[0] for line in git(copied["src"], "rev-list", "--objects", "--all").splitlines()
    )
    src_sizes = git(copied["src"], "cat-file", "--batch-check=%(objectsize)", stdin=src_ids + "\n").split()
    assert sum(int(s) > LIMIT for s in src_sizes) == 2


def test_every_old_commit_maps_to_a_commit_with_its_message_and_small_files(copied) -> None:
    src, dest = copied["src"], copied["dest"]
    mapping = dict(copied["pairs"])
    old_commits = git(src, "rev-list", "--all").split()
    assert sorted(mapping) == sorted(old_commits)
    for old, new in mapping.items():
        assert git(dest, "cat-file", "-t", new).strip() == "commit"
        assert git(dest, "log", "-1", "--format=%B%an%at", new) == git(
            src, "log", "-1", "--format=%B%an%at", old
        )
        old_files = git(src, "ls-tree", "-r", "--name-only", old).split()
        new_files = git(dest, "ls-tree", "-r", "--name-only", new).split()
        for name in old_files:
            size = int(git(src, "cat-file", "-s", f"{old}:{name}"))
            if size > LIMIT:
                assert name not in new_files, f"{name} is left at an older version in {new}"
            else:
                assert git(dest, "show", f"{new}:{name}") == git(src, "show", f"{old}:{name}")
        assert set(new_files) <= set(old_files)
    # Branches and tags carry over to the mapped commits; main gets the map commit on top.
    assert git(dest, "rev-parse", "side").strip() == mapping[git(src, "rev-parse", "side").strip()]
    assert git(dest, "rev-parse", "v1^{commit}").strip() == mapping[git(src, "rev-parse", "v1").strip()]
    assert git(dest, "rev-parse", "HEAD~1").strip() == mapping[git(src, "rev-parse", "main").strip()]
    assert len(git(dest, "rev-list", "--all").split()) == len(old_commits) + 1


def test_the_map_commit_holds_the_csv_and_the_stripped_list(copied) -> None:
    dest = copied["dest"]
    assert git(dest, "log", "-1", "--format=%s").strip() == public_copy.MAP_COMMIT_MESSAGE
    assert git(dest, "status", "--porcelain") == ""
    committed = git(dest, "show", f"HEAD:{public_copy.DEFAULT_MAP}")
    rows = list(csv.reader(committed.splitlines()))
    assert rows[0] == ["old_commit", "new_commit"]
    assert [tuple(r) for r in rows[1:]] == sorted(copied["pairs"])
    assert copied["map_out"].read_text() == committed
    stripped = [
        line.split("\t")
        for line in git(dest, "show", f"HEAD:{public_copy.STRIPPED_LIST}").splitlines()
        if not line.startswith("#")
    ]
    assert len(stripped) == 2
    assert {path for path, _, _ in stripped} == {BIG}
    assert sorted(int(size) for _, size, _ in stripped) == [2 * LIMIT, 3 * LIMIT]


def test_the_source_is_unchanged(copied) -> None:
    assert refs(copied["src"]) == copied["before"]
    assert git(copied["src"], "status", "--porcelain") == ""


def test_bad_inputs_are_refused_with_what_is_valid(copied, tmp_path, monkeypatch, capsys) -> None:
    src = copied["src"]
    for bad in (0, -1, float("nan"), 1e-9):
        with pytest.raises(ValueError, match="--max-blob-mb"):
            public_copy.public_copy(src, tmp_path / "a", max_blob_mb=bad)
    with pytest.raises(ValueError, match="not a git repository"):
        public_copy.public_copy(tmp_path, tmp_path / "a")
    with pytest.raises(ValueError, match="not a folder"):
        public_copy.public_copy(tmp_path / "missing", tmp_path / "a")
    with pytest.raises(ValueError, match="not an empty folder"):
        public_copy.public_copy(src, copied["dest"])
    with pytest.raises(ValueError, match="--map must be a relative path"):
        public_copy.public_copy(src, tmp_path / "a", map_path="../outside.csv")
    assert not (tmp_path / "a").exists()

    # The command line turns them into a usage error naming the value.
    with pytest.raises(SystemExit) as exit_info:
        public_copy.main([str(src), str(tmp_path / "a"), "--max-blob-mb", "-2"])
    assert exit_info.value.code == 2
    assert "--max-blob-mb must be a positive" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        public_copy.main([str(src), str(tmp_path / "a"), "--max-blob-mb", "many"])
    assert "'many'" in capsys.readouterr().err

    monkeypatch.setattr(public_copy, "FILTER_REPO_MODULE", "no_such_module_filter_repo")
    monkeypatch.setattr(public_copy, "FILTER_REPO_SCRIPT", "no-such-git-filter-repo")
    with pytest.raises(SystemExit, match="pip install git-filter-repo"):
        public_copy.public_copy(src, tmp_path / "a")
    assert not (tmp_path / "a").exists()
