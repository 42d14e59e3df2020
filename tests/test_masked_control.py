"""MaskedCartPole and MaskedPendulum: no velocity leaks, the ceiling is real, kwargs are checked."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pomdp_bench.envs import controllers as c
from pomdp_bench.envs.cards import get_card
from pomdp_bench.envs.masked_cartpole import MaskedCartPoleBatch, MaskedCartPoleVectorEnv
from pomdp_bench.envs.masked_pendulum import MaskedPendulumBatch, MaskedPendulumVectorEnv

finite = st.floats(-3.0, 3.0, allow_nan=False)


@settings(max_examples=50, deadline=None)
@given(x=finite, theta=st.floats(-0.2, 0.2), v1=finite, w1=finite, v2=finite, w2=finite)
@pytest.mark.parametrize("layout", ["masked", "zeroed"])
def test_cartpole_observation_never_carries_velocity(layout, x, theta, v1, w1, v2, w2) -> None:
    batch = MaskedCartPoleBatch(2, obs_layout=layout)
    batch.state = np.array([[x, x], [v1, v2], [theta, theta], [w1, w2]])
    obs = batch.observe()
    np.testing.assert_array_equal(obs[0], obs[1])  # velocities differ, observations do not
    visible = obs if layout == "masked" else obs[:, ::2]
    np.testing.assert_array_equal(visible[0], np.float32([x, theta]))
    if layout == "zeroed":
        np.testing.assert_array_equal(obs[:, 1::2], 0.0)


@settings(max_examples=50, deadline=None)
@given(theta=st.floats(-10.0, 10.0), w1=st.floats(-8.0, 8.0), w2=st.floats(-8.0, 8.0))
def test_pendulum_observation_never_carries_velocity(theta, w1, w2) -> None:
    batch = MaskedPendulumBatch(2)
    batch.th = np.array([theta, theta])
    batch.thdot = np.array([w1, w2])
    obs = batch.observe()
    np.testing.assert_array_equal(obs[0], obs[1])
    np.testing.assert_allclose(obs[0], [np.cos(theta), np.sin(theta)], atol=1e-6)


def test_observation_shapes() -> None:
    assert gym.make("MaskedCartPole-v0").observation_space.shape == (2,)
    assert gym.make("MaskedCartPole-v0", obs_layout="zeroed").observation_space.shape == (4,)
    assert gym.make("MaskedPendulum-v0").observation_space.shape == (2,)


def test_cartpole_noise_is_seeded_and_on_visible_entries_only() -> None:
    env = gym.make("MaskedCartPole-v0", obs_layout="zeroed", obs_noise_std=0.1)
    first, _ = env.reset(seed=5)
    again, _ = env.reset(seed=5)
    np.testing.assert_array_equal(first, again)
    clean = gym.make("MaskedCartPole-v0", obs_layout="zeroed").reset(seed=5)[0]
    assert np.all(first[::2] != clean[::2]) and np.all(first[1::2] == 0.0)
    noise = []
    for t in range(200):
        obs, *_ = env.step(t % 2)
        noise.append(obs[::2] - env.unwrapped._batch.state[::2, 0])
        if t % 20 == 19:
            env.reset()
    assert 0.08 < np.std(noise) < 0.12


def test_cartpole_dynamics_are_cartpole_v1s() -> None:
    """Starting from the same state, our step equals Gymnasium's CartPole-v1 step."""
    ours = gym.make("MaskedCartPole-v0").unwrapped
    ref = gym.make("CartPole-v1").unwrapped
    ours.reset(seed=0)
    ref.reset(seed=0)
    ref.state = ours._batch.state[:, 0].copy()
    for t in range(60):
        action = int(t % 3 == 0)
        obs, r, term, _, _ = ours.step(action)
        ref_obs, ref_r, ref_term, _, _ = ref.step(action)
        np.testing.assert_allclose(ours._batch.state[:, 0], ref.state, rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(obs, ref_obs[::2], rtol=1e-6, atol=1e-7)
        assert (r, term) == (ref_r, ref_term)
        if term:
            break


def test_pendulum_dynamics_are_pendulum_v1s() -> None:
    ours = gym.make("MaskedPendulum-v0").unwrapped
    ref = gym.make("Pendulum-v1").unwrapped
    ours.reset(seed=0)
    ref.reset(seed=0)
    ref.state = np.array([ours._batch.th[0], ours._batch.thdot[0]])
    for t in range(100):
        u = np.array([np.sin(t / 7.0) * 2.0], dtype=np.float32)
        obs, r, *_ = ours.step(u)
        ref_obs, ref_r, *_ = ref.step(u)
        np.testing.assert_allclose(obs, ref_obs[:2], rtol=1e-5, atol=1e-6)
        assert r == pytest.approx(ref_r, rel=1e-5, abs=1e-5)


def test_cartpole_true_state_controller_clearly_beats_the_memoryless_ceiling() -> None:
    card = get_card("MaskedCartPole-v0")
    env = MaskedCartPoleVectorEnv(num_envs=1024, autoreset_mode="SameStep")
    memoryless = c.run_episodes(env, lambda o, e: c.cartpole_memoryless(o), 1, seed=1)
    true_state = c.run_episodes(env, lambda o, e: c.cartpole_true_state(e._batch.state), 1, seed=1)
    # The card's ceiling is this very measurement (scripts/measure_ceilings.py), rounded to
    # 0.1 (measured on an AMD EPYC): abs=0.05 is "equal after rounding". numpy only, no torch
    # kernels; 45.3623 on an AVX-512 Xeon, with numpy's AVX-512 paths on and off.
    assert memoryless.mean() == pytest.approx(card.ff_ceiling, abs=0.05)
    assert true_state.mean() == card.optimal_return == 500.0
    assert true_state.mean() > 5 * memoryless.mean()


def test_pendulum_true_state_controller_clearly_beats_the_memoryless_ceiling() -> None:
    card = get_card("MaskedPendulum-v0")
    env = MaskedPendulumVectorEnv(num_envs=1024, autoreset_mode="SameStep")
    memoryless = c.run_episodes(env, lambda o, e: c.pendulum_memoryless(o), 1, seed=1)
    true_state = c.run_episodes(
        env, lambda o, e: c.pendulum_true_state(e._batch.th, e._batch.thdot), 1, seed=1
    )
    # The card's figures, rounded to 0.1 (see the cartpole test): -1005.525 and -147.782 on
    # an AVX-512 Xeon with numpy's AVX-512 paths on and off.
    assert memoryless.mean() == pytest.approx(card.ff_ceiling, abs=0.05)
    assert true_state.mean() == pytest.approx(card.optimal_return, abs=0.05)
    assert true_state.mean() - memoryless.mean() > 700.0
    # Simple memoryless alternatives do no better than the shipped one.
    for gain in (-2.0, 0.0, 2.0):
        other = c.run_episodes(env, lambda o, e, g=gain: c.pendulum_memoryless(o, g), 1, seed=1)
        assert other.mean() < memoryless.mean()


@pytest.mark.parametrize(
    ("env_id", "kwargs", "error", "match"),
    [
        ("MaskedCartPole-v0", {"obs_layout": "full"}, ValueError, "obs_layout must be one of"),
        ("MaskedCartPole-v0", {"obs_noise_std": -0.1}, ValueError, "obs_noise_std must be >= 0"),
        ("MaskedCartPole-v0", {"obs_noise_std": "big"}, ValueError, "obs_noise_std must be a number"),
        ("MaskedCartPole-v0", {"obs_noise_std": "big"}, TypeError, "got 'big'"),
        ("MaskedPendulum-v0", {"g": -1.0}, ValueError, "g must be >= 0"),
        ("MaskedPendulum-v0", {"render_mode": "ansi"}, ValueError, "render_mode must be one of"),
    ],
)
def test_bad_kwargs_raise(env_id, kwargs, error, match) -> None:
    with pytest.raises(error, match=match):
        gym.make(env_id, **kwargs)


def test_bad_vector_kwargs_raise() -> None:
    with pytest.raises(ValueError, match="max_episode_steps must be >= 1"):
        MaskedPendulumVectorEnv(num_envs=2, max_episode_steps=0)
    with pytest.raises(ValueError, match="num_envs must be an int"):
        MaskedCartPoleVectorEnv(num_envs=2.5)


@pytest.mark.parametrize("env_id", ["MaskedCartPole-v0", "MaskedPendulum-v0"])
def test_parent_renderer_draws_the_hidden_state(env_id: str) -> None:
    pytest.importorskip("pygame")
    env = gym.make(env_id, render_mode="rgb_array")
    env.reset(seed=0)
    frame0 = env.render()
    env.step(env.action_space.sample() * 0 + (1 if env_id.startswith("MaskedCartPole") else 2.0))
    for _ in range(5):
        env.step(1 if env_id.startswith("MaskedCartPole") else np.array([2.0], np.float32))
    frame1 = env.render()
    assert frame0.ndim == 3 and frame0.shape[2] == 3 and frame0.dtype == np.uint8
    assert not np.array_equal(frame0, frame1)
    assert "human" in env.metadata["render_modes"]


@pytest.mark.parametrize("env_id", ["MaskedCartPole-v0", "MaskedPendulum-v0"])
def test_human_render_mode_draws_on_every_step(env_id: str) -> None:
    pytest.importorskip("pygame")  # SDL_VIDEODRIVER=dummy (tests/conftest.py): no window opens
    env = gym.make(env_id, render_mode="human")
    env.reset(seed=0)
    env.step(env.action_space.sample())
    assert env.unwrapped.screen is not None  # the parent renderer drew
    env.close()


@pytest.mark.parametrize("env_id", ["MaskedCartPole-v0", "MaskedPendulum-v0"])
def test_the_vector_twin_renders_each_copy_as_the_single_env_would(env_id: str) -> None:
    """Copy i of a twin reset with seed s is the single env reset with s + i: their frames
    are the same image (Gymnasium's classic-control renderer)."""
    pytest.importorskip("pygame")
    vec = gym.make_vec(env_id, num_envs=2, vectorization_mode="vector_entry_point", render_mode="rgb_array")
    vec.reset(seed=3)
    vec.step(vec.action_space.sample())
    frames = vec.render()
    single = gym.make(env_id, render_mode="rgb_array")
    single.reset(seed=4)
    assert len(frames) == 2 and frames[0].dtype == np.uint8 and frames[0].ndim == 3
    assert not np.array_equal(frames[0], frames[1])
    vec.reset(seed=3)
    np.testing.assert_array_equal(vec.render()[1], single.render())
