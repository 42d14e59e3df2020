"""Measured training times for ``--dry-run``'s estimate, read as data from ``agents/``.

Two files, both written by ``scripts/measure_rates.py`` from the published run CSVs
(``leaderboards/*_runs.csv``), ship in the wheel:

- ``agents/rates.yaml``: the median wall-clock speed (env steps/s, evaluation included)
  of each agent, env family (:func:`env_family`) and memory kind.
- ``agents/published_runs.csv``: each published run's cell, budget, steps trained and
  wall seconds, so an estimate can expect the share of its cap a cell trained.

:func:`rate_for` looks a speed up; :func:`published_runs` reads the runs.
"""

from __future__ import annotations

import csv
import functools
import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

import yaml

from pomdp_bench.data import data_dir

__all__ = [
    "PUBLISHED_RUNS_FILE",
    "RATES_FILE",
    "PublishedRun",
    "Rate",
    "env_family",
    "published_runs",
    "rate_for",
    "rate_table",
    "rates_document",
    "read_run_csvs",
    "write_published_runs",
]

RATES_FILE = "rates.yaml"
PUBLISHED_RUNS_FILE = "published_runs.csv"
_VERSION = re.compile(r"-v\d+$")
_COLUMNS = (
    "suite",
    "env_id",
    "env_kwargs",
    "agent",
    "memory",
    "bptt_length",
    "total_timesteps",
    "timesteps",
    "wall_seconds",
)


_DIFFICULTY = re.compile(r"(Easy|Medium|Hard)$")


def env_family(env_id: str) -> str:
    """The env family of ``env_id``: the id without its version suffix.

    ``"TMaze-v1"`` and ``"TMaze-v0"`` give ``"TMaze"``; ``"TMazeActive-v1"`` gives
    ``"TMazeActive"``; ``"popgym-RepeatFirstEasy-v0"`` gives ``"popgym-RepeatFirstEasy"``.
    """
    if not isinstance(env_id, str) or not env_id:
        raise ValueError(f"env_id must be a non-empty string, got {env_id!r}")
    return _VERSION.sub("", env_id)


class Rate(NamedTuple):
    """A training speed for an estimate.

    Attributes:
        steps_per_second: env steps per wall-clock second, evaluation included.
        fallback: ``None`` for a measured rate of this agent, env family and kind;
            else what stands in for it, e.g. ``"slowest of ppo on TMaze"``.
    """

    steps_per_second: float
    fallback: str | None = None


class PublishedRun(NamedTuple):
    """One published run, as ``agents/published_runs.csv`` holds it.

    Attributes:
        suite: the suite whose sweep ran it.
        env_id: the env id.
        env_kwargs: the env kwargs as JSON with sorted keys (``"{}"`` for none).
        agent: the agent's name.
        memory: the memory kind.
        bptt_length: the BPTT (sequence) length, or ``None``.
        total_timesteps: the run's cap, in env steps.
        timesteps: the env steps it trained (below the cap when it stopped early).
        wall_seconds: its wall time, evaluation included.
    """

    suite: str
    env_id: str
    env_kwargs: str
    agent: str
    memory: str
    bptt_length: int | None
    total_timesteps: int
    timesteps: int
    wall_seconds: float


@functools.cache
def rate_table() -> dict[str, Any]:
    """The parsed ``agents/rates.yaml``: ``{"provenance": str, "rates": {agent: {family:
    {kind: steps/s}}}}``; an empty dict when the file is missing."""
    path = data_dir("agents") / RATES_FILE
    return (yaml.safe_load(path.read_text()) or {}) if path.is_file() else {}


def rate_for(agent: str, env_id: str, kind: str, table: Mapping[str, Any] | None = None) -> Rate:
    """The wall-clock speed of ``agent`` with memory ``kind`` on ``env_id``.

    Looked up by env family (:func:`env_family`) in ``table`` (default:
    :func:`rate_table`'s ``rates``). A triple the table lacks gets a fallback, marked in
    :attr:`Rate.fallback`: the same agent and kind on the same family at another
    difficulty (POPGym's ``...Easy``, ``...Medium``, ``...Hard``: the memory, not the
    env, sets most of the cost), else the slowest rate of the agent on that family, else
    on that family at any difficulty, else of the agent, else of any agent on that family, else the slowest in the table.

    Raises:
        ValueError: if the table holds no rate at all.
    """
    rates: Mapping[str, Any] = (rate_table().get("rates") or {}) if table is None else table
    family = env_family(env_id)
    by_family = rates.get(agent) or {}
    measured = (by_family.get(family) or {}).get(kind)
    if measured is not None:
        return Rate(float(measured))
    stem = _DIFFICULTY.sub("", family)
    siblings = [f for f in by_family if f != family and stem != f and _DIFFICULTY.sub("", f) == stem]
    candidates = (
        (
            f"{agent} {kind} on {stem} at another difficulty",
            [by_family[f][kind] for f in siblings if kind in by_family[f]],
        ),
        (f"slowest of {agent} on {family}", (by_family.get(family) or {}).values()),
        (
            f"slowest of {agent} on {stem} at any difficulty",
            [r for f in siblings for r in by_family[f].values()],
        ),
        (f"slowest of {agent}", [r for kinds in by_family.values() for r in kinds.values()]),
        (
            f"slowest on {family}",
            [r for fams in rates.values() for r in (fams.get(family) or {}).values()],
        ),
        ("slowest of all", [r for fams in rates.values() for kinds in fams.values() for r in kinds.values()]),
    )
    for label, values in candidates:
        values = [float(v) for v in values]
        if values:
            return Rate(min(values), label)
    raise ValueError(f"no training rate at all in {RATES_FILE}: regenerate it with scripts/measure_rates.py")


@functools.cache
def published_runs() -> tuple[PublishedRun, ...]:
    """The runs of ``agents/published_runs.csv`` (empty when the file is missing)."""
    path = data_dir("agents") / PUBLISHED_RUNS_FILE
    if not path.is_file():
        return ()
    with path.open(newline="") as handle:
        return tuple(_published_run(row) for row in csv.DictReader(handle))


def _published_run(row: Mapping[str, str]) -> PublishedRun:
    bptt = row["bptt_length"].strip()
    return PublishedRun(
        suite=row["suite"],
        env_id=row["env_id"],
        env_kwargs=json.dumps(json.loads(row["env_kwargs"] or "{}"), sort_keys=True),
        agent=row["agent"],
        memory=row["memory"],
        bptt_length=int(float(bptt)) if bptt else None,
        total_timesteps=int(float(row["total_timesteps"])),
        timesteps=int(float(row["timesteps"])),
        wall_seconds=float(row["wall_seconds"]),
    )


def read_run_csvs(paths: Iterable[Path]) -> tuple[list[PublishedRun], Counter[str]]:
    """The finished runs (status ``ok``, with a positive wall time and steps trained) of
    the runs CSVs at ``paths`` (``<suite>_runs.csv``), sorted, and how many came from
    each machine."""
    runs: list[PublishedRun] = []
    machines: Counter[str] = Counter()
    for path in paths:
        with Path(path).open(newline="") as handle:
            for row in csv.DictReader(handle):
                if row.get("status") != "ok" or not row.get("timesteps") or not row.get("wall_seconds"):
                    continue
                run = _published_run(row)
                if run.timesteps > 0 and run.wall_seconds > 0:
                    runs.append(run)
                    machines[row.get("machine") or "unknown"] += 1
    runs.sort(key=lambda r: tuple("" if v is None else str(v) for v in r))
    return runs, machines


def rates_document(runs: Iterable[PublishedRun], sources: Iterable[str], machines: Mapping[str, int]) -> str:
    """The text of ``agents/rates.yaml`` for ``runs``: per agent, env family and kind the
    median over runs of ``timesteps / wall_seconds``, rounded to whole steps/s, under a
    header naming ``sources`` (the CSVs) and ``machines`` (machine -> runs)."""
    import numpy as np

    speeds: dict[tuple[str, str, str], list[float]] = {}
    for run in runs:
        key = (run.agent, env_family(run.env_id), run.memory)
        speeds.setdefault(key, []).append(run.timesteps / run.wall_seconds)
    rates: dict[str, dict[str, dict[str, int]]] = {}
    for (agent, family, kind), values in sorted(speeds.items()):
        rates.setdefault(agent, {}).setdefault(family, {})[kind] = round(float(np.median(values)))
    n_runs = sum(len(v) for v in speeds.values())
    on = "; ".join(f"{machine} ({count} runs)" for machine, count in sorted(machines.items()))
    provenance = (
        f"median timesteps / wall_seconds of {n_runs} published runs in {', '.join(sources)}, on {on}"
    )
    header = (
        "# Generated by scripts/measure_rates.py from the published run CSVs; do not edit by hand.\n"
        "# Wall-clock training speeds (env steps/s, evaluation included) per agent, env family\n"
        "# (the env id without -vN) and memory kind, for `python -m pomdp_bench.run --dry-run`.\n"
    )
    return header + yaml.safe_dump({"provenance": provenance, "rates": rates}, sort_keys=False, width=100)


def write_published_runs(runs: Iterable[PublishedRun], path: Path) -> None:
    """Write ``runs`` to ``path`` as ``agents/published_runs.csv`` holds them."""
    with Path(path).open("w", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(_COLUMNS)
        for run in runs:
            writer.writerow(
                [
                    *run[:5],
                    "" if run.bptt_length is None else run.bptt_length,
                    run.total_timesteps,
                    run.timesteps,
                    f"{run.wall_seconds:.3f}",
                ]
            )
