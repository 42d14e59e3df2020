"""scripts/tmaze_phases.py measures what it says, on scripted T-Maze policies whose
walk, turn and cue use are known."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from tmaze_phases import DOWN, RIGHT, UP, phases

CORRIDOR = 12


class Scripted:
    """A ``predict``-like policy: "right" for ``walk`` steps, then ``after`` (a function
    of the cue seen at step 0) for the rest of the episode. The state is ``(cue, t)``."""

    def __init__(self, walk: int, after) -> None:
        self.walk, self.after = walk, after

    def predict(self, obs, state, episode_start, deterministic=True):
        if state is None:
            state = (obs[:, 1].copy(), np.zeros(len(obs), dtype=int))
        cue, t = state
        action = np.where(t < self.walk, RIGHT, self.after(cue))
        return action, (cue, t + 1)


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        # the optimal policy: walks the corridor, turns towards the cue
        (
            Scripted(CORRIDOR, lambda cue: np.where(cue > 0, UP, DOWN)),
            {"walk": CORRIDOR, "on_time": 1.0, "turn": 1.0, "cue": 1.0, "return": 1.0},
        ),
        # walks on schedule, never turns (return exactly 0)
        (
            Scripted(CORRIDOR, lambda cue: np.full(len(cue), RIGHT)),
            {"on_time": 1.0, "turn": 0.0, "return": 0.0},
        ),
        # walks on schedule, always turns up: the memoryless ceiling
        (Scripted(CORRIDOR, lambda cue: np.full(len(cue), UP)), {"on_time": 1.0, "turn": 1.0}),
        # turns in the corridor at step 3: never on time
        (
            Scripted(3, lambda cue: np.full(len(cue), UP)),
            {"walk": 3, "on_time": 0.0, "turn": 0.0, "cue": 0.0, "return": 0.0},
        ),
    ],
)
def test_phases_of_scripted_policies(policy: Scripted, expected: dict[str, float]) -> None:
    measured = phases(policy, CORRIDOR, deterministic=True, seed=0)
    for key, value in expected.items():
        assert measured[key] == pytest.approx(value), key
    if measured["turn"] == 1.0 and "cue" not in expected:  # "always up": half the cues
        assert 0.35 < measured["cue"] < 0.65
        assert measured["return"] == pytest.approx(measured["cue"])
