"""The behaviour analysis: what a policy does on the passive T-Maze, per cue, read as one
failure (harness/tmaze_behaviour.py, analysis_records.behaviour_reading), and how the
tables carry it."""

from __future__ import annotations

import numpy as np
import pytest

from pomdp_bench.envs.tmaze import DOWN, RIGHT, UP
from pomdp_bench.harness.analysis_records import BEHAVIOUR_COUNTS, BehaviourResult, behaviour_reading
from pomdp_bench.harness.tmaze_behaviour import play_tmaze
from pomdp_bench.reporting import leaderboard


class Scripted:
    """A policy with ``predict`` as the agents have: ``memory`` keeps the cue it saw first;
    ``turn`` picks the junction's action from it (None: keep walking right)."""

    def __init__(self, memory: bool, turn: str | None = "cue", walk: bool = True) -> None:
        self.memory, self.turn, self.walk = memory, turn, walk

    def predict(self, obs, state, episode_start, deterministic=True):
        cue = obs[:, 1] > 0  # [B] the cue, at the first step only
        seen = np.where(episode_start, cue, state) if self.memory else np.zeros(len(obs), dtype=bool)
        action = np.full(len(obs), RIGHT if self.walk else DOWN)
        at_junction = obs[:, 0] == 1
        if self.turn == "cue":
            action[at_junction] = np.where(seen, UP, DOWN)[at_junction]
        elif self.turn == "up":
            action[at_junction] = UP
        return action, seen


@pytest.mark.parametrize(
    ("policy", "reading"),
    [
        (Scripted(memory=True), "passes"),
        (Scripted(memory=False, turn="up"), "one_arm"),  # the cue lost: the same arm for both
        (Scripted(memory=True, turn=None), "no_turn"),
        (Scripted(memory=True, walk=False), "walk"),
    ],
)
def test_a_scripted_policy_reads_as_what_it_does(policy, reading) -> None:
    found = play_tmaze(policy, corridor_length=6, n_episodes=64, seed=3)
    assert set(found.counts) == set(BEHAVIOUR_COUNTS) and found.n_episodes == 64
    assert found.reading == reading
    again = BehaviourResult.from_dict(found.to_dict())
    assert again == found


def test_cues_that_change_the_walk_or_the_turn_read_as_a_cue_misused() -> None:
    counts = dict.fromkeys(BEHAVIOUR_COUNTS, 1.0) | {"goal_up": 1.0, "goal_down": 0.0, "on_time_down": 0.5}
    assert behaviour_reading(counts) == "cue_misused"
    counts = dict.fromkeys(BEHAVIOUR_COUNTS, 1.0) | {"upper_down": 0.0, "goal_down": 1.0}
    assert behaviour_reading(counts) == "passes"  # the goal for both cues comes first


def test_bad_episode_counts_are_refused() -> None:
    with pytest.raises(ValueError, match="n_episodes must be an int >= 2, got 1"):
        play_tmaze(Scripted(memory=True), corridor_length=4, n_episodes=1)


def _row(final_return: float, reading_counts: dict[str, float]) -> dict:
    return {
        "status": "ok",
        "spec": {"env_id": "TMaze-v1", "env_kwargs": {"corridor_length": 6}},
        "result": {"final_return": final_return},
        "analyses": {
            "behaviour": {
                "status": "ok",
                "value": BehaviourResult(reading_counts, 64, 3).to_dict(),
                "error": "",
            }
        },
    }


def test_the_run_column_reads_the_behaviour_of_runs_below_the_line_only() -> None:
    walk = dict.fromkeys(BEHAVIOUR_COUNTS, 0.0)
    assert leaderboard.analysis_columns(_row(0.5, walk))["behaviour"] == "walk"
    assert leaderboard.analysis_columns(_row(1.0, walk))["behaviour"] == ""  # above the line
