"""The time a sweep will take: ``python -m pomdp_bench.run --dry-run``'s estimate.

:func:`estimate` gives each run to do a sample of reference times, in seconds:

- **Share of the cap.** A run with a stop rule is expected to train the share of its
  cap (``timesteps / total_timesteps``) that earlier runs of its cell trained: the
  store's runs of the cell (agent, env id, env kwargs, memory kind, BPTT length),
  else the published runs of the cell in the same suite (``agents/published_runs.csv``,
  from ``leaderboards/<suite>_runs.csv``), else its whole cap. A run without a
  stop rule trains its whole cap.
- **Speed.** The median wall-clock speed (steps trained / wall seconds) of the store's
  runs of the same agent, env id and kind; else each published run's own speed, paired
  with its own share; else the rate of ``agents/rates.yaml`` for the agent, env family
  and kind (:func:`~pomdp_bench.harness.rates.rate_for`), or its marked fallback.
- A reference time is ``share * cap / speed`` plus :data:`RUN_OVERHEAD_SECONDS`.

The point estimate sums each run's mean reference time. The interval resamples:
each of :data:`RESAMPLES` draws gives every run one of its reference times at random
(numpy's generator, seed 0), and the interval's ends are the percentiles
:data:`INTERVAL` of the drawn totals. It covers the spread between seeds of the runs
drawn on, not a slower or busier machine; it always contains the point estimate.

On ``workers`` local workers the wall time is the total divided by the workers, and at
least the longest run. Each run is assumed to have a CPU of its own (as in the
published sweeps: 2 workers on 2 cores); with more workers than CPUs, every run slows
by ``workers / cpus``.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pomdp_bench.harness.rates import PublishedRun, published_runs, rate_for
from pomdp_bench.harness.spec import RunSpec

__all__ = [
    "INTERVAL",
    "RESAMPLES",
    "RUN_OVERHEAD_SECONDS",
    "CellEstimate",
    "Estimate",
    "describe",
    "estimate",
]

#: seconds a worker spends on a run outside its ``wall_seconds`` (starting and storing
#: it); the memory and horizon sweeps on 2 cores spent 0.2-0.4 s
RUN_OVERHEAD_SECONDS = 0.5
#: percentiles of the resampled totals that bound the stated interval
INTERVAL = (10.0, 90.0)
#: resamples of the runs' reference times behind the interval
RESAMPLES = 2000


@dataclass(frozen=True)
class CellEstimate:
    """The estimate for the runs to do of one cell.

    Attributes:
        agent: the agent's name.
        env_id: the env id.
        kind: the memory kind.
        env_kwargs: the env kwargs as JSON with sorted keys.
        bptt_length: the BPTT (sequence) length, or ``None``.
        total_timesteps: each run's cap, in env steps.
        runs: how many runs of the cell are to do.
        times: reference times of one run, in seconds, overhead included; shape ``[n]``.
        share: the expected share of the cap trained (the mean over ``times``' runs).
        share_source: ``"store"``, ``"published"``, ``"cap"`` (no run of the cell to go
            by) or ``"no stop rule"``.
        rate: the speed used, env steps per wall-clock second.
        rate_source: ``"store"``, ``"published"`` (the cell's own runs), ``"rates file"``,
            or ``"fallback: ..."`` naming the stand-in rate (see
            :func:`~pomdp_bench.harness.rates.rate_for`).
    """

    agent: str
    env_id: str
    kind: str
    env_kwargs: str
    bptt_length: int | None
    total_timesteps: int
    runs: int
    times: np.ndarray
    share: float
    share_source: str
    rate: float
    rate_source: str

    @property
    def seconds(self) -> float:
        """The expected seconds of one run: the mean of :attr:`times`."""
        return float(np.mean(self.times))

    @property
    def fallback(self) -> bool:
        """Whether the rate stands in for one that was not measured."""
        return self.rate_source.startswith("fallback")


@dataclass(frozen=True)
class Estimate:
    """What :func:`estimate` returns.

    Attributes:
        cells: one :class:`CellEstimate` per cell with runs to do.
        worker_seconds: the point estimate: the expected seconds of all runs, one after
            another on one worker.
        longest_seconds: the expected seconds of the longest run.
        draws: resampled totals and longest runs, seconds; shape ``[RESAMPLES, 2]``.
    """

    cells: list[CellEstimate]
    worker_seconds: float
    longest_seconds: float
    draws: np.ndarray = field(repr=False)

    def worker_interval(self) -> tuple[float, float]:
        """The interval of :attr:`worker_seconds`: percentiles :data:`INTERVAL` of the
        resampled totals, widened to contain the point estimate."""
        low, high = np.percentile(self.draws[:, 0], INTERVAL)
        return min(float(low), self.worker_seconds), max(float(high), self.worker_seconds)

    def wall_seconds(self, workers: int, cpus: int | None = None) -> tuple[float, float, float]:
        """The wall time on ``workers`` local workers and ``cpus`` CPUs (``None``: one CPU
        a worker): ``(point, low, high)`` in seconds.

        The point is ``max(worker_seconds / workers, longest_seconds)``, each scaled by
        ``max(1, workers / cpus)``. ``low`` and ``high`` are the percentiles
        :data:`INTERVAL` of the same formula over the resamples, widened to contain the point.
        """
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise ValueError(f"workers must be an int >= 1, got {workers!r}")
        if cpus is not None and (isinstance(cpus, bool) or not isinstance(cpus, int) or cpus < 1):
            raise ValueError(f"cpus must be an int >= 1 or None, got {cpus!r}")
        slow = max(1.0, workers / cpus) if cpus else 1.0
        point = slow * max(self.worker_seconds / workers, self.longest_seconds)
        walls = slow * np.maximum(self.draws[:, 0] / workers, self.draws[:, 1])
        low, high = np.percentile(walls, INTERVAL)
        return point, min(float(low), point), max(float(high), point)

    @property
    def fallback_runs(self) -> int:
        """How many runs use a fallback rate."""
        return sum(c.runs for c in self.cells if c.fallback)


def estimate(
    specs: Sequence[RunSpec],
    rows: Iterable[Mapping[str, Any]] = (),
    suite: str | None = None,
    *,
    published: Iterable[PublishedRun] | None = None,
    rates: Mapping[str, Any] | None = None,
    resamples: int = RESAMPLES,
    seed: int = 0,
) -> Estimate:
    """Estimate the time of the runs ``specs`` (see the module's docstring for how).

    Args:
        specs: the runs to do.
        rows: the store's runs (:meth:`~pomdp_bench.harness.store.ResultStore.rows`);
            only those with status ``"ok"`` count.
        suite: the suite's name, whose published runs give the cells' shares; ``None``:
            the published runs of every suite.
        published: the published runs; default: ``agents/published_runs.csv``.
        rates: ``{agent: {family: {kind: steps/s}}}``; default: ``agents/rates.yaml``'s.
        resamples: how many resamples bound the interval.
        seed: the seed of the resampling.

    Returns:
        An :class:`Estimate`; an empty ``specs`` gives zeros.
    """
    if isinstance(resamples, bool) or not isinstance(resamples, int) or resamples < 1:
        raise ValueError(f"resamples must be an int >= 1, got {resamples!r}")
    speeds: dict[tuple[str, str, str], list[float]] = defaultdict(list)  # seconds per step
    stored: dict[tuple[Any, ...], list[float]] = defaultdict(list)  # shares of the cap
    for row in rows:
        if row["status"] != "ok":
            continue
        spec, result = row["spec"], row["result"]
        cap = spec["total_timesteps"]
        trained = result.get("timesteps") or cap
        kind = str(spec["memory"].get("kind", "none"))
        speeds[(spec["agent"], spec["env_id"], kind)].append(result["wall_seconds"] / max(trained, 1))
        cell = (spec["agent"], spec["env_id"], kind, _json(spec["env_kwargs"]), spec.get("bptt_length"))
        stored[cell].append(trained / cap)
    reference: dict[tuple[Any, ...], list[PublishedRun]] = defaultdict(list)
    for run in published_runs() if published is None else published:
        if suite is None or run.suite == suite:
            cell = (run.agent, run.env_id, run.memory, run.env_kwargs, run.bptt_length)
            reference[cell].append(run)

    todo: dict[tuple[Any, ...], int] = defaultdict(int)
    for spec in specs:
        cell = (spec.agent, spec.env_id, spec.memory_kind, _json(spec.env_kwargs), spec.bptt_length)
        todo[(*cell, spec.total_timesteps, spec.stop is not None)] += 1
    cells = [_cell(key, n, speeds, stored, reference, rates) for key, n in sorted(todo.items(), key=_order)]

    rng = np.random.default_rng(seed)
    draws = np.zeros((resamples, 2))
    for cell in cells:
        picked = rng.choice(cell.times, size=(resamples, cell.runs))  # [resamples, runs]
        draws[:, 0] += picked.sum(axis=1)
        draws[:, 1] = np.maximum(draws[:, 1], picked.max(axis=1))
    return Estimate(
        cells=cells,
        worker_seconds=sum(c.seconds * c.runs for c in cells),
        longest_seconds=max((c.seconds for c in cells), default=0.0),
        draws=draws,
    )


def _cell(
    key: tuple[Any, ...],
    runs: int,
    speeds: Mapping[tuple[str, str, str], list[float]],
    stored: Mapping[tuple[Any, ...], list[float]],
    reference: Mapping[tuple[Any, ...], list[PublishedRun]],
    rates: Mapping[str, Any] | None,
) -> CellEstimate:
    agent, env_id, kind, kwargs, bptt, cap, has_stop = key
    cell = (agent, env_id, kind, kwargs, bptt)
    published = reference.get(cell, [])
    shares = [r.timesteps / r.total_timesteps for r in published]
    if agent_speeds := speeds.get((agent, env_id, kind)):
        rate, rate_source = 1.0 / float(np.median(agent_speeds)), "store"
        if not has_stop:
            share_list, share_source = [1.0], "no stop rule"
        elif cell in stored:
            share_list, share_source = stored[cell], "store"
        elif shares:
            share_list, share_source = shares, "published"
        else:
            share_list, share_source = [1.0], "cap"
        times = np.asarray(share_list) * cap / rate
    elif published:  # each published run's share with its own speed
        share_list = shares if has_stop else [1.0] * len(published)
        share_source = "published" if has_stop else "no stop rule"
        per_step = np.asarray([r.wall_seconds / r.timesteps for r in published])
        times = np.asarray(share_list) * cap * per_step
        rate, rate_source = float(np.mean(share_list) * cap / np.mean(times)), "published"
    else:
        found = rate_for(agent, env_id, kind, rates)
        rate = found.steps_per_second
        rate_source = "rates file" if found.fallback is None else f"fallback: {found.fallback}"
        share_list, share_source = [1.0], ("cap" if has_stop else "no stop rule")
        times = np.asarray([cap / rate])
    return CellEstimate(
        agent=agent,
        env_id=env_id,
        kind=kind,
        env_kwargs=kwargs,
        bptt_length=bptt,
        total_timesteps=cap,
        runs=runs,
        times=times + RUN_OVERHEAD_SECONDS,
        share=float(np.mean(share_list)),
        share_source=share_source,
        rate=float(rate),
        rate_source=rate_source,
    )


def describe(est: Estimate, backend: str, workers: int, cpus: int | None) -> list[str]:
    """The dry-run's lines for ``est``: the estimated time with its interval, then one
    line a cell (runs, expected share and its source, rate and its source, minutes a run)."""
    low, high = est.worker_interval()
    percent = f"{INTERVAL[1] - INTERVAL[0]:.0f}%"
    if backend == "ray":  # the cluster's size is not known here
        lines = [
            f"estimated time: {est.worker_seconds / 60:.1f} worker-minutes (one CPU each; {percent} "
            f"interval {low / 60:.1f}-{high / 60:.1f}): divide by the cluster's CPUs; "
            f"its longest run alone {est.longest_seconds / 60:.1f} min"
        ]
    else:
        point, low, high = est.wall_seconds(workers, cpus)
        lines = [
            f"estimated time: {point / 60:.1f} min on {workers} worker(s), {percent} interval "
            f"{low / 60:.1f}-{high / 60:.1f} min; the longest run {est.longest_seconds / 60:.1f} min"
        ]
    lines.append(
        "The interval covers the spread between seeds of the runs drawn on; "
        "a slower or busier machine takes longer."
    )
    if est.fallback_runs:
        lines.append(f"{est.fallback_runs} run(s) use a fallback rate: no run of theirs was measured.")
    lines.append("cells to do: runs, expected share of the cap (from), steps/s (from), min a run:")
    for c in est.cells:
        bptt = "-" if c.bptt_length is None else str(c.bptt_length)
        lines.append(
            f"  {c.agent:8s} {c.env_id:20s} {c.kind:16s} {c.env_kwargs:24s} bptt {bptt:4s} {c.runs:3d}  "
            f"{c.share:4.2f} ({c.share_source})  {c.rate:8.0f} ({c.rate_source})  {c.seconds / 60:6.2f}"
        )
    return lines


def _order(item: tuple[tuple[Any, ...], int]) -> tuple[str, ...]:
    return tuple("" if v is None else f"{v:>12}" if isinstance(v, int) else str(v) for v in item[0])


def _json(value: object) -> str:
    return json.dumps(value, sort_keys=True)
