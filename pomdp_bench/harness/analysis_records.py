"""What the analyses store, and how it reads back: plain records, no torch.

The analysis step (:mod:`~pomdp_bench.harness.analysis`) writes these into the store's
analyses table as JSON (``to_dict``); reporting (:mod:`pomdp_bench.reporting.leaderboard`)
reads them back (``from_dict``) without building an agent. The probes
(:mod:`~pomdp_bench.harness.probes`), the longer horizons
(:mod:`~pomdp_bench.harness.generalisation`), the success rate
(:mod:`~pomdp_bench.harness.success`) and the T-Maze behaviour
(:mod:`~pomdp_bench.harness.tmaze_behaviour`) produce them.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

LOST_CUE = "lost_cue"
KEPT_CUE_UNUSED = "kept_cue_unused"
OTHER = "other"
FAILURE_CLASSES = (LOST_CUE, KEPT_CUE_UNUSED, OTHER)
"""The classes of :func:`failure_class`, in the order the tables count them."""


@dataclass(frozen=True)
class ProbeResult:
    """The probes of one agent on one cue task.

    Attributes:
        steps: steps since the cue that were probed (one per fraction).
        fractions: the shares of the horizon they stand for (:data:`~pomdp_bench.harness.probes.PROBE_FRACTIONS`).
        accuracies: the probe's cross-validated accuracy at each step, in ``[0, 1]``.
        chance: ``1 / n_cues``.
        n_episodes: the fresh episodes behind each probe.
        seed: the root of their reset seeds.
    """

    steps: list[int]
    fractions: list[float]
    accuracies: list[float]
    chance: float
    n_episodes: int
    seed: int

    @property
    def accuracy(self) -> float:
        """The accuracy at the decision step (fraction 1)."""
        return self.accuracies[self.fractions.index(1.0)] if 1.0 in self.fractions else math.nan

    def to_dict(self) -> dict[str, Any]:
        """Plain data for the store (:meth:`from_dict` reads it back)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ProbeResult:
        return cls(
            **{k: data[k] for k in ("steps", "fractions", "accuracies", "chance", "n_episodes", "seed")}
        )


CHANCE_MARGIN = 0.1
"""A probe within this of chance counts as having lost the cue."""

KEPT_ACCURACY = 0.9
"""A probe at or above this counts as having kept the cue."""

CEILING_MARGIN = 0.1
"""A return within this share of the ceiling-optimum gap above the ceiling counts as at it."""


def failure_class(
    accuracy: float, chance: float, final_return: float, ceiling: float, optimal_return: float
) -> str:
    """Why a run failed, from its probe at the decision step.

    A run failed where its final return is not above the line, the midpoint of the
    ceiling and the optimum (the leaderboard's seeds_above_line). Then it:

    - ``lost_cue``: the probe is within :data:`CHANCE_MARGIN` of chance;
    - ``kept_cue_unused``: the probe reads the cue (at least :data:`KEPT_ACCURACY`) and
      the return is at the ceiling (at most :data:`CEILING_MARGIN` of the gap above it);
    - ``other``: anything else.

    Returns:
        One of :data:`FAILURE_CLASSES`, or ``""`` for a run that did not fail or where a
        number is missing (NaN).
    """
    values = (accuracy, chance, final_return, ceiling, optimal_return)
    if any(v is None or math.isnan(float(v)) for v in values):
        return ""
    gap = optimal_return - ceiling
    if final_return > ceiling + gap / 2:
        return ""
    if abs(accuracy - chance) <= CHANCE_MARGIN:
        return LOST_CUE
    if accuracy >= KEPT_ACCURACY and final_return <= ceiling + CEILING_MARGIN * gap:
        return KEPT_CUE_UNUSED
    return OTHER


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
            can see the cue there at all (:func:`~pomdp_bench.harness.generalisation.limited_by`).
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


@dataclass(frozen=True)
class SuccessResult:
    """One agent's success over fresh episodes.

    Attributes:
        rate: the share of episodes that succeeded, in [0, 1].
        n_episodes: how many episodes.
        seed: root of their reset seeds.
    """

    rate: float
    n_episodes: int
    seed: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SuccessResult:
        return cls(**data)


PASSES, CUE_MISUSED, WALK, NO_TURN, ONE_ARM = "passes", "cue_misused", "walk", "no_turn", "one_arm"
BEHAVIOUR_READINGS = (PASSES, CUE_MISUSED, WALK, NO_TURN, ONE_ARM)
"""The readings of :func:`behaviour_reading`, in the order the tables count them."""

BEHAVIOUR_COUNTS = tuple(
    f"{name}_{cue}" for cue in ("up", "down") for name in ("on_time", "arm", "upper", "goal")
)
"""The shares a T-Maze behaviour holds, per cue: at the junction on time, ended in an arm,
in the upper arm, in the goal arm."""

BEHAVIOUR_BAR = 0.75
"""The share of episodes that makes a behaviour hold (the goal reached, the junction reached, an arm)."""

BEHAVIOUR_CUE_GAP = 0.25
"""Two cues' shares further apart than this mean the actions depend on the cue."""


def behaviour_reading(counts: dict[str, float]) -> str:
    """What a passive T-Maze agent's greedy episodes show, the first that applies:

    - ``passes``: at least :data:`BEHAVIOUR_BAR` of each cue's episodes end in the goal arm;
    - ``cue_misused``: the two cues' ``on_time``, ``arm`` or ``upper`` differ by more than
      :data:`BEHAVIOUR_CUE_GAP`: the actions depend on the cue, so the memory carries it,
      and its use fails (a turn, or a walk that breaks for one cue);
    - ``walk``: alike for both cues, and under the bar reach the junction on time;
    - ``no_turn``: alike, and under the bar end in an arm;
    - ``one_arm``: alike, ending in the same arm: the cue is lost or not read (the
      probes tell which).

    ``counts``: the shares of :data:`BEHAVIOUR_COUNTS`.
    """
    names = ("on_time", "arm", "upper")  # not goal: one arm for both cues differs there
    if min(counts["goal_up"], counts["goal_down"]) >= BEHAVIOUR_BAR:
        return PASSES
    if any(abs(counts[f"{n}_up"] - counts[f"{n}_down"]) > BEHAVIOUR_CUE_GAP for n in names):
        return CUE_MISUSED
    if max(counts["on_time_up"], counts["on_time_down"]) < BEHAVIOUR_BAR:
        return WALK
    if min(counts["arm_up"], counts["arm_down"]) < BEHAVIOUR_BAR:
        return NO_TURN
    return ONE_ARM


@dataclass(frozen=True)
class BehaviourResult:
    """One agent's greedy episodes on the passive T-Maze, per cue.

    Attributes:
        counts: the shares of :data:`BEHAVIOUR_COUNTS`, each in [0, 1].
        n_episodes: how many fresh episodes (both cues together).
        seed: root of their reset seeds.
    """

    counts: dict[str, float]
    n_episodes: int
    seed: int

    @property
    def reading(self) -> str:
        """:func:`behaviour_reading` of the counts."""
        return behaviour_reading(self.counts)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BehaviourResult:
        return cls(**data)
