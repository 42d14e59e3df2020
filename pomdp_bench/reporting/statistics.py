"""The statistics behind the leaderboards, each a library call with its assumptions stated.

- :func:`interval`: a 95% bootstrap interval of a mean (``scipy.stats.bootstrap``).
- :func:`t_interval`: the 95% t interval of the mean over seeds (``return_ci_low``,
  ``return_ci_high``).
- :func:`majority_test`: the exact one-sided binomial test that more than half of a
  cell's seeds end above the line; :func:`verdict_passes` is ``learned``: that test at
  5% and the t interval's lower end above the line (``tests/test_verdict.py`` checks
  it on the simulated families of ``tests/verdict_families.py``).
- :func:`next_seed_stage`: the sequential seed rule (5, then 10, then 20 seeds for a cell
  whose verdict one run could flip); :func:`sequential_verdict` plays it on simulated cells
  (``scripts/seed_rule_calibration.py``, ``tests/test_seed_rule.py``).
- :func:`solve_rate_interval`: the exact (Clopper-Pearson) interval of a solve rate.
- :func:`success_interval`: the Korn-Graubard interval of a success rate over seeds,
  inside [0, 1] (``success_ci_low``, ``success_ci_high``; ``tests/test_success_interval.py``
  checks its coverage on simulated cells).
- :func:`probability_of_improvement`: rliable's P(X > Y) + P(X = Y) / 2 between two
  cells' runs, with a bootstrap interval.
- :func:`two_level_interval`: a percentile bootstrap resampling seeds and, within
  each, its evaluation episodes (the verdict's interval before issue 47).
- :func:`iqm_interval`: the interquartile mean with a seed-level interval (rliable's IQM).
- :func:`curve_band`: a 95% bootstrap band of the mean learning curve over seeds (the
  leaderboard page's curves).
- :func:`censored_median`: the Kaplan-Meier median of a time to an event where some
  runs never had it (``lifelines``), and its 95% interval; :func:`solve_statistics`
  applies it to steps- and seconds-to-solve (``tests/test_statistics.py`` checks its
  coverage on simulated censored times).
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats


def interval(returns: np.ndarray, method: str = "percentile") -> tuple[float, float]:
    """95% bootstrap interval of the mean of ``returns [n]`` (``scipy.stats.bootstrap``).

    ``method`` is scipy's: ``"percentile"`` (the leaderboards' choice, over seeds) or
    ``"BCa"`` (for many pooled episodes). One value, or all equal, gives a zero-width
    interval at that value; none gives NaN.
    """
    if len(returns) == 0:
        return math.nan, math.nan
    if len(returns) == 1 or np.all(returns == returns[0]):
        return float(returns.mean()), float(returns.mean())
    ci = stats.bootstrap(
        (returns,), np.mean, confidence_level=0.95, n_resamples=9999, method=method, random_state=0
    ).confidence_interval
    return float(ci.low), float(ci.high)


# The verdict's level: the t interval is two-sided 95% (its lower end a one-sided 2.5%
# test of the mean), the binomial test one-sided 5% (at 5 seeds it passes only when all
# 5 end above the line, p = 1/32).
T_CONFIDENCE = 0.95
MAJORITY_ALPHA = 0.05


def t_interval(seed_means: np.ndarray, confidence: float = T_CONFIDENCE) -> tuple[Any, Any]:
    """The t interval of the mean of ``seed_means [..., n]`` over its last axis
    (``scipy.stats.t.interval``, ``n - 1`` degrees of freedom, scale ``scipy.stats.sem``).

    All values equal gives a zero-width interval at the value; fewer than two values
    give NaN (one seed has no spread to read). Floats for one cell, arrays for many.
    """
    values = np.asarray(seed_means, dtype=np.float64)
    n = values.shape[-1]
    if n < 2:
        nan = np.full(values.shape[:-1], math.nan)
        return (math.nan, math.nan) if values.ndim == 1 else (nan, nan.copy())
    mean = values.mean(axis=-1)
    sem = stats.sem(values, axis=-1)
    low, high = stats.t.interval(confidence, n - 1, loc=mean, scale=np.where(sem > 0, sem, 1.0))
    constant = np.all(values == values[..., :1], axis=-1)
    low, high = np.where(constant, mean, low), np.where(constant, mean, high)
    return (float(low), float(high)) if values.ndim == 1 else (low, high)


def majority_test(seed_means: np.ndarray, line: float) -> tuple[Any, Any]:
    """Seeds above ``line`` and the exact one-sided p-value that more than half of the
    seeds end there, over the last axis of ``seed_means [..., n]``: the binomial tail
    ``scipy.stats.binom.sf(k - 1, n, 0.5)``, which is
    ``scipy.stats.binomtest(k, n, 0.5, alternative="greater").pvalue``.

    A seed at the line exactly does not count; a NaN line or no seeds give ``(0, NaN)``.
    """
    values = np.asarray(seed_means, dtype=np.float64)
    n = values.shape[-1]
    if n == 0 or math.isnan(line):
        return 0, math.nan
    above = (values > line).sum(axis=-1)
    p = stats.binom.sf(above - 1, n, 0.5)
    return (int(above), float(p)) if values.ndim == 1 else (above, p)


def verdict_passes(seed_means: np.ndarray, line: float) -> Any:
    """``learned`` before the seed-count and ceiling checks, over the last axis of
    ``seed_means [..., n]``: the 95% t interval's lower end (:func:`t_interval`) is above
    ``line`` and the binomial test that more than half of the seeds end above it
    (:func:`majority_test`) passes at :data:`MAJORITY_ALPHA`. A bool for one cell."""
    values = np.asarray(seed_means, dtype=np.float64)
    if values.shape[-1] == 0 or math.isnan(line):
        return False if values.ndim == 1 else np.zeros(values.shape[:-1], dtype=bool)
    low = t_interval(values)[0]
    passed = (np.asarray(low) > line) & (np.asarray(majority_test(values, line)[1]) <= MAJORITY_ALPHA)
    return bool(passed) if values.ndim == 1 else passed


def verdict_survives_one_flip(seed_means: np.ndarray, line: float, ceiling: float, optimum: float) -> bool:
    """Whether :func:`verdict_passes` gives the same answer when any one seed ends on the
    other side of ``line``: a seed above it moved to ``ceiling`` (a seed that failed, as a
    memoryless policy ends), a seed at or below it moved to ``optimum`` (one that solved).

    This is the change a run makes when another CPU's kernels send it down another path
    (issue 70): at 5 seeds every ``learned`` verdict fails it, since ``learned`` needs all
    5 seeds above the line. ``seed_means [n]``; ``False`` for no seeds or a NaN line.
    """
    values = np.asarray(seed_means, dtype=np.float64)
    if values.size == 0 or math.isnan(line) or math.isnan(ceiling) or math.isnan(optimum):
        return False
    verdict = verdict_passes(values, line)
    flipped = np.repeat(values[None, :], values.size, axis=0)  # [n, n]: row i flips seed i
    diagonal = np.arange(values.size)
    flipped[diagonal, diagonal] = np.where(values > line, ceiling, optimum)
    return bool(np.all(verdict_passes(flipped, line) == verdict))


SEED_STAGES = (5, 10, 20)
"""The sequential seed rule's stages: a cell runs 5 seeds; one whose verdict does not
survive one run flipping (:func:`verdict_survives_one_flip`) grows to 10, then to 20."""


def next_seed_stage(n_seeds: int, holds: bool, stages: tuple[int, ...] = SEED_STAGES) -> int | None:
    """The seed count a cell of ``n_seeds`` grows to under the sequential rule, or ``None``
    when it is decided: its verdict ``holds`` (survives any one run flipping), or it has
    reached the last stage. A cell short of the first stage grows to it."""
    if n_seeds < stages[0]:
        return stages[0]
    if holds:
        return None
    return next((n for n in stages if n > n_seeds), None)


def sequential_verdict(
    seed_means: np.ndarray,
    line: float,
    ceiling: float,
    optimum: float,
    stages: tuple[int, ...] = SEED_STAGES,
) -> tuple[np.ndarray, np.ndarray]:
    """The sequential rule's verdicts on simulated cells: each cell's seeds are drawn in
    advance, and the rule reads the first ``stages[0]`` of them, then more while
    :func:`next_seed_stage` asks for them.

    Args:
        seed_means: ``[cells, stages[-1]]``: each cell's seeds' final mean returns, in
            the order they would run.
        line, ceiling, optimum: the verdict's line, the feedforward ceiling and the optimum.
        stages: the seed counts.

    Returns:
        ``(learned [cells] bool, seeds [cells] int)``: each cell's final verdict and how
        many seeds it ran.
    """
    values = np.asarray(seed_means, dtype=np.float64)
    if values.ndim != 2 or values.shape[1] < stages[-1]:
        raise ValueError(f"seed_means must be [cells, {stages[-1]}], got shape {values.shape}")
    learned = np.zeros(len(values), dtype=bool)
    used = np.zeros(len(values), dtype=np.int64)
    open_ = np.ones(len(values), dtype=bool)  # cells the rule has not decided
    for n in stages:
        cells = values[open_, :n]  # [c, n]
        verdict = verdict_passes(cells, line)  # [c]
        # As verdict_survives_one_flip, for all open cells at once: row i flips seed i.
        flipped = np.repeat(cells[:, None, :], n, axis=1)  # [c, n, n]
        diagonal = np.arange(n)
        flipped[:, diagonal, diagonal] = np.where(cells > line, ceiling, optimum)
        holds = np.all(verdict_passes(flipped, line) == verdict[:, None], axis=1)
        decided = holds | (n == stages[-1])
        index = np.flatnonzero(open_)[decided]
        learned[index], used[index] = verdict[decided], n
        open_[index] = False
    return learned, used


def solve_rate_interval(solved: int, n: int) -> tuple[float, float]:
    """The exact (Clopper-Pearson) 95% interval of a solve rate from ``solved`` of ``n``
    (``scipy.stats.binomtest(...).proportion_ci(method="exact")``); NaN for ``n = 0``."""
    if n == 0:
        return math.nan, math.nan
    ci = stats.binomtest(solved, n).proportion_ci(confidence_level=0.95, method="exact")
    return float(ci.low), float(ci.high)


def success_interval(
    rates: np.ndarray, n_episodes: float, confidence: float = T_CONFIDENCE
) -> tuple[float, float]:
    """The Korn-Graubard interval of a cell's success rate, the mean of its seeds' ``rates [n]``.

    Seeds are the independent units; episodes within a seed are not (a seed that never
    learned fails them all). So the binomial count is an effective one: ``n_eff = p (1 - p)
    / var``, with ``var`` the squared standard error over seeds, at most the
    ``n_episodes`` of all seeds together. Korn and Graubard (1998) shrink it by
    ``(z / t)**2``, ``t`` on ``n - 1`` degrees of freedom, and take the Clopper-Pearson
    interval of ``p n_eff`` successes in ``n_eff`` (``scipy.stats.beta.ppf``, which takes
    counts that are not whole). The bounds lie in [0, 1].

    Args:
        rates: each seed's success rate, in [0, 1].
        n_episodes: the episodes of all seeds together (their sum).
        confidence: the interval's level.

    Returns:
        ``(low, high)``; NaN for fewer than two seeds (one seed has no spread to read).

    Raises:
        ValueError: a rate outside [0, 1] (the message names it).
    """
    values = np.asarray(rates, dtype=np.float64)
    n = len(values)
    if n < 2:
        return math.nan, math.nan
    if np.any((values < 0) | (values > 1)):
        raise ValueError(f"success rates must lie in [0, 1], got {values.tolist()}")
    p = float(values.mean())
    var = float(values.var(ddof=1)) / n
    n_eff = float(n_episodes) if var == 0 else min(float(n_episodes), p * (1 - p) / var)
    alpha = 1 - confidence
    n_eff *= (stats.norm.ppf(1 - alpha / 2) / stats.t.ppf(1 - alpha / 2, n - 1)) ** 2
    x = p * n_eff
    low = 0.0 if x <= 0 else float(stats.beta.ppf(alpha / 2, x, n_eff - x + 1))
    high = 1.0 if x >= n_eff else float(stats.beta.ppf(1 - alpha / 2, x + 1, n_eff - x))
    return low, high


def _improvement(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    """P(X > Y) + P(X = Y) / 2 over all pairs of ``x`` and ``y`` along ``axis``."""
    x = np.moveaxis(np.asarray(x), axis, -1)[..., :, None]
    y = np.moveaxis(np.asarray(y), axis, -1)[..., None, :]
    return (x > y).mean(axis=(-2, -1)) + 0.5 * (x == y).mean(axis=(-2, -1))


def probability_of_improvement(
    x: np.ndarray, y: np.ndarray, n_resamples: int = 2000, random_state: int = 0
) -> tuple[float, float, float]:
    """rliable's probability of improvement of ``x [n]`` over ``y [m]`` (runs' final
    returns): P(X > Y) + P(X = Y) / 2, the Mann-Whitney U over ``n * m``, and a 95%
    percentile bootstrap interval resampling each sample's runs independently
    (``scipy.stats.bootstrap``, fixed ``random_state``).

    Returns ``(estimate, low, high)``; resamples that cannot differ (every run of both
    equal) give a zero-width interval; one run on a side gives no interval (NaN); an
    empty sample gives NaN throughout.
    """
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if len(x) == 0 or len(y) == 0:
        return math.nan, math.nan, math.nan
    point = float(_improvement(x, y))
    if np.all(np.concatenate([x, y]) == x[0]):
        return point, point, point
    if len(x) < 2 or len(y) < 2:  # a bootstrap needs two runs a side
        return point, math.nan, math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy warns on a degenerate bootstrap distribution
        ci = stats.bootstrap(
            (x, y),
            _improvement,
            n_resamples=n_resamples,
            method="percentile",
            vectorized=True,
            random_state=random_state,
        ).confidence_interval
    low, high = float(ci.low), float(ci.high)
    if math.isnan(low):  # every resample gave the same value
        return point, point, point
    return point, low, high


def two_level_interval(
    episode_returns: list[np.ndarray], n_resamples: int = 9999, random_state: int = 0
) -> tuple[float, float]:
    """95% two-level percentile bootstrap interval of the mean return over seeds.

    ``episode_returns[s]`` is ``[m_s]``: seed ``s``'s final evaluation returns; the
    statistic is the mean over seeds of each seed's mean. Resample ``r`` draws ``S``
    seeds with replacement (``scipy.stats.bootstrap`` over the seed indices) and, for
    each drawn slot independently, that seed's ``m_s`` episodes with replacement.

    The inner draw is the bootstrap's own resampling written as counts: how often
    each distinct return value is drawn among ``m_s`` draws with replacement is
    multinomial with the observed frequencies (``numpy.random.Generator.multinomial``),
    so a resampled mean is ``counts @ values / m_s``. That is the same distribution
    as resampling the episodes one by one, at a cost that grows with the number of
    distinct values (2 on TMaze and CueRecall) rather than with ``m_s``.

    One seed, or all episodes of all seeds equal, gives a zero-width interval at the
    mean; no seed gives NaN.
    """
    seeds = len(episode_returns)
    if seeds == 0:
        return math.nan, math.nan
    arrays = [np.asarray(r, dtype=np.float64) for r in episode_returns]
    seed_means = np.array([a.mean() for a in arrays])
    point = float(seed_means.mean())
    if all(np.all(a == arrays[0][0]) for a in arrays):
        return point, point
    rng = np.random.default_rng(random_state)
    # inner[s, j, r]: seed s's episodes resampled, for slot j of outer resample r.
    inner = np.empty((seeds, seeds, n_resamples))
    for s, returns in enumerate(arrays):
        values, counts = np.unique(returns, return_counts=True)
        drawn = rng.multinomial(len(returns), counts / len(returns), size=(seeds, n_resamples))  # [S, R, d]
        inner[s] = drawn @ values / len(returns)
    if seeds == 1:
        low, high = np.percentile(inner[0, 0], [2.5, 97.5])
        return float(low), float(high)
    slots = np.arange(seeds)

    def grand_mean(idx: np.ndarray, axis: int = -1) -> np.ndarray:
        idx = idx.astype(int)
        if idx.ndim == 1:  # the observed sample
            return seed_means[idx].mean()
        if idx.shape != (n_resamples, seeds):
            raise RuntimeError(f"unexpected resample layout {idx.shape} from scipy.stats.bootstrap")
        return inner[idx, slots, np.arange(n_resamples)[:, None]].mean(axis=-1)  # [R]

    ci = stats.bootstrap(
        (np.arange(seeds, dtype=np.float64),),
        grand_mean,
        n_resamples=n_resamples,
        method="percentile",
        vectorized=True,
        batch=None,
        random_state=random_state,
    ).confidence_interval
    return float(ci.low), float(ci.high)


def iqm_interval(values: np.ndarray) -> tuple[float, float, float]:
    """Interquartile mean of ``values [n_seeds]`` and its 95% percentile bootstrap interval.

    ``scipy.stats.bootstrap`` with ``scipy.stats.trim_mean(., 0.25)`` as the statistic
    (rliable's IQM), 9999 resamples, fixed ``random_state`` so reports are reproducible.
    """
    values = np.asarray(values, dtype=np.float64)
    if len(values) == 0:
        return math.nan, math.nan, math.nan
    iqm = float(stats.trim_mean(values, 0.25))
    if len(values) == 1 or np.all(values == values[0]):
        return iqm, iqm, iqm
    ci = stats.bootstrap(
        (values,),
        lambda x, axis: stats.trim_mean(x, 0.25, axis=axis),
        confidence_level=0.95,
        n_resamples=9999,
        method="percentile",
        random_state=0,
    ).confidence_interval
    return iqm, float(ci.low), float(ci.high)


def curve_band(
    values: np.ndarray, n_resamples: int = 2000, random_state: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean over seeds at each point of a learning curve, with a 95% percentile bootstrap band.

    ``values`` is ``[n_seeds, n_points]``, NaN where a seed has no value (a run that
    stopped early). At each point the seeds with a value are resampled with replacement
    ``n_resamples`` times (``scipy.stats.bootstrap``, percentile method, fixed
    ``random_state``: the same curves give the same band), as seaborn's
    ``errorbar=("ci", 95)`` does for the figures. One seed, or all equal, gives a
    zero-width band; none gives NaN.

    Returns:
        ``(mean, low, high)``, each ``[n_points]``.
    """
    values = np.asarray(values, dtype=np.float64)
    points = values.shape[1]
    mean, low, high = (np.full(points, np.nan) for _ in range(3))
    rng = np.random.default_rng(random_state)
    for j in range(points):
        present = values[~np.isnan(values[:, j]), j]
        if len(present) == 0:
            continue
        mean[j] = present.mean()
        if len(present) == 1 or np.all(present == present[0]):
            low[j] = high[j] = mean[j]
            continue
        band = stats.bootstrap(
            (present,), np.mean, n_resamples=n_resamples, method="percentile", random_state=rng
        ).confidence_interval
        low[j], high[j] = band.low, band.high
    return mean, low, high


def censored_median(durations: np.ndarray, observed: np.ndarray) -> tuple[float, float, float]:
    """Kaplan-Meier median of a time to an event, with its 95% interval.

    Args:
        durations: ``[n]`` the time of the event, or, where it was not observed, the
            time the run was followed to (right-censored).
        observed: ``[n]`` bool, the event happened.

    Returns:
        ``(median, low, high)`` from ``lifelines.KaplanMeierFitter``: the median is the
        first time the survival curve falls to one half or below; the interval reads the
        same off the 95% exponential-Greenwood band (``lifelines.utils.
        median_survival_times``; Brookmeyer-Crowley style). A median or upper end the
        curve or band never reaches (fewer than half of the runs had the event) is NaN,
        meaning "later than the data reach"; no runs gives NaN throughout.
    """
    from lifelines import KaplanMeierFitter
    from lifelines.utils import median_survival_times

    durations = np.asarray(durations, dtype=np.float64)
    observed = np.asarray(observed, dtype=bool)
    if len(durations) == 0:
        return math.nan, math.nan, math.nan
    fitter = KaplanMeierFitter(alpha=0.05).fit(durations, event_observed=observed)
    band = median_survival_times(fitter.confidence_interval_)
    values = (float(fitter.median_survival_time_), float(band.iloc[0, 0]), float(band.iloc[0, 1]))
    return tuple(v if math.isfinite(v) else math.nan for v in values)  # type: ignore[return-value]


def censored_steps(runs: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """``(steps [n], solved [n])`` of runs under a stop rule (columns of the runs table):
    the env steps to solve, or for a run that did not solve, the steps it trained
    (right-censored there), and whether it solved."""
    solved = runs["steps_to_solve"].notna().to_numpy()
    trained = runs["timesteps"].astype("float64").to_numpy()
    return np.where(solved, runs["steps_to_solve"].astype("float64").fillna(0).to_numpy(), trained), solved


def solve_statistics(runs: pd.DataFrame) -> dict[str, Any]:
    """Steps- and seconds-to-solve of a cell's finished runs (columns of the runs table).

    Only runs made under a stop rule count (``stop_reason`` set); a run that did not
    solve is censored at the steps it trained (``timesteps``) and the seconds that took.
    Without such runs every statistic is empty.
    """
    ruled = runs[runs["stop_reason"].fillna("") != ""]
    if ruled.empty:
        return dict(
            stop_reasons="",
            solved_fraction=math.nan,
            solved_ci_low=math.nan,
            solved_ci_high=math.nan,
            steps_to_solve=math.nan,
            steps_to_solve_ci_low=math.nan,
            steps_to_solve_ci_high=math.nan,
            seconds_to_solve=math.nan,
        )
    steps, solved = censored_steps(ruled)
    trained = ruled["timesteps"].astype("float64").to_numpy()
    train_seconds = trained / ruled["steps_per_second"].astype("float64").to_numpy()
    seconds = np.where(
        solved, ruled["seconds_to_solve"].astype("float64").fillna(0).to_numpy(), train_seconds
    )
    median, low, high = censored_median(steps, solved)
    counts = ruled["stop_reason"].value_counts()
    return dict(
        stop_reasons=";".join(
            f"{reason} {counts[reason]}" for reason in ("solved", "plateaued", "cap") if reason in counts
        ),
        solved_fraction=float(solved.mean()),
        **dict(
            zip(
                ("solved_ci_low", "solved_ci_high"),
                solve_rate_interval(int(solved.sum()), len(solved)),
                strict=True,
            )
        ),
        steps_to_solve=median,
        steps_to_solve_ci_low=low,
        steps_to_solve_ci_high=high,
        seconds_to_solve=censored_median(seconds, solved)[0],
    )
