"""PPO throughput per memory kind at rl-zoo3's CartPoleNoVel settings.

    pytest benchmarks/test_bench_ppo.py --benchmark-only

Settings: ``agents/ppo.yaml`` (MaskedCartPole-v0; 8 copies x 32 steps, one
minibatch, 20 epochs) on MaskedCartPole-v0 with ``obs_layout="zeroed"``, each
memory kind at its default size (hidden 64). Two benchmarks per kind:

- ``rollout``: one rollout, 256 env steps with the memory acting step by step
  (``items_per_call`` = 256 env steps);
- ``update``: one update phase on a collected rollout, 20 gradient steps on
  pieces of 32 steps (``items_per_call`` = 256 env steps of data).

A training run costs about one of each per 256 env steps.
"""

from __future__ import annotations

import pytest

from pomdp_bench.agents.ppo import PPO
from pomdp_bench.harness.suites import agent_hyperparams
from pomdp_bench.memory import MEMORY_KINDS


def _agent(kind: str) -> PPO:
    model = PPO(
        "MaskedCartPole-v0",
        kind,
        env_kwargs={"obs_layout": "zeroed"},
        seed=0,
        device="cpu",
        **agent_hyperparams("ppo", "MaskedCartPole-v0"),
    )
    model.learn(2 * model.settings.rollout_size)  # past the first episodes, stats warmed up
    return model


@pytest.mark.parametrize("kind", MEMORY_KINDS)
def test_rollout(benchmark, kind: str) -> None:
    model = _agent(kind)
    benchmark.extra_info["items_per_call"] = model.settings.rollout_size
    benchmark.pedantic(model._collect_rollout, rounds=10, warmup_rounds=1)


@pytest.mark.parametrize("kind", MEMORY_KINDS)
def test_update(benchmark, kind: str) -> None:
    model = _agent(kind)
    model._collect_rollout()
    benchmark.extra_info["items_per_call"] = model.settings.rollout_size
    benchmark.pedantic(model._update, args=(0.5,), rounds=5, warmup_rounds=1)
