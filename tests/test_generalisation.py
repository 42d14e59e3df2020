"""Horizon generalisation (issue 53, harness/generalisation.py): the final weights at 2x
and 4x the training horizon, on fresh episodes; kinds that cannot see that far by
construction are marked, not scored as forgetting."""

from __future__ import annotations

import numpy as np
import pytest

from pomdp_bench.agents.ppo import PPO
from pomdp_bench.harness import generalisation
from pomdp_bench.harness.cue_tasks import cue_task
from pomdp_bench.harness.generalisation import (
    GeneralisationResult,
    evaluate_at,
    generalise,
    limited_by,
    memory_reach,
)
from pomdp_bench.memory import MEMORY_KINDS, MemoryConfig, memory_class

CUE5 = cue_task("CueRecall-v0", {"delay": 5})


def test_a_longer_task_scales_its_horizon_keyword() -> None:
    tmaze = cue_task("TMaze-v1", {"corridor_length": 4})
    assert [tmaze.scaled(f).horizon for f in (1, 2, 4)] == [4, 8, 16]
    assert tmaze.scaled(4).env_kwargs == {"corridor_length": 16}
    assert [CUE5.scaled(f).horizon for f in (2, 4)] == [11, 21]  # delay 10, 20; the query one later
    assert cue_task("CueRecall-v0").scaled(2).env_kwargs == {"delay": 20}  # the card's default, doubled
    with pytest.raises(ValueError, match="factor must be an int >= 1, got 0"):
        CUE5.scaled(0)


def test_a_horizon_the_env_refuses_is_left_empty() -> None:
    long = cue_task("TMaze-v1", {"corridor_length": 4000})
    assert long.can_scale(2) and not long.can_scale(4)
    with pytest.raises(
        ValueError, match=r"corridor_length=16000 \(4x\) is above the largest the env takes, 10000"
    ):
        long.scaled(4)
    agent = PPO("TMaze-v1", "none", env_kwargs={"corridor_length": 4000}, seed=0, n_envs=2)
    result = generalise(agent, long, "none", factors=(4,), n_episodes=2)
    assert result.horizons == [0] and np.isnan(result.return_at(4)) and result.limited_by == [""]


def test_the_reach_of_windowed_kinds() -> None:
    assert memory_reach({"kind": "framestack", "window": 4}) == (3, "frames")
    assert memory_reach({"kind": "transformer", "hidden_size": 16, "window": 8}) == (7, "window")
    two_layers = {"kind": "transformer", "hidden_size": 16, "window": 8, "num_layers": 2}
    assert memory_reach(two_layers) == (14, "window")  # each layer looks window - 1 further back
    assert memory_reach({"kind": "gtrxl", "hidden_size": 16, "window": 5}) == (4, "window")
    assert memory_reach("gru") == (None, "") and memory_reach(None) == (None, "")
    window8 = {"kind": "transformer", "hidden_size": 16, "window": 8}
    assert [limited_by(window8, CUE5.scaled(f)) for f in (1, 2, 4)] == ["", "window", "window"]
    assert [limited_by(two_layers, CUE5.scaled(f)) for f in (1, 2, 4)] == ["", "", "window"]
    assert limited_by("lstm", CUE5.scaled(4)) == ""


def test_each_kind_says_what_it_sees_of_the_past() -> None:
    """The reach is the kind's own (``Memory.visible_past``): only the windowed kinds
    bound it, and the analysis keeps no table of kinds."""
    bounded = {k for k in MEMORY_KINDS if memory_class(k).visible_past(MemoryConfig.from_any(k)) is not None}
    assert bounded == {"framestack", "transformer", "gtrxl"}
    assert not hasattr(generalisation, "_WINDOWED")


def _trained_gru() -> PPO:
    agent = PPO(
        "CueRecall-v0",
        {"kind": "gru", "hidden_size": 16},
        env_kwargs={"delay": 5},
        seed=1,
        n_envs=8,
        n_steps=14,
        bptt_length=7,
        num_minibatches=2,
    )
    agent.learn(4_480)
    return agent


def test_the_final_weights_are_evaluated_at_longer_horizons_deterministically() -> None:
    agent = _trained_gru()
    result = generalise(agent, CUE5, {"kind": "gru", "hidden_size": 16}, n_episodes=40)
    assert result.factors == [2, 4] and result.horizons == [11, 21] and result.limited_by == ["", ""]
    assert all(0.0 <= r <= 1.0 for r in result.returns) and result.limit() == ("", None)
    returns = evaluate_at(agent, CUE5, 2, n_episodes=40)
    assert returns.shape == (40,) and set(np.unique(returns)) <= {0.0, 1.0}
    assert returns.mean() == result.return_at(2)
    assert np.array_equal(evaluate_at(agent, CUE5, 2, n_episodes=40), returns)  # fixed seeds
    assert GeneralisationResult.from_dict(result.to_dict()) == result
    assert np.isnan(result.return_at(3))


def test_a_transformer_whose_window_misses_the_longer_cue_is_marked() -> None:
    memory = {"kind": "transformer", "hidden_size": 16, "window": 8}
    agent = PPO("CueRecall-v0", memory, env_kwargs={"delay": 5}, seed=0, n_envs=4)
    result = generalise(agent, CUE5, memory, n_episodes=8)
    assert result.limited_by == ["window", "window"] and result.limit() == ("window", 2)
    stack = {"kind": "framestack", "window": 4}
    agent = PPO("CueRecall-v0", stack, env_kwargs={"delay": 5}, seed=0, n_envs=4)
    assert generalise(agent, CUE5, stack, n_episodes=8).limit() == ("frames", 2)
