"""Contract tests every registered environment must pass (see docs/DESIGN.md, "Environments")."""

from __future__ import annotations

import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gym_check_env
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from hypothesis import given, settings
from hypothesis import strategies as st

import pomdp_bench
from pomdp_bench.envs.cards import get_card, load_cards

ENV_IDS = sorted(load_cards())
TABLE_ROWS = (
    "Observation",
    "Action",
    "Reward",
    "Termination",
    "Truncation",
    "Memory horizon",
    "Optimal return",
    "Feedforward ceiling",
)


def test_every_id_is_registered() -> None:
    assert {"MaskedCartPole-v0", "MaskedPendulum-v0"} <= set(ENV_IDS)
    for env_id in ENV_IDS:
        assert env_id in gym.registry


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_card_is_complete_and_matches_the_spec(env_id: str) -> None:
    card = get_card(env_id)
    spec = gym.spec(env_id)
    assert spec.vector_entry_point == card.vector_entry_point
    assert spec.max_episode_steps == card.max_episode_steps
    for field in ("observation", "action", "reward", "termination", "truncation"):
        assert getattr(card, field).strip(), field
    assert card.memory_horizon >= 1
    if card.ceiling_known and card.optimum_known:  # KeyToDoor-v0 gives neither (its card says why)
        assert card.ff_ceiling < card.optimal_return
    assert card.ff_ceiling_derivation.strip()
    assert card.budget["total_timesteps"] > 0
    gym.make(env_id, **card.kwargs).close()  # the card's kwargs are accepted


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_docstring_has_the_table(env_id: str) -> None:
    doc = type(gym.make(env_id).unwrapped).__doc__
    for row in TABLE_ROWS:
        assert f"| {row} |" in doc, f"{env_id} docstring table lacks the {row!r} row"


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_gymnasium_check_env(env_id: str) -> None:
    gym_check_env(gym.make(env_id).unwrapped, skip_render_check=True)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_sb3_check_env(env_id: str) -> None:
    sb3_checker = pytest.importorskip("stable_baselines3.common.env_checker")
    sb3_checker.check_env(gym.make(env_id), warn=False)


def test_make_with_module_prefix_needs_no_import() -> None:
    code = (
        "import gymnasium as gym\n"
        f"for i in {ENV_IDS!r}:\n"
        "    gym.make('pomdp_bench:' + i).reset(seed=0)\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "ok"


def _rollout(env_id: str, vec: gym.vector.VectorEnv, seed: int, steps: int) -> list:
    """Step ``vec`` with seeded random actions; return everything it emitted."""
    space = vec.action_space
    space.seed(seed)
    obs, _ = vec.reset(seed=seed)
    trace = [obs.copy()]
    for _ in range(steps):
        obs, reward, terminated, truncated, info = vec.step(space.sample())
        trace += [obs.copy(), np.asarray(reward, np.float64), terminated.copy(), truncated.copy()]
        if "_final_obs" in info:
            mask = info["_final_obs"]
            trace += [mask.copy(), np.stack(info["final_obs"][mask])]
    return trace


def _assert_same(trace_a: list, trace_b: list) -> None:
    assert len(trace_a) == len(trace_b)
    for a, b in zip(trace_a, trace_b, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
@pytest.mark.parametrize("env_id", ENV_IDS)
def test_vector_twin_matches_single_envs(env_id: str, mode: AutoresetMode) -> None:
    n = 4
    steps = 2 * (get_card(env_id).max_episode_steps or 60) + 7  # crosses several resets
    twin = gym.make_vec(env_id, num_envs=n, vectorization_mode="vector_entry_point", autoreset_mode=mode)
    sync = SyncVectorEnv([lambda: gym.make(env_id) for _ in range(n)], autoreset_mode=mode)
    _assert_same(_rollout(env_id, twin, 7, steps), _rollout(env_id, sync, 7, steps))


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
@pytest.mark.parametrize(
    ("env_id", "kwargs"),
    [
        ("KeyToDoor-v0", {"explore": 9, "distractor": 30, "reward": 3, "num_apples": 22, "respawn_every": 2}),
        ("CueRecall-v0", {"delay": 3, "reward_delay": 4}),
    ],
)
def test_vector_twin_matches_single_envs_off_the_defaults(
    env_id: str, kwargs: dict, mode: AutoresetMode
) -> None:
    """The same at kwargs that exercise more of the state: busy apples, a late reward."""
    n = 5
    steps = 2 * get_card(env_id).episode_length_for(kwargs) + 9  # crosses resets
    twin = gym.make_vec(
        env_id, num_envs=n, vectorization_mode="vector_entry_point", autoreset_mode=mode, **kwargs
    )
    sync = SyncVectorEnv([lambda: gym.make(env_id, **kwargs) for _ in range(n)], autoreset_mode=mode)
    _assert_same(_rollout(env_id, twin, 11, steps), _rollout(env_id, sync, 11, steps))


@settings(max_examples=10, deadline=None)
@given(
    env_id=st.sampled_from(ENV_IDS),
    n=st.integers(1, 5),
    seed=st.integers(0, 2**31),
)
def test_vector_twin_matches_single_envs_any_seed(env_id: str, n: int, seed: int) -> None:
    twin = gym.make_vec(env_id, num_envs=n, vectorization_mode="vector_entry_point")
    sync = SyncVectorEnv([lambda: gym.make(env_id) for _ in range(n)])
    _assert_same(_rollout(env_id, twin, seed, 40), _rollout(env_id, sync, seed, 40))


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_reset_with_seed_replays_the_episode(env_id: str) -> None:
    env = gym.make(env_id)

    def episode(seed: int) -> list:
        obs, _ = env.reset(seed=seed)
        env.action_space.seed(123)
        out = [obs]
        for _ in range(30):
            obs, reward, terminated, truncated, _ = env.step(env.action_space.sample())
            out += [obs, reward, terminated, truncated]
            if terminated or truncated:
                obs, _ = env.reset()
                out.append(obs)
        return out

    _assert_same(episode(3), episode(3))
    traces = {np.concatenate([np.ravel(x) for x in episode(s)]).tobytes() for s in range(20)}
    assert len(traces) > 1, "different seeds should give different episodes"


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_invalid_actions_raise_value_error(env_id: str) -> None:
    env = gym.make(env_id)
    env.reset(seed=0)
    space = env.action_space
    bad = space.n + space.start if isinstance(space, gym.spaces.Discrete) else space.high + 1.0
    with pytest.raises(ValueError, match="out of range"):
        env.step(bad)
    vec = gym.make_vec(env_id, num_envs=3, vectorization_mode="vector_entry_point")
    vec.reset(seed=0)
    actions = vec.action_space.sample()
    actions[1] = bad
    with pytest.raises(ValueError, match="out of range"):
        vec.step(actions)


DISCRETE_IDS = [i for i in ENV_IDS if isinstance(gym.make(i).action_space, gym.spaces.Discrete)]


def test_every_discrete_env_is_in_the_float_action_tests() -> None:
    assert {"MaskedCartPole-v0", "CueRecall-v0", "TMaze-v1", "TMazeActive-v1"} <= set(DISCRETE_IDS)


@pytest.mark.parametrize("action", [1.0, np.float32(1), np.float64(0.0), np.nan, np.array(1.0), np.True_])
@pytest.mark.parametrize("env_id", DISCRETE_IDS)
def test_a_single_discrete_env_refuses_float_actions(env_id: str, action: object) -> None:
    env = gym.make(env_id)
    env.reset(seed=0)
    assert not env.action_space.contains(action)  # what Gymnasium's space says, and we follow
    with pytest.raises(TypeError, match=r"is invalid: a Discrete action is an int") as err:
        env.step(action)
    assert isinstance(err.value, ValueError)  # the project's wrong-type error: both


@pytest.mark.parametrize("action", [1, np.int64(1), np.int32(1), np.uint8(1), np.array(1), True])
@pytest.mark.parametrize("env_id", DISCRETE_IDS)
def test_a_single_discrete_env_takes_integer_actions(env_id: str, action: object) -> None:
    env = gym.make(env_id)
    env.reset(seed=0)
    assert env.action_space.contains(action)
    twin = gym.make(env_id)
    twin.reset(seed=0)
    _assert_same(env.step(action)[:4], twin.step(1)[:4])  # the same step as the int 1


@pytest.mark.parametrize(
    "actions",
    [
        np.array([1.0, 0.0, 1.0]),
        np.array([1, 0, 1], dtype=np.float32),
        np.array([np.nan, 0.0, 1.0]),
        [1.0, 0.0, 1.0],
    ],
)
@pytest.mark.parametrize("env_id", DISCRETE_IDS)
def test_a_discrete_vector_twin_refuses_float_actions(env_id: str, actions: object) -> None:
    vec = gym.make_vec(env_id, num_envs=3, vectorization_mode="vector_entry_point")
    vec.reset(seed=0)
    assert not vec.action_space.contains(actions)
    with pytest.raises(TypeError, match=r"is invalid: a Discrete action is an integer") as err:
        vec.step(actions)
    assert isinstance(err.value, ValueError)


@pytest.mark.parametrize(
    "actions",
    [np.array([1, 0, 1]), np.array([1, 0, 1], dtype=np.int32), [1, 0, 1], np.array([1, 0, 1], np.uint8)],
)
@pytest.mark.parametrize("env_id", DISCRETE_IDS)
def test_a_discrete_vector_twin_takes_integer_actions(env_id: str, actions: object) -> None:
    vec = gym.make_vec(env_id, num_envs=3, vectorization_mode="vector_entry_point")
    twin = gym.make_vec(env_id, num_envs=3, vectorization_mode="vector_entry_point")
    vec.reset(seed=0)
    twin.reset(seed=0)
    _assert_same(vec.step(actions)[:4], twin.step(np.array([1, 0, 1], dtype=np.int64))[:4])


def test_vector_reset_checks_its_arguments() -> None:
    vec = gym.make_vec("MaskedCartPole-v0", num_envs=3, vectorization_mode="vector_entry_point")
    with pytest.raises(ValueError, match="3 ints"):
        vec.reset(seed=[1, 2])
    with pytest.raises(ValueError, match="autoreset_mode"):
        gym.make_vec(
            "MaskedCartPole-v0", num_envs=2, vectorization_mode="vector_entry_point", autoreset_mode="bogus"
        )
    with pytest.raises(ValueError, match="num_envs"):
        gym.make_vec("MaskedCartPole-v0", num_envs=0, vectorization_mode="vector_entry_point")


def test_package_exposes_version() -> None:
    assert pomdp_bench.__version__


def test_the_package_top_level_is_lazy() -> None:
    """``import pomdp_bench`` registers the envs without importing torch; the agents
    and memories come from the top level on first use."""
    code = (
        "import sys, pomdp_bench, gymnasium as gym\n"
        "gym.make('TMaze-v1')\n"
        "assert 'torch' not in sys.modules, 'import pomdp_bench imported torch'\n"
        "from pomdp_bench import PPO, SAC, MemoryConfig, build_memory\n"
        "from pomdp_bench.agents.ppo import PPO as P\n"
        "assert PPO is P and 'torch' in sys.modules\n"
        "assert build_memory(MemoryConfig('gru'), input_size=3).output_size == 64\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    with pytest.raises(AttributeError, match="has no attribute 'PPOO'"):
        pomdp_bench.PPOO  # noqa: B018


@pytest.mark.parametrize(
    ("env_id", "env_kwargs"),
    [
        ("TMaze-v1", {"corridor_length": 7}),
        ("TMaze-v0", {"corridor_length": 4}),
        ("TMazeActive-v1", {"corridor_length": 6}),
        ("TMazeActive-v0", {"corridor_length": 3}),
        ("CueRecall-v0", {"delay": 9}),
        ("KeyToDoor-v0", {"distractor": 12}),
    ],
)
def test_a_cards_episode_length_is_the_length_of_every_episode(env_id, env_kwargs) -> None:
    expected = get_card(env_id).episode_length_for(env_kwargs)
    env = gym.make(env_id, **env_kwargs)
    rng = np.random.default_rng(0)
    for episode in range(5):
        env.reset(seed=episode)
        steps, done = 0, False
        while not done:
            _, _, terminated, truncated, _ = env.step(int(rng.integers(env.action_space.n)))
            steps, done = steps + 1, terminated or truncated
        assert steps == expected, (episode, steps, expected)
