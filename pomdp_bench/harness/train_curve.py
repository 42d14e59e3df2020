"""The training curve a run stores for POPGym's metric: the mean training return of
each POPGym iteration (RLlib's ``episode_reward_mean``).

:func:`iteration_means` turns an agent's ``episode_log`` into the run's
``RunResult.train_curve`` as it trains; reporting takes its maximum, the MMER
(:mod:`pomdp_bench.reporting.mmer`, which says what POPGym measures and why).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

POPGYM_ITERATION_STEPS = 65_536
"""Env steps of one POPGym training iteration: ``bptt_cutoff * num_workers *
num_envs_per_worker`` in ``popgym/baselines/ppo.py`` (1,024 x 4 x 16)."""

POPGYM_SMOOTHING = 100
"""RLlib's ``metrics_num_episodes_for_smoothing``: the fewest episodes behind one mean."""


def iteration_means(
    episode_log: Iterable[Sequence[float]],
    iteration_steps: int = POPGYM_ITERATION_STEPS,
    smoothing: int = POPGYM_SMOOTHING,
) -> list[tuple[int, float]]:
    """The mean training return of each iteration, as RLlib's ``episode_reward_mean``.

    Args:
        episode_log: ``(env steps when the episode ended, return, ...)`` per finished
            training episode, in the order they ended (``Agent.episode_log``).
        iteration_steps: env steps per iteration; an episode that ended at step ``t``
            belongs to iteration ``ceil(t / iteration_steps)``. The last iteration may be
            partial (a run that stopped early).
        smoothing: an iteration with fewer episodes is topped up with the latest earlier
            ones, up to this many in all.

    Returns:
        ``[(env steps at the iteration's end, mean return)]``, one entry per iteration
        in which some episode ended, in order.

    Raises:
        ValueError: ``iteration_steps`` or ``smoothing`` is below 1.
    """
    if int(iteration_steps) < 1 or int(smoothing) < 1:
        raise ValueError(
            f"iteration_steps and smoothing must be >= 1, got {iteration_steps!r} and {smoothing!r}"
        )
    log = [(int(e[0]), float(e[1])) for e in episode_log]
    if not log:
        return []
    steps = np.array([t for t, _ in log], dtype=np.int64)
    returns = np.array([r for _, r in log], dtype=np.float64)
    iteration = np.maximum(1, -(-steps // iteration_steps))  # ceil; step 0 counts as the first
    means = []
    ends = np.flatnonzero(np.diff(iteration, append=iteration[-1] + 1))  # last episode of each
    for end in ends:
        first = int(np.searchsorted(iteration, iteration[end], side="left"))
        start = min(first, max(0, end + 1 - smoothing))
        means.append((int(iteration[end]) * iteration_steps, float(returns[start : end + 1].mean())))
    return means
