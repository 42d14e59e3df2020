"""Torch threads against training speed, alone and beside one CPU-bound process.

    pytest benchmarks/test_bench_threads.py --benchmark-only

Each benchmark trains PPO (``agents/ppo.yaml``'s TMaze-v1 settings, corridor 5) for one
rollout and its update (``items_per_call`` = the rollout's env steps), with
``num_threads`` 1, 2 and the CPU count (each once), at 16 and 256 copies. ``busy``
runs a second Python process that spins on one core meanwhile, as another user's job
would. ``test_readme_block`` times the README's "Training from Python" block (30k
steps of PPO-gru) alone and beside that process.

Findings, with the machine they were measured on: docs/notes/throughput.md#threads.
Run it with nothing else on the machine.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
import torch

from pomdp_bench.agents.ppo import PPO
from pomdp_bench.memory import MEMORY_KINDS

THREADS = sorted({1, 2, os.cpu_count() or 1})
COPIES = (16, 256)


@pytest.fixture(params=["alone", "busy"])
def load(request: pytest.FixtureRequest) -> Iterator[str]:
    """Nothing else running, or one process spinning on a core for the test's length."""
    if request.param == "alone":
        yield "alone"
        return
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    time.sleep(0.5)  # let it take its core
    try:
        yield "busy"
    finally:
        spinner.kill()
        spinner.wait()


@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("copies", COPIES)
@pytest.mark.parametrize("kind", MEMORY_KINDS)
def test_threads(benchmark, load: str, kind: str, copies: int, threads: int) -> None:
    model = PPO.from_tuned(
        "TMaze-v1", kind, env_kwargs={"corridor_length": 5}, n_envs=copies, num_threads=threads, seed=0
    )
    rollout = model.settings.rollout_size
    model.learn(rollout)  # warm-up: first episodes, allocations
    benchmark.extra_info["items_per_call"] = rollout
    benchmark.extra_info["torch_threads"] = torch.get_num_threads()
    benchmark.pedantic(model.learn, args=(rollout,), kwargs={"reset_num_timesteps": False}, rounds=3)
    torch.set_num_threads(1)


def test_readme_block(benchmark, load: str) -> None:
    def block() -> None:
        model = PPO.from_tuned("TMaze-v1", "gru", env_kwargs={"corridor_length": 5}, seed=0)
        model.learn(30_000)

    benchmark.extra_info["items_per_call"] = 30_000
    benchmark.pedantic(block, rounds=1)
