"""Horizon generalisation: a trained agent on its task made 2x and 4x as long.

A run trained on a cue task (:mod:`~pomdp_bench.harness.cue_tasks`) is evaluated, with
its final weights and nothing retrained, on the same task with its horizon keyword
(``corridor_length``, ``delay``) doubled and quadrupled, on fresh episodes. Its return
there says whether what it learned holds past the horizon it was trained at.

Some kinds cannot reach a longer horizon by construction: a ``transformer`` or ``gtrxl``
sees ``num_layers * (window - 1)`` steps back, a ``framestack`` ``window - 1``. Where the
cue lies beyond that, the run is marked (:func:`limited_by`): its return there measures
the window, not forgetting.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from pomdp_bench.envs.make import make_vector_env
from pomdp_bench.harness.analysis_records import GeneralisationResult
from pomdp_bench.harness.cue_tasks import CueTask
from pomdp_bench.memory import MemoryConfig, memory_class

HORIZON_FACTORS: tuple[int, ...] = (2, 4)
"""The test horizons, as multiples of the training horizon's keyword."""

GENERALISATION_SEED = 2**40 + 1
"""Root of the evaluation episodes' reset seeds (``Agent.evaluate(seed=...)``): far above
any run's agent seed, so no run trained or was evaluated on them."""

DEFAULT_EPISODES = 100
"""Fresh episodes per test horizon (the stop rule's second check takes 100 too)."""

_MAX_COPIES = 32


def memory_reach(memory: Mapping[str, Any] | str | None) -> tuple[int | None, str]:
    """How many steps back a memory kind can see by construction.

    Args:
        memory: a memory config (a run spec's ``memory`` dict, or a kind name).

    Returns:
        ``(steps, what bounds them)``: ``(window - 1, "frames")`` for ``framestack``,
        ``(num_layers * (window - 1), "window")`` for ``transformer`` and ``gtrxl``, and
        ``(None, "")`` for kinds with no such bound (recurrent ones, ``none``): the
        kind's own :meth:`~pomdp_bench.memory.Memory.visible_past`.
    """
    config = MemoryConfig.from_any(memory)
    return memory_class(config.kind).visible_past(config) or (None, "")


def limited_by(memory: Mapping[str, Any] | str | None, task: CueTask) -> str:
    """``"window"`` or ``"frames"`` where the cue of ``task`` lies beyond what ``memory``
    sees (:func:`memory_reach` below ``task.horizon``), else ``""``."""
    reach, bound = memory_reach(memory)
    return bound if reach is not None and reach < task.horizon else ""


def evaluate_at(
    agent: Any,
    task: CueTask,
    factor: int,
    n_episodes: int = DEFAULT_EPISODES,
    seed: int = GENERALISATION_SEED,
) -> np.ndarray:
    """Returns of ``agent`` on ``task`` with its horizon keyword times ``factor``.

    Deterministic episodes from a fresh memory (``Agent.evaluate``), on copies of the
    scaled env with the agent's wrappers, reset from seeds split from ``seed``.

    Returns:
        ``[n_episodes]`` float64 undiscounted returns.
    """
    scaled = task.scaled(factor)
    return fresh_returns(agent, scaled.env_id, scaled.env_kwargs, n_episodes, seed)


def fresh_returns(
    agent: Any, env_id: str, env_kwargs: dict[str, Any], n_episodes: int, seed: int
) -> np.ndarray:
    """Returns of ``agent`` on ``n_episodes`` fresh episodes of ``env_id`` with ``env_kwargs``:
    deterministic, from a fresh memory (``Agent.evaluate``), on copies of the env with the
    agent's wrappers, reset from seeds split from ``seed``.

    Returns:
        ``[n_episodes]`` float64 undiscounted returns.
    """
    env = make_vector_env(
        env_id, min(n_episodes, _MAX_COPIES), wrappers=getattr(agent, "env_wrappers", ()) or (), **env_kwargs
    )
    try:
        return np.asarray(agent.evaluate(n_episodes, env=env, seed=seed), dtype=np.float64)
    finally:
        env.close()


def generalise(
    agent: Any,
    task: CueTask,
    memory: Mapping[str, Any] | str | None,
    factors: tuple[int, ...] = HORIZON_FACTORS,
    n_episodes: int = DEFAULT_EPISODES,
    seed: int = GENERALISATION_SEED,
) -> GeneralisationResult:
    """Evaluate ``agent`` (trained on ``task`` with ``memory``) at each of ``factors``
    times its horizon (:func:`evaluate_at`), marking the factors its kind cannot reach."""
    made = [f for f in factors if task.can_scale(f)]  # the env refuses longer ones
    scaled = {f: task.scaled(f) for f in made}
    returns = {f: float(evaluate_at(agent, task, f, n_episodes, seed).mean()) for f in made}
    return GeneralisationResult(
        factors=list(factors),
        horizons=[scaled[f].horizon if f in scaled else 0 for f in factors],
        returns=[returns.get(f, float("nan")) for f in factors],
        limited_by=[limited_by(memory, scaled[f]) if f in scaled else "" for f in factors],
        n_episodes=n_episodes,
        seed=seed,
    )
