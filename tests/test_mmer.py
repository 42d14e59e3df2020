"""POPGym's MMER (pomdp_bench.reporting.mmer) on simulated logs whose truth is known, and
as the leaderboards' columns."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pomdp_bench.harness.train_curve import POPGYM_ITERATION_STEPS, iteration_means
from pomdp_bench.reporting.mmer import mmer


def _log(per_iteration: list[list[float]], steps: int = 1000) -> list[tuple[int, float, int]]:
    """Episodes ending evenly inside consecutive iterations of ``steps``."""
    log = []
    for k, returns in enumerate(per_iteration):
        ends = np.linspace(k * steps + 1, (k + 1) * steps, len(returns)).astype(int)
        log += [(int(t), float(r), 10) for t, r in zip(ends, returns, strict=True)]
    return log


def test_one_mean_per_iteration_and_mmer_is_their_maximum() -> None:
    log = _log([[0.0] * 150, [0.5] * 150, [0.25] * 150])
    means = iteration_means(log, iteration_steps=1000, smoothing=100)
    assert means == [(1000, 0.0), (2000, 0.5), (3000, 0.25)]
    assert mmer(means) == 0.5


def test_a_short_iteration_is_topped_up_with_the_latest_earlier_episodes() -> None:
    """RLlib's smoothing: 10 episodes at 1.0 after 150 at 0.0 give a mean over 100: 0.1."""
    means = iteration_means(_log([[0.0] * 150, [1.0] * 10]), iteration_steps=1000, smoothing=100)
    assert means[1] == (2000, pytest.approx(0.1))


def test_an_episode_at_an_iterations_last_step_belongs_to_it() -> None:
    means = iteration_means([(1000, 1.0), (1001, 0.0)], iteration_steps=1000, smoothing=1)
    assert means == [(1000, 1.0), (2000, 0.0)]


def test_mmer_on_simulated_runs_is_the_true_peak_within_its_sampling_error() -> None:
    """Episodes of +-1 rewards around a known mean curve that rises to 0.6 and falls
    back: with ~1,300 episodes an iteration (RepeatFirst's 52 steps in 65,536), the
    MMER lands within 0.1 of 0.6, above it by about the noise of a maximum."""
    rng = np.random.default_rng(0)
    truth = np.concatenate([np.linspace(-0.5, 0.6, 20), np.linspace(0.6, 0.2, 10)])
    estimates = []
    for _ in range(20):
        per = [list(np.where(rng.random(1260) < (1 + m) / 2, 1.0, -1.0)) for m in truth]
        estimates.append(mmer(iteration_means(_log(per, POPGYM_ITERATION_STEPS))))
    assert 0.6 <= np.mean(estimates) <= 0.7
    assert all(abs(e - 0.6) < 0.1 for e in estimates)


def test_empty_logs_and_bad_settings() -> None:
    assert iteration_means([]) == [] and math.isnan(mmer([])) and math.isnan(mmer(None))
    with pytest.raises(ValueError, match="iteration_steps"):
        iteration_means([(1, 0.0)], iteration_steps=0)
