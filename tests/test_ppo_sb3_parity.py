"""Our PPO against sb3-contrib's RecurrentPPO: same weights, same numbers.

- log-probs, entropies and values on a recorded rollout with episode starts
  inside it (atol 1e-5), Discrete and Box actions, separate critic LSTM;
- one acting step, memory state included;
- GAE against SB3's ``compute_returns_and_advantage``, truncations included.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

pytest.importorskip("sb3_contrib")

from sb3_contrib import RecurrentPPO
from sb3_contrib.common.recurrent.type_aliases import RNNStates
from stable_baselines3.common.buffers import RolloutBuffer
from stable_baselines3.common.env_util import make_vec_env

import pomdp_bench  # noqa: F401
from pomdp_bench.agents import PPO
from pomdp_bench.agents.ppo.networks import ActorCriticState
from pomdp_bench.agents.ppo.rollout_buffer import gae
from pomdp_bench.agents.sb3.agent import copy_sb3_weights, sb3_policy_kwargs
from pomdp_bench.envs.make import make_vector_env

# Verdicts here depend on torch's floating-point path: scripts/kernel_settings.sh reruns them
# under other CPU kernel settings.
pytestmark = pytest.mark.trajectory


torch.set_num_threads(1)

HIDDEN = 16
ARCH = dict(pi=[32], vf=[24])
CASES = {
    "discrete": ("MaskedCartPole-v0", {"obs_layout": "zeroed"}),
    "box": ("MaskedPendulum-v0", {}),
}


def _pair(case: str, seed: int = 0) -> tuple[PPO, RecurrentPPO]:
    env_id, kwargs = CASES[case]
    ours = PPO(
        env_id,
        {"kind": "lstm", "hidden_size": HIDDEN},
        env_kwargs=kwargs,
        n_envs=4,
        n_steps=8,
        num_minibatches=1,
        net_arch=ARCH,
        activation="relu",
        ortho_init=False,
        seed=seed,
        device="cpu",
    )
    theirs = RecurrentPPO(
        "MlpLstmPolicy",
        make_vec_env(lambda: gym.make(env_id, **kwargs), n_envs=4, seed=seed),
        n_steps=8,
        batch_size=32,
        seed=seed,
        device="cpu",
        policy_kwargs=sb3_policy_kwargs(HIDDEN, ARCH, "relu", ortho_init=False),
    )
    # Perturb sb3's weights so a copy that silently failed could not pass.
    with torch.no_grad():
        for p in theirs.policy.parameters():
            p.add_(0.1 * torch.randn_like(p))
    copy_sb3_weights(theirs, ours)
    return ours, theirs


def _recorded_rollout(ours: PPO, steps: int, seed: int) -> dict[str, torch.Tensor]:
    """Real observations and random actions, episode starts inside, random start memories."""
    rng = np.random.default_rng(seed)
    env = ours.env
    obs, _ = env.reset(seed=seed)
    n = env.num_envs
    xs, acts = [], []
    for _ in range(steps):
        xs.append(obs)
        a = np.stack([env.single_action_space.sample() for _ in range(n)])
        acts.append(a)
        obs, *_ = env.step(a)
    starts = rng.random((steps, n)) < 0.15
    starts[0, 0] = True
    starts[min(5, steps - 1), :] = True
    g = torch.Generator().manual_seed(seed)
    return {
        "obs": torch.as_tensor(np.stack(xs), dtype=torch.float32),  # [T, B, D]
        "actions": torch.as_tensor(np.stack(acts)),  # [T, B(, A)]
        "starts": torch.as_tensor(starts),
        "h_pi": torch.randn(n, 1, HIDDEN, generator=g),
        "c_pi": torch.randn(n, 1, HIDDEN, generator=g),
        "h_vf": torch.randn(n, 1, HIDDEN, generator=g),
        "c_vf": torch.randn(n, 1, HIDDEN, generator=g),
    }


def _env_major(x: torch.Tensor) -> torch.Tensor:
    """``[T, B, ...] -> [B * T, ...]``: sb3-contrib's sequence layout."""
    return x.transpose(0, 1).reshape(-1, *x.shape[2:])


@pytest.mark.parametrize("case", sorted(CASES))
def test_evaluate_actions_matches_sb3(case: str) -> None:
    ours, theirs = _pair(case)
    r = _recorded_rollout(ours, steps=24, seed=3)
    steps, n = r["starts"].shape
    state = ActorCriticState((r["h_pi"], r["c_pi"]), (r["h_vf"], r["c_vf"]))
    with torch.no_grad():
        log_prob, entropy, values, _ = ours.policy.evaluate_actions(
            r["obs"], r["actions"], state, r["starts"]
        )
        sb3_states = RNNStates(
            (r["h_pi"].transpose(0, 1).contiguous(), r["c_pi"].transpose(0, 1).contiguous()),
            (r["h_vf"].transpose(0, 1).contiguous(), r["c_vf"].transpose(0, 1).contiguous()),
        )
        actions = _env_major(r["actions"])
        sb3_values, sb3_log_prob, sb3_entropy = theirs.policy.evaluate_actions(
            _env_major(r["obs"]),
            actions.float() if case == "box" else actions,
            sb3_states,
            _env_major(r["starts"]).float(),
        )
    assert r["starts"][1:].any()
    torch.testing.assert_close(_env_major(log_prob), sb3_log_prob, atol=1e-5, rtol=0)
    torch.testing.assert_close(_env_major(entropy), sb3_entropy, atol=1e-5, rtol=0)
    torch.testing.assert_close(_env_major(values), sb3_values.flatten(), atol=1e-5, rtol=0)
    assert log_prob.shape == entropy.shape == values.shape == (steps, n)


@pytest.mark.parametrize("case", sorted(CASES))
def test_acting_step_matches_sb3(case: str) -> None:
    ours, theirs = _pair(case)
    r = _recorded_rollout(ours, steps=2, seed=4)
    obs, starts = r["obs"][0], torch.tensor([True, False, True, False])
    state = ActorCriticState((r["h_pi"], r["c_pi"]), (r["h_vf"], r["c_vf"]))
    with torch.no_grad():
        # Our acting step: the actor steps; the critic reads the same step afterwards
        # (PPO._critic_pass), from its own memory.
        action, log_prob, new_actor = ours.policy.actor_step(obs, state.actor, starts, deterministic=True)
        trunk, critic_state = ours.policy.critic_memory(state)
        latent, new_critic = trunk(
            ours.policy.preprocess(obs).unsqueeze(0), critic_state, starts.unsqueeze(0)
        )
        value = ours.policy.value_from_latent(latent)[0]
        new = ActorCriticState(new_actor, new_critic)
        sb3_states = RNNStates(
            (r["h_pi"].transpose(0, 1).contiguous(), r["c_pi"].transpose(0, 1).contiguous()),
            (r["h_vf"].transpose(0, 1).contiguous(), r["c_vf"].transpose(0, 1).contiguous()),
        )
        sb3_action, sb3_value, sb3_log_prob, sb3_new = theirs.policy(obs, sb3_states, starts.float(), True)
    torch.testing.assert_close(action.to(sb3_action.dtype), sb3_action)
    torch.testing.assert_close(log_prob, sb3_log_prob, atol=1e-5, rtol=0)
    torch.testing.assert_close(value, sb3_value.flatten(), atol=1e-5, rtol=0)
    for ours_s, sb3_s in zip(new.actor + new.critic, sb3_new.pi + sb3_new.vf, strict=True):
        torch.testing.assert_close(ours_s, sb3_s.transpose(0, 1), atol=1e-5, rtol=0)
    # predict() runs the same actor: its action and state agree too.
    np_state = (r["h_pi"].numpy(), r["c_pi"].numpy())
    pred, pred_state = ours.predict(obs.numpy(), np_state, starts.numpy(), deterministic=True)
    np.testing.assert_allclose(pred, action.numpy(), atol=1e-5)
    np.testing.assert_allclose(pred_state[0], new.actor[0].numpy(), atol=1e-5)


def test_gae_matches_sb3_with_truncations() -> None:
    steps, n, gamma, lam = 40, 5, 0.97, 0.9
    rng = np.random.default_rng(0)
    rewards = rng.normal(size=(steps, n)).astype(np.float32)
    values = rng.normal(size=(steps, n)).astype(np.float32)
    final_values = rng.normal(size=(steps, n)).astype(np.float32)
    terminated = rng.random((steps, n)) < 0.08
    truncated = (rng.random((steps, n)) < 0.08) & ~terminated
    truncated[-1, 0] = True  # a truncation on the last step
    terminated[-1, 1] = True
    dones = terminated | truncated
    last_values = rng.normal(size=n).astype(np.float32)
    assert truncated.sum() >= 5 and terminated.sum() >= 5

    adv, ret = gae(
        torch.as_tensor(rewards),
        torch.as_tensor(values),
        torch.as_tensor(terminated),
        torch.as_tensor(dones),
        torch.as_tensor(final_values),
        torch.as_tensor(last_values),
        gamma,
        lam,
    )

    # SB3's convention: the truncation bootstrap is folded into the reward, and
    # episode_starts[t + 1] marks the end of an episode at step t.
    space = gym.spaces.Box(-1, 1, (1,))
    buf = RolloutBuffer(
        steps, space, gym.spaces.Discrete(2), device="cpu", gae_lambda=lam, gamma=gamma, n_envs=n
    )
    episode_starts = np.vstack([np.ones((1, n), bool), dones[:-1]])
    for t in range(steps):
        r = rewards[t] + gamma * final_values[t] * truncated[t]
        buf.add(
            np.zeros((n, 1)),
            np.zeros((n, 1)),
            r,
            episode_starts[t],
            torch.as_tensor(values[t]),
            torch.zeros(n),
        )
    buf.compute_returns_and_advantage(torch.as_tensor(last_values), dones[-1])
    np.testing.assert_allclose(adv.numpy(), buf.advantages, atol=1e-5)
    np.testing.assert_allclose(ret.numpy(), buf.returns, atol=1e-5)


def test_copy_refuses_mismatched_architecture() -> None:
    ours = PPO(
        make_vector_env("MaskedCartPole-v0", 2, obs_layout="zeroed"),
        {"kind": "lstm", "hidden_size": 8},
        n_steps=4,
        num_minibatches=1,
        net_arch=ARCH,
        device="cpu",
    )
    theirs = RecurrentPPO(
        "MlpLstmPolicy",
        make_vec_env(lambda: gym.make("MaskedCartPole-v0", obs_layout="zeroed"), n_envs=2),
        n_steps=4,
        batch_size=8,
        device="cpu",
        policy_kwargs=sb3_policy_kwargs(16, ARCH, "tanh", True),
    )
    with pytest.raises(ValueError, match="lstm_actor"):
        copy_sb3_weights(theirs, ours)


def test_normalization_matches_vecnormalize() -> None:
    """Our normaliser and SB3's VecNormalize agree step for step on one stream."""
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    from pomdp_bench.agents.common.normalization import Normalizer

    n, gamma = 3, 0.9
    rng = np.random.default_rng(0)
    stream = [
        (rng.normal(2.0, 3.0, (n, 4)).astype(np.float32), rng.normal(1.0, 2.0, n), rng.random(n) < 0.2)
        for _ in range(50)
    ]
    first = rng.normal(2.0, 3.0, (n, 4)).astype(np.float32)
    venv = DummyVecEnv([lambda: gym.make("MaskedCartPole-v0", obs_layout="zeroed")] * n)
    steps = iter(stream)
    venv.reset = lambda: first.copy()
    venv.step_wait = lambda: (lambda o, r, d: (o.copy(), r.copy(), d.copy(), [{} for _ in range(n)]))(
        *next(steps)
    )
    theirs = VecNormalize(venv, gamma=gamma)
    ours = Normalizer((4,), n, normalize_observations=True, normalize_rewards=True, gamma=gamma)

    np.testing.assert_allclose(ours.obs(first, update=True), theirs.reset(), atol=1e-6)
    for obs, reward, done in stream:
        obs_t, reward_t, _, _ = theirs.step_wait()
        np.testing.assert_allclose(ours.obs(obs, update=True), obs_t, atol=1e-5)
        np.testing.assert_allclose(ours.reward(reward, done), reward_t, atol=1e-5)


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ({"epsilon_soft": 0.01}, "no epsilon_soft"),
        ({"uniform_kl_coef": 0.001}, "no uniform_kl_coef"),
        ({"clip_rise": "probability"}, "clips the ratio only"),
    ],
)
def test_sb3_adapter_refuses_settings_recurrentppo_lacks(setting: dict, message: str) -> None:
    """A setting of our PPO that RecurrentPPO does not have is refused, not dropped."""
    from pomdp_bench.agents.sb3 import SB3RecurrentPPO

    with pytest.raises(ValueError, match=message):
        SB3RecurrentPPO("TMaze-v1", n_envs=2, n_steps=8, **setting)
