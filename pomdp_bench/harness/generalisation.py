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
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from pomdp_bench.envs.make import make_vector_env
from pomdp_bench.harness.cue_tasks import CueTask
from pomdp_bench.memory import MemoryConfig

HORIZON_FACTORS: tuple[int, ...] = (2, 4)
"""The test horizons, as multiples of the training horizon's keyword."""

GENERALISATION_SEED = 2**40 + 1
"""Root of the evaluation episodes' reset seeds (``Agent.evaluate(seed=...)``): far above
any run's agent seed, so no run trained or was evaluated on them."""

DEFAULT_EPISODES = 100
"""Fresh episodes per test horizon (the stop rule's second check takes 100 too)."""

_MAX_COPIES = 32

# Kinds that see a fixed number of steps back: what bounds them, and whether their
# layers stack it (each layer of a windowed transformer attends window - 1 steps back to
# outputs of the layer below).
_WINDOWED: dict[str, tuple[str, bool]] = {
    "framestack": ("frames", False),
    "transformer": ("window", True),
    "gtrxl": ("window", True),
}


def memory_reach(memory: Mapping[str, Any] | str | None) -> tuple[int | None, str]:
    """How many steps back a memory kind can see by construction.

    Args:
        memory: a memory config (a run spec's ``memory`` dict, or a kind name).

    Returns:
        ``(steps, what bounds them)``: ``(window - 1, "frames")`` for ``framestack``,
        ``(num_layers * (window - 1), "window")`` for ``transformer`` and ``gtrxl``, and
        ``(None, "")`` for kinds with no such bound (recurrent ones, ``none``).
    """
    config = MemoryConfig.from_any(memory)
    if config.kind not in _WINDOWED:
        return None, ""
    bound, stacked = _WINDOWED[config.kind]
    layers = int(config.num_layers) if stacked else 1
    return layers * (int(config.window) - 1), bound


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


@dataclass(frozen=True)
class GeneralisationResult:
    """One agent's returns at longer horizons.

    Attributes:
        factors: the multiples of the training horizon's keyword that were tested.
        horizons: the memory horizon (steps from cue to decision) at each; 0 where the
            env takes no such long horizon (TMaze's corridor stops at 10,000 cells).
        returns: the mean return at each, over ``n_episodes`` episodes; NaN where the
            env takes no such long horizon.
        limited_by: per factor, ``"window"``, ``"frames"`` or ``""``: whether the kind
            can see the cue there at all (:func:`limited_by`).
        n_episodes: episodes per factor.
        seed: root of their reset seeds.
    """

    factors: list[int]
    horizons: list[int]
    returns: list[float]
    limited_by: list[str]
    n_episodes: int
    seed: int

    def return_at(self, factor: int) -> float:
        """The mean return at ``factor`` times the training horizon (NaN if not tested)."""
        return self.returns[self.factors.index(factor)] if factor in self.factors else float("nan")

    def limit(self) -> tuple[str, int | None]:
        """``(what limits the kind, the smallest factor it limits)``, or ``("", None)``."""
        for factor, bound in zip(self.factors, self.limited_by, strict=True):
            if bound:
                return bound, factor
        return "", None

    def to_dict(self) -> dict[str, Any]:
        """Plain data for the store (:meth:`from_dict` reads it back)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GeneralisationResult:
        names = ("factors", "horizons", "returns", "limited_by", "n_episodes", "seed")
        return cls(**{k: data[k] for k in names})


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
