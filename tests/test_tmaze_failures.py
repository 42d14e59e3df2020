"""scripts/tmaze_failures.py reads failures as they are, on scripted T-Maze policies
whose walk, turn and use of the cue are known."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from test_tmaze_phases import CORRIDOR, DOWN, RIGHT, UP, Scripted
from tmaze_failures import per_cue, reading

LEFT = 2


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        (Scripted(CORRIDOR, lambda cue: np.where(cue > 0, UP, DOWN)), "passes"),
        (Scripted(3, lambda cue: np.full(len(cue), LEFT)), "walk"),
        (Scripted(CORRIDOR, lambda cue: np.full(len(cue), RIGHT)), "no turn"),
        (Scripted(CORRIDOR, lambda cue: np.full(len(cue), UP)), "one arm"),
        # turns for cue up, never for cue down: it acts on the cue
        (Scripted(CORRIDOR, lambda cue: np.where(cue > 0, UP, RIGHT)), "cue held, misused"),
        # walks on time for cue up only: it acts on the cue
        (Scripted(0, lambda cue: np.where(cue > 0, RIGHT, LEFT)), "cue held, misused"),
    ],
)
def test_the_reading_of_scripted_policies(policy: Scripted, expected: str) -> None:
    assert reading(per_cue(policy, CORRIDOR, seed=0)) == expected
