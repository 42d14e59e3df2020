"""When a run stops before its budget, and when it first solved its task.

A suite entry's budget is a cap. With a :class:`StopRule` in its spec, a run is
evaluated on a geometric schedule and stops early:

- **solved**: ``solve_checks`` consecutive evaluations reach the *bar*, a share
  ``solve_bar`` of the way from the feedforward ceiling to the optimum (env card;
  three quarters by default). The leaderboard's ``learned`` line lies halfway, so a
  run stops solved only well past it, and its final evaluation stays above the line
  (issue 47; ``docs/notes/stop-rule-calibration.md`` chose the bar by simulation).
  The run's *steps to solve* is the first evaluation of the unbroken streak at or
  above the line that ends in that solve: the first crossing of the line.
- **plateaued**: once it has used ``plateau_after`` of its cap, the mean evaluation of
  the last quarter of its steps so far exceeds that of the quarter before by less than
  ``plateau_fraction`` of the ceiling-optimum gap, at ``plateau_checks`` consecutive
  evaluations: the curve has stopped rising. (Means of windows, not the best
  evaluation so far, whose noise grows with the number of evaluations; on the
  geometric schedule each quarter holds about three.)
  Where the card knows the optimum but not the ceiling (an outside env's implicit
  card), the gap is the way left from the earlier quarter's mean to the optimum, and
  one standard error of the difference is added to the allowance (see
  :meth:`StopMonitor.plateau_allowance`). So the memory=none runs that measure such an
  env's ceiling converge.
- otherwise it runs to its **cap**.

Precision. Evaluation ``k + 1`` comes at ``growth`` times the steps of evaluation
``k`` (at least one update later), so a first crossing between two evaluations is
known to within ``growth - 1`` (10% by default) of its steps, or one update where
that is more (early in a run). It reads early (by one evaluation) only when the
evaluation just before the crossing passed by chance. Each evaluation uses fresh episodes (its own reset
seeds), so the ``solve_checks`` evaluations of a streak are independent draws.

False solves. A memoryless policy on T-Maze (ceiling 0.5, bar 0.875) passes one
32-episode evaluation with probability ``P(Bin(32, 0.5) >= 28) < 1e-5``, and even
the line (0.75) with ``P(Bin(32, 0.5) >= 24) = 0.0035``, two in a row with about 1e-5 (the evaluations are independent), so even the ~70 checks of a
1M-step run leave it below 0.1%; ``tests/test_stopping.py`` measures this on
simulated runs.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from pomdp_bench.envs.cards import EnvCard, get_card
from pomdp_bench.validation import check_float, check_int

STOP_REASONS = ("solved", "plateaued", "cap")


@dataclass(frozen=True)
class StopRule:
    """How a run is evaluated during training and when it stops early.

    Attributes:
        solve_checks: consecutive evaluations at or above the bar that stop a run as
            solved (K).
        solve_bar: the bar, as a share of the way from the ceiling to the optimum:
            0.5 is the ``learned`` line itself (the rule before issue 47), 1.0 the
            optimum.
        confirm_episodes: episodes of the last evaluation of a solving streak (the
            ``solve_checks``-th at the bar), which confirms it on a larger sample; 0:
            ``eval_episodes``, as the others.
        plateau_fraction: a run has plateaued when its mean evaluation over the last
            quarter of its steps so far exceeds that over the quarter before by less
            than this fraction of the ceiling-optimum gap...
        plateau_checks: ...at this many consecutive evaluations.
        plateau_after: the share of the cap a run must use before a plateau may stop it.
        growth: each evaluation comes at this many times the previous one's steps (the
            precision of steps-to-solve, see the module docstring).
        first_eval: env steps of the first evaluation.
        eval_episodes: episodes per evaluation.
    """

    solve_checks: int = 2
    solve_bar: float = 0.75
    confirm_episodes: int = 100
    plateau_fraction: float = 0.05
    plateau_checks: int = 2
    plateau_after: float = 0.5
    growth: float = 1.1
    first_eval: int = 1_000
    eval_episodes: int = 32

    def __post_init__(self) -> None:
        check_int("stop.solve_checks", self.solve_checks, minimum=1)
        check_float("stop.solve_bar", self.solve_bar, minimum=0.5, maximum=1.0)
        check_int("stop.confirm_episodes", self.confirm_episodes, minimum=0)
        check_float("stop.plateau_fraction", self.plateau_fraction, minimum=0.0)
        check_int("stop.plateau_checks", self.plateau_checks, minimum=1)
        check_float("stop.plateau_after", self.plateau_after, minimum=0.0, maximum=1.0)
        check_float("stop.growth", self.growth, minimum=1.0, strict_minimum=True)
        check_int("stop.first_eval", self.first_eval, minimum=1)
        check_int("stop.eval_episodes", self.eval_episodes, minimum=1)

    @classmethod
    def from_any(cls, value: StopRule | dict[str, Any] | bool | None) -> StopRule | None:
        """``None``/``False``: no rule; ``True``: the defaults; a dict: those fields."""
        if value is None or value is False:
            return None
        if value is True:
            return cls()
        if isinstance(value, StopRule):
            return value
        if isinstance(value, dict):
            unknown = sorted(set(value) - set(cls.__dataclass_fields__))
            if unknown:
                raise ValueError(
                    f"unknown stop setting(s) {unknown}; valid: {list(cls.__dataclass_fields__)}"
                )
            return cls(**value)
        raise TypeError(f"stop must be true, false or a dict of StopRule fields, got {value!r}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def next_eval(self, steps: int) -> int:
        """The step count of the evaluation after one at ``steps``."""
        return max(steps + 1, math.ceil(steps * self.growth))


def solve_threshold(env: str | EnvCard, env_kwargs: dict[str, Any]) -> float:
    """Halfway from the feedforward ceiling to the optimum, from the env's card (an id's,
    or the card given): the leaderboard's ``learned`` line. NaN where the card does not
    know both (an outside env's implicit card): such runs are never stopped as solved."""
    card = get_card(env) if isinstance(env, str) else env
    return (card.ceiling_for(env_kwargs) + float(card.optimal_return)) / 2


class StopMonitor:
    """Follows one run's evaluations and says when it should stop.

    Args:
        rule: the stop rule.
        threshold: the ``learned`` line (:func:`solve_threshold`): steps to solve read
            its first crossing.
        ceiling: the feedforward ceiling; ``optimum``: the optimal return (their gap
            places the bar and scales the plateau test).
        cap: the run's budget in env steps.

    A NaN threshold (an implicit card that knows no optimum or ceiling) never stops a
    run as solved. A run whose card knows the optimum but not the ceiling may still
    stop as plateaued (:meth:`plateau_allowance`); one whose card knows no optimum
    trains to its cap.

    After each :meth:`update`, ``reason`` is ``None`` (go on) or ``"solved"`` /
    ``"plateaued"``; ``solved_steps`` and ``solved_seconds`` hold the first evaluation of
    the streak at or above the line that ended in the solve.
    """

    def __init__(self, rule: StopRule, threshold: float, ceiling: float, optimum: float, cap: int) -> None:
        self.rule, self.threshold, self.cap = rule, threshold, cap
        self.optimum = optimum
        self.gap = optimum - ceiling
        # Never below the line (a caller may give a line of its own); NaN never passes.
        bar = ceiling + rule.solve_bar * self.gap
        self.bar = math.nan if math.isnan(threshold) or math.isnan(bar) else max(bar, threshold)
        self.evaluations: list[tuple[int, float]] = []  # (steps, score)
        self.reason: str | None = None
        self.solved_steps: int | None = None
        self.solved_seconds: float | None = None
        self._streak: list[tuple[int, float]] = []  # (steps, seconds) at or above the line
        self._bar_streak = 0  # consecutive evaluations at or above the bar
        self._flat_streak = 0  # consecutive evaluations that found the curve flat
        self.next_eval = rule.first_eval

    @property
    def episodes(self) -> int:
        """Episodes of the evaluation due next: ``confirm_episodes`` where it would
        complete a solving streak, else ``eval_episodes``."""
        confirm = self.rule.confirm_episodes
        return (
            confirm if confirm and self._bar_streak == self.rule.solve_checks - 1 else self.rule.eval_episodes
        )

    def due(self, steps: int) -> bool:
        """Whether an evaluation is due at ``steps``."""
        return self.reason is None and steps >= self.next_eval

    def update(self, steps: int, seconds: float, score: float) -> str | None:
        """Record the evaluation ``score`` at ``steps`` env steps and ``seconds`` of
        training; returns the stop reason, if any."""
        self.evaluations.append((steps, score))
        self.next_eval = self.rule.next_eval(steps)
        if score >= self.threshold:
            self._streak.append((steps, seconds))
        else:
            self._streak = []
        self._bar_streak = self._bar_streak + 1 if score >= self.bar else 0
        if self._bar_streak >= self.rule.solve_checks:
            # The bar is at or above the line, so the line's streak holds these too.
            self.solved_steps, self.solved_seconds = self._streak[0]
            self.reason = "solved"
            return self.reason
        flat = steps >= self.rule.plateau_after * self.cap and self._flat(steps)
        self._flat_streak = self._flat_streak + 1 if flat else 0
        if self._flat_streak >= self.rule.plateau_checks:
            self.reason = "plateaued"
        return self.reason

    def _flat(self, steps: int) -> bool:
        """The mean of the last quarter's evaluations exceeds the previous quarter's by
        less than :meth:`plateau_allowance`."""
        recent = [s for t, s in self.evaluations if t > 0.75 * steps]
        before = [s for t, s in self.evaluations if 0.5 * steps < t <= 0.75 * steps]
        if not recent or not before:
            return False
        rise = float(np.mean(recent) - np.mean(before))
        if not math.isnan(self.gap):
            return rise < self.rule.plateau_fraction * self.gap
        allowance = self.plateau_allowance(recent, before)
        return not math.isnan(allowance) and rise <= allowance

    def plateau_allowance(self, recent: list[float], before: list[float]) -> float:
        """The rise under which a curve reads flat, from the scores of the last quarter
        (``recent``) and the quarter before (``before``).

        With the ceiling known: ``plateau_fraction`` of the ceiling-optimum gap. With
        the ceiling unknown and the optimum known: ``plateau_fraction`` of the way left
        from ``before``'s mean to the optimum (0 past it), plus one standard error of
        the difference of the two means (each quarter's sample variance over its
        count; 0 for a quarter of one evaluation). The error term is there because an
        empirical ceiling needs every memory=none run of its cell to converge. Without
        it, 32-episode evaluations of a flat binary task leave about 5% of the runs at
        their cap, and a 5-seed cell unconverged about 23% of the time. NaN where the
        optimum is unknown: such a run never plateaus.
        """
        if not math.isnan(self.gap):
            return self.rule.plateau_fraction * self.gap
        if math.isnan(self.optimum):
            return math.nan
        way_left = max(self.optimum - float(np.mean(before)), 0.0)
        variance = sum(float(np.var(w, ddof=1)) / len(w) for w in (recent, before) if len(w) > 1)
        return self.rule.plateau_fraction * way_left + math.sqrt(variance)
