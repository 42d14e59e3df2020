"""Success rates get an interval inside [0, 1] that covers the truth (issue 70): the
Korn-Graubard interval over seeds, checked on simulated cells whose success probability
is known."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pomdp_bench.reporting.statistics import success_interval

SEEDS, EPISODES, CELLS = 5, 100, 1500


def _coverage(p: float, spread: float, seeds: int, rng: np.random.Generator) -> tuple[float, float]:
    """Share of simulated cells whose interval holds ``p``, and the largest bound found
    outside [0, 1] (0: none). Each seed's own success probability is drawn from
    Beta(p c, (1 - p) c) with c = ``spread`` (inf: every seed at ``p``); each seed then
    runs ``EPISODES`` episodes."""
    covered, outside = 0, 0.0
    for _ in range(CELLS):
        own = np.full(seeds, p) if math.isinf(spread) else rng.beta(p * spread, (1 - p) * spread, seeds)
        rates = rng.binomial(EPISODES, own) / EPISODES
        low, high = success_interval(rates, seeds * EPISODES)
        covered += low <= p <= high
        outside = max(outside, -low, high - 1)
    return covered / CELLS, outside


@pytest.mark.parametrize(
    ("p", "spread"),
    [(p, math.inf) for p in (0.0, 0.01, 0.05, 0.3, 0.5, 0.9, 0.98, 1.0)]
    + [(p, 50.0) for p in (0.01, 0.05, 0.3, 0.5, 0.9, 0.98)],
)
def test_the_interval_covers_a_known_rate_and_stays_in_0_1(p: float, spread: float) -> None:
    """Seeds alike (binomial) or spread as Key-to-Door's are (sd about 0.07 at p = 0.5):
    coverage at least 94% (95% less simulation noise)."""
    coverage, outside = _coverage(
        p, spread, SEEDS, np.random.default_rng(int(p * 100) + int(min(spread, 99)))
    )
    assert outside == 0.0
    assert coverage >= 0.94, coverage


def test_its_bounds_are_in_0_1_and_it_is_narrower_than_one_bernoulli_per_seed() -> None:
    low, high = success_interval(np.array([0.97, 1.0, 0.95, 1.0, 1.0]), 500)  # Key-to-Door lstm
    assert 0.9 < low < 0.984 < high <= 1.0
    low, high = success_interval(np.array([0.0, 0.21, 0.09, 0.0, 0.0]), 500)  # and memoryless
    assert low >= 0.0 and 0.0 < 0.06 < high < 0.5
    assert success_interval(np.ones(5), 500)[1] == 1.0 and success_interval(np.zeros(5), 500)[0] == 0.0
    assert success_interval(np.ones(5), 500)[0] > 0.98  # 500 of 500
    assert all(math.isnan(v) for v in success_interval(np.array([0.5]), 100))  # one seed


def test_a_rate_outside_0_1_is_refused_naming_it() -> None:
    with pytest.raises(ValueError, match=r"success rates must lie in \[0, 1\], got \[0.5, 1.2\]"):
        success_interval(np.array([0.5, 1.2]), 200)
