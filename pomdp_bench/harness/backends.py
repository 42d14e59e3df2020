"""Where runs execute: a local process pool, or Ray tasks on a cluster.

A backend takes run specs and yields ``(spec, result)`` pairs as runs finish;
the caller (one process) writes each to the store at once. Workers run torch
on one thread each. With a ``claim`` callable, a backend asks it just before
starting each run and skips a run it refuses (one another process trains): runs
are claimed one at a time as workers free up, so processes sharing a store split
a suite between them.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from pomdp_bench.harness.kernels import KERNEL_SETTINGS
from pomdp_bench.harness.kernels import apply as apply_kernels
from pomdp_bench.harness.progress import SweepProgress
from pomdp_bench.harness.spec import RunResult, RunSpec

Claim = Callable[[RunSpec], bool]
"""Asked just before a run starts: True to train it here, False to skip it."""


def init_worker(gpu_ids: Any = None, kernels: str = "native") -> None:
    """One torch thread; with ``gpu_ids`` (a queue), this worker sees one GPU of its own;
    the CPU kernel setting ``kernels`` is taken before torch is imported."""
    os.environ["OMP_NUM_THREADS"] = "1"
    apply_kernels(kernels)
    if gpu_ids is not None:  # before torch initialises CUDA: "cuda" is then this GPU
        os.environ["CUDA_VISIBLE_DEVICES"] = str(gpu_ids.get())
    import torch

    torch.set_num_threads(1)


def _run_in_worker(spec_data: dict[str, Any], progress_queue: Any) -> dict[str, Any]:
    from pomdp_bench.harness.training import execute

    def report(key: str, done: int, total: int) -> None:
        progress_queue.put((key, done, total))

    return execute(RunSpec.from_dict(spec_data), progress=report).to_dict()


class LocalBackend:
    """Runs specs in a pool of ``workers`` processes, at most ``workers`` in flight.

    A worker that dies (killed, out of memory) fails only the runs in flight on
    the pool at that moment; the pool is rebuilt and the sweep goes on. With
    ``gpus > 0`` worker ``k`` sees GPU ``k % gpus`` alone (``CUDA_VISIBLE_DEVICES``),
    so runs on ``"cuda"`` spread over the GPUs, a worker per GPU by default.
    """

    def __init__(self, workers: int, gpus: int = 0) -> None:
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        if gpus < 0:
            raise ValueError(f"gpus must be >= 0, got {gpus}")
        self.workers, self.gpus = workers, gpus

    def run(
        self, specs: list[RunSpec], progress: SweepProgress, claim: Claim | None = None
    ) -> Iterator[tuple[RunSpec, RunResult]]:
        """Run ``specs`` in order; yields each started run with its result as it ends.

        Args:
            specs: the runs.
            progress: told when a run starts, advances and ends.
            claim: asked before each run starts; a run it refuses is skipped (not yielded).
        """
        kernels = sweep_kernels(specs)
        ctx = mp.get_context("spawn")  # no fork of a parent that may hold torch threads
        manager = ctx.Manager()
        messages = manager.Queue()
        todo = list(reversed(specs))
        try:
            while todo:
                gpu_ids = None
                if self.gpus:
                    gpu_ids = manager.Queue()
                    for worker in range(self.workers):
                        gpu_ids.put(worker % self.gpus)
                pool = ProcessPoolExecutor(
                    self.workers, mp_context=ctx, initializer=init_worker, initargs=(gpu_ids, kernels)
                )
                in_flight: dict[Future, RunSpec] = {}
                broken = False
                while (todo or in_flight) and not broken:
                    while todo and len(in_flight) < self.workers:
                        spec = todo.pop()
                        if claim is not None and not claim(spec):
                            continue
                        progress.started(spec)
                        in_flight[pool.submit(_run_in_worker, spec.to_dict(), messages)] = spec
                    done, _ = wait(list(in_flight), timeout=0.5, return_when=FIRST_COMPLETED)
                    _drain(messages, progress)
                    for future in done:
                        spec = in_flight.pop(future)
                        try:
                            result = RunResult(**future.result())
                        except BrokenProcessPool:
                            broken = True
                            result = RunResult(
                                status="failed", error="BrokenProcessPool: the worker process died"
                            )
                        yield spec, result
                if broken:
                    for spec in in_flight.values():
                        yield (
                            spec,
                            RunResult(status="failed", error="BrokenProcessPool: the worker process died"),
                        )
                pool.shutdown(wait=True, cancel_futures=True)
        finally:
            manager.shutdown()


def sweep_kernels(specs: list[RunSpec]) -> str:
    """The one CPU kernel setting of ``specs`` (``native`` for none): a worker takes one.

    Raises:
        ValueError: the specs ask for more than one setting.
    """
    found = sorted({spec.kernels for spec in specs})
    if len(found) > 1:
        raise ValueError(f"a sweep runs under one kernel setting; these specs ask for {found}")
    return found[0] if found else "native"


def _drain(messages: Any, progress: SweepProgress) -> None:
    while True:
        try:
            key, done, total = messages.get_nowait()
        except queue.Empty:
            return
        progress.advance(key, done, total)


def _run_in_ray(spec_data: dict[str, Any]) -> dict[str, Any]:
    init_worker()
    from pomdp_bench.harness.training import execute

    return execute(RunSpec.from_dict(spec_data)).to_dict()


def _ray_system_errors(ray: Any) -> tuple[type[BaseException], ...]:
    """Ray's exceptions for a task whose worker or node died (not the task's own error)."""
    names = (
        "WorkerCrashedError",
        "NodeDiedError",
        "LocalRayletDiedError",
        "ObjectLostError",
        "OutOfMemoryError",
    )
    return tuple(getattr(ray.exceptions, n) for n in names if hasattr(ray.exceptions, n))


class RayBackend:
    """Runs each spec as a Ray task (one CPU each, and one GPU for a spec on ``cuda``) on
    the cluster at ``address``.

    ``address=None`` starts a local Ray instance with ``num_cpus`` CPUs (all by
    default). Needs the ``[ray]`` extra.

    A task whose worker process or node dies (killed, out of memory) is submitted
    again, up to ``retries`` times, with a line on stderr; after that, or when the task
    itself raises, the run is recorded as failed with Ray's error and the sweep goes on.
    With a ``claim`` callable, at most ``max_in_flight`` runs are claimed and submitted
    at a time (default: twice the cluster's CPUs, so an autoscaler still sees demand),
    leaving the rest for other processes sharing the store.

    Args:
        address: a Ray cluster's address, or None for a local Ray.
        num_cpus: CPUs of a local Ray (default: all).
        retries: resubmissions of a run whose worker died (0: none).
        max_in_flight: runs submitted at once when claiming (default: 2 x cluster CPUs).
    """

    def __init__(
        self,
        address: str | None = None,
        num_cpus: int | None = None,
        retries: int = 1,
        max_in_flight: int | None = None,
    ) -> None:
        if retries < 0:
            raise ValueError(f"retries must be >= 0, got {retries}")
        if max_in_flight is not None and max_in_flight < 1:
            raise ValueError(f"max_in_flight must be >= 1, got {max_in_flight}")
        try:
            import ray
        except ImportError as err:
            raise ImportError(
                "the ray backend needs the [ray] extra: pip install 'pomdp-bench[ray]'"
            ) from err
        self._ray = ray
        self.retries, self.max_in_flight = retries, max_in_flight
        if not ray.is_initialized():
            if address is None:
                ray.init(num_cpus=num_cpus, include_dashboard=False, log_to_driver=False)
            else:
                ray.init(address=address, include_dashboard=False, log_to_driver=False)

    def _limit(self, claim: Claim | None) -> int:
        if claim is None:
            return sys.maxsize
        if self.max_in_flight is not None:
            return self.max_in_flight
        return max(1, 2 * int(self._ray.cluster_resources().get("CPU", 1)))

    def run(
        self, specs: list[RunSpec], progress: SweepProgress, claim: Claim | None = None
    ) -> Iterator[tuple[RunSpec, RunResult]]:
        """Run ``specs`` as Ray tasks; yields each started run with its result as it ends.

        Args:
            specs: the runs.
            progress: told when a run starts and ends (and when one is resubmitted).
            claim: asked before each run is submitted; a run it refuses is skipped.
        """
        ray = self._ray
        task = ray.remote(num_cpus=1, max_retries=0)(_run_in_ray)
        died = _ray_system_errors(ray)
        todo = list(reversed(specs))
        pending: dict[Any, tuple[RunSpec, int]] = {}  # ref -> (spec, attempt)

        def submit(spec: RunSpec, attempt: int) -> None:
            gpus = 1 if spec.device.startswith("cuda") else 0  # Ray sets CUDA_VISIBLE_DEVICES
            options: dict[str, Any] = {"num_gpus": gpus}
            if KERNEL_SETTINGS[spec.kernels]:  # a worker process that starts with the setting
                options["runtime_env"] = {"env_vars": dict(KERNEL_SETTINGS[spec.kernels])}
            pending[task.options(**options).remote(spec.to_dict())] = (spec, attempt)

        while todo or pending:
            limit = self._limit(claim)
            while todo and len(pending) < limit:
                spec = todo.pop()
                if claim is not None and not claim(spec):
                    continue
                progress.started(spec)
                submit(spec, 0)
            if not pending:
                break
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                spec, attempt = pending.pop(ref)
                try:
                    result = RunResult(**ray.get(ref))
                except died as err:  # the worker or its node died: run it again
                    error = f"{type(err).__name__}: {err}"
                    if attempt < self.retries:
                        print(
                            f"[retry] {spec.label()}: its Ray worker died ({type(err).__name__}); "
                            f"submitting it again (retry {attempt + 1} of {self.retries})",
                            file=progress.stream,
                            flush=True,
                        )
                        submit(spec, attempt + 1)
                        continue
                    result = RunResult(status="failed", error=error)
                except Exception as err:  # the task raised outside training.execute
                    result = RunResult(status="failed", error=f"{type(err).__name__}: {err}")
                yield spec, result

    def shutdown(self) -> None:
        """Disconnect from Ray (stopping a local Ray this backend started)."""
        self._ray.shutdown()
