"""studies/tmaze_phases.py measures what it says, on scripted T-Maze policies whose
walk, turn and cue use are known."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "studies"))
from tmaze_phases import DOWN, LEFT, RIGHT, UP, junction, phases

from pomdp_bench.agents import PPO

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


class ScriptedActive:
    """The active maze: optionally "left" to the oracle first, then "right" to the
    junction and beyond (a wall: it waits there), then a turn at the last step: towards
    the cue if it looked, else up."""

    def __init__(self, look: bool) -> None:
        self.look = look

    def predict(self, obs, state, episode_start, deterministic=True):
        cue, t = state if state is not None else (np.zeros(len(obs)), np.zeros(len(obs), dtype=int))
        cue = np.where(t == 1, obs[:, 1], cue)  # the oracle's cue, seen at step 1 after "left"
        last = t == CORRIDOR + 2
        towards = np.where(cue < 0, DOWN, UP)
        action = np.where(last, towards, np.where((t == 0) & self.look, LEFT, RIGHT))
        return action, (cue, t + 1)


def test_phases_of_the_active_maze() -> None:
    looks = phases(ScriptedActive(look=True), CORRIDOR, deterministic=True, seed=0, active=True)
    assert looks == {
        "walk": CORRIDOR + 2,
        "looked": 1.0,
        "on_time": 1.0,
        "turn": 1.0,
        "cue": 1.0,
        "return": 1.0,
    }
    blind = phases(ScriptedActive(look=False), CORRIDOR, deterministic=True, seed=0, active=True)
    assert blind["walk"] == 0 and blind["looked"] == 0.0 and blind["on_time"] == 1.0 and blind["turn"] == 1.0
    assert 0.35 < blind["cue"] < 0.65 and blind["return"] == pytest.approx(blind["cue"])


def test_junction_reads_the_policy_and_critic_per_cue() -> None:
    """On a PPO whose action head is set by hand: "right" with probability ~1 everywhere
    gives a walk probability of 1 and a junction that never turns; a uniform head gives
    each action 1/4 and a walk of 0.25^corridor."""
    model = PPO(
        "TMaze-v1", "lstm", env_kwargs={"corridor_length": CORRIDOR}, n_envs=2, n_steps=8, obs_skip=True
    )
    head = model.policy.action_head.linear
    with torch.no_grad():
        head.weight.zero_()
        head.bias.copy_(torch.tensor([30.0, 0.0, 0.0, 0.0]))
    probe = junction(model, CORRIDOR)
    assert probe["walk_p"] == pytest.approx(1.0) and probe["right_p"] == [1.0, 1.0]
    assert probe["up_p"] == [0.0, 0.0] and probe["down_p"] == [0.0, 0.0]
    assert len(probe["junction_value"]) == 2
    # a head that ignores its input: no gradient from the turn back to the cue
    assert probe["turn_cue_grad"] == 0.0 and probe["value_cue_grad"] >= 0.0
    with torch.no_grad():
        head.bias.zero_()
    probe = junction(model, CORRIDOR)
    assert probe["up_p"] == [0.25, 0.25] and probe["right_p"] == [0.25, 0.25]
    assert probe["walk_p"] == pytest.approx(0.25**CORRIDOR, abs=1e-3)


def test_cue_gradients_see_the_cue_through_the_memory() -> None:
    """An untrained lstm carries the cue to the junction, so both derivatives are
    positive; cut the memories' input from the cue channel and both are 0."""
    torch.manual_seed(0)
    model = PPO(
        "TMaze-v1", "lstm", env_kwargs={"corridor_length": CORRIDOR}, n_envs=2, n_steps=8, obs_skip=True
    )
    before = junction(model, CORRIDOR)
    assert before["turn_cue_grad"] > 0.0 and before["value_cue_grad"] > 0.0
    with torch.no_grad():
        for name, param in model.policy.named_parameters():
            if "weight" in name and param.dim() == 2 and param.shape[1] == 2:
                param[:, 1] = 0.0  # the memories' input weights: the cue's column
    after = junction(model, CORRIDOR)
    assert after["turn_cue_grad"] == 0.0 and after["value_cue_grad"] == 0.0
