"""Each run keeps what it learned (issue 47): the store holds its agent save and
parameter count, and ``ResultStore.load_agent`` rebuilds the trained agent."""

from __future__ import annotations

import io
import sqlite3

import numpy as np
import pytest

from pomdp_bench.agents.sac import SAC
from pomdp_bench.harness.spec import RunSpec
from pomdp_bench.harness.store import ResultStore
from pomdp_bench.harness.training import build_agent, execute

SPEC = RunSpec(
    env_id="TMaze-v1",
    env_kwargs={"corridor_length": 4},
    agent="ppo",
    memory={"kind": "gru", "hidden_size": 16},
    bptt_length=None,
    seed=3,
    total_timesteps=2_048,
    eval_episodes=12,
    stop=None,
)


def test_a_stored_run_reloads_into_the_agent_that_made_its_final_evaluation(tmp_path) -> None:
    """The reloaded agent repeats the run's final evaluation episode for episode and
    trains on; the stored parameter count is the policy's (actor, critic and memory)."""
    result = execute(SPEC)
    assert result.status == "ok", result.error
    expected = sum(p.numel() for p in build_agent(SPEC).policy.parameters())
    assert result.parameters == expected
    with ResultStore(tmp_path) as store:
        store.write(SPEC, result)
        assert store.rows()[0]["result"]["parameters"] == expected
        assert "weights" not in store.rows()[0]["result"]  # the blob lives beside the JSON
        agent = store.load_agent(SPEC.key())
    assert agent.num_timesteps == result.timesteps
    assert np.allclose(agent.evaluate(SPEC.eval_episodes), result.final_returns)
    agent.learn(512, reset_num_timesteps=False)  # from fresh optimisers, counting on
    assert agent.num_timesteps >= result.timesteps + 512


def test_weights_travel_with_copied_runs_and_old_stores_say_they_have_none(tmp_path) -> None:
    result = execute(SPEC)
    with ResultStore(tmp_path / "a") as source, ResultStore(tmp_path / "b") as target:
        source.write(SPEC, result)
        target.copy_runs("memory", source, [SPEC.key()])
        assert target.weights(SPEC.key()) == result.weights
    old = tmp_path / "old"
    with ResultStore(old) as store:
        store.write(SPEC, result.__class__(**{**result.to_dict(), "weights": None}))
    with sqlite3.connect(old / "results.sqlite") as conn:  # a layout-2 store: no weights table
        conn.execute("DROP TABLE weights")
        conn.execute("PRAGMA user_version = 2")
    with ResultStore(old) as store:
        assert store.weights(SPEC.key()) is None
        with pytest.raises(ValueError, match="has no stored weights"):
            store.load_agent(SPEC.key())
        with pytest.raises(KeyError, match="no run 'nope'"):
            store.load_agent("nope")


def test_a_save_without_optimisers_acts_the_same_and_trains_on() -> None:
    """SAC with a GRU: the optimiser-free save is smaller and acts as the agent did (a
    loaded SAC starts with an empty replay buffer, so training on is PPO's test above)."""
    agent = SAC(
        "MaskedPendulum-v0",
        memory={"kind": "gru", "hidden_size": 8},
        sequence_length=4,
        learning_starts=64,
        batch_size=8,
        seed=0,
    )
    agent.learn(128)
    full, slim = io.BytesIO(), io.BytesIO()
    agent.save(full)
    agent.save(slim, optimizers=False)
    assert len(slim.getvalue()) < 0.6 * len(full.getvalue())
    slim.seek(0)
    copy = SAC.load(slim)
    assert agent.num_parameters == copy.num_parameters > 0
    assert np.allclose(agent.evaluate(2, seed=5), copy.evaluate(2, seed=5))
