"""Simulated cells whose truth is known, for calibrating the ``learned`` verdict.

A *family* draws the final evaluation returns of every seed of many cells:
``episodes(rng, cells, seeds, n_episodes) -> [cells, seeds, n_episodes]``. The null
families put the cell's true mean return exactly on the line (the midpoint between the
feedforward ceiling and the optimum), so a verdict should call them learned at most 5% of
the time; the power families put a share of seeds at the optimum and the rest at the
ceiling. Each family states its line.

Null families (issue 47):

- ``tmaze_ceiling``: T-Maze (ceiling 0.5, optimum 1, line 0.75); a seed solves (every
  episode returns 1) with probability 0.5, else it turns without the cue (each episode
  1 with probability 0.5, else 0).
- ``tmaze_zero``: solves with probability 0.6, at the ceiling 0.3, and collapses to 0
  (always the wrong arm) 0.1.
- ``tmaze_minus_one``: solves with probability 0.875, else every episode returns -1.
- ``cue_partial``: CueRecall, 4 cues (ceiling 0.25, optimum 1, line 0.625); a seed is
  right on 2 or 3 of the 4 cues (equally likely), so each episode is right with
  probability 0.5 or 0.75.
- ``normal_wide`` and ``normal_noisy``: continuous returns; a seed's true mean is
  normal around the line (0.75) with sd 0.1, its episodes normal around that with sd
  0.1 (``normal_wide``), or the seeds' sd 0.02 and the episodes' 0.5 (``normal_noisy``).

Power families: ``tmaze_solve_0.8`` and ``tmaze_solve_0.9``: a seed solves with that
probability, else it is at the ceiling (as ``tmaze_ceiling``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import stats


@dataclass(frozen=True)
class Family:
    """One family of simulated cells.

    Attributes:
        name: as listed in the module docstring.
        line: the ``learned`` line of its env (midpoint of ceiling and optimum).
        null: True where the cell's true mean is on the line (should not be learned).
        draw: ``(rng, cells, seeds, n_episodes) -> returns [cells, seeds, n_episodes]``.
    """

    name: str
    line: float
    null: bool
    draw: Callable[[np.random.Generator, int, int, int], np.ndarray]

    def episodes(self, rng: np.random.Generator, cells: int, seeds: int, n_episodes: int) -> np.ndarray:
        return self.draw(rng, cells, seeds, n_episodes)


def _tmaze(p_solve: float, p_ceiling: float, bottom: float) -> Callable[..., np.ndarray]:
    """Seeds at the optimum (1) w.p. ``p_solve``, at the ceiling (Bernoulli(0.5) episodes)
    w.p. ``p_ceiling``, else every episode ``bottom``."""

    def draw(rng: np.random.Generator, cells: int, seeds: int, n: int) -> np.ndarray:
        kind = rng.choice(
            3, size=(cells, seeds, 1), p=[p_solve, p_ceiling, max(1 - p_solve - p_ceiling, 0.0)]
        )
        coin = stats.bernoulli.rvs(0.5, size=(cells, seeds, n), random_state=rng).astype(np.float64)
        return np.where(kind == 0, 1.0, np.where(kind == 1, coin, bottom))

    return draw


def _cue_partial(rng: np.random.Generator, cells: int, seeds: int, n: int) -> np.ndarray:
    known = rng.choice([2, 3], size=(cells, seeds, 1))
    return stats.bernoulli.rvs(known / 4, size=(cells, seeds, n), random_state=rng).astype(np.float64)


def _normal(seed_sd: float, episode_sd: float, line: float) -> Callable[..., np.ndarray]:
    def draw(rng: np.random.Generator, cells: int, seeds: int, n: int) -> np.ndarray:
        means = stats.norm.rvs(line, seed_sd, size=(cells, seeds, 1), random_state=rng)
        return stats.norm.rvs(means, episode_sd, size=(cells, seeds, n), random_state=rng)

    return draw


NULL_FAMILIES = [
    Family("tmaze_ceiling", 0.75, True, _tmaze(0.5, 0.5, 0.0)),
    Family("tmaze_zero", 0.75, True, _tmaze(0.6, 0.3, 0.0)),
    Family("tmaze_minus_one", 0.75, True, _tmaze(0.875, 0.0, -1.0)),
    Family("cue_partial", 0.625, True, _cue_partial),
    Family("normal_wide", 0.75, True, _normal(0.1, 0.1, 0.75)),
    Family("normal_noisy", 0.75, True, _normal(0.02, 0.5, 0.75)),
]
POWER_FAMILIES = [
    Family("tmaze_solve_0.8", 0.75, False, _tmaze(0.8, 0.2, 0.0)),
    Family("tmaze_solve_0.9", 0.75, False, _tmaze(0.9, 0.1, 0.0)),
]
FAMILIES = {f.name: f for f in NULL_FAMILIES + POWER_FAMILIES}


def floor_rate(family: Family, seeds: int) -> float:
    """The least share of a null family's cells that *any* rule calling a cell whose
    every seed solved learned must call learned: the chance that all seeds solve
    (the tmaze families; 0 for the others, whose seeds seldom sit at the optimum)."""
    p_solve = {"tmaze_ceiling": 0.5, "tmaze_zero": 0.6, "tmaze_minus_one": 0.875}.get(family.name)
    return 0.0 if p_solve is None else p_solve**seeds
