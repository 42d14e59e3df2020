"""A memory kind of a user's own beside the published cells: ``run --beside-published``.

The new kind runs in every env entry of a published suite, with the entry's settings,
seeds and caps, and the hidden size the entry's kinds use. Its runs and the suite's
published runs then share one store, so ``report`` puts its rows in the same table as
the published kinds, with the same verdict, intervals and probability of improvement.

Nothing published is trained again. A new run is comparable only where its settings
equal those of the published runs of the same env entry and seed; :func:`check_comparable`
refuses it otherwise, naming the setting.
"""

from __future__ import annotations

import collections
import copy
import dataclasses
from pathlib import Path
from typing import Any

from pomdp_bench.harness.spec import _ADDED_FIELDS, RunSpec
from pomdp_bench.harness.store import ResultStore
from pomdp_bench.harness.suites import Suite

#: The published results index of a checkout (``leaderboards/store``).
PUBLISHED_STORE = Path(__file__).resolve().parents[2] / "leaderboards" / "store"

# RunSpec fields a new kind's run must share with the published runs of its entry.
_SHARED = (
    "total_timesteps",
    "hyperparams",
    "eval_episodes",
    "eval_points",
    "horizon",
    "version",
    "stop",
    "device",
    "env_import",
    "env_wrappers",
    "card",
    "kernels",
)


def _hidden_size(entries: list[Any]) -> int | None:
    """The hidden size most of ``entries`` (a suite's memory list) give, or None."""
    sizes = [m["hidden_size"] for m in entries if isinstance(m, dict) and "hidden_size" in m]
    return collections.Counter(sizes).most_common(1)[0][0] if sizes else None


def with_kinds(suite: Suite, kinds: list[str]) -> Suite:
    """``suite`` with every memory list replaced by ``kinds``, each at the hidden size its
    entry's kinds use (or the kind's default where they give none)."""
    groups = copy.deepcopy(suite.groups)
    for group in groups:
        group_size = _hidden_size(group.get("memory") or [])
        for env in group["envs"]:
            size = _hidden_size(env.get("memory") or []) or group_size
            env["memory"] = [{"kind": k, **({"hidden_size": size} if size else {})} for k in kinds]
        group["memory"] = [{"kind": k, **({"hidden_size": group_size} if group_size else {})} for k in kinds]
    return dataclasses.replace(suite, groups=groups)


def unique(specs: list[RunSpec]) -> list[RunSpec]:
    """``specs`` without repeats (one cell from two entries of a suite), in order."""
    seen: set[str] = set()
    out = []
    for spec in specs:
        if spec.key() not in seen:
            seen.add(spec.key())
            out.append(spec)
    return out


def _context(spec: dict[str, Any]) -> tuple:
    """What pairs a new run with published ones: env, kwargs, agent, BPTT length and seed."""
    return (
        spec["env_id"],
        repr(sorted(spec["env_kwargs"].items())),
        spec["agent"],
        spec["bptt_length"],
        spec["seed"],
    )


def check_comparable(specs: list[RunSpec], published: list[dict[str, Any]]) -> int:
    """Refuse a new run whose settings differ from those of every published run of its
    env entry and seed (``published``: :meth:`ResultStore.rows` of the suite). Returns
    how many new runs have published runs to stand beside.

    Raises:
        ValueError: the first setting that differs, with both values.
    """
    by_context: dict[tuple, list[dict[str, Any]]] = collections.defaultdict(list)
    for row in published:
        by_context[_context(row["spec"])].append(row["spec"])
    paired = 0
    for spec in specs:
        mine = dataclasses.asdict(spec)
        theirs = by_context.get(_context(mine))
        if not theirs:
            continue
        if any(all(other.get(f, _ADDED_FIELDS.get(f)) == mine[f] for f in _SHARED) for other in theirs):
            paired += 1
            continue
        other = theirs[0]
        field = next(f for f in _SHARED if other.get(f, _ADDED_FIELDS.get(f)) != mine[f])
        raise ValueError(
            f"{spec.label()}: not comparable with the published runs of its entry: {field} is "
            f"{mine[field]!r} here and {other.get(field, _ADDED_FIELDS.get(field))!r} there "
            "(published). Either a setting of your own (--steps, --seeds, --kernels) differs, or "
            "the suite or the package changed since its runs were published"
        )
    return paired


def copy_published(store: ResultStore, published: ResultStore, suite: str) -> int:
    """Copy ``suite``'s published runs into ``store`` (those it lacks), linked to
    ``suite``; returns how many were copied."""
    keys = [row["key"] for row in published.rows(suite)]
    held = store.status(keys)
    return store.copy_runs(suite, published, [k for k in keys if k not in held])
