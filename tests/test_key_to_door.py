"""KeyToDoor: the reference's rules, a memoryless oracle, apples, the indicator, errors.

The rules and the frame counting are those of Memory-RL's ``envs/key_to_door``
(pycolab), described in :mod:`pomdp_bench.envs.key_to_door`.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gym_check_env

import pomdp_bench  # noqa: F401  (registers the ids)
from pomdp_bench.envs.cards import get_card
from pomdp_bench.envs.key_to_door import (
    COLS,
    DOOR_CELL,
    EAST,
    INDICATOR_CELL,
    NORTH,
    SOUTH,
    WEST,
    KeyToDoorEnv,
    KeyToDoorVectorEnv,
)

WALL_CH, KEY_CH, DOOR_CH, APPLE_CH, INDICATOR_CH = range(5)


def channels(obs: np.ndarray) -> np.ndarray:
    """``[N, 5, 5, 5]`` (channel, row, col) from ``[N, 125]`` observations."""
    return np.asarray(obs).reshape(-1, 5, 5, 5)


def oracle_action(obs: np.ndarray) -> int:
    """A memoryless policy: towards the key when it is in view, else north; where north
    is a wall, east or west towards the gap in it. It walks north into the door."""
    ch = channels(obs)[0]
    wall, key = ch[WALL_CH], ch[KEY_CH]
    if key.any():
        (kr, kc), *_ = np.argwhere(key)
        if kr < 2 and not wall[1, 2]:
            return NORTH
        if kr > 2 and not wall[3, 2]:
            return SOUTH
        if kc < 2 and not wall[2, 1]:
            return WEST
        if kc > 2 and not wall[2, 3]:
            return EAST
    if not wall[1, 2]:
        return NORTH
    return EAST if wall[2, 0] or wall[2, 1] else WEST


def play(env: KeyToDoorVectorEnv, policy, seed: int) -> tuple[np.ndarray, np.ndarray, int]:
    """One episode in every copy: ``(returns [N], door opened [N], steps)``."""
    obs, _ = env.reset(seed=seed)
    batch = env._batch
    returns = np.zeros(env.num_envs)
    opened = np.zeros(env.num_envs, dtype=bool)
    steps, terminated = 0, np.zeros(env.num_envs, dtype=bool)
    while not terminated.any():
        had_key = batch._has_key.copy()
        obs, reward, terminated, truncated, _ = env.step(policy(obs))
        opened |= had_key & ~batch._has_key  # only the door takes the key
        assert not truncated.any()
        returns += reward
        steps += 1
    assert terminated.all()
    return returns, opened, steps


def oracle(obs: np.ndarray) -> np.ndarray:
    return np.array([oracle_action(o) for o in obs], dtype=np.int64)


def test_gymnasium_check_env_and_the_card() -> None:
    gym_check_env(gym.make("KeyToDoor-v0").unwrapped, skip_render_check=True)
    card = get_card("KeyToDoor-v0")
    assert card.kwargs["distractor"] == 60 and card.kwargs["final_reward"] == 5.0
    assert not card.ceiling_known and not card.optimum_known
    assert card.horizon_for(card.kwargs) == card.episode_length_for(card.kwargs) == 85
    env = gym.make("KeyToDoor-v0")
    assert env.observation_space.shape == (125,) and env.action_space.n == 4


@pytest.mark.parametrize(
    ("explore", "distractor", "reward"), [(15, 60, 10), (8, 1, 2), (20, 7, 3), (15, 250, 10)]
)
def test_episode_length_is_the_sum_of_the_phases(explore: int, distractor: int, reward: int) -> None:
    env = KeyToDoorVectorEnv(8, explore=explore, distractor=distractor, reward=reward)
    rng = np.random.default_rng(explore)
    _, _, steps = play(env, lambda obs: rng.integers(0, 4, len(obs)), seed=distractor)
    assert steps == explore + distractor + reward
    card = get_card("KeyToDoor-v0")
    assert card.episode_length_for({"explore": explore, "distractor": distractor, "reward": reward}) == steps


def test_phases_start_where_the_reference_starts() -> None:
    env = KeyToDoorEnv(explore=8, distractor=3, reward=2)
    env.reset(seed=0)
    batch = env._batch
    assert divmod(int(batch._pos[0]), COLS)[0] in (4, 5)  # a '+' cell of the explore board
    for _ in range(8):
        env.step(SOUTH)
    assert divmod(int(batch._pos[0]), COLS) == (5, 5)  # the distractor's '+'
    for _ in range(3):
        env.step(SOUTH)
    assert divmod(int(batch._pos[0]), COLS) == (3, 5)  # the reward board's '+'
    obs = channels(env.step(NORTH)[0])[0]
    assert obs[DOOR_CH, 1, 2] == 1.0  # the door, one north of the player at (2, 5)


def test_key_and_start_are_uniform_over_their_cells() -> None:
    env = KeyToDoorVectorEnv(4000)
    env.reset(seed=3)
    keys = np.bincount(np.unique(env._batch._key_cell, return_inverse=True)[1])
    starts = np.bincount(np.unique(env._batch._pos, return_inverse=True)[1])
    assert len(keys) == len(starts) == 10
    np.testing.assert_allclose(keys / 4000, 0.1, atol=0.025)
    np.testing.assert_allclose(starts / 4000, 0.1, atol=0.025)
    np.testing.assert_array_equal(env._batch._apples.sum(axis=1), 10)


def test_a_memoryless_oracle_opens_the_door_every_time() -> None:
    env = KeyToDoorVectorEnv(200)
    returns, opened, _ = play(env, oracle, seed=0)
    assert opened.all()
    assert (returns >= 5.0).all()  # the door's 5.0, plus apples
    # Success rate as the harness measures it: apple_reward 0, final_reward 1.
    env = KeyToDoorVectorEnv(200, apple_reward=0.0, final_reward=1.0)
    returns, opened, _ = play(env, oracle, seed=1)
    np.testing.assert_array_equal(returns, 1.0)


def test_without_the_key_the_door_stays_shut() -> None:
    env = KeyToDoorVectorEnv(200, apple_reward=0.0, final_reward=1.0, distractor=20)
    obs, _ = env.reset(seed=4)
    batch, rng = env._batch, np.random.default_rng(0)
    returns = np.zeros(200)
    for t in range(env._batch.episode_length):
        # South in the explore phase never leaves the start room; then anything, north above all.
        action = (
            np.full(200, SOUTH) if t < 15 else np.where(rng.random(200) < 0.5, NORTH, rng.integers(0, 4, 200))
        )
        obs, reward, terminated, _, _ = env.step(action)
        returns += reward
        assert not batch._has_key.any()
        if t >= 15 + 20:
            assert (batch._pos != DOOR_CELL).all()
            assert not channels(obs)[:, DOOR_CH, 2, 2].any()  # never stands on the door
    assert terminated.all()
    np.testing.assert_array_equal(returns, 0.0)


def test_the_door_pays_once() -> None:
    env = KeyToDoorEnv(apple_reward=0.0, final_reward=1.0, distractor=5, reward=10)
    obs, _ = env.reset(seed=2)
    rewards = []
    for t in range(30):
        action = oracle_action(obs) if t < 15 + 5 + 2 else (SOUTH, NORTH)[t % 2]  # off and on again
        obs, reward, terminated, _, _ = env.step(action)
        rewards.append(reward)
    assert terminated and rewards.count(1.0) == 1 and sum(rewards) == 1.0
    assert rewards[15 + 5 + 1] == 1.0  # the second step north of the reward phase


def test_apple_reward_zero_final_reward_one_return_is_the_success() -> None:
    n = 256
    env = KeyToDoorVectorEnv(n, apple_reward=0.0, final_reward=1.0, distractor=10)
    rng = np.random.default_rng(5)
    sloppy = rng.random(n)  # per copy: how often it acts at random

    def policy(obs: np.ndarray) -> np.ndarray:
        random = rng.random(n) < sloppy
        return np.where(random, rng.integers(0, 4, n), oracle(obs))

    returns, opened, _ = play(env, policy, seed=6)
    assert 0 < opened.sum() < n  # some did, some did not
    np.testing.assert_array_equal(returns, opened.astype(np.float64))


def _apple_shown(obs: np.ndarray, row: int, col: int, cell: tuple[int, int]) -> bool:
    """Whether the observation of a player at ``(row, col)`` shows an apple on board ``cell``."""
    return bool(channels(obs)[0, APPLE_CH, cell[0] - row + 2, cell[1] - col + 2])


@pytest.mark.parametrize("respawn_every", [1, 3, 20])
def test_apples_pay_and_respawn_as_the_reference(respawn_every: int) -> None:
    env = KeyToDoorEnv(explore=8, distractor=60, num_apples=22, apple_reward=2.5, respawn_every=respawn_every)
    env.reset(seed=0)
    for _ in range(8):
        assert env.step(SOUTH)[1] == 0.0  # explore: no apples
    # Distractor, frame 1: north to (4, 5); frame 2: west onto the apple at (4, 4).
    assert env.step(NORTH)[1] == 0.0
    assert env.step(WEST)[1] == 2.5
    picked = 2
    # Walk (4, 5) <-> (5, 5), cells without apples, and watch (4, 4).
    obs, reward, *_ = env.step(EAST)
    frame, where = 3, (4, 5)
    while frame <= picked + respawn_every + 2:
        assert reward == 0.0
        # The reference: back at the end of the first frame f > picked + respawn_every.
        assert _apple_shown(obs, *where, (4, 4)) == (frame > picked + respawn_every), frame
        action, where = (SOUTH, (5, 5)) if where == (4, 5) else (NORTH, (4, 5))
        obs, reward, *_ = env.step(action)
        frame += 1
    if where == (5, 5):
        env.step(NORTH)
    assert env.step(WEST)[1] == 2.5  # picked up again


def test_an_apple_respawning_under_the_player_pays_on_the_next_step_onto_it() -> None:
    env = KeyToDoorEnv(explore=8, num_apples=22, respawn_every=1)
    env.reset(seed=0)
    for _ in range(8):
        env.step(SOUTH)
    rewards = [env.step(a)[1] for a in (NORTH, WEST, EAST, WEST)]  # frames 1-4
    # Frame 2 picks up (4, 4); frame 4 steps back before it respawns at the end of frame 4.
    assert rewards == [0.0, 1.0, 0.0, 0.0]
    obs, reward, *_ = env.step(EAST)
    assert reward == 0.0 and _apple_shown(obs, 4, 5, (4, 4))
    assert env.step(WEST)[1] == 1.0


def test_the_indicator_shows_for_the_one_observation_after_the_pickup() -> None:
    seen_pickups = 0
    for seed in range(40):
        env = KeyToDoorEnv(distractor=3, reward=2)
        obs, _ = env.reset(seed=seed)
        batch = env._batch
        assert not channels(obs)[0, INDICATOR_CH].any()
        for t in range(1, 21):
            had_key = bool(batch._has_key[0])
            obs, *_ = env.step(oracle_action(obs))
            indicator = channels(obs)[0, INDICATOR_CH]
            picked_now = not had_key and bool(batch._has_key[0]) and t < 15
            assert indicator.sum() == (1.0 if picked_now else 0.0), (seed, t)
            if picked_now:
                seen_pickups += 1
                row, col = divmod(int(batch._pos[0]), COLS)
                ir, ic = divmod(INDICATOR_CELL, COLS)
                assert indicator[ir - row + 2, ic - col + 2] == 1.0  # at board cell (0, 5)
                assert not channels(obs)[0, KEY_CH].any()  # the key is gone
    assert seen_pickups == 40


def test_the_pickup_on_the_last_explore_step_shows_no_indicator() -> None:
    # A copy that starts at (5, c) with the key at (2, c), c in 4..6: three steps north.
    probe = KeyToDoorVectorEnv(1000)
    probe.reset(seed=0)
    start_row, start_col = np.divmod(probe._batch._pos, COLS)
    key_row, key_col = np.divmod(probe._batch._key_cell, COLS)
    fits = (start_row == 5) & (key_row == 2) & (start_col == key_col) & (np.abs(start_col - 5) <= 1)
    env = KeyToDoorEnv()
    env.reset(seed=int(np.flatnonzero(fits)[0]))  # copy i of seed 0 is a single env of seed i
    for _ in range(12):
        env.step(SOUTH)  # into the wall: stays put
    for _ in range(2):
        obs, *_ = env.step(NORTH)
    assert channels(obs)[0, KEY_CH].any() and not env._batch._has_key[0]
    obs, *_ = env.step(NORTH)  # step 15, the last of the explore phase, picks the key up
    assert env._batch._has_key[0]
    assert not channels(obs)[0, INDICATOR_CH].any()  # the distractor's first observation
    assert channels(obs)[0, APPLE_CH].any()
    for _ in range(5):
        obs, *_ = env.step(SOUTH)
        assert not channels(obs)[0, INDICATOR_CH].any()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"explore": 7}, r"explore must be >= 8, got 7"),
        ({"distractor": 0}, r"distractor must be >= 1, got 0"),
        ({"reward": 1}, r"reward must be >= 2, got 1"),
        ({"num_apples": 0}, r"num_apples must be >= 1, got 0"),
        ({"num_apples": 23}, r"num_apples must be <= 22, got 23"),
        ({"respawn_every": 0}, r"respawn_every must be >= 1, got 0"),
        ({"apple_reward": float("nan")}, r"apple_reward must be finite, got nan"),
        ({"final_reward": float("inf")}, r"final_reward must be finite, got inf"),
        ({"render_mode": "human"}, r"render_mode must be one of .*'human'"),
    ],
)
def test_invalid_kwargs_raise_value_error(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        KeyToDoorEnv(**kwargs)
    with pytest.raises(ValueError, match=match):
        KeyToDoorVectorEnv(2, **kwargs)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"distractor": 60.0}, r"distractor must be an int, got 60.0"),
        ({"final_reward": "5"}, r"final_reward must be a number, got '5'"),
        ({"respawn_every": True}, r"respawn_every must be an int, got True"),
    ],
)
def test_wrong_kwarg_types_raise_type_and_value_error(kwargs: dict, match: str) -> None:
    for error in (TypeError, ValueError):
        with pytest.raises(error, match=match):
            KeyToDoorEnv(**kwargs)


def test_render_modes() -> None:
    env = KeyToDoorEnv(render_mode="ansi")
    env.reset(seed=0)
    text = env.render()
    header, *board = text.splitlines()
    assert header.startswith("t=0/85  explore 0/15")
    assert len(board) == 7 and all(len(line) == 11 for line in board)
    assert sum(line.count("+") for line in board) == 1 and sum(line.count("k") for line in board) == 1
    env = KeyToDoorEnv(render_mode="rgb_array")
    env.reset(seed=0)
    frame = env.render()
    assert frame.shape == (80, 80, 3) and frame.dtype == np.uint8
    assert tuple(frame[40, 40]) == (228, 148, 109)  # the player, in the reference's colour
    vec = KeyToDoorVectorEnv(3, render_mode="ansi")
    vec.reset(seed=0)
    assert len(vec.render()) == 3
