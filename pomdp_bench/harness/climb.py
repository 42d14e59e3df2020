"""The horizon climb: a ladder's next horizon runs only once the last one was learned.

A suite that gives ``climb: true`` runs each ladder rung by rung. A ladder is one agent,
env and memory kind with pieces that cover an episode or pieces shorter than it
(:func:`ladder_of`); its rungs are its horizons, lowest first. A rung runs once every
rung below it is a learned cell, by the verdict the leaderboard publishes. The climb
stops at the first rung not learned, or at a rung with no verdict. That rung is where
the analyses (``analyse``: probes, failure class) read why.

With ``seed_stages`` (:mod:`~pomdp_bench.harness.seed_stages`), a complete rung not
learned whose verdict one run could flip (``verdict_holds`` false) grows to the next
stage's seeds before the climb stops there, so a 4-of-5 rung is decided by 10, then 20
seeds. A learned rung does not grow: the next rung tests the kind again.

The climb keeps no state of its own: :func:`next_rungs` reads the store, so a sweep that
was cut short resumes where it stopped.
"""

from __future__ import annotations

from collections.abc import Iterable

from pomdp_bench.harness import seed_stages
from pomdp_bench.harness.cells import cell_id
from pomdp_bench.harness.spec import RunSpec
from pomdp_bench.harness.store import ResultStore
from pomdp_bench.harness.verdicts import stored_cells


def ladder_of(spec: RunSpec) -> tuple[str, str, str, str]:
    """The ladder a run belongs to: ``(agent, env id, memory kind, pieces)``, where pieces
    is ``"long"`` when they cover an episode (no BPTT length, or one at least the
    horizon) and ``"short"`` otherwise."""
    long = spec.bptt_length is None or spec.bptt_length >= spec.horizon
    return (spec.agent, spec.env_id, spec.memory_kind, "long" if long else "short")


def ladders(specs: Iterable[RunSpec]) -> dict[tuple[str, str, str, str], list[list[RunSpec]]]:
    """``specs`` by ladder, each ladder's runs by rung (one list per horizon, lowest first).

    Raises:
        ValueError: two cells of one ladder at one horizon (the climb could not tell which
            to read); the message names both.
    """
    rungs: dict[tuple[str, str, str, str], dict[int, list[RunSpec]]] = {}
    for spec in specs:
        rung = rungs.setdefault(ladder_of(spec), {}).setdefault(spec.horizon, [])
        if rung and cell_id(rung[0]) != cell_id(spec):
            raise ValueError(
                f"climb: ladder {ladder_of(spec)} has two cells at horizon {spec.horizon}: "
                f"{cell_id(rung[0])} and {cell_id(spec)}; give each its own memory kind, agent or env"
            )
        rung.append(spec)
    return {key: [by_horizon[h] for h in sorted(by_horizon)] for key, by_horizon in rungs.items()}


#: Memory kinds whose ``window`` setting bounds what they can see: it must cover the horizon.
WINDOWED_KINDS = ("transformer", "gtrxl", "framestack")


def check_ladders(specs: Iterable[RunSpec]) -> None:
    """Refuse a climb that could not answer, before any run starts.

    Raises:
        ValueError: a run whose cap is below one episode (``total_timesteps`` under its
            horizon), or a windowed kind (:data:`WINDOWED_KINDS`) whose ``window`` does not
            cover the horizon; the message names the run, the value and what is valid.
    """
    for spec in specs:
        where = f"climb: {spec.label()}"
        if spec.total_timesteps < spec.horizon:
            raise ValueError(
                f"{where}: a cap of {spec.total_timesteps} steps is below one episode; "
                f"give steps of at least the horizon ({spec.horizon})"
            )
        window = spec.memory.get("window")
        if spec.memory_kind in WINDOWED_KINDS and window is not None and int(window) < spec.horizon:
            raise ValueError(
                f"{where}: {spec.memory_kind}'s window {window} cannot cover horizon {spec.horizon}; "
                f"give window: {spec.horizon} or more"
            )


def learned_cells(store: ResultStore, suite: str) -> dict[tuple[str, ...], bool | None]:
    """Every finished cell of ``suite`` in ``store``, by :func:`cell_id`: True where the
    leaderboard's verdict is learned, False where not, None where it gives none."""
    out: dict[tuple[str, ...], bool | None] = {}
    for cell, row in stored_cells(store, suite):
        verdict = str(row["learned"])  # True, False, or NA/NaN: no verdict
        out[cell] = True if verdict == "True" else False if verdict == "False" else None
    return out


def borderline_cells(store: ResultStore, suite: str) -> dict[tuple[str, ...], int]:
    """The finished cells of ``suite`` not learned, whose verdict one run could flip
    (``verdict_holds`` false, as at 4 seeds of 5 above the line), with their seeds now.
    A learned rung does not grow: the climb tests it again at the next horizon."""
    return {
        cell: int(row["n_seeds"])
        for cell, row in stored_cells(store, suite)
        if str(row["verdict_holds"]) == "False" and str(row["learned"]) == "False"
    }


def next_rungs(
    store: ResultStore,
    suite: str,
    specs: list[RunSpec],
    done: set[str] = frozenset({"ok"}),
    stages: tuple[int, ...] = (),
) -> tuple[list[RunSpec], dict[tuple[str, str, str, str], str]]:
    """The runs the climb runs next, and where each ladder stands.

    For each ladder of ``specs``, walk its rungs up: a rung whose runs are all stored with
    a status in ``done`` is read from the leaderboard; a learned rung lets the walk go
    on, any other stops it. The first rung with runs not yet stored is the ladder's next
    rung. With ``stages`` (a suite's ``seed_stages``), a complete rung whose verdict one
    run could flip first grows to the next stage's seeds, and a growth a sweep cut short
    finishes first. Returns those runs, and per ladder ``"runs horizon H"``, ``"grows
    horizon H to N seeds"``, ``"stopped at H (not learned)"``, ``"stopped at H (no
    verdict)"`` or ``"learned every rung"``.
    """
    status = store.status(s.key() for s in specs)
    verdicts: dict[tuple[str, ...], bool | None] | None = None
    borderline: dict[tuple[str, ...], int] | None = None
    growing: dict[tuple[str, ...], list[RunSpec]] = {}
    if stages:  # stages a sweep began and did not finish
        for spec in seed_stages.unfinished_stage_runs(store, suite, specs):
            growing.setdefault(tuple(cell_id(spec)), []).append(spec)
    todo: list[RunSpec] = []
    where: dict[tuple[str, str, str, str], str] = {}
    for ladder, rungs in ladders(specs).items():
        where[ladder] = "learned every rung"
        for rung in rungs:
            horizon, cell = rung[0].horizon, tuple(cell_id(rung[0]))
            missing = [s for s in rung if status.get(s.key()) not in done]
            if missing:
                todo += missing
                where[ladder] = f"runs horizon {horizon}"
                break
            if cell in growing:
                todo += growing[cell]
                where[ladder] = f"grows horizon {horizon} to {growing[cell][0].cell_seeds} seeds"
                break
            if stages:
                if borderline is None:
                    borderline = borderline_cells(store, suite)
                seeds = borderline.get(cell)
                stage = next((n for n in stages if seeds is not None and n > seeds), None)
                grown = seed_stages.grown_specs(specs, [cell], stage) if stage else []
                grown_status = store.status(s.key() for s in grown)
                grown = [s for s in grown if grown_status.get(s.key()) not in done]
                if grown:
                    todo += grown
                    where[ladder] = f"grows horizon {horizon} to {stage} seeds"
                    break
            if verdicts is None:  # read the tables once, and only once a rung is complete
                verdicts = learned_cells(store, suite)
            verdict = verdicts.get(cell)
            if verdict is not True:
                reason = "no verdict" if verdict is None else "not learned"
                where[ladder] = f"stopped at {horizon} ({reason})"
                break
    # cell by cell (all its seeds together), so that cells finish, and can be published, as
    # the sweep goes
    return sorted(todo, key=lambda s: (s.horizon, s.env_id, s.memory_kind, s.seed)), where


def first_rungs(specs: list[RunSpec]) -> list[RunSpec]:
    """The runs of every ladder's lowest rung: the least a climb runs."""
    return [spec for rungs in ladders(specs).values() for spec in rungs[0]]
