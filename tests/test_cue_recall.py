"""CueRecall: ceilings, episode semantics, observation layout, errors, rendering.

The ceiling tests play policies in the vectorized twin, one episode per copy,
4096 episodes. A policy right with probability p = 1/K has a mean return with
binomial standard deviation sqrt(p (1 - p) / 4096): 0.0068 at K = 4 and 0.0052
at K = 8, so the tolerance of 0.03 is at least 4.4 standard deviations (a false
failure about once in 10^5 seeds).
"""

from __future__ import annotations

from collections.abc import Callable

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import pomdp_bench  # noqa: F401  (registers the ids)
from pomdp_bench.envs.cards import get_card
from pomdp_bench.envs.cue_recall import CueRecallEnv, CueRecallVectorEnv

EPISODES = 4096
TOLERANCE = 0.03  # >= 4.4 binomial standard deviations at p = 1/K (see the module docstring)
CONFIGS = [pytest.param(4, 10, id="K4-D10"), pytest.param(8, 3, id="K8-D3"), pytest.param(2, 1, id="K2-D1")]

Policy = Callable[[np.ndarray], np.ndarray]


def play(env: CueRecallVectorEnv, policy: Policy, seed: int) -> tuple[np.ndarray, np.ndarray]:
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


class Oracle:
    """Remembers the cue from its own first observation and names it at the query."""

    def __init__(self, num_envs: int, num_cues: int) -> None:
        self.num_cues = num_cues
        self.cue = np.zeros(num_envs, dtype=np.int64)

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        cues = obs[:, : self.num_cues]
        shown = cues.any(axis=1)
        self.cue = np.where(shown, cues.argmax(axis=1), self.cue)
        return self.cue


@pytest.mark.parametrize(("num_cues", "delay"), CONFIGS)
def test_every_memoryless_policy_scores_the_ceiling(num_cues: int, delay: int) -> None:
    """Only the query action counts and the query observation is the same for every cue, so a
    deterministic memoryless policy is fixed by the cue it names there: try each one, and a
    uniformly random answer."""
    env = CueRecallVectorEnv(EPISODES, num_cues=num_cues, delay=delay)
    for k in range(num_cues):
        returns, rewards = play(env, lambda obs, k=k: np.full(len(obs), k), seed=k)
        assert len(rewards) == delay + 2
        assert abs(returns.mean() - 1 / num_cues) < TOLERANCE
    rng = np.random.default_rng(0)
    returns, _ = play(env, lambda obs: rng.integers(0, num_cues, len(obs)), seed=99)
    assert abs(returns.mean() - 1 / num_cues) < TOLERANCE


@pytest.mark.parametrize(("num_cues", "delay"), CONFIGS)
def test_oracle_policy_scores_the_optimum(num_cues: int, delay: int) -> None:
    env = CueRecallVectorEnv(EPISODES, num_cues=num_cues, delay=delay)
    returns, _ = play(env, Oracle(EPISODES, num_cues), seed=1)
    np.testing.assert_array_equal(returns, 1.0)


@pytest.mark.parametrize("reward_delay", [1, 7, 30])
def test_reward_delay_pays_the_answer_later(reward_delay: int) -> None:
    """The answer's reward arrives ``reward_delay`` steps after the query, equal to whether
    the answer named the cue; the episode is that much longer, actions after the answer
    change nothing, and the optimum and the ceiling stay 1 and 1/K."""
    num_cues, delay = 4, 5
    env = CueRecallVectorEnv(EPISODES, num_cues=num_cues, delay=delay, reward_delay=reward_delay)
    oracle = Oracle(EPISODES, num_cues)
    rng = np.random.default_rng(3)

    def oracle_then_noise(obs: np.ndarray) -> np.ndarray:
        answer = oracle(obs)
        after = ~obs.any(axis=1)  # blank steps after the answer: any action is ignored
        return np.where(after, rng.integers(0, num_cues, len(obs)), answer)

    returns, rewards = play(env, oracle_then_noise, seed=4)
    assert len(rewards) == delay + 2 + reward_delay
    np.testing.assert_array_equal(rewards[:-1], 0.0)  # nothing before the reward step
    np.testing.assert_array_equal(returns, 1.0)
    returns, rewards = play(env, lambda obs: np.zeros(len(obs), dtype=np.int64), seed=5)
    assert abs(returns.mean() - 1 / num_cues) < TOLERANCE
    np.testing.assert_array_equal(rewards[:-1], 0.0)


def test_reward_delay_zero_is_the_plain_task() -> None:
    """``reward_delay=0`` plays exactly the episodes of the env without the keyword."""
    plain = CueRecallVectorEnv(64, num_cues=4, delay=6)
    zero = CueRecallVectorEnv(64, num_cues=4, delay=6, reward_delay=0)
    rng = np.random.default_rng(7)
    np.testing.assert_array_equal(plain.reset(seed=11)[0], zero.reset(seed=11)[0])
    for _ in range(30):  # several episodes, through autoresets
        action = rng.integers(0, 4, 64)
        step_a, step_b = plain.step(action), zero.step(action)
        for x, y in zip(step_a[:4], step_b[:4], strict=True):
            np.testing.assert_array_equal(x, y)


def test_reward_delay_single_env_matches_the_twin() -> None:
    """Copy ``i`` of the vector env plays the single env reset with ``seed + i``."""
    vec = CueRecallVectorEnv(3, num_cues=3, delay=2, reward_delay=4)
    obs_v, _ = vec.reset(seed=20)
    singles = [CueRecallEnv(num_cues=3, delay=2, reward_delay=4) for _ in range(3)]
    obs_s = [env.reset(seed=20 + i)[0] for i, env in enumerate(singles)]
    np.testing.assert_array_equal(obs_v, np.stack(obs_s))
    rng = np.random.default_rng(1)
    for _ in range(2 + 2 + 4):  # one whole episode
        action = rng.integers(0, 3, 3)
        obs_v, reward_v, term_v, _, _ = vec.step(action)
        steps = [env.step(int(a)) for env, a in zip(singles, action, strict=True)]
        np.testing.assert_array_equal(obs_v, np.stack([s[0] for s in steps]))
        np.testing.assert_array_equal(reward_v, [s[1] for s in steps])
        np.testing.assert_array_equal(term_v, [s[2] for s in steps])
    assert term_v.all()


def test_card_matches_the_defaults() -> None:
    card = get_card("CueRecall-v0")
    assert card.kwargs == {"num_cues": 4, "delay": 10, "reward_delay": 0}
    assert card.ff_ceiling == 0.25 and card.optimal_return == 1.0
    assert card.memory_horizon == 10 + 1


def test_cues_are_uniform() -> None:
    env = CueRecallVectorEnv(EPISODES)
    obs, _ = env.reset(seed=5)
    counts = np.bincount(obs[:, :4].argmax(axis=1), minlength=4) / EPISODES
    np.testing.assert_allclose(counts, 0.25, atol=TOLERANCE)


def test_observation_layout_over_an_episode() -> None:
    env = CueRecallEnv(num_cues=3, delay=2)  # query at step 3, episode of 4 steps
    obs, _ = env.reset(seed=0)
    cue = int(env._batch._cue[0])
    expected_start = np.zeros(5, dtype=np.float32)
    expected_start[cue] = 1.0
    expected_start[3] = 1.0  # time remaining
    np.testing.assert_array_equal(obs, expected_start)
    expected = [
        [0, 0, 0, 2 / 3, 0],
        [0, 0, 0, 1 / 3, 0],
        [0, 0, 0, 0, 1],  # the query
        [0, 0, 0, 0, 0],  # after the answer
    ]
    for t, row in enumerate(expected, start=1):
        action = cue if t == 4 else (cue + 1) % 3  # the step to t = 4 answers the query
        obs, reward, terminated, truncated, _ = env.step(action)
        assert obs in env.observation_space
        np.testing.assert_allclose(obs, row, rtol=1e-6)
        assert reward == (1.0 if t == 4 else 0.0)
        assert terminated == (t == 4) and not truncated


def test_reward_only_for_the_right_answer_at_the_query() -> None:
    env = CueRecallEnv(num_cues=4, delay=5)
    for seed in range(6):
        obs, _ = env.reset(seed=seed)
        cue = int(obs[:4].argmax())
        rewards = [env.step(cue)[1] for _ in range(6)]  # naming the cue early earns nothing
        _, reward, terminated, _, _ = env.step((cue + 1 + seed % 3) % 4)  # a wrong answer
        assert rewards == [0.0] * 6 and reward == 0.0 and terminated


def test_vector_twin_autoresets_on_the_next_step() -> None:
    env = CueRecallVectorEnv(5, delay=1)
    env.reset(seed=0)
    for t in range(3):
        _, _, terminated, _, _ = env.step(np.zeros(5, dtype=np.int64))
        assert terminated.all() == (t == 2)
    obs, reward, terminated, truncated, _ = env.step(np.zeros(5, dtype=np.int64))  # ignored
    np.testing.assert_array_equal(reward, 0.0)
    assert not terminated.any() and not truncated.any()
    np.testing.assert_array_equal(obs[:, :4].sum(axis=1), 1.0)  # a new cue


def test_same_step_final_obs() -> None:
    env = CueRecallVectorEnv(6, delay=2, autoreset_mode=AutoresetMode.SAME_STEP)
    obs, _ = env.reset(seed=0)
    oracle = Oracle(6, 4)
    for _ in range(4):
        obs, reward, terminated, _, info = env.step(oracle(obs))
    assert terminated.all()
    np.testing.assert_array_equal(reward, 1.0)
    np.testing.assert_array_equal(np.stack(info["final_obs"]), 0.0)  # the post-answer observation
    np.testing.assert_array_equal(obs[:, :4].sum(axis=1), 1.0)  # the next episode's cue


def test_long_delay() -> None:
    env = CueRecallVectorEnv(32, delay=1000)
    returns, rewards = play(env, Oracle(32, 4), seed=3)
    assert len(rewards) == 1002
    np.testing.assert_array_equal(returns, 1.0)


def test_registered_id() -> None:
    env = gym.make("CueRecall-v0")
    assert env.observation_space.shape == (6,) and env.action_space.n == 4
    vec = gym.make_vec("CueRecall-v0", num_envs=3, vectorization_mode="vector_entry_point", num_cues=5)
    assert isinstance(vec, CueRecallVectorEnv) and vec.single_action_space.n == 5


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"num_cues": 1}, r"num_cues must be >= 2, got 1"),
        ({"num_cues": 0}, r"num_cues must be >= 2, got 0"),
        ({"num_cues": 257}, r"num_cues must be <= 256, got 257"),
        ({"delay": 0}, r"delay must be >= 1, got 0"),
        ({"delay": -3}, r"delay must be >= 1, got -3"),
        ({"delay": 10**5}, r"delay must be <= 10000, got 100000"),
        ({"reward_delay": -1}, r"reward_delay must be >= 0, got -1"),
        ({"reward_delay": 10**5}, r"reward_delay must be <= 10000, got 100000"),
        ({"render_mode": "human"}, r"render_mode must be one of .*'human'"),
    ],
)
def test_invalid_kwargs_raise_value_error(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        CueRecallEnv(**kwargs)
    with pytest.raises(ValueError, match=match):
        CueRecallVectorEnv(2, **kwargs)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"num_cues": 4.0}, r"num_cues must be an int, got 4.0"),
        ({"delay": "10"}, r"delay must be an int, got '10'"),
        ({"delay": True}, r"delay must be an int, got True"),
        ({"reward_delay": 2.5}, r"reward_delay must be an int, got 2.5"),
    ],
)
def test_wrong_kwarg_types_raise_type_and_value_error(kwargs: dict, match: str) -> None:
    for error in (TypeError, ValueError):
        with pytest.raises(error, match=match):
            CueRecallEnv(**kwargs)
    with pytest.raises(ValueError, match=r"num_envs must be >= 1, got -1"):
        CueRecallVectorEnv(-1)


@pytest.mark.parametrize("action", [4, -1, 0.5, "a"])
def test_invalid_actions_raise_value_error(action: object) -> None:
    env = CueRecallEnv()
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"action .* (invalid|out of range)"):
        env.step(action)
    vec = CueRecallVectorEnv(2, num_cues=3)
    vec.reset(seed=0)
    with pytest.raises(ValueError, match=r"action 3 is out of range: valid actions are integers in \[0, 2\]"):
        vec.step(np.array([3, 0]))


def test_ansi_render() -> None:
    env = CueRecallEnv(delay=2, render_mode="ansi")
    obs, _ = env.reset(seed=0)
    cue = int(obs[:4].argmax())
    header, cues = env.render().splitlines()
    assert header == f"t=0/4  cue={cue} (visible)"
    marks = ["."] * 4
    marks[cue] = "*"
    assert cues.startswith(f"cues [{' '.join(marks)}]") and cues.endswith("cue shown")
    env.step(0)
    assert "cues [. . . .]" in env.render() and "waiting" in env.render()
    env.step(0)
    env.step(0)  # t = 3 = delay + 1
    assert env.render().rstrip().endswith("QUERY: name the cue")


def test_rgb_array_render() -> None:
    env = CueRecallEnv(render_mode="rgb_array")
    obs, _ = env.reset(seed=0)
    frame = env.render()
    assert frame.shape == (48, 128, 3) and frame.dtype == np.uint8
    cue = int(obs[:4].argmax())
    assert (frame[8, 16 * cue + 8] == (255, 200, 0)).all()  # the shown cue is lit
    env.step(0)
    assert not (env.render()[8, 16 * cue + 8] == (255, 200, 0)).all()
    vec = CueRecallVectorEnv(3, render_mode="ansi")
    vec.reset(seed=0)
    assert len(vec.render()) == 3
    assert (
        CueRecallEnv.metadata["render_modes"]
        == CueRecallVectorEnv.metadata["render_modes"]
        == ["ansi", "rgb_array"]
    )
