"""Write a filtered copy of a git repository that a public git host accepts.

Old versions of ``leaderboards/store/results.sqlite`` in this repository's history are over
100 MB, and GitHub refuses any blob over 100 MiB. Main's history is never rewritten. This
script instead clones SOURCE into DEST (``git clone --no-local``) and runs git-filter-repo
there: in every commit where a path holds a blob over ``--max-blob-mb`` MiB, that path is
deleted, so no such blob is left anywhere in DEST's history. (git-filter-repo's own
``--strip-blobs-bigger-than`` would instead leave the path at its last small version, a stale
file.) Every commit is kept (``--prune-empty never``), with its message, author and dates;
only its id changes. Commit ids quoted in commit messages are rewritten to the new ids, as
git-filter-repo does by default.

On top of the filtered history, DEST gets one last commit, "commit map", holding:

- ``--map`` (default ``leaderboards/commit_map.csv``): the CSV ``old_commit,new_commit``,
  sorted, with a header, mapping every old commit id to its id in DEST. A ``git_commit``
  stored in a result names an old commit; this file finds it in the public copy.
- ``STRIPPED_BLOBS.txt`` at the top: each stripped blob's path, size in bytes and id.

``--map-out PATH`` writes the same CSV outside DEST as well.

    python scripts/public_copy.py . /tmp/pomdp-bench-public
    python scripts/public_copy.py . /tmp/public --max-blob-mb 50 --map-out /tmp/commit_map.csv
    cd /tmp/pomdp-bench-public && git remote add origin git@github.com:OWNER/pomdp-bench.git
    git push origin --all && git push origin --tags

It needs git-filter-repo (``pip install git-filter-repo``; the ``[dev]`` extra has it).
SOURCE is only read: its refs, HEAD and work tree stay as they are.
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import math
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

DEFAULT_MAX_BLOB_MB = 50.0
DEFAULT_MAP = "leaderboards/commit_map.csv"
STRIPPED_LIST = "STRIPPED_BLOBS.txt"
MAP_COMMIT_MESSAGE = "commit map"
FILTER_REPO_MODULE = "git_filter_repo"
FILTER_REPO_SCRIPT = "git-filter-repo"
INSTALL_HINT = "pip install git-filter-repo (it is part of the [dev] extra: pip install -e '.[dev]')"
# Set when the committer has no identity of their own; the map commit is then signed so.
FALLBACK_IDENTITY = ("pomdp-bench public_copy", "public-copy@invalid")
NULL_COMMIT = "0" * 40
# Environment variables that would point git at another repository than the one in cwd.
GIT_LOCATION_VARS = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY")


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in GIT_LOCATION_VARS}


def _git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run ``git -C repo ARGS`` and return the finished process (text output)."""
    result = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, env=_env(), check=False
    )
    if check and result.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed in {repo}:\n{result.stderr.strip()}")
    return result


def max_blob_bytes(max_blob_mb: float) -> int:
    """The limit in bytes (1 MB = 1 MiB = 1024**2 bytes); a ValueError unless it is at least 1 byte."""
    try:
        mb = float(max_blob_mb)
    except (TypeError, ValueError):
        raise ValueError(
            f"--max-blob-mb must be a positive number of MB (e.g. 50 or 0.5); got {max_blob_mb!r}"
        ) from None
    if not math.isfinite(mb) or mb <= 0:
        raise ValueError(
            f"--max-blob-mb must be a positive, finite number of MB (e.g. 50); got {max_blob_mb!r}"
        )
    limit = int(mb * 1024**2)
    if limit < 1:
        raise ValueError(
            f"--max-blob-mb {max_blob_mb!r} is under one byte; give at least {1 / 1024**2:.2g} MB"
        )
    return limit


def filter_repo_command(module: str = FILTER_REPO_MODULE, script: str = FILTER_REPO_SCRIPT) -> list[str]:
    """How to run git-filter-repo here: its module under this Python, else its script on PATH."""
    if importlib.util.find_spec(module) is not None:
        return [sys.executable, "-m", module]
    found = shutil.which(script)
    if found:
        return [found]
    raise SystemExit(
        f"git-filter-repo is not installed (no module {module!r}, no {script!r} on PATH). Install it: {INSTALL_HINT}"
    )


def check_source(source: Path) -> Path:
    """SOURCE resolved; a ValueError unless it is the top of a git repository with commits on a branch."""
    if not source.is_dir():
        raise ValueError(f"SOURCE {str(source)!r} is not a folder; give the path of a git repository")
    inside = _git(source, "rev-parse", "--is-bare-repository", check=False)
    if inside.returncode != 0:
        raise ValueError(f"SOURCE {str(source)!r} is not a git repository; give the top folder of one")
    source = source.resolve()
    if inside.stdout.strip() != "true":
        top = Path(_git(source, "rev-parse", "--show-toplevel").stdout.strip()).resolve()
        if top != source:
            raise ValueError(
                f"SOURCE {str(source)!r} is inside the git repository {str(top)!r}; give its top folder"
            )
    if _git(source, "rev-parse", "--verify", "-q", "HEAD^{commit}", check=False).returncode != 0:
        raise ValueError(f"SOURCE {str(source)!r} has no commits at HEAD; there is nothing to copy")
    if _git(source, "symbolic-ref", "-q", "HEAD", check=False).returncode != 0:
        raise ValueError(f"SOURCE {str(source)!r} has a detached HEAD; check out a branch first")
    return source


def check_dest(dest: Path) -> Path:
    """DEST resolved; a ValueError if it exists and is not an empty folder."""
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise ValueError(f"DEST {str(dest)!r} exists and is not an empty folder; give a new or empty folder")
    return dest.resolve()


def check_map_path(map_path: str) -> PurePosixPath:
    """--map as a relative path inside DEST's work tree; a ValueError otherwise."""
    path = PurePosixPath(map_path.replace(os.sep, "/"))
    if not map_path or path.is_absolute() or ".." in path.parts or path.parts[:1] == (".git",):
        raise ValueError(
            f"--map must be a relative path inside DEST's work tree, such as {DEFAULT_MAP!r}; got {map_path!r}"
        )
    if str(path) == STRIPPED_LIST:
        raise ValueError(f"--map {map_path!r} would overwrite {STRIPPED_LIST}; choose another path")
    return path


def big_blobs(repo: Path, limit: int) -> list[tuple[str, int, str]]:
    """(path, size in bytes, blob id) of every blob over ``limit`` bytes in the history of all refs.

    A blob stored under several paths is listed once per path, sorted by path.
    """
    objects = _git(repo, "rev-list", "--objects", "--all").stdout
    paths: dict[str, set[str]] = {}
    ids = []
    for line in objects.splitlines():
        oid, _, path = line.partition(" ")
        ids.append(oid)
        if path:
            paths.setdefault(oid, set()).add(path)
    sizes = subprocess.run(
        ["git", "-C", str(repo), "cat-file", "--batch-check=%(objectname) %(objecttype) %(objectsize)"],
        input="\n".join(ids) + "\n",
        capture_output=True,
        text=True,
        env=_env(),
        check=True,
    ).stdout
    big = {}
    for line in sizes.splitlines():
        oid, kind, size = line.split()
        if kind == "blob" and int(size) > limit:
            big[oid] = int(size)
    if not big:
        return []
    # rev-list names each blob by one path only; the raw diffs name every path it was added at.
    log = _git(repo, "log", "--all", "--raw", "--no-abbrev", "--no-renames", "--format=").stdout
    for line in log.splitlines():
        if line.startswith(":"):
            meta, _, path = line.partition("\t")
            oid = meta.split()[3]
            if oid in big:
                paths.setdefault(oid, set()).add(path)
    return sorted((path, size, oid) for oid, size in big.items() for path in paths.get(oid, {"?"}))


def commit_callback(blob_ids: set[str]) -> str:
    """git-filter-repo's ``--commit-callback`` body: a path set to one of ``blob_ids`` is deleted.

    ``--strip-blobs-bigger-than`` would drop such a change instead, so that the path kept the
    version before it: a stale file (an old results store) where the big one was.
    """
    ids = "{" + ", ".join(repr(oid.encode()) for oid in sorted(blob_ids)) + "}" if blob_ids else "()"
    return (
        "for change in commit.file_changes:\n"
        f"    if change.type == b'M' and change.blob_id in {ids}:\n"
        "        change.type, change.blob_id, change.mode = b'D', None, None\n"
    )


def read_commit_map(dest: Path) -> list[tuple[str, str]]:
    """git-filter-repo's ``.git/filter-repo/commit-map`` as sorted (old, new) pairs."""
    text = (dest / ".git" / "filter-repo" / "commit-map").read_text()
    pairs = [tuple(line.split()) for line in text.splitlines()[1:] if line.strip()]
    dropped = [old for old, new in pairs if new == NULL_COMMIT]
    if dropped:
        raise RuntimeError(
            f"git-filter-repo dropped {len(dropped)} commits (e.g. {dropped[0]}); none should be"
        )
    return sorted((old, new) for old, new in pairs)


def write_map(path: Path, pairs: Sequence[tuple[str, str]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(["old_commit", "new_commit"])
        writer.writerows(pairs)


def write_stripped_list(path: Path, stripped: Sequence[tuple[str, int, str]], limit: int, mb: float) -> None:
    lines = [
        f"# Blobs over {mb:g} MB ({limit} bytes) that scripts/public_copy.py stripped from this",
        "# public copy, since public git hosts refuse large files: each commit that held one lacks",
        "# its path. The original repository keeps them. One per line: path, size in bytes, blob id.",
    ]
    lines += [f"{p}\t{size}\t{oid}" for p, size, oid in stripped] or ["# (none)"]
    path.write_text("\n".join(lines) + "\n")


def public_copy(
    source: str | Path,
    dest: str | Path,
    max_blob_mb: float = DEFAULT_MAX_BLOB_MB,
    map_path: str = DEFAULT_MAP,
    map_out: str | Path | None = None,
) -> list[tuple[str, str]]:
    """Write the filtered copy of SOURCE into DEST; return the (old, new) commit pairs.

    Inputs are all checked before anything is written. A failure after the clone leaves
    DEST as it was, for inspection; remove it before trying again.
    """
    limit = max_blob_bytes(max_blob_mb)
    rel_map = check_map_path(map_path)
    src = check_source(Path(source))
    dst = check_dest(Path(dest))
    command = filter_repo_command(FILTER_REPO_MODULE, FILTER_REPO_SCRIPT)

    dst.mkdir(parents=True, exist_ok=True)
    clone = subprocess.run(
        ["git", "clone", "--quiet", "--no-local", str(src), str(dst)],
        capture_output=True,
        text=True,
        env=_env(),
        check=False,
    )
    if clone.returncode != 0:
        raise RuntimeError(f"git clone --no-local {src} {dst} failed:\n{clone.stderr.strip()}")
    stripped = big_blobs(dst, limit)
    callback = dst / ".git" / "public_copy_commit_callback.py"
    callback.write_text(commit_callback({oid for _, _, oid in stripped}))
    run = subprocess.run(
        [
            *command,
            "--quiet",
            "--commit-callback",
            str(callback),
            "--prune-empty",
            "never",
            "--prune-degenerate",
            "never",
        ],
        cwd=dst,
        capture_output=True,
        text=True,
        env=_env(),
        check=False,
    )
    if run.returncode != 0:
        raise RuntimeError(f"git-filter-repo failed in {dst}:\n{(run.stderr or run.stdout).strip()}")
    callback.unlink()
    left = big_blobs(dst, limit)
    if left:
        raise RuntimeError(f"{len(left)} blobs over the limit are still in {dst}'s history, e.g. {left[0]}")
    pairs = read_commit_map(dst)

    write_map(dst / rel_map, pairs)
    write_stripped_list(dst / STRIPPED_LIST, stripped, limit, float(max_blob_mb))
    _git(dst, "add", "--force", "--", str(rel_map), STRIPPED_LIST)
    identity: list[str] = []
    if (
        not os.environ.get("GIT_COMMITTER_EMAIL")
        and _git(dst, "config", "user.email", check=False).returncode
    ):
        identity = ["-c", f"user.name={FALLBACK_IDENTITY[0]}", "-c", f"user.email={FALLBACK_IDENTITY[1]}"]
    body = (
        f"{rel_map} maps each commit id of the original repository to its id here.\n"
        f"{STRIPPED_LIST} lists each blob over {float(max_blob_mb):g} MB that scripts/public_copy.py "
        f"stripped from history ({len(stripped)} paths)."
    )
    _git(dst, *identity, "commit", "--quiet", "--no-verify", "-m", MAP_COMMIT_MESSAGE, "-m", body)
    if map_out is not None:
        write_map(Path(map_out), pairs)
    return pairs


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False
    )
    parser.add_argument("source", metavar="SOURCE", help="the git repository to copy (only read)")
    parser.add_argument("dest", metavar="DEST", help="a new or empty folder for the filtered copy")
    parser.add_argument(
        "--max-blob-mb",
        type=float,
        default=DEFAULT_MAX_BLOB_MB,
        help=f"strip every blob over this many MB, 1 MB = 1024**2 bytes (default {DEFAULT_MAX_BLOB_MB:g})",
    )
    parser.add_argument(
        "--map",
        default=DEFAULT_MAP,
        help=f"the commit map's path in DEST's work tree (default {DEFAULT_MAP})",
    )
    parser.add_argument("--map-out", default=None, help="also write the commit map to this path")
    args = parser.parse_args(argv)
    try:
        pairs = public_copy(args.source, args.dest, args.max_blob_mb, args.map, args.map_out)
    except ValueError as error:
        parser.error(str(error))
    print(f"Wrote {args.dest}: {len(pairs)} commits mapped in {args.map}, blobs stripped in {STRIPPED_LIST}.")


if __name__ == "__main__":
    main()
