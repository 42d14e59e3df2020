"""What a trained agent does on the passive T-Maze, per cue: the walk, the turn and the arm.

The ``behaviour`` analysis (``python -m pomdp_bench.analyse``) plays fresh greedy episodes
with a run's final weights. Per cue (goal up, goal down) it counts the episodes that reach
the junction on time, end in an arm, in the upper arm and in the goal arm.
:func:`~pomdp_bench.harness.analysis_records.behaviour_reading` reads the counts as one
failure: the walk, the turn, one arm for both cues, or a cue held and misused. The probes
say whether the memory holds the cue; this says what the policy does with it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pomdp_bench.envs.tmaze import TMazeVectorEnv
from pomdp_bench.harness.analysis_records import BehaviourResult

DEFAULT_EPISODES = 256
"""Fresh episodes per run, both cues together."""

BEHAVIOUR_SEED = 2**40 + 5
"""Root of the episodes' reset seeds: far above any run's agent seed, and apart from the
other analyses' roots."""

ENV_IDS = ("TMaze-v1",)
"""The envs the analysis reads: the passive T-Maze, whose episode is the walk, then the turn."""


def play_tmaze(
    agent: Any, corridor_length: int, n_episodes: int = DEFAULT_EPISODES, seed: int = BEHAVIOUR_SEED
) -> BehaviourResult:
    """``n_episodes`` greedy episodes of ``agent`` (its ``predict``) on the passive T-Maze
    of ``corridor_length``, from a fresh memory, counted per cue.

    Raises:
        ValueError: ``n_episodes`` below 2.
    """
    if isinstance(n_episodes, bool) or not isinstance(n_episodes, int) or n_episodes < 2:
        raise ValueError(f"n_episodes must be an int >= 2, got {n_episodes!r}")
    env = TMazeVectorEnv(num_envs=n_episodes, corridor_length=corridor_length)
    try:
        obs, _ = env.reset(seed=seed)
        up = obs[:, 1] > 0  # [B] the cue, shown at the first step
        state, start = None, np.ones(n_episodes, dtype=bool)
        arrived = np.zeros(n_episodes, dtype=bool)
        reward = np.zeros(n_episodes)
        for t in range(corridor_length + 1):  # the walk, then the turn
            if t == corridor_length:
                arrived = obs[:, 0] == 1  # [B] at the junction for the last step
            action, state = agent.predict(obs, state, start, deterministic=True)
            start = np.zeros(n_episodes, dtype=bool)
            obs, reward, *_ = env.step(action)  # autoreset next step: this obs is the final one
    finally:
        env.close()
    arm = arrived & (obs[:, 1] != 0)  # [B]
    upper = arm & (obs[:, 1] > 0)
    goal = arrived & (reward == 1)
    counts = {}
    for cue, mask in (("up", up), ("down", ~up)):
        n = max(int(mask.sum()), 1)
        for name, hit in (("on_time", arrived), ("arm", arm), ("upper", upper), ("goal", goal)):
            counts[f"{name}_{cue}"] = round(float((hit & mask).sum() / n), 4)
    return BehaviourResult(counts=counts, n_episodes=int(n_episodes), seed=int(seed))


__all__ = ["BEHAVIOUR_SEED", "DEFAULT_EPISODES", "ENV_IDS", "play_tmaze"]
