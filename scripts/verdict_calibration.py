"""Compare candidate ``learned`` rules on simulated cells whose truth is known (issue 47).

Draws the null and power families of ``tests/verdict_families.py`` at 5, 10 and 20
seeds and 32 and 100 final evaluation episodes, applies each candidate rule, and
prints a Markdown table of the share of cells called learned (null families: should be
at most 5%; power families: the higher the better). The table in
``docs/notes/verdict-calibration.md`` is this script's output:

    python scripts/verdict_calibration.py --cells 2000 --bootstrap-cells 300

Rules (``line``: the ceiling-optimum midpoint; a seed *solves* when its final mean
return is above the line):

- ``bootstrap``: the leaderboard's rule before issue 47, the lower end of the 95%
  two-level percentile bootstrap interval (``statistics.two_level_interval``, 999
  resamples here) above the line. Slow: drawn on ``--bootstrap-cells`` cells only, and
  on the binary families only (on continuous returns every episode is a distinct value).
- ``t_05`` / ``t_025``: one-sided t test on the seed means, ``mean > line``, at 5% /
  2.5% (``scipy.stats.ttest_1samp``).
- ``binom``: exact one-sided binomial test that more than half the seeds solve, at 5%
  (``scipy.stats.binom.sf``, as ``scipy.stats.binomtest`` computes it).
- ``binom_mean``: ``binom`` and the seeds' mean above the line.
- ``binom_t_05`` / ``binom_t_025``: ``binom`` and ``t_05`` / ``t_025``.
- ``binom_bootstrap``: ``binom`` and ``bootstrap``.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the families
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's package, not an installed one

from verdict_families import FAMILIES, NULL_FAMILIES, POWER_FAMILIES, floor_rate

from pomdp_bench.reporting import statistics

SEEDS = (5, 10, 20)
EPISODES = (32, 100)


def binom_pass(seed_means: np.ndarray, line: float, alpha: float = 0.05) -> np.ndarray:
    """``[cells]``: the exact one-sided binomial test that more than half the seeds solve."""
    n = seed_means.shape[1]
    solved = (seed_means > line).sum(axis=1)
    return stats.binom.sf(solved - 1, n, 0.5) <= alpha


def t_pass(seed_means: np.ndarray, line: float, alpha: float) -> np.ndarray:
    """``[cells]``: one-sided t test of ``mean > line``; all seeds equal: ``mean > line``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        p = stats.ttest_1samp(seed_means, line, alternative="greater", axis=1).pvalue
    constant = np.all(seed_means == seed_means[:, :1], axis=1)
    return np.where(constant, seed_means[:, 0] > line, p <= alpha)


def bootstrap_pass(returns: np.ndarray, line: float) -> np.ndarray:
    """``[cells]``: the two-level bootstrap interval's lower end above the line."""
    lows = [
        statistics.two_level_interval(list(cell), n_resamples=999, random_state=i)[0]
        for i, cell in enumerate(returns)
    ]
    return np.array(lows) > line


def rates(family, seeds: int, episodes: int, cells: int, boot_cells: int, rng) -> dict[str, float]:
    returns = family.episodes(rng, cells, seeds, episodes)
    means = returns.mean(axis=2)
    binom = binom_pass(means, family.line)
    out = {
        "t_05": t_pass(means, family.line, 0.05),
        "t_025": t_pass(means, family.line, 0.025),
        "binom": binom,
        "binom_mean": binom & (means.mean(axis=1) > family.line),
        "binom_t_05": binom & t_pass(means, family.line, 0.05),
        "binom_t_025": binom & t_pass(means, family.line, 0.025),
    }
    shares = {name: float(passed.mean()) for name, passed in out.items()}
    if boot_cells and family.name.startswith(("tmaze", "cue")):  # binary returns: few distinct values
        boot = bootstrap_pass(returns[:boot_cells], family.line)
        shares["bootstrap"] = float(boot.mean())
        shares["binom_bootstrap"] = float((boot & binom[:boot_cells]).mean())
    elif boot_cells:
        shares["bootstrap"] = shares["binom_bootstrap"] = float("nan")
    return shares


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--cells", type=int, default=2000, help="simulated cells per family and size")
    parser.add_argument(
        "--bootstrap-cells",
        type=int,
        default=300,
        help="of those, how many the slow bootstrap rule sees (0: skip)",
    )
    parser.add_argument("--seed", type=int, default=47, help="seed of the simulation")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    rows = []
    for family in NULL_FAMILIES + POWER_FAMILIES:
        for seeds in SEEDS:
            for episodes in EPISODES:
                if not family.name.startswith("tmaze") and episodes != 100:
                    continue  # the episode count matters for the binary T-Maze families only
                shares = rates(family, seeds, episodes, args.cells, args.bootstrap_cells, rng)
                rows.append((family, seeds, episodes, shares))
                print(f"{family.name} {seeds} {episodes} done", file=sys.stderr, flush=True)
    names = list(rows[0][3])
    print(f"Share of {args.cells} simulated cells called learned ({args.bootstrap_cells} for the bootstrap rules); "
          f"seed {args.seed}. floor: the chance that every seed solves.\n")  # fmt: skip
    print("| family | null | seeds | episodes | floor | " + " | ".join(names) + " |")
    print("|---|---|---|---|---|" + "---|" * len(names))
    for family, seeds, episodes, shares in rows:
        floor = f"{floor_rate(family, seeds):.3f}" if family.null else ""
        cells = " | ".join("" if np.isnan(shares[n]) else f"{shares[n]:.3f}" for n in names)
        print(
            f"| {family.name} | {'yes' if family.null else 'no'} | {seeds} | {episodes} | {floor} | {cells} |"
        )
    print("\nThe chosen rule (binom_t_025) by seed count, 100 episodes: power at solve rates 0.8 and 0.9, "
          "and the null rate of tmaze_minus_one (floor: 0.875 ** seeds).\n")  # fmt: skip
    print("| seeds | power 0.8 | power 0.9 | tmaze_minus_one | floor |")
    print("|---|---|---|---|---|")
    for seeds in (5, 8, 10, 12, 16, 18, 20, 24, 30):
        shares = [chosen_rate(FAMILIES[name], seeds, args.cells, rng) for name in CHOSEN_ROWS]
        floor = floor_rate(FAMILIES["tmaze_minus_one"], seeds)
        print(f"| {seeds} | " + " | ".join(f"{v:.3f}" for v in shares) + f" | {floor:.3f} |")


CHOSEN_ROWS = ("tmaze_solve_0.8", "tmaze_solve_0.9", "tmaze_minus_one")


def chosen_rate(family, seeds: int, cells: int, rng) -> float:
    """Share of cells the leaderboard's rule (``statistics.verdict_passes``) calls learned."""
    means = family.episodes(rng, cells, seeds, 100).mean(axis=2)
    return float(np.mean([statistics.verdict_passes(m, family.line) for m in means]))


if __name__ == "__main__":
    main()
