"""The tasks whose cue an analysis can follow: those whose card gives a ``cue``.

Such a task shows a cue at step 0 of a fixed-length episode and needs it at one later
step, the decision step, ``horizon`` steps after it (the card's memory horizon): passive
T-Maze's junction at step ``corridor_length``, cue recall's query at step ``delay + 1``.
One keyword sets that horizon (the card's ``cue.horizon_kwarg``), so the same task can be
built longer. The card says too how many cues there are and where step 0's observation
shows the cue (``cue.read``, ``cue.index``). :mod:`~pomdp_bench.harness.probes` and
:mod:`~pomdp_bench.harness.generalisation` read these facts here, and refuse an env whose
card gives no cue by name.

The active T-Maze is not one of them: its cue shows only when the agent walks back to
it, so the step that holds the cue depends on the policy (its cards give no cue, and
the passive cards' ``cue.when`` asks for ``active: false``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from pomdp_bench.envs.cards import card_of, load_cards


def valid_envs() -> str:
    """The ids whose card gives a cue, for messages."""
    ids = sorted(env_id for env_id, card in load_cards().items() if card.cue)
    return f"envs whose card gives a cue: {', '.join(ids)}"


@dataclass(frozen=True)
class CueTask:
    """One env variant whose cue shows at step 0 and is needed ``horizon`` steps later.

    Attributes:
        env_id: the registered id.
        env_kwargs: the variant's kwargs on top of the card's (as given).
        horizon_kwarg: the keyword that sets the horizon (``corridor_length``, ``delay``).
        horizon: steps from the cue (step 0) to the decision step; the decision is the
            action taken after the observation of step ``horizon``.
        episode_length: steps of every episode (``horizon + 1`` for T-Maze, ``+ 1`` more
            for cue recall, whose episode ends one step after the query).
        n_cues: how many cues there are (T-Maze's 2 arms; cue recall's ``num_cues``);
            chance is ``1 / n_cues``.
        ceiling: the feedforward ceiling (the card's, analytic).
        optimal_return: the optimal return (the card's).
        max_value: the largest value the env takes for :attr:`horizon_kwarg`.
        read: how step 0's observation names the cue (:data:`~pomdp_bench.envs.cards.CUE_READS`).
        read_index: where in the observation it does.
        card: the run's carried card data (an outside env's), else ``None``.
    """

    env_id: str
    env_kwargs: dict[str, Any]
    horizon_kwarg: str
    horizon: int
    episode_length: int
    n_cues: int
    ceiling: float
    optimal_return: float
    max_value: int
    read: str
    read_index: int
    card: dict[str, Any] | None = None

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
        return cue_task(self.env_id, kwargs, self.card)

    def can_scale(self, factor: int) -> bool:
        """Whether the env takes :attr:`horizon_kwarg` times ``factor``."""
        return self.horizon_value * factor <= self.max_value

    @property
    def horizon_value(self) -> int:
        """The value of :attr:`horizon_kwarg` (the card's default where not given)."""
        return int({**card_of(self.env_id, self.card).kwargs, **self.env_kwargs}[self.horizon_kwarg])

    def cues(self, first_observations: np.ndarray) -> np.ndarray:
        """The cue of each episode from its first observation, as the bare env shows it.

        Args:
            first_observations: ``[N, D]`` float, the observations of step 0.

        Returns:
            ``[N]`` int64 in ``[0, n_cues)``: for ``read`` ``sign`` 0 where the value at
            ``read_index`` is positive, 1 where negative (T-Maze: 0 the upper arm);
            for ``one_hot`` the argmax of the ``n_cues`` values from ``read_index``.
        """
        obs = np.asarray(first_observations, dtype=np.float64)
        if self.read == "sign":
            return (obs[:, self.read_index] < 0).astype(np.int64)
        return obs[:, self.read_index : self.read_index + self.n_cues].argmax(axis=1).astype(np.int64)


def cue_task(
    env_id: str, env_kwargs: dict[str, Any] | None = None, card: dict[str, Any] | None = None
) -> CueTask:
    """The :class:`CueTask` of ``env_id`` with ``env_kwargs``.

    Args:
        env_id: the env's id.
        env_kwargs: the variant's kwargs on top of the card's.
        card: a run's carried card data (an outside env's); ``None``: the shipped card.

    Raises:
        ValueError: the card gives no ``cue``, or these kwargs break its ``cue.when``
            (the message names the env and the valid ones), or the card has no fixed
            episode length.
    """
    kwargs = dict(env_kwargs or {})
    try:
        found = card_of(env_id, card)
    except (KeyError, ValueError):
        raise ValueError(f"env {env_id!r} has no shipped card; cue analyses take {valid_envs()}") from None
    merged = {**found.kwargs, **kwargs}
    when = found.cue.get("when") or {}
    if not found.cue or any(merged.get(k) != v for k, v in when.items()):
        raise ValueError(f"env {env_id!r} {kwargs} is not a cue task; cue analyses take {valid_envs()}")
    length = found.episode_length_for(kwargs)
    if length is None:
        raise ValueError(f"env {env_id!r}: its card gives no fixed episode length")
    ceiling = found.ceiling_for(kwargs)
    return CueTask(
        env_id=env_id,
        env_kwargs=kwargs,
        horizon_kwarg=found.cue["horizon_kwarg"],
        horizon=found.horizon_for(kwargs),
        episode_length=int(length),
        n_cues=found.cue_count_for(kwargs),
        ceiling=ceiling if not math.isnan(ceiling) else math.nan,
        optimal_return=float(found.optimal_return),
        max_value=int(found.cue["horizon_max"]),
        read=found.cue["read"],
        read_index=int(found.cue["index"]),
        card=card,
    )
