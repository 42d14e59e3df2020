"""Vectorized env throughput: steps/s at 1, 8 and 1024 copies, beside Gymnasium's CartPoleVectorEnv.

    pytest benchmarks/test_bench_envs.py --benchmark-only

Each call is one ``step`` of the whole vector env (NEXT_STEP autoreset, as
Gymnasium's own vector envs) with pre-drawn random actions; the summary line
gives env steps per second (copies / mean seconds per call).
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.envs.classic_control.cartpole import CartPoleVectorEnv

from pomdp_bench.envs.cards import load_cards

ENV_IDS = sorted(load_cards())
SIZES = (1, 8, 1024)


def _bench_steps(benchmark, vec: gym.vector.VectorEnv, n: int) -> None:
    vec.reset(seed=0)
    vec.action_space.seed(0)
    actions = [np.asarray(vec.action_space.sample()) for _ in range(64)]
    counter = iter(range(10**12))

    def step() -> None:
        vec.step(actions[next(counter) % 64])

    benchmark.extra_info["items_per_call"] = n
    benchmark.pedantic(step, rounds=20, iterations=max(20, 4096 // n), warmup_rounds=2)


@pytest.mark.parametrize("n", SIZES)
def test_gymnasium_cartpole_vector_env(benchmark, n: int) -> None:
    _bench_steps(benchmark, CartPoleVectorEnv(num_envs=n), n)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("env_id", ENV_IDS)
def test_vector_twin(benchmark, env_id: str, n: int) -> None:
    vec = gym.make_vec(env_id, num_envs=n, vectorization_mode="vector_entry_point")
    _bench_steps(benchmark, vec, n)
