"""The sequential seed rule in a sweep: borderline cells get more seeds, by stages fixed in advance.

A suite that gives ``seed_stages: [10, 20]`` runs its ``seeds`` (5) in every cell first.
Then each cell whose verdict would not survive any one run ending on the other side of
the line (the leaderboard's ``verdict_holds``) grows to 10 seeds, and a cell still
borderline at 10 grows to 20. The rule, its simulated error rate at the line and its
power are in :func:`pomdp_bench.reporting.statistics.next_seed_stage` and
``docs/statistics.md``.

The verdicts come from the leaderboard's own cell table, so the rule reads exactly the
verdict the tables publish. A new seed's run is its cell's seed-0 spec with another
seed and the cell's new seed count (:attr:`RunSpec.cell_seeds`, not part of the key).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from pomdp_bench.harness.cells import cell_id
from pomdp_bench.harness.spec import RunSpec
from pomdp_bench.harness.store import ResultStore
from pomdp_bench.harness.verdicts import stored_cells


def cells_to_grow(store: ResultStore, suite: str, stage: int) -> dict[tuple[str, ...], int]:
    """The finished cells of ``suite`` in ``store`` that grow to ``stage`` seeds: those with
    a verdict that does not hold (``verdict_holds`` false) and fewer seeds than ``stage``.
    Maps each cell id (:func:`cell_id`) to its seeds now. A cell without a verdict (too
    few seeds, no known line) does not grow."""
    return {
        cell: int(row["n_seeds"])
        for cell, row in stored_cells(store, suite)
        if str(row["verdict_holds"]) == "False" and row["n_seeds"] < stage  # NA stays out
    }


def grown_specs(
    specs: list[RunSpec], grow: Iterable[tuple[str, ...]], stage: int, skip: set[int] = frozenset()
) -> list[RunSpec]:
    """The runs that take each cell of ``grow`` to ``stage`` seeds: its lowest-seed spec
    of ``specs`` with each seed below ``stage`` that ``specs`` and ``skip`` lack, and
    ``cell_seeds = stage``. Listed seed by seed, the order a sweep runs them in. Runs
    already stored come back too; the sweep skips them as it skips any stored run."""
    first: dict[tuple[str, ...], RunSpec] = {}
    have: dict[tuple[str, ...], set[int]] = {}
    for spec in specs:
        cell = tuple(cell_id(spec))
        have.setdefault(cell, set()).add(spec.seed)
        if cell not in first or spec.seed < first[cell].seed:
            first[cell] = spec
    out: list[tuple[int, RunSpec]] = []
    for cell in grow:
        if cell not in first:
            continue  # a stored cell this sweep does not run (filtered out)
        out += [
            (seed, dataclasses.replace(first[cell], seed=seed, cell_seeds=stage))
            for seed in range(stage)
            if seed not in have[cell] and seed not in skip
        ]
    return [spec for _, spec in sorted(out, key=lambda pair: pair[0])]


def unfinished_stage_runs(store: ResultStore, suite: str, specs: list[RunSpec]) -> list[RunSpec]:
    """The runs of seed stages a sweep began and did not finish (it was cut short): for each
    cell of ``specs`` whose stored runs declare more seeds (``cell_seeds``) than the cell
    has, the runs of the missing seeds. A resumed sweep runs them before any new stage."""
    stored: dict[tuple[str, ...], tuple[int, set[int]]] = {}
    for row in store.rows(suite):
        spec = RunSpec(**row["spec"])
        cell = tuple(cell_id(spec))
        declared, seeds = stored.get(cell, (0, set()))
        stored[cell] = (max(declared, spec.cell_seeds or 0), seeds | {spec.seed})
    out: list[RunSpec] = []
    for cell, (declared, seeds) in stored.items():
        if declared > len(seeds):
            out += grown_specs(specs, [cell], declared, skip=seeds)
    return sorted(out, key=lambda spec: spec.seed)
