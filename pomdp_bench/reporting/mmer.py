"""POPGym's metric: the maximum mean episodic reward (MMER) of a run.

POPGym (Morad et al., ICLR 2023) trains with RLlib's PPO and reports, per run, the
largest ``episode_reward_mean`` over its training iterations. RLlib reports that mean
once an iteration, over the training episodes that ended in it, topped up with the
latest earlier ones when fewer than ``metrics_num_episodes_for_smoothing`` (100)
ended. POPGym's iteration is its train batch: 1,024 steps x 4 workers x 16 copies =
65,536 env steps. Its envs scale every episode's return into [-1, 1], so the MMER of a
run lies there too. A paper's table then gives the mean over runs.

:func:`~pomdp_bench.harness.train_curve.iteration_means` rebuilds those per-iteration means from an agent's
``episode_log`` (every finished training episode: ``(env steps when it ended, return,
length)``); :func:`mmer` takes their maximum. The training episodes are the agent's
own, with its exploration (a sampled policy for PPO), as POPGym's are; the leaderboards'
other returns come from deterministic evaluations.

Our runs may stop before POPGym's 15M steps (solved or plateaued), so a run's MMER is
its maximum up to its stop.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence


def mmer(curve: Iterable[Sequence[float]] | None) -> float:
    """The maximum mean episodic reward of a run: the largest mean of
    :func:`~pomdp_bench.harness.train_curve.iteration_means`' ``[(steps, mean)]``; NaN for an empty or missing curve."""
    values = [float(v) for _, v in (curve or [])]
    return max(values) if values else math.nan


def above_line(mmer_ci_low: float, ff_ceiling: float, optimal_return: float) -> bool:
    """The verdict on a cell's MMER that a table's bold reads: the lower end of its 95%
    interval over seeds lies above the line halfway from the ceiling to the optimum.
    This is the interval half of ``learned``, applied to MMER; False where any is NaN."""
    values = (mmer_ci_low, ff_ceiling, optimal_return)
    if any(v is None or math.isnan(float(v)) for v in values):
        return False
    return float(mmer_ci_low) > (float(ff_ceiling) + float(optimal_return)) / 2
