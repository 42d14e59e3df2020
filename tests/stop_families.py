"""Simulated training runs whose truth is known, for calibrating the stop rule.

A *family* draws one run: ``truth(steps)`` gives the policy's true per-episode
return distribution at a step count, through ``sample(rng, steps, n) -> [n]``
episode returns. The stop rule sees only 32-episode evaluations; a run that stops
solved then takes a final evaluation at the steps it stopped. Issue 47's target: at
least 99% of solved runs end above the ``learned`` line.

Families (``t*``, the step at which learning starts, is log-uniform in 5k-500k):

- ``tmaze_abrupt``: T-Maze (ceiling 0.5, optimum 1, line 0.75; an episode returns 1
  or 0). Success rises linearly from 0.5 at ``t*`` to 1 over a share U(0, 1) of ``t*``.
- ``tmaze_partial``: success rises from 0.5 at ``t*`` to a plateau U(0.6, 1) at ``2 t*``.
- ``tmaze_line``: success sits on the line (0.75) throughout: a solve is a false one.
- ``cue_stepwise``: CueRecall, 4 cues (ceiling 0.25, optimum 1, line 0.625). The
  policy learns cues one at a time, at ``t*`` and then each after U(0.2, 1) ``t*``,
  up to 2, 3 or 4 cues (equally likely). An episode returns the share of cues right;
  an unknown cue is right with probability 1/4. Two cues sit on the line.
- ``cue_gradual``: each cue's accuracy rises linearly from 1/4 at ``t*`` to U(1/4, 1) at
  ``2 t*``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

Sampler = Callable[[np.random.Generator, int, int], np.ndarray]


@dataclass(frozen=True)
class StopFamily:
    """One family of simulated runs.

    Attributes:
        name: as listed in the module docstring.
        ceiling, optimum: of its env; the line is their midpoint.
        draw: ``rng -> sampler``, one run's truth: ``sampler(rng, steps, n)`` returns
            ``[n]`` episode returns of the policy at ``steps``.
    """

    name: str
    ceiling: float
    optimum: float
    draw: Callable[[np.random.Generator], Sampler]

    @property
    def line(self) -> float:
        return (self.ceiling + self.optimum) / 2


def _start(rng: np.random.Generator) -> float:
    return float(np.exp(rng.uniform(np.log(5e3), np.log(5e5))))


def _binary(success: Callable[[int], float]) -> Sampler:
    return lambda rng, steps, n: rng.binomial(1, success(steps), size=n).astype(float)


def _tmaze_abrupt(rng: np.random.Generator) -> Sampler:
    start = _start(rng)
    rise = rng.uniform(0.0, 1.0) * start + 1.0
    return _binary(lambda t: 0.5 + 0.5 * float(np.clip((t - start) / rise, 0.0, 1.0)))


def _tmaze_partial(rng: np.random.Generator) -> Sampler:
    start, top = _start(rng), rng.uniform(0.6, 1.0)
    return _binary(lambda t: 0.5 + (top - 0.5) * float(np.clip((t - start) / start, 0.0, 1.0)))


def _tmaze_line(rng: np.random.Generator) -> Sampler:
    return _binary(lambda t: 0.75)


def _cues(accuracy: Callable[[int], np.ndarray]) -> Sampler:
    """Episodes of 4 cues; ``accuracy(steps) -> [4]``, each cue's chance to be right."""
    return lambda rng, steps, n: rng.binomial(1, np.broadcast_to(accuracy(steps), (n, 4))).mean(axis=1)


def _cue_stepwise(rng: np.random.Generator) -> Sampler:
    start = _start(rng)
    learned = int(rng.integers(2, 5))
    times = start + np.concatenate([[0.0], np.cumsum(rng.uniform(0.2, 1.0, size=learned - 1) * start)])
    times = np.concatenate([times, np.full(4 - learned, np.inf)])
    return _cues(lambda t: np.where(t >= times, 1.0, 0.25))


def _cue_gradual(rng: np.random.Generator) -> Sampler:
    start, top = _start(rng), rng.uniform(0.25, 1.0, size=4)
    return _cues(lambda t: 0.25 + (top - 0.25) * float(np.clip((t - start) / start, 0.0, 1.0)))


FAMILIES = {
    f.name: f
    for f in (
        StopFamily("tmaze_abrupt", 0.5, 1.0, _tmaze_abrupt),
        StopFamily("tmaze_partial", 0.5, 1.0, _tmaze_partial),
        StopFamily("tmaze_line", 0.5, 1.0, _tmaze_line),
        StopFamily("cue_stepwise", 0.25, 1.0, _cue_stepwise),
        StopFamily("cue_gradual", 0.25, 1.0, _cue_gradual),
    )
}


def simulate(
    rule,
    family: StopFamily,
    rng: np.random.Generator,
    cap: int = 1_000_000,
    update: int = 512,
    final_episodes: int = 100,
):
    """One simulated run under ``rule`` (a :class:`~pomdp_bench.harness.stopping.StopRule`):
    returns ``(monitor, final)``, the monitor after the run and the mean of a final
    evaluation of ``final_episodes`` episodes at the steps it stopped."""
    from pomdp_bench.harness.stopping import StopMonitor

    sampler = family.draw(rng)
    monitor = StopMonitor(rule, family.line, family.ceiling, family.optimum, cap)
    steps = 0
    while steps < cap and monitor.reason is None:
        steps = max(steps + update, -(-monitor.next_eval // update) * update)  # the update it falls in
        steps = min(steps, cap)
        if monitor.due(steps):
            monitor.update(steps, 0.0, float(sampler(rng, steps, monitor.episodes).mean()))
    return monitor, float(sampler(rng, steps, final_episodes).mean())
