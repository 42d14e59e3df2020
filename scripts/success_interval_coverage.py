"""How often a success-rate interval holds the true rate, on simulated cells: the table of
docs/statistics.md#success-rates.

Each simulated cell has ``--seeds`` seeds. A seed's own success probability is drawn from
``Beta(p c, (1 - p) c)`` around the true rate ``p`` (``c``: the concentration; none: every
seed at ``p``), and the seed then runs ``--episodes`` episodes. A cell's interval is the
Korn-Graubard interval the tables publish
(:func:`pomdp_bench.reporting.statistics.success_interval`), beside a t interval over the
seeds' rates. Writes ``leaderboards/success_interval_coverage.csv``: one row per spread and
true rate, with the share of cells each interval covered.

    python scripts/success_interval_coverage.py [--cells 2000] [--seed 0]
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from pomdp_bench.harness.success import DEFAULT_EPISODES
from pomdp_bench.harness.suites import DEFAULT_SEEDS
from pomdp_bench.reporting.statistics import success_interval

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "leaderboards/success_interval_coverage.csv"
RATES = (0.01, 0.05, 0.3, 0.5, 0.9, 0.98)
SPREADS = (math.inf, 50.0, 10.0)  # Beta concentrations; inf: seeds alike (binomial)


def t_interval(rates: np.ndarray) -> tuple[float, float]:
    """The 95% t interval of the mean over seeds' rates (may leave [0, 1])."""
    n = len(rates)
    half = stats.t.ppf(0.975, n - 1) * rates.std(ddof=1) / math.sqrt(n)
    return rates.mean() - half, rates.mean() + half


def coverage(
    p: float, spread: float, seeds: int, episodes: int, cells: int, rng: np.random.Generator
) -> tuple[float, float]:
    """Shares of ``cells`` simulated cells whose Korn-Graubard and t intervals hold ``p``."""
    kg = t = 0
    for _ in range(cells):
        own = np.full(seeds, p) if math.isinf(spread) else rng.beta(p * spread, (1 - p) * spread, seeds)
        rates = rng.binomial(episodes, own) / episodes
        low, high = success_interval(rates, seeds * episodes)
        kg += low <= p <= high
        low, high = t_interval(rates)
        t += low <= p <= high
    return kg / cells, t / cells


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--cells", type=int, default=2000, help="simulated cells per row (default: 2000)")
    parser.add_argument("--seeds", type=int, default=DEFAULT_SEEDS, help="seeds a cell (default: a suite's)")
    parser.add_argument("--episodes", type=int, default=DEFAULT_EPISODES, help="episodes a seed")
    parser.add_argument("--seed", type=int, default=0, help="random seed of the simulation (default: 0)")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    rows = []
    for spread in SPREADS:
        for p in RATES:
            kg, t = coverage(p, spread, args.seeds, args.episodes, args.cells, rng)
            rows.append(
                {
                    "spread": "none" if math.isinf(spread) else f"beta_{spread:g}",
                    "true_rate": p,
                    "cells": args.cells,
                    "seeds": args.seeds,
                    "episodes": args.episodes,
                    "coverage": round(kg, 4),
                    "coverage_t": round(t, 4),
                }
            )
    pd.DataFrame(rows).to_csv(OUT, index=False)
    print(f"wrote {OUT.relative_to(ROOT)} ({len(rows)} rows)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
