"""The success analysis (harness/success.py): a trained agent's share of episodes that
succeed, read as the return under the card's success_kwargs.

A stand-in agent plays fixed policies through ``evaluate``, as a trained one does, so the
truth is known: a policy that walks to the key and then the door succeeds on every
episode, one that never goes north never does.
"""

from __future__ import annotations

import numpy as np
import pytest

import pomdp_bench  # noqa: F401  (registers the ids)
from pomdp_bench.envs.cards import get_card
from pomdp_bench.harness.success import SuccessResult, evaluate_success, success_kwargs

NORTH, SOUTH, WEST, EAST = 0, 1, 2, 3
WALL, KEY = 0, 1  # channels of the 5 x 5 view (KeyToDoor-v0's card)


def to_key_then_north(obs: np.ndarray) -> np.ndarray:
    """Memoryless: towards the key when in view, else north, else sideways to the gap."""
    view = np.asarray(obs).reshape(-1, 5, 5, 5)
    actions = []
    for ch in view:
        wall, key = ch[WALL], ch[KEY]
        action = NORTH if not wall[1, 2] else (EAST if wall[2, 0] or wall[2, 1] else WEST)
        if key.any():
            (kr, kc), *_ = np.argwhere(key)
            for blocked, towards, move in (
                (wall[1, 2], kr < 2, NORTH),
                (wall[3, 2], kr > 2, SOUTH),
                (wall[2, 1], kc < 2, WEST),
                (wall[2, 3], kc > 2, EAST),
            ):
                if towards and not blocked:
                    action = move
                    break
        actions.append(action)
    return np.asarray(actions, dtype=np.int64)


class Scripted:
    """An agent's ``evaluate`` over a memoryless policy: returns of ``n_episodes``
    episodes on the given ``SAME_STEP`` vector env."""

    env_wrappers = ()

    def __init__(self, policy) -> None:
        self.policy = policy
        self.seeds: list[int | None] = []

    def evaluate(self, n_episodes: int, env, seed: int | None = None) -> np.ndarray:
        self.seeds.append(seed)
        obs, _ = env.reset(seed=seed)
        running = np.zeros(env.num_envs)
        returns: list[float] = []
        while len(returns) < n_episodes:
            obs, reward, terminated, truncated, _ = env.step(self.policy(obs))
            running += reward
            for i in np.flatnonzero(terminated | truncated):
                returns.append(float(running[i]))
                running[i] = 0.0
        return np.asarray(returns[:n_episodes])


def test_the_card_gives_the_success_kwargs() -> None:
    assert success_kwargs("KeyToDoor-v0") == {"apple_reward": 0.0, "final_reward": 1.0}
    assert get_card("CueRecall-v0").success_kwargs == {}
    with pytest.raises(ValueError, match=r"env 'CueRecall-v0' has no success measure"):
        success_kwargs("CueRecall-v0")


def test_a_policy_that_opens_the_door_succeeds_every_time() -> None:
    agent = Scripted(to_key_then_north)
    found = evaluate_success(agent, "KeyToDoor-v0", {"distractor": 10}, n_episodes=64, seed=3)
    assert found == SuccessResult(rate=1.0, n_episodes=64, seed=3)
    assert agent.seeds == [3]


def test_a_policy_that_never_takes_the_key_never_succeeds() -> None:
    agent = Scripted(lambda obs: np.full(len(obs), SOUTH))
    assert evaluate_success(agent, "KeyToDoor-v0", {"distractor": 10}, n_episodes=40).rate == 0.0


def test_the_run_kwargs_stay_and_the_rewards_become_a_flag() -> None:
    """Apples are still there (the run's kwargs and dynamics), but they pay nothing."""
    agent = Scripted(lambda obs: np.random.default_rng(0).integers(0, 4, len(obs)))
    found = evaluate_success(agent, "KeyToDoor-v0", {"distractor": 30, "apple_reward": 7.0}, n_episodes=64)
    assert 0.0 <= found.rate < 1.0  # a random walk rarely takes the key and finds the door


def test_a_return_that_is_not_a_flag_is_refused() -> None:
    class Halves(Scripted):
        def evaluate(self, n_episodes: int, env, seed: int | None = None) -> np.ndarray:
            return np.full(n_episodes, 0.5)

    with pytest.raises(ValueError, match=r"gave a return of 0.5; a success flag must be 0 or 1"):
        evaluate_success(Halves(None), "KeyToDoor-v0", n_episodes=4)


def test_a_card_whose_success_kwargs_name_no_kwarg_is_refused() -> None:
    from pomdp_bench.envs.cards import card_data, read_card

    data = card_data(get_card("KeyToDoor-v0"))
    with pytest.raises(
        ValueError, match=r"success_kwargs names \['door_reward'\], not among the card's kwargs"
    ):
        read_card({**data, "success_kwargs": {"door_reward": 1.0}})


def test_a_card_without_a_success_measure_carries_no_success_field() -> None:
    """A field added later stays out of carried card data while empty, so the run keys of
    outside envs' specs (which carry their card) do not change."""
    from pomdp_bench.envs.cards import card_data, implicit_card

    assert "success_kwargs" not in card_data(implicit_card("Outside-v0", {"optimal_return": 1.0}))
    assert card_data(get_card("KeyToDoor-v0"))["success_kwargs"] == {"apple_reward": 0.0, "final_reward": 1.0}
