"""Runs are independent samples: no two runs of a suite share an env episode, in
training or in evaluation, and training never shares one with evaluation."""

from __future__ import annotations

import numpy as np
import pytest

from pomdp_bench.agents import PPO
from pomdp_bench.agents.common.seeding import env_seeds
from pomdp_bench.agents.sac import SAC
from pomdp_bench.envs.make import make_vector_env
from pomdp_bench.envs.random_streams import key_from_seed
from pomdp_bench.harness.suites import expand, load_suite

FINGERPRINT_STEPS = 48  # several episodes of every copy on TMaze and CueRecall at the suite's sizes


def fingerprint(env_id: str, env_kwargs: dict, seeds: list[int]) -> bytes:
    """Every observation of the first steps of each copy under a fixed action: the
    episode parameters (cue, goal side, initial state, noise) of several episodes."""
    env = make_vector_env(env_id, len(seeds), **env_kwargs)
    obs, _ = env.reset(seed=seeds)
    action = np.zeros_like(env.action_space.sample())
    if env_id.startswith("TMazeActive"):
        action[:] = 2  # left, to the oracle cell: the goal side shows only there
    frames = [obs]
    for _ in range(FINGERPRINT_STEPS):
        obs, *_ = env.step(action)
        frames.append(obs)
    env.close()
    return np.stack(frames).tobytes()


def test_env_seeds_are_split_not_adjacent() -> None:
    a, b = env_seeds(0, "train", 8), env_seeds(1, "train", 8)
    assert len(set(a) | set(b) | set(env_seeds(0, "evaluate", 8))) == 24
    assert env_seeds(0, "train", 8) == a and env_seeds(0, "train", 4) == a[:4]
    assert all(0 <= s < 2**63 for s in a)
    with pytest.raises(ValueError, match=r"purpose must be 'train' or 'evaluate'"):
        env_seeds(0, "replay", 2)
    with pytest.raises(ValueError, match="non-negative int"):
        env_seeds(-1, "train", 2)


@pytest.mark.parametrize("agent", ["ppo", "sac"])
def test_agents_reset_from_the_split_streams(agent: str) -> None:
    if agent == "ppo":
        model = PPO("CueRecall-v0", "gru", env_kwargs={"delay": 3}, n_envs=4, n_steps=8, seed=3)
    else:
        model = SAC("CueRecall-v0", "gru", env_kwargs={"delay": 3}, n_envs=4, seed=3)
    model._start_episodes()
    fresh = make_vector_env("CueRecall-v0", 4, delay=3)
    obs, _ = fresh.reset(seed=env_seeds(3, "train", 4))
    np.testing.assert_array_equal(obs, np.asarray(model._obs))  # what the agent starts training from
    assert not np.array_equal(obs, fresh.reset(seed=[3, 4, 5, 6])[0])  # not Gymnasium's seed + i
    # Evaluation: seed s's episodes are not seed s + 1's, and evaluating twice repeats them.
    assert np.array_equal(model.evaluate(8), model.evaluate(8))
    assert fingerprint("CueRecall-v0", {"delay": 3}, env_seeds(3, "evaluate", 4)) != fingerprint(
        "CueRecall-v0", {"delay": 3}, env_seeds(4, "evaluate", 4)
    )


def _copies(spec) -> tuple[int, int]:
    """(training copies, evaluation copies) of a spec's agent, as the agents choose them."""
    default = {"ppo": 8, "sac": 1, "sb3_ppo": 8}[spec.agent]
    n_envs = int(spec.hyperparams.get("n_envs", default))
    max_copies = n_envs if spec.agent == "ppo" else 16
    return n_envs, min(spec.eval_episodes, max_copies)


def test_no_two_runs_of_the_memory_suite_share_an_episode() -> None:
    specs = [s for s in expand(load_suite("memory")) if s.agent in ("ppo", "sac")]
    seeds = [s.agent_seed() for s in specs]
    assert len(set(seeds)) == len(specs)
    keys, prints = [], set()
    for spec, seed in zip(specs, seeds, strict=True):
        n_train, n_eval = _copies(spec)
        train, evaluate = env_seeds(seed, "train", n_train), env_seeds(seed, "evaluate", n_eval)
        keys += [
            *key_from_seed(np.array(train, dtype=np.uint64)),
            *key_from_seed(np.array(evaluate, np.uint64)),
        ]
        for purpose in (train, evaluate):
            prints.add(
                (
                    spec.env_id,
                    repr(sorted(spec.env_kwargs.items())),
                    fingerprint(spec.env_id, spec.env_kwargs, purpose),
                )
            )
    # Every copy of every run, in training and in evaluation, has its own stream ...
    assert len(set(int(k) for k in keys)) == len(keys)
    # ... and what those streams produce (cues, goal sides, initial states) differs run to run.
    assert len(prints) == 2 * len(specs)
