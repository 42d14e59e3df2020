"""PPO throughput against the number of env copies, per memory kind.

    pytest benchmarks/test_bench_copies.py --benchmark-only

TMaze-v1 with a 10-cell corridor at ``agents/ppo.yaml``'s TMaze settings for corridors
up to 5 (32 steps per copy and rollout, 4 minibatches, 4 epochs, heads [32]), every
memory kind of ``MEMORY_KINDS`` at hidden size 64, with 16 and with 256 copies. Two
benchmarks per (kind, copies):

- ``rollout``: one rollout (``items_per_call`` = copies x 32 env steps), the memory
  acting step by step;
- ``update``: one update phase on a collected rollout (16 gradient steps over the
  same env steps).

Env steps per second = ``items_per_call`` / time per call. With few copies a
gradient step on small networks is mostly fixed overhead, so steps per second grow
with the copies until the arithmetic dominates.
"""

from __future__ import annotations

import pytest

from pomdp_bench.agents.ppo import PPO, PPOSettings
from pomdp_bench.memory import MEMORY_KINDS

KINDS = MEMORY_KINDS
COPIES = (16, 256)


def _agent(kind: str, copies: int) -> PPO:
    memory = None if kind == "none" else {"kind": kind, "hidden_size": 64}
    # The settings tuned at corridor 5 (32 steps per copy and rollout), on corridor 10.
    settings = PPOSettings.tuned("TMaze-v1", {"corridor_length": 5}, n_envs=copies, seed=0)
    model = PPO("TMaze-v1", memory, env_kwargs={"corridor_length": 10}, settings=settings, device="cpu")
    model.learn(model.settings.rollout_size)  # one rollout and update: the caches warmed up
    return model


@pytest.mark.parametrize("copies", COPIES)
@pytest.mark.parametrize("kind", KINDS)
def test_rollout(benchmark, kind: str, copies: int) -> None:
    model = _agent(kind, copies)
    benchmark.extra_info["items_per_call"] = model.settings.rollout_size
    benchmark.pedantic(model._collect_rollout, rounds=5, warmup_rounds=1)


@pytest.mark.parametrize("copies", COPIES)
@pytest.mark.parametrize("kind", KINDS)
def test_update(benchmark, kind: str, copies: int) -> None:
    model = _agent(kind, copies)
    model._collect_rollout()
    benchmark.extra_info["items_per_call"] = model.settings.rollout_size
    benchmark.pedantic(model._update, args=(0.5,), rounds=3, warmup_rounds=1)
