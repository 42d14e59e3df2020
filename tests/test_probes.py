"""Memory probes (issue 53, harness/probes.py): a linear probe reads the cue from what the
heads read, at chance where nothing holds it; every agent with a memory trunk gets one."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from pomdp_bench.agents.registry import agent_names, get_agent
from pomdp_bench.envs.make import make_vector_env
from pomdp_bench.harness.analysis_records import KEPT_CUE_UNUSED, LOST_CUE, OTHER, failure_class
from pomdp_bench.harness.cue_tasks import cue_task
from pomdp_bench.harness.probes import (
    TrunkRecorder,
    collect_features,
    memory_blocks,
    probe_accuracy,
    probe_agent,
    probe_steps,
    trunks_of,
)

CUE5 = cue_task("CueRecall-v0", {"delay": 5})


@pytest.mark.parametrize("n_cues", [2, 4])
def test_a_linearly_decodable_cue_reads_near_1_and_noise_at_chance(n_cues: int) -> None:
    rng = np.random.default_rng(0)
    labels = rng.integers(0, n_cues, 400)
    directions = rng.normal(size=(n_cues, 16))
    decodable = directions[labels] + 0.3 * rng.normal(size=(400, 16))
    assert probe_accuracy(decodable, labels) >= 0.97
    noise = rng.normal(size=(400, 16))
    assert abs(probe_accuracy(noise, labels) - 1 / n_cues) <= 0.1
    constant = np.ones((400, 16))
    assert probe_accuracy(constant, labels) == pytest.approx(np.bincount(labels).max() / 400, abs=0.02)
    assert probe_accuracy(noise, labels) == probe_accuracy(noise, labels)  # deterministic


def test_probe_accuracy_refuses_bad_input_and_is_nan_with_one_class() -> None:
    assert math.isnan(probe_accuracy(np.zeros((10, 2)), np.zeros(10)))
    with pytest.raises(ValueError, match="features hold 10 rows but labels 9"):
        probe_accuracy(np.zeros((10, 2)), np.zeros(9))
    with pytest.raises(ValueError, match="folds must be >= 2"):
        probe_accuracy(np.zeros((10, 2)), np.arange(10) % 2, folds=1)


def test_probe_steps_are_the_quarters_of_the_way_to_the_decision() -> None:
    assert probe_steps(6) == [2, 3, 5, 6]
    assert probe_steps(10) == [3, 5, 8, 10]
    assert probe_steps(100) == [25, 50, 75, 100]


def test_failure_classes() -> None:
    # T-Maze: chance 0.5, ceiling 0.5, optimum 1; the line is 0.75
    assert failure_class(0.55, 0.5, 0.5, 0.5, 1.0) == LOST_CUE
    assert failure_class(0.95, 0.5, 0.52, 0.5, 1.0) == KEPT_CUE_UNUSED
    assert failure_class(0.95, 0.5, 0.7, 0.5, 1.0) == OTHER  # kept it, used it a little
    assert failure_class(0.75, 0.5, 0.5, 0.5, 1.0) == OTHER
    assert failure_class(0.55, 0.5, 0.9, 0.5, 1.0) == ""  # above the line: not a failure
    assert failure_class(math.nan, 0.5, 0.5, 0.5, 1.0) == ""  # not probed


def test_tmaze_and_cue_recall_cues_are_read_from_the_first_observation() -> None:
    tmaze = cue_task("TMaze-v1", {"corridor_length": 4})
    env = make_vector_env("TMaze-v1", 16, corridor_length=4)
    obs, _ = env.reset(seed=3)
    goal = env.unwrapped._batch.goal  # [N] +1 upper arm, -1 lower
    assert (tmaze.cues(obs) == (goal < 0)).all()
    assert (tmaze.horizon, tmaze.episode_length, tmaze.chance) == (4, 5, 0.5)
    recall = make_vector_env("CueRecall-v0", 16, delay=5)
    obs, _ = recall.reset(seed=3)
    assert (CUE5.cues(obs) == recall.unwrapped._batch._cue).all()
    assert (CUE5.horizon, CUE5.episode_length, CUE5.chance) == (6, 7, 0.25)


@pytest.mark.parametrize(
    ("env_id", "kwargs"),
    [("MaskedCartPole-v0", {}), ("TMazeActive-v1", {}), ("TMaze-v1", {"active": True})],
)
def test_other_envs_are_refused_naming_them_and_the_valid_ones(env_id, kwargs) -> None:
    with pytest.raises(
        ValueError,
        match=f"env '{env_id}'.*cue analyses take envs whose card gives a cue: CueRecall-v0, TMaze-v0, TMaze-v1",
    ):
        cue_task(env_id, kwargs)


def _ppo(memory: str, steps: int) -> object:
    from pomdp_bench.agents.ppo import PPO

    agent = PPO(
        "CueRecall-v0",
        {"kind": memory, "hidden_size": 16} if memory != "none" else "none",
        env_kwargs={"delay": 5},
        seed=1,
        n_envs=8,
        n_steps=14,
        bptt_length=7,
        num_minibatches=2,
    )
    if steps:
        agent.learn(steps)
    return agent


def test_a_trained_gru_decodes_the_cue_and_memory_none_does_not() -> None:
    gru = probe_agent(_ppo("gru", 4_480), CUE5, n_episodes=128)
    assert gru.steps == [2, 3, 5, 6] and gru.chance == 0.25
    assert min(gru.accuracies) >= 0.9, gru
    none = probe_agent(_ppo("none", 0), CUE5, n_episodes=128)
    assert all(abs(a - 0.25) <= 0.1 for a in none.accuracies), none
    assert probe_agent(_ppo("gru", 0), CUE5, n_episodes=64) == probe_agent(
        _ppo("gru", 0), CUE5, n_episodes=64
    )


def test_features_are_what_the_heads_read_at_each_probed_step() -> None:
    agent = _ppo("gru", 0)
    features, cues = collect_features(agent, CUE5, [0, 6], n_episodes=12, seed=5)
    assert features[0].shape == (12, 16) and features[6].shape == (12, 16) and cues.shape == (12,)
    env = make_vector_env("CueRecall-v0", 12, delay=5)
    from pomdp_bench.agents.common.seeding import env_seeds

    obs, _ = env.reset(seed=env_seeds(5, "evaluate", 12))
    with torch.no_grad():
        x = agent.policy.preprocess(torch.as_tensor(agent.normalizer.obs(obs))).unsqueeze(0)
        state = agent.policy.actor_trunk.initial_state(12)
        y, _ = agent.policy.actor_trunk(x, state, torch.ones(1, 12, dtype=torch.bool))
    assert np.allclose(features[0], y[0].numpy(), atol=1e-6)
    with pytest.raises(ValueError, match=r"probe steps \[7\] lie outside \[0, 6\]"):
        collect_features(agent, CUE5, [7], n_episodes=4)


ELSEWHERE = {"sb3_ppo"}  # agents that keep their memory outside our modules (sb3-contrib's LSTM)


@pytest.mark.parametrize("name", agent_names())
def test_every_registered_agent_with_a_memory_trunk_gets_probes(name: str) -> None:
    """From the registry, so an agent added later is probed with no change to probes.py;
    one that keeps its memory elsewhere (the sb3-contrib adapter) is refused by name."""
    if name == "sb3_ppo":
        pytest.importorskip("sb3_contrib")
    cls = get_agent(name).load_class()
    # lstm: the one kind every shipped agent takes (the sb3-contrib adapter has only it)
    agent = cls("CueRecall-v0", {"kind": "lstm", "hidden_size": 8}, env_kwargs={"delay": 2}, seed=0)
    task = cue_task("CueRecall-v0", {"delay": 2})
    if name in ELSEWHERE:
        assert not trunks_of(agent)
        with pytest.raises(ValueError, match="has no memory block to probe"):
            TrunkRecorder(agent)
        return
    result = probe_agent(agent, task, n_episodes=24)
    assert result.steps == [1, 2, 2, 3] and all(0 <= a <= 1 for a in result.accuracies)


def test_dqn_without_memory_is_probed_through_its_encoder() -> None:
    """DQN skips an identity memory; what its head reads is then the encoder's output."""
    cls = get_agent("dqn").load_class()
    agent = cls("CueRecall-v0", "none", env_kwargs={"delay": 2}, seed=0)
    result = probe_agent(agent, cue_task("CueRecall-v0", {"delay": 2}), n_episodes=64)
    assert abs(result.accuracy - 0.25) <= 0.1


def test_pqn_is_probed_through_its_memory_and_without_one_through_its_encoder() -> None:
    """PQN's network has no Trunk: its head reads the memory's output, or the encoder's
    where the memory is ``none``."""
    cls = get_agent("pqn").load_class()
    task = cue_task("CueRecall-v0", {"delay": 2})
    agent = cls("CueRecall-v0", {"kind": "gru", "hidden_size": 8}, env_kwargs={"delay": 2}, seed=0)
    (reader, encoder), *rest = memory_blocks(agent)
    assert not rest and reader is agent.q_net.memory and encoder is agent.q_net.encoder
    features, _ = collect_features(agent, task, [0, 3], n_episodes=8)
    assert features[3].shape == (8, 8)
    plain = cls("CueRecall-v0", "none", env_kwargs={"delay": 2}, seed=0)
    result = probe_agent(plain, task, n_episodes=64)
    assert abs(result.accuracy - 0.25) <= 0.1  # the cue is gone from what a memoryless head reads
