"""T-Maze (passive and active): ceilings, episode semantics, penalties, errors, rendering.

The ceiling tests play policies in the vectorized twin, one episode per copy.
Sampled means use 4096 episodes: a return of 0.5 from a fair coin has binomial
standard deviation sqrt(0.25 / 4096) = 0.0078, so the tolerance of 0.035 is
4.5 standard deviations (a false failure about once in 10^5 seeds).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import pomdp_bench  # noqa: F401  (registers the ids)
from pomdp_bench.envs.cards import get_card
from pomdp_bench.envs.tmaze import DOWN, LEFT, RIGHT, UP, TMazeEnv, TMazeVectorEnv

EPISODES = 4096
TOLERANCE = 0.035  # 4.5 binomial standard deviations at p = 0.5, n = 4096 (see the module docstring)
VARIANTS = [pytest.param(False, id="passive"), pytest.param(True, id="active")]

Policy = Callable[[np.ndarray], np.ndarray]


def episode_length(corridor_length: int, active: bool) -> int:
    return corridor_length + (3 if active else 1)


def play(env: TMazeVectorEnv, policy: Policy, seed: int | list[int]) -> tuple[np.ndarray, np.ndarray]:
    """One episode in every copy; returns ``(returns [N], rewards [T, N])``."""
    obs, _ = env.reset(seed=seed)
    rewards = []
    terminated = np.zeros(env.num_envs, dtype=bool)
    while not terminated.any():
        obs, reward, terminated, truncated, _ = env.step(policy(obs))
        assert not truncated.any()
        rewards.append(reward)
    assert terminated.all(), "every copy ends at the same step"
    rewards_tn = np.stack(rewards)
    return rewards_tn.sum(axis=0, dtype=np.float64), rewards_tn


def memoryless(obs: np.ndarray) -> np.ndarray:
    """The best memoryless policy: right along the corridor, up at the junction, then hold (up is a wall)."""
    return np.where(obs[:, 0] == 0, RIGHT, UP)


class Oracle:
    """Remembers the cue from its own observations: fetch it if unseen, walk right, turn towards it."""

    def __init__(self, num_envs: int) -> None:
        self.cue = np.zeros(num_envs)  # 0 until seen, then +1 (up) or -1 (down)

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        shown = (obs[:, 0] == 0) & (obs[:, 1] != 0)
        self.cue = np.where(shown, obs[:, 1], self.cue)
        walk = np.where(self.cue == 0, LEFT, RIGHT)
        turn = np.where(self.cue > 0, UP, DOWN)
        return np.where(obs[:, 0] == 1, turn, walk)


@pytest.mark.parametrize("active", VARIANTS)
def test_memoryless_policy_scores_the_ceiling(active: bool) -> None:
    env = TMazeVectorEnv(EPISODES, active=active)
    returns, rewards = play(env, memoryless, seed=0)
    assert len(rewards) == episode_length(10, active)
    assert abs(returns.mean() - 0.5) < TOLERANCE
    assert set(np.unique(returns)) <= {0.0, 1.0}  # never behind schedule
    card = get_card("TMazeActive-v1" if active else "TMaze-v1")
    assert card.ff_ceiling == 0.5 and card.optimal_return == 1.0


@pytest.mark.parametrize("active", VARIANTS)
def test_oracle_policy_scores_the_optimum(active: bool) -> None:
    env = TMazeVectorEnv(EPISODES, active=active)
    returns, _ = play(env, Oracle(EPISODES), seed=1)
    np.testing.assert_array_equal(returns, 1.0)


@pytest.mark.parametrize("active", VARIANTS)
@pytest.mark.parametrize("corridor_length", [1, 10])
def test_no_deterministic_memoryless_policy_beats_the_ceiling(active: bool, corridor_length: int) -> None:
    """Exact: every one of the 4^6 maps from the 6 possible observations to actions, under both goals."""
    # The maze is deterministic given the goal, so one episode per (policy, goal) is its exact value.
    seeds = {}
    for seed in range(100):
        env = TMazeEnv(active=active)
        env.reset(seed=seed)
        seeds.setdefault(int(env._batch.goal[0]), seed)
    policies = np.array(list(itertools.product(range(4), repeat=6)))  # [4096, 6]
    n = len(policies)
    env = TMazeVectorEnv(2 * n, corridor_length=corridor_length, active=active)
    table = np.concatenate([policies, policies])  # copy i plays policy i % n

    def act(obs: np.ndarray) -> np.ndarray:
        obs_id = (3 * obs[:, 0] + obs[:, 1] + 1).astype(np.int64)  # the 6 observations -> 0..5
        return table[np.arange(2 * n), obs_id]

    returns, _ = play(env, act, seed=[seeds[1]] * n + [seeds[-1]] * n)
    value = (returns[:n] + returns[n:]) / 2  # goal up and down are equally likely
    assert value.max() == pytest.approx(0.5)


@pytest.mark.parametrize("active", VARIANTS)
def test_corridor_length_1000(active: bool) -> None:
    env = TMazeVectorEnv(64, corridor_length=1000, active=active)
    assert env.single_observation_space.shape == (2,)
    returns, rewards = play(env, Oracle(64), seed=2)
    assert len(rewards) == episode_length(1000, active)
    np.testing.assert_array_equal(returns, 1.0)
    returns, _ = play(env, memoryless, seed=2)
    assert set(np.unique(returns)) <= {0.0, 1.0}


@pytest.mark.parametrize("active", VARIANTS)
@pytest.mark.parametrize("corridor_length", [1, 2, 10])
def test_episode_ends_with_terminated_after_exactly_t_steps(active: bool, corridor_length: int) -> None:
    env = TMazeEnv(corridor_length=corridor_length, active=active)
    length = episode_length(corridor_length, active)
    rng = np.random.default_rng(0)
    for seed in range(5):
        obs, _ = env.reset(seed=seed)
        assert obs in env.observation_space
        for t in range(1, length + 1):
            obs, _, terminated, truncated, _ = env.step(int(rng.integers(4)))
            assert obs in env.observation_space
            assert terminated == (t == length)
            assert not truncated


def test_vector_twin_autoresets_on_the_next_step() -> None:
    env = TMazeVectorEnv(4, corridor_length=2)
    env.reset(seed=0)
    for _ in range(3):
        _, _, terminated, _, _ = env.step(np.full(4, RIGHT))
    assert terminated.all()
    obs, reward, terminated, truncated, _ = env.step(np.full(4, RIGHT))  # the action is ignored
    np.testing.assert_array_equal(reward, 0.0)
    assert not terminated.any() and not truncated.any()
    assert (obs[:, 0] == 0).all() and (np.abs(obs[:, 1]) == 1).all()  # a new episode on the oracle


def test_same_step_final_obs_is_the_arm_reached() -> None:
    env = TMazeVectorEnv(8, corridor_length=3, autoreset_mode=AutoresetMode.SAME_STEP)
    obs, _ = env.reset(seed=0)
    oracle = Oracle(8)
    cue = obs[:, 1].copy()
    for _ in range(4):
        obs, reward, terminated, _, info = env.step(oracle(obs))
    assert terminated.all()
    final = np.stack(info["final_obs"])
    np.testing.assert_array_equal(final, np.stack([np.ones(8), cue], axis=1))
    np.testing.assert_array_equal(reward, 1.0)
    assert (obs[:, 0] == 0).all()  # already the next episode's first observation


def test_observation_encoding_passive() -> None:
    env = TMazeEnv(corridor_length=3)
    obs, _ = env.reset(seed=0)
    goal = int(env._batch.goal[0])
    assert obs.tolist() == [0, goal]  # the cue on the oracle, first visit
    obs, *_ = env.step(LEFT)  # bump into the wall: still on the oracle, second visit
    assert obs.tolist() == [0, 0]
    env.reset(seed=0)
    seen = [env.step(a)[0].tolist() for a in (RIGHT, RIGHT, RIGHT, DOWN)]
    assert seen == [[0, 0], [0, 0], [1, 0], [1, -1]]


def test_observation_encoding_active() -> None:
    env = TMazeEnv(corridor_length=3, active=True)
    obs, _ = env.reset(seed=0)
    goal = int(env._batch.goal[0])
    assert obs.tolist() == [0, 0]  # the start looks like any corridor cell
    assert env.step(LEFT)[0].tolist() == [0, goal]  # the oracle, first visit
    assert env.step(RIGHT)[0].tolist() == [0, 0]
    assert env.step(LEFT)[0].tolist() == [0, 0]  # the oracle again: no cue


def test_penalty_for_being_behind_schedule_passive() -> None:
    env = TMazeEnv(corridor_length=10)  # v1: -1/L, as Ni et al.'s reference
    env.reset(seed=0)
    rewards = [env.step(LEFT)[1] for _ in range(11)]  # stuck on the oracle all episode
    np.testing.assert_allclose(rewards, [-1 / 10] * 10 + [0.0], rtol=1e-6)
    env.reset(seed=0)
    # One step lost at the start: behind from then on, and too late to reach an arm.
    rewards = [env.step(a)[1] for a in [UP] + [RIGHT] * 10]
    np.testing.assert_allclose(rewards, [-1 / 10] * 10 + [0.0], rtol=1e-6)
    env.reset(seed=0)
    rewards = [env.step(RIGHT)[1] for _ in range(10)]  # on schedule: no penalty
    assert rewards == [0.0] * 10


def test_penalty_for_being_behind_schedule_active() -> None:
    env = TMazeEnv(corridor_length=4, active=True)  # T = 7
    env.reset(seed=0)
    # Left to the oracle is on schedule; lingering there one more step is not.
    rewards = [env.step(a)[1] for a in [LEFT, LEFT, RIGHT, RIGHT, RIGHT, RIGHT, RIGHT]]
    np.testing.assert_allclose(rewards, [0.0] + [-1 / 4] * 5 + [0.0], rtol=1e-6)
    env.reset(seed=0)
    # Skipping the oracle keeps two steps in hand: never behind.
    rewards = [env.step(a)[1] for a in [RIGHT, RIGHT, RIGHT, RIGHT, UP, UP]]
    assert rewards == [0.0] * 6


@pytest.mark.parametrize(("env_id", "step_penalty"), [("TMaze-v1", 1 / 10), ("TMaze-v0", 1 / 11)])
def test_versions_differ_in_the_step_penalty_alone(env_id: str, step_penalty: float) -> None:
    """v1 charges the reference's 1/L a step behind schedule, v0 charged 1/T; the rest is equal."""
    env, reference = gym.make(env_id), TMazeEnv(corridor_length=10)
    for seed in range(3):
        (obs, _), (ref_obs, _) = env.reset(seed=seed), reference.reset(seed=seed)
        np.testing.assert_array_equal(obs, ref_obs)
        for action in [LEFT, RIGHT] * 3 + [RIGHT] * 4 + [UP]:
            obs, reward, terminated, _, _ = env.step(action)
            ref_obs, ref_reward, ref_terminated, _, _ = reference.step(action)
            np.testing.assert_array_equal(obs, ref_obs)
            assert terminated == ref_terminated
            assert reward == pytest.approx(ref_reward * (step_penalty * 10 if ref_reward < 0 else 1.0))
    with pytest.raises(ValueError, match=r"penalty must be one of \['corridor', 'episode'\], got 'step'"):
        TMazeEnv(penalty="step")


@pytest.mark.parametrize("active", VARIANTS)
def test_goal_reward_only_in_the_goal_arm_at_the_last_step(active: bool) -> None:
    env = TMazeEnv(corridor_length=3, active=active)
    walk = [LEFT, RIGHT] if active else []
    for seed in range(4):
        env.reset(seed=seed)
        goal = int(env._batch.goal[0])
        rewards = [env.step(a)[1] for a in [*walk, RIGHT, RIGHT, RIGHT]]
        assert rewards == [0.0] * len(rewards)
        _, reward, terminated, _, _ = env.step(UP if goal > 0 else DOWN)
        assert terminated and reward == 1.0
        env.reset(seed=seed)
        for a in [*walk, RIGHT, RIGHT, RIGHT]:
            env.step(a)
        _, reward, terminated, _, _ = env.step(DOWN if goal > 0 else UP)
        assert terminated and reward == 0.0


def test_goal_side_is_uniform() -> None:
    env = TMazeVectorEnv(EPISODES)
    env.reset(seed=3)
    assert abs((env._batch.goal == 1).mean() - 0.5) < TOLERANCE


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"corridor_length": 0}, r"corridor_length must be >= 1, got 0"),
        ({"corridor_length": -5}, r"corridor_length must be >= 1, got -5"),
        ({"corridor_length": 10**6}, r"corridor_length must be <= 10000, got 1000000"),
        ({"render_mode": "human"}, r"render_mode must be one of .*'human'"),
    ],
)
def test_invalid_kwargs_raise_value_error(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        TMazeEnv(**kwargs)
    with pytest.raises(ValueError, match=match):
        TMazeVectorEnv(2, **kwargs)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"corridor_length": 2.5}, r"corridor_length must be an int, got 2.5"),
        ({"corridor_length": "10"}, r"corridor_length must be an int, got '10'"),
        ({"active": "yes"}, r"active must be a bool, got 'yes'"),
    ],
)
def test_wrong_kwarg_types_raise_type_and_value_error(kwargs: dict, match: str) -> None:
    for error in (TypeError, ValueError):
        with pytest.raises(error, match=match):
            TMazeEnv(**kwargs)
    with pytest.raises(ValueError, match=r"num_envs must be >= 1, got 0"):
        TMazeVectorEnv(0)


def test_registered_ids_make_both_variants() -> None:
    env = gym.make("TMazeActive-v1")
    assert env.unwrapped._batch.active and env.unwrapped._batch.corridor_length == 10
    vec = gym.make_vec("TMaze-v1", num_envs=3, vectorization_mode="vector_entry_point")
    assert isinstance(vec, TMazeVectorEnv) and not vec._batch.active
    assert gym.make("TMazeActive-v0").unwrapped._batch.penalty == "episode"


@pytest.mark.parametrize("action", [4, -1, 1.5, "up"])
def test_invalid_actions_raise_value_error(action: object) -> None:
    env = TMazeEnv()
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"action .* (invalid|out of range)"):
        env.step(action)
    vec = TMazeVectorEnv(3)
    vec.reset(seed=0)
    with pytest.raises(ValueError, match=r"action 4 is out of range: valid actions are integers in \[0, 3\]"):
        vec.step(np.array([0, 4, 1]))


@pytest.mark.parametrize("active", VARIANTS)
def test_ansi_render_draws_the_maze(active: bool) -> None:
    env = TMazeEnv(corridor_length=5, active=active, render_mode="ansi")
    env.reset(seed=0)
    header, up, corridor, down = env.render().splitlines()
    assert header.startswith(f"t=0/{episode_length(5, active)}")
    assert corridor == ("oA----J" if active else "A----J")
    assert sorted((up.strip(), down.strip())) == ["G", "x"]
    for _ in range(5 + int(active)):
        env.step(RIGHT)
    corridor = env.render().splitlines()[2]
    assert corridor.endswith("A")
    env.step(UP)
    assert env.render().splitlines()[1].strip() == "A"


@pytest.mark.parametrize("active", VARIANTS)
def test_rgb_array_render(active: bool) -> None:
    env = TMazeEnv(corridor_length=5, active=active, render_mode="rgb_array")
    env.reset(seed=0)
    frame = env.render()
    width = 10 * (5 + int(active) + 1)
    assert frame.shape == (30, width, 3) and frame.dtype == np.uint8
    start_x = 1 if active else 0
    agent = frame[10:20, 10 * start_x : 10 * start_x + 10]
    assert (agent == (255, 200, 0)).all(axis=-1).any()  # the agent's square is drawn there
    env.step(RIGHT)
    assert not (env.render() == frame).all()
    vec = TMazeVectorEnv(3, corridor_length=5, active=active, render_mode="rgb_array")
    vec.reset(seed=0)
    frames = vec.render()
    assert len(frames) == 3 and all(f.shape == (30, width, 3) for f in frames)
    assert (
        TMazeEnv.metadata["render_modes"] == TMazeVectorEnv.metadata["render_modes"] == ["ansi", "rgb_array"]
    )
