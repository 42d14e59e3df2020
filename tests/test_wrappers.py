"""pomdp_bench.envs.wrappers.PreviousReward and its vector twin."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import pomdp_bench  # noqa: F401
from pomdp_bench.agents import PPO
from pomdp_bench.envs.make import make_vector_env
from pomdp_bench.envs.wrappers import PreviousReward, PreviousRewardVector, check_wrappers

PREVIOUS_REWARD = "pomdp_bench.envs.wrappers:PreviousReward"


def test_previous_reward_appends_the_last_reward() -> None:
    """T-Maze corridor 4: a step behind schedule reads -1/4, times the scale; 0 at reset
    and on schedule; the observation space grows by one unbounded entry."""
    env = PreviousReward(gym.make("TMaze-v1", corridor_length=4), scale=4)
    assert env.observation_space.shape == (3,) and env.observation_space.high[-1] == np.inf
    obs, _ = env.reset(seed=0)
    assert obs[-1] == 0 and env.observation_space.contains(obs)
    obs, reward, *_ = env.step(0)  # right: on schedule
    assert reward == 0 and obs[-1] == 0
    obs, reward, *_ = env.step(1)  # up in the corridor: behind schedule
    assert reward == pytest.approx(-0.25) and obs[-1] == pytest.approx(-1.0)
    obs, _ = env.reset(seed=1)
    assert obs[-1] == 0


@pytest.mark.parametrize("mode", [AutoresetMode.SAME_STEP, AutoresetMode.NEXT_STEP])
def test_vector_twin_matches_the_wrapped_copies(mode: AutoresetMode) -> None:
    """The vector twin over the native T-Maze gives the observations, rewards and final
    observations of Gymnasium's SyncVectorEnv of wrapped copies, across autoresets."""
    fast = PreviousRewardVector(
        gym.make_vec(
            "TMaze-v1", 4, vectorization_mode="vector_entry_point", autoreset_mode=mode, corridor_length=3
        ),
        scale=3,
    )
    slow = gym.make_vec(
        "TMaze-v1",
        4,
        vectorization_mode="sync",
        vector_kwargs={"autoreset_mode": mode},
        wrappers=[lambda e: PreviousReward(e, scale=3)],
        corridor_length=3,
    )
    a, _ = fast.reset(seed=3)
    b, _ = slow.reset(seed=3)
    np.testing.assert_array_equal(a, b)
    rng = np.random.default_rng(0)
    for _ in range(40):  # 10 episodes of 4 steps
        actions = rng.integers(0, 4, 4)
        ra, rb = fast.step(actions), slow.step(actions)
        for x, y in zip(ra[:4], rb[:4], strict=True):
            np.testing.assert_array_equal(x, y)
        if mode == AutoresetMode.SAME_STEP:
            for i in np.flatnonzero(ra[2] | ra[3]):
                np.testing.assert_array_equal(ra[4]["final_obs"][i], rb[4]["final_obs"][i])
    assert fast.single_observation_space == slow.single_observation_space


def test_make_vector_env_keeps_the_native_path() -> None:
    """A wrapper with a vector twin keeps the natively vectorized env; one without falls
    back to SyncVectorEnv; PPO trains through it and saves the wrapper."""
    wrappers = check_wrappers([{"path": PREVIOUS_REWARD, "kwargs": {"scale": 10}}])
    assert isinstance(make_vector_env("TMaze-v1", 4, wrappers=wrappers), PreviousRewardVector)
    plain = check_wrappers(["gymnasium.wrappers:RecordEpisodeStatistics"])
    assert isinstance(make_vector_env("TMaze-v1", 4, wrappers=wrappers + plain), gym.vector.SyncVectorEnv)
    model = PPO("TMaze-v1", "gru", n_envs=4, n_steps=16, env_wrappers=wrappers, device="cpu")
    assert model.observation_space.shape == (3,)
    model.learn(64)
    assert np.isfinite(model.evaluate(4)).all()


def test_previous_reward_refuses_bad_input() -> None:
    with pytest.raises(TypeError, match="1-d Box"):
        PreviousReward(_discrete_env())
    for bad in (0, float("inf")):
        with pytest.raises(ValueError, match="scale"):
            PreviousReward(gym.make("TMaze-v1"), scale=bad)
    with pytest.raises(TypeError, match="scale"):
        PreviousReward(gym.make("TMaze-v1"), scale="2")


def _discrete_env() -> gym.Env:
    return gym.make("FrozenLake-v1")


def test_a_gymnasium_vector_twin_without_same_step_mode_falls_back_to_copies() -> None:
    """Gymnasium's own CartPole twin takes no ``autoreset_mode``: copies step instead."""
    from gymnasium.vector import AutoresetMode

    from pomdp_bench.envs.make import make_vector_env

    env = make_vector_env("CartPole-v1", 2)
    try:
        assert env.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
        obs, _ = env.reset(seed=0)
        assert obs.shape == (2, 4)
    finally:
        env.close()


def test_previous_action_appends_the_last_action_and_the_first_step_flag() -> None:
    """POPGym's inputs on any env: (obs, previous action, first-step flag); the null action
    0 and flag 1 at reset, then the action taken and flag 0; the tuple fits its space."""
    from pomdp_bench.envs.wrappers import PreviousAction

    env = PreviousAction(gym.make("TMaze-v1", corridor_length=4))
    assert env.observation_space == gym.spaces.Tuple(
        (
            gym.make("TMaze-v1", corridor_length=4).observation_space,
            gym.spaces.Discrete(4),
            gym.spaces.Discrete(2),
        )
    )
    obs, _ = env.reset(seed=0)
    assert obs[1] == 0 and obs[2] == 1 and env.observation_space.contains(obs)
    obs, *_ = env.step(2)
    assert obs[1] == 2 and obs[2] == 0 and env.observation_space.contains(obs)
    obs, _ = env.reset(seed=1)
    assert obs[1] == 0 and obs[2] == 1
    bare = PreviousAction(gym.make("TMaze-v1", corridor_length=4), first_flag=False)
    assert len(bare.observation_space.spaces) == 2 and len(bare.reset(seed=0)[0]) == 2


def test_previous_action_refuses_what_it_cannot_read() -> None:
    from pomdp_bench.envs.wrappers import PreviousAction

    with pytest.raises(TypeError, match="first_flag must be a bool"):
        PreviousAction(gym.make("TMaze-v1"), first_flag=1)

    class TextActions(gym.Env):
        observation_space = gym.spaces.Discrete(2)
        action_space = gym.spaces.Text(4)

    with pytest.raises(TypeError, match="Discrete, MultiDiscrete, MultiBinary or Box"):
        PreviousAction(TextActions())


def test_previous_action_trains_in_a_suite_entry() -> None:
    """Named as a suite names it: PPO flattens the tuple (one-hots) and trains."""
    agent = PPO(
        "TMaze-v1",
        "gru",
        env_kwargs={"corridor_length": 2},
        n_envs=4,
        n_steps=8,
        env_wrappers=["pomdp_bench.envs.wrappers:PreviousAction"],
        seed=0,
    )
    agent.learn(64)
    assert agent.observation_space.shape == (agent.raw_observation_space[0].shape[0] + 4 + 2,)
