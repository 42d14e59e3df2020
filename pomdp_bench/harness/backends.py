"""Where runs execute: a local process pool, or Ray tasks on a cluster.

A backend takes run specs and yields ``(spec, result)`` pairs as runs finish;
the caller (one process) writes each to the store at once. Workers run torch
on one thread each.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from pomdp_bench.harness.progress import SweepProgress
from pomdp_bench.harness.spec import RunResult, RunSpec


def init_worker(gpu_ids: Any = None) -> None:
    """One torch thread; with ``gpu_ids`` (a queue), this worker sees one GPU of its own."""
    os.environ["OMP_NUM_THREADS"] = "1"
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

    def run(self, specs: list[RunSpec], progress: SweepProgress) -> Iterator[tuple[RunSpec, RunResult]]:
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
                    self.workers, mp_context=ctx, initializer=init_worker, initargs=(gpu_ids,)
                )
                in_flight: dict[Future, RunSpec] = {}
                broken = False
                while (todo or in_flight) and not broken:
                    while todo and len(in_flight) < self.workers:
                        spec = todo.pop()
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


class RayBackend:
    """Runs each spec as a Ray task (one CPU each, and one GPU for a spec on ``cuda``) on
    the cluster at ``address``.

    ``address=None`` starts a local Ray instance with ``num_cpus`` CPUs (all by
    default). Needs the ``[ray]`` extra.
    """

    def __init__(self, address: str | None = None, num_cpus: int | None = None) -> None:
        try:
            import ray
        except ImportError as err:
            raise ImportError(
                "the ray backend needs the [ray] extra: pip install 'pomdp-bench[ray]'"
            ) from err
        self._ray = ray
        if not ray.is_initialized():
            if address is None:
                ray.init(num_cpus=num_cpus, include_dashboard=False, log_to_driver=False)
            else:
                ray.init(address=address, include_dashboard=False, log_to_driver=False)

    def run(self, specs: list[RunSpec], progress: SweepProgress) -> Iterator[tuple[RunSpec, RunResult]]:
        ray = self._ray
        task = ray.remote(num_cpus=1, max_retries=0)(_run_in_ray)
        pending: dict[Any, RunSpec] = {}
        for spec in specs:
            progress.started(spec)
            gpus = 1 if spec.device.startswith("cuda") else 0  # Ray sets CUDA_VISIBLE_DEVICES
            pending[task.options(num_gpus=gpus).remote(spec.to_dict())] = spec
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                spec = pending.pop(ref)
                try:
                    result = RunResult(**ray.get(ref))
                except Exception as err:  # the task's worker died
                    result = RunResult(status="failed", error=f"{type(err).__name__}: {err}")
                yield spec, result

    def shutdown(self) -> None:
        self._ray.shutdown()
