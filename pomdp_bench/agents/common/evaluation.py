"""Deterministic-evaluation episodes for any agent: the episode bookkeeping PPO and SAC share."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from gymnasium.vector import VectorEnv

from pomdp_bench.agents.common.seeding import env_seeds
from pomdp_bench.envs.make import check_same_step, make_vector_env

# act(obs [N, *obs_shape], episode_starts [N] bool) -> actions [N, ...] ready for env.step.
ActFn = Callable[[np.ndarray, np.ndarray], np.ndarray]


def evaluate_episodes(
    act: ActFn,
    n_episodes: int,
    *,
    seed: int,
    env: VectorEnv | None = None,
    env_id: str | None = None,
    env_kwargs: dict[str, Any] | None = None,
    max_copies: int = 16,
) -> np.ndarray:
    """Undiscounted returns of ``n_episodes`` episodes of ``act``.

    Runs ``env`` (a ``SAME_STEP`` vector env), or else ``min(n_episodes, max_copies)``
    new copies of ``env_id``; each copy runs its share of the episodes, as SB3's
    ``evaluate_policy`` does, so short episodes are not over-represented. ``act`` sees
    ``episode_starts`` true at every copy's first step and after every episode end,
    which is where a memory must reset. Copy ``i`` resets from the ``i``-th reset seed
    that :func:`~pomdp_bench.agents.common.seeding.env_seeds` splits from ``seed`` for
    evaluation, so no two seeds, and no training run, share an evaluation episode.

    Returns:
        ``[n_episodes]`` float64 returns, in order of completion per copy.
    """
    if env is None:
        if env_id is None:
            raise ValueError("this agent was built from a vector env without an id; pass env=")
        env = make_vector_env(env_id, min(n_episodes, max_copies), **(env_kwargs or {}))
        close = True
    else:
        check_same_step(env)
        close = False
    n = env.num_envs
    targets = np.array([(n_episodes + i) // n for i in range(n)])
    counts = np.zeros(n, dtype=np.int64)
    returns: list[list[float]] = [[] for _ in range(n)]
    running = np.zeros(n)
    obs, _ = env.reset(seed=env_seeds(seed, "evaluate", n))
    starts = np.ones(n, dtype=bool)
    while (counts < targets).any():
        obs, reward, terminated, truncated, _ = env.step(act(obs, starts))
        starts = terminated | truncated
        running += reward
        for i in np.flatnonzero(starts):
            if counts[i] < targets[i]:
                returns[i].append(float(running[i]))
                counts[i] += 1
        running[starts] = 0.0
    if close:
        env.close()
    return np.array([r for per_copy in returns for r in per_copy], dtype=np.float64)
