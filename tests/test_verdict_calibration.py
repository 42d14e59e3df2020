"""The ``learned`` verdict and the statistics beside it, on simulated data whose truth is known.

The families are ``tests/verdict_families.py``'s; the rule is
:func:`statistics.verdict_passes` (the 95% t interval's lower end above the line and
more than half of the seeds above it by an exact binomial test at 5%). Each null
family's rate is read from 2,000 seeded cells and must be at most 5% up to the
simulation's own noise: the lower end of its 99% Clopper-Pearson interval is at most
0.05. Where every seed solving has a chance above 5% by itself (``floor_rate``), no
rule can hold 5%, and the test checks that the rule adds nothing to that floor.
"""

from __future__ import annotations

import zlib

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from verdict_families import FAMILIES, NULL_FAMILIES, floor_rate

from pomdp_bench.reporting import leaderboard, statistics
from pomdp_bench.reporting.report import cpu_line

CELLS = 2000


def learned_count(name: str, seeds: int, episodes: int, seed: int) -> int:
    family = FAMILIES[name]
    means = family.episodes(np.random.default_rng(seed), CELLS, seeds, episodes).mean(axis=2)
    return int(statistics.verdict_passes(means, family.line).sum())


def null_cases() -> list[tuple[str, int, int]]:
    cases = []
    for family in NULL_FAMILIES:
        for seeds in (5, 20):
            for episodes in (32, 100) if family.name.startswith("tmaze") else (100,):
                cases.append((family.name, seeds, episodes))
    return cases


@pytest.mark.parametrize(("name", "seeds", "episodes"), null_cases())
def test_a_cell_whose_mean_is_on_the_line_is_seldom_called_learned(
    name: str, seeds: int, episodes: int
) -> None:
    k = learned_count(name, seeds, episodes, seed=zlib.crc32(f"{name} {seeds} {episodes}".encode()))
    low = stats.binomtest(k, CELLS).proportion_ci(confidence_level=0.99, method="exact").low
    floor = floor_rate(FAMILIES[name], seeds)
    print(f"{name} {seeds} seeds {episodes} episodes: {k / CELLS:.3f} learned (floor {floor:.3f})")
    if floor <= 0.05:
        assert low <= 0.05, (k / CELLS, low)
    else:  # every seed solved by chance: no rule tells that from a cell that learned
        high = stats.binomtest(k, CELLS).proportion_ci(confidence_level=0.99, method="exact").high
        assert low <= floor + 0.01 and high >= floor - 0.01, (k / CELLS, floor)


@pytest.mark.parametrize(
    ("name", "seeds", "low", "high"),
    [
        # 5 seeds: learned only when all 5 solve, 0.8 ** 5 = 0.33 and 0.9 ** 5 = 0.59.
        ("tmaze_solve_0.8", 5, 0.30, 0.36),
        ("tmaze_solve_0.9", 5, 0.56, 0.62),
        # 20 seeds: at least 15 must solve (P(Bin(20, 0.8) >= 15) = 0.80).
        ("tmaze_solve_0.8", 20, 0.77, 0.83),
        ("tmaze_solve_0.9", 20, 0.97, 1.00),
    ],
)
def test_power_at_a_solve_rate_of_0_8_and_0_9(name: str, seeds: int, low: float, high: float) -> None:
    share = learned_count(name, seeds, 100, seed=seeds) / CELLS
    print(f"{name} {seeds} seeds: learned {share:.3f}")
    assert low <= share <= high, share


def test_the_t_interval_covers_the_true_mean() -> None:
    rng = np.random.default_rng(0)
    values = stats.norm.rvs(0.7, 0.2, size=(2000, 5), random_state=rng)
    low, high = statistics.t_interval(values)
    covered = np.mean((low <= 0.7) & (high >= 0.7))
    assert abs(covered - 0.95) < 0.015, covered
    one = statistics.t_interval(values[0])
    assert one == pytest.approx(tuple(stats.ttest_1samp(values[0], 0.0).confidence_interval(0.95)))
    assert statistics.t_interval(np.array([1.0] * 5)) == (1.0, 1.0)
    assert all(np.isnan(statistics.t_interval(np.array([1.0]))))


def test_the_majority_test_is_the_exact_binomial_tail() -> None:
    assert statistics.majority_test(np.array([1.0, 0.9, 0.8, 0.76, 0.76]), 0.75) == (5, 1 / 32)
    above, p = statistics.majority_test(np.array([1.0, 0.9, 0.8, 0.76, 0.75]), 0.75)  # at the line: not above
    assert above == 4 and p == pytest.approx(6 / 32)
    assert p == pytest.approx(stats.binomtest(4, 5, 0.5, alternative="greater").pvalue)
    # Many cells at once agree with one at a time, and the verdict reads both parts.
    means = np.random.default_rng(0).uniform(0.5, 1.0, size=(200, 5))
    above, ps = statistics.majority_test(means, 0.75)
    low, _ = statistics.t_interval(means)
    passed = statistics.verdict_passes(means, 0.75)
    assert (passed == ((low > 0.75) & (ps <= 0.05))).all() and passed.any()
    assert [statistics.verdict_passes(m, 0.75) for m in means] == passed.tolist()


@pytest.mark.parametrize(("n", "p"), [(5, 0.5), (5, 0.9), (20, 0.8)])
def test_the_solve_rate_interval_covers_the_true_rate(n: int, p: float) -> None:
    solved = stats.binom.rvs(n, p, size=2000, random_state=np.random.default_rng(n))
    intervals = {k: statistics.solve_rate_interval(k, n) for k in range(n + 1)}
    covered = np.mean([intervals[k][0] <= p <= intervals[k][1] for k in solved])
    assert covered >= 0.94, covered  # Clopper-Pearson is exact: at least 95% up to noise
    assert statistics.solve_rate_interval(5, 5)[1] == 1.0 and np.isnan(
        statistics.solve_rate_interval(0, 0)[0]
    )


def test_probability_of_improvement_estimates_the_true_one() -> None:
    """X ~ N(0.5, 1) against Y ~ N(0, 1): P(X > Y) = Phi(0.5 / sqrt(2)) = 0.638."""
    rng = np.random.default_rng(0)
    truth = stats.norm.cdf(0.5 / np.sqrt(2))
    x, y = (
        stats.norm.rvs(0.5, 1, size=400, random_state=rng),
        stats.norm.rvs(0, 1, size=400, random_state=rng),
    )
    estimate, low, high = statistics.probability_of_improvement(x, y, n_resamples=500)
    assert abs(estimate - truth) < 0.04 and low < truth < high
    covered = 0
    for trial in range(100):
        x, y = (
            stats.norm.rvs(0.5, 1, size=10, random_state=rng),
            stats.norm.rvs(0, 1, size=10, random_state=rng),
        )
        _, low, high = statistics.probability_of_improvement(x, y, n_resamples=500, random_state=trial)
        covered += low <= truth <= high
    assert covered >= 85, covered  # a percentile bootstrap over 10 runs a side: about 90-95%
    # Ties count a half; all equal: one half, no spread.
    one = statistics.probability_of_improvement(np.array([1.0, 0.0]), np.array([1.0]))
    assert one[0] == 0.25 and np.isnan(one[1])  # a tie counts a half; one run a side: no interval
    assert statistics.probability_of_improvement(np.ones(5), np.ones(5)) == (0.5, 0.5, 0.5)


def _line(rows: list[tuple[int, bool]]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "suite": "h", "env_id": "TMaze-v1", "agent": "ppo", "memory": "lstm", "pieces": "long",
                "horizon": h, "learned": learned, "stop_reasons": "solved 5" if learned else "cap 5",
                "steps_to_solve": 1e4 if learned else np.nan, "total_timesteps": 10**7, "cue_reach": 1.0,
                "cpu": "AMD EPYC" if h < 20 else "Intel Xeon",
            }
            for h, learned in rows
        ]
    )  # fmt: skip


def test_the_horizon_limit_is_monotone_and_the_maximum_is_shown_where_it_differs() -> None:
    row = leaderboard.horizon_frame(_line([(5, True), (10, False), (20, True), (50, False)])).iloc[0]
    assert row["longest_horizon_learned"] == 5 and row["max_horizon_learned"] == 20
    assert row["horizon_note"] == "learned at 20 but not at 10"
    assert row["next_horizon"] == 10 and row["next_outcome"] == "failed"  # cap 10**7 >= 10 x 1e4
    assert row["cpu"] == "AMD EPYC;Intel Xeon"
    row = leaderboard.horizon_frame(_line([(5, True), (10, True), (20, False)])).iloc[0]
    assert row["longest_horizon_learned"] == 10 and pd.isna(row["max_horizon_learned"])
    assert row["horizon_note"] == ""
    row = leaderboard.horizon_frame(_line([(5, False), (10, True)])).iloc[0]
    assert row["longest_horizon_learned"] == 0 and row["max_horizon_learned"] == 10


def test_cells_and_the_provenance_say_which_cpu_ran_them() -> None:
    runs = pd.DataFrame(
        {
            "env_id": ["TMaze-v1"] * 3, "env_kwargs": ["{}"] * 3, "agent": ["ppo"] * 3,
            "memory": ["gru", "gru", "lstm"], "bptt_length": [8, 8, 8],
            "machine": ["AMD EPYC; 2 cores; Python 3.11", "Intel Xeon; 2 cores", "AMD EPYC; 2 cores"],
        }
    )  # fmt: skip
    assert leaderboard.cpus(runs["machine"]) == "AMD EPYC;Intel Xeon"
    line = cpu_line(runs)
    assert line.startswith("cpu: mixed") and "AMD EPYC: 1 cells" in line
    assert "AMD EPYC and Intel Xeon: 1 cells (TMaze-v1 {} ppo gru bptt 8)" in line
    assert cpu_line(runs[runs["memory"] == "lstm"]) == "cpu: AMD EPYC (every cell)"


def test_a_cell_of_solved_runs_that_is_not_learned_says_why() -> None:
    """Every run stopped solved: one ending below the line, or seeds spread so wide that
    the interval reaches the line, each gets its note; a learned cell gets none."""
    from pomdp_bench.reporting.leaderboard import _solved_not_learned

    base = {"stop_reasons": "solved 5", "n_seeds": 5, "learned": False, "return_ci_low": 0.7}
    one_below = pd.Series({**base, "seeds_above_line": 4})
    assert _solved_not_learned(one_below, 0.75) == (
        "every run stopped solved, but 1 of 5 ended at or below the line at their final evaluation"
    )
    spread = pd.Series({**base, "seeds_above_line": 5})
    assert "the t interval's lower end (0.7) is not above it (0.75)" in _solved_not_learned(spread, 0.75)
    assert _solved_not_learned(pd.Series({**base, "seeds_above_line": 5, "learned": True}), 0.75) == ""
    assert (
        _solved_not_learned(
            pd.Series({**base, "stop_reasons": "solved 4;cap 1", "seeds_above_line": 4}), 0.75
        )
        == ""
    )
    assert _solved_not_learned(pd.Series({**base, "learned": pd.NA, "seeds_above_line": 4}), 0.75) == ""


def test_the_improvement_figure_reads_both_ways_and_stars_clear_pairs(tmp_path) -> None:
    """Three cells of one env: each pair's estimate and its complement fill the matrix,
    the kinds in the package's order; a pair whose interval excludes 0.5 is starred."""
    from pomdp_bench.reporting import plots

    pairs = pd.DataFrame(
        {
            "env_id": ["TMaze-v1"] * 3,
            "env_kwargs": ["{}"] * 3,
            "agent": ["ppo"] * 3,
            "memory_a": ["gru", "gru", "none"],
            "bptt_length_a": [11.0, 11.0, np.nan],
            "memory_b": ["lstm", "none", "lstm"],
            "bptt_length_b": [11.0, np.nan, 11.0],
            "prob_improvement": [0.6, 0.9, 0.2],
            "prob_improvement_ci_low": [0.3, 0.7, 0.0],
            "prob_improvement_ci_high": [0.9, 1.0, 0.45],
        }
    )
    estimate, clear = plots.improvement_matrix(pairs)
    assert list(estimate.index) == ["none", "gru (11)", "lstm (11)"]
    assert estimate.loc["gru (11)", "lstm (11)"] == 0.6 and estimate.loc[
        "lstm (11)", "gru (11)"
    ] == pytest.approx(0.4)
    off = ~np.eye(3, dtype=bool)
    assert (
        np.allclose((estimate + estimate.T).to_numpy()[off], 1.0) and estimate.isna().to_numpy()[~off].all()
    )
    assert (
        clear.loc["gru (11)", "none"]
        and clear.loc["lstm (11)", "none"]
        and not clear.loc["gru (11)", "lstm (11)"]
    )
    paths = plots.improvement_plots(pairs, "s", tmp_path)
    assert [p.name for p in paths] == ["s_improvement_TMaze-v1_ppo.svg"] and paths[0].stat().st_size > 1000
