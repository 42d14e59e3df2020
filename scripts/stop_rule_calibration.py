"""Compare candidate stop rules on simulated runs whose truth is known (issue 47).

Draws the families of ``tests/stop_families.py``, runs each candidate
:class:`~pomdp_bench.harness.stopping.StopRule` on them, and prints a Markdown table:
per family and rule, the runs stopped solved, the share of those whose final
evaluation (100 episodes, at the steps the run stopped) is at or below the
``learned`` line (target: at most 1%), and the mean steps trained (the cost). The
table in ``docs/notes/stop-rule-calibration.md`` is this script's output:

    python scripts/stop_rule_calibration.py --runs 1000

Rules: ``bar`` is the share of the way from the ceiling to the optimum that
``K`` consecutive 32-episode evaluations must reach (0.5 is the line: the rule before
issue 47); ``confirm`` is the episodes of the streak's last evaluation (0: 32).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the families
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's package

from stop_families import FAMILIES, simulate

from pomdp_bench.harness.stopping import StopRule

CANDIDATES = {
    "bar 0.5, K 2 (before)": StopRule(solve_bar=0.5, confirm_episodes=0),
    "bar 0.5, K 3": StopRule(solve_bar=0.5, solve_checks=3, confirm_episodes=0),
    "bar 0.5, K 2, confirm 100": StopRule(solve_bar=0.5),
    "bar 0.625, K 2, confirm 100": StopRule(solve_bar=0.625),
    "bar 0.75, K 2": StopRule(solve_bar=0.75, confirm_episodes=0),
    "bar 0.75, K 2, confirm 100 (default)": StopRule(),
    "bar 0.75, K 3, confirm 100": StopRule(solve_checks=3),
}


def measure(rule: StopRule, family: str, runs: int, seed: int = 0) -> dict[str, float]:
    """Runs stopped solved, the share of them ending at or below the line, the mean
    steps trained, over ``runs`` simulated 1M-step runs of ``family``."""
    rng = np.random.default_rng(seed)
    fam = FAMILIES[family]
    solved = below = 0
    steps = []
    for _ in range(runs):
        monitor, final = simulate(rule, fam, rng)
        if monitor.reason == "solved":
            solved += 1
            below += final <= fam.line
        steps.append(monitor.evaluations[-1][0])
    return {
        "solved": solved,
        "below": below,
        "share_below": below / max(solved, 1),
        "steps": float(np.mean(steps)),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--runs", type=int, default=300, help="simulated runs per family and rule")
    args = parser.parse_args(argv)
    print("| family | rule | solved | ending at or below the line | mean steps |")
    print("|---|---|---|---|---|")
    for family in FAMILIES:
        for name, rule in CANDIDATES.items():
            m = measure(rule, family, args.runs)
            print(
                f"| {family} | {name} | {m['solved']} of {args.runs} | "
                f"{m['below']} ({100 * m['share_below']:.1f}%) | {m['steps']:,.0f} |"
            )


if __name__ == "__main__":
    main()
