"""The tasks whose cue an analysis can follow: passive T-Maze and cue recall.

Both show a cue at step 0 of a fixed-length episode and need it at one later step, the
decision step, ``horizon`` steps after it (the card's memory horizon): T-Maze's junction
at step ``corridor_length``, cue recall's query at step ``delay + 1``. One keyword sets
that horizon (``corridor_length``, ``delay``), so the same task can be built longer.
:mod:`~pomdp_bench.harness.probes` and :mod:`~pomdp_bench.harness.generalisation` read
these facts here, and refuse any other env by name.

The active T-Maze is not one of them: its cue shows only when the agent walks back to
it, so the step that holds the cue depends on the policy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from pomdp_bench.envs.cards import card_of
from pomdp_bench.envs.cue_recall import MAX_DELAY
from pomdp_bench.envs.tmaze import MAX_CORRIDOR_LENGTH

# The env families by their card's entry point, so every version of an id is covered
# (TMaze-v0 and -v1 alike), and the keyword that sets each one's horizon.
_FAMILIES = {
    "pomdp_bench.envs.tmaze:TMazeEnv": ("tmaze", "corridor_length", MAX_CORRIDOR_LENGTH),
    "pomdp_bench.envs.cue_recall:CueRecallEnv": ("cue_recall", "delay", MAX_DELAY),
}
VALID_ENVS = "passive T-Maze (TMaze-v0, TMaze-v1) and cue recall (CueRecall-v0)"


@dataclass(frozen=True)
class CueTask:
    """One env variant whose cue shows at step 0 and is needed ``horizon`` steps later.

    Attributes:
        env_id: the registered id.
        env_kwargs: the variant's kwargs on top of the card's (as given).
        family: ``"tmaze"`` or ``"cue_recall"``.
        horizon_kwarg: the keyword that sets the horizon (``corridor_length``, ``delay``).
        horizon: steps from the cue (step 0) to the decision step; the decision is the
            action taken after the observation of step ``horizon``.
        episode_length: steps of every episode (``horizon + 1`` for T-Maze, ``+ 1`` more
            for cue recall, whose episode ends one step after the query).
        n_cues: how many cues there are (2 arms; ``num_cues``); chance is ``1 / n_cues``.
        max_value: the largest value the env takes for :attr:`horizon_kwarg`.
        ceiling: the feedforward ceiling (the card's, analytic).
        optimal_return: the optimal return (the card's).
    """

    env_id: str
    env_kwargs: dict[str, Any]
    family: str
    horizon_kwarg: str
    horizon: int
    episode_length: int
    n_cues: int
    ceiling: float
    optimal_return: float
    max_value: int

    @property
    def chance(self) -> float:
        """``1 / n_cues``: the accuracy of a guess that knows nothing of the cue."""
        return 1.0 / self.n_cues

    def scaled(self, factor: int) -> CueTask:
        """The same task with its horizon keyword times ``factor`` (2: twice as long).

        Raises:
            ValueError: ``factor`` is not an int of at least 1, or the env takes no such
                long horizon (:meth:`can_scale`).
        """
        if isinstance(factor, bool) or not isinstance(factor, int) or factor < 1:
            raise ValueError(f"factor must be an int >= 1, got {factor!r}")
        if not self.can_scale(factor):
            raise ValueError(
                f"{self.env_id}: {self.horizon_kwarg}={self.horizon_value * factor} ({factor}x) is above "
                f"the largest the env takes, {self.max_value}"
            )
        kwargs = {**self.env_kwargs, self.horizon_kwarg: self.horizon_value * factor}
        return cue_task(self.env_id, kwargs)

    def can_scale(self, factor: int) -> bool:
        """Whether the env takes :attr:`horizon_kwarg` times ``factor``."""
        return self.horizon_value * factor <= self.max_value

    @property
    def horizon_value(self) -> int:
        """The value of :attr:`horizon_kwarg` (the card's default where not given)."""
        return int({**card_of(self.env_id).kwargs, **self.env_kwargs}[self.horizon_kwarg])

    def cues(self, first_observations: np.ndarray) -> np.ndarray:
        """The cue of each episode from its first observation, as the bare env shows it.

        Args:
            first_observations: ``[N, D]`` float, the observations of step 0.

        Returns:
            ``[N]`` int64 in ``[0, n_cues)``: T-Maze 0 for the upper arm, 1 the lower;
            cue recall the cue's index.
        """
        obs = np.asarray(first_observations, dtype=np.float64)
        if self.family == "tmaze":  # [junction, signal]: signal +1 up, -1 down on the oracle cell
            return (obs[:, 1] < 0).astype(np.int64)
        return obs[:, : self.n_cues].argmax(axis=1).astype(np.int64)  # the cue's one-hot


def cue_task(env_id: str, env_kwargs: dict[str, Any] | None = None) -> CueTask:
    """The :class:`CueTask` of ``env_id`` with ``env_kwargs``.

    Raises:
        ValueError: the env is neither passive T-Maze nor cue recall (the message names
            it and the valid ones), or the card has no fixed episode length.
    """
    kwargs = dict(env_kwargs or {})
    try:
        card = card_of(env_id)
    except (KeyError, ValueError):
        raise ValueError(f"env {env_id!r} has no shipped card; cue analyses take {VALID_ENVS}") from None
    family = _FAMILIES.get(card.entry_point)
    merged = {**card.kwargs, **kwargs}
    if family is None or merged.get("active", False):
        raise ValueError(f"env {env_id!r} {kwargs} is not a cue task; cue analyses take {VALID_ENVS}")
    name, horizon_kwarg, max_value = family
    length = card.episode_length_for(kwargs)
    if length is None:
        raise ValueError(f"env {env_id!r}: its card gives no fixed episode length")
    ceiling = card.ceiling_for(kwargs)
    return CueTask(
        env_id=env_id,
        env_kwargs=kwargs,
        family=name,
        horizon_kwarg=horizon_kwarg,
        horizon=card.horizon_for(kwargs),
        episode_length=int(length),
        n_cues=2 if name == "tmaze" else int(merged["num_cues"]),
        ceiling=ceiling if not math.isnan(ceiling) else math.nan,
        optimal_return=float(card.optimal_return),
        max_value=int(max_value),
    )
