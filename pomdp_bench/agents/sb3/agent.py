"""sb3-contrib's ``RecurrentPPO`` next to ours (needs the ``[sb3]`` extra).

- :func:`sb3_policy_kwargs`: the ``MlpLstmPolicy`` settings that match a
  :class:`~pomdp_bench.agents.ppo.PPO` with an LSTM memory.
- :func:`copy_sb3_weights`: copy a ``MlpLstmPolicy``'s weights into our PPO's
  :class:`~pomdp_bench.agents.ppo.networks.ActorCritic`; the two then compute the
  same log-probabilities, entropies and values.
- :class:`SB3RecurrentPPO`: ``RecurrentPPO`` behind our agent's interface
  (``learn``, ``predict``, ``evaluate``, ``history``), trained with SB3's own
  ``VecNormalize`` and ``DummyVecEnv``, for side-by-side runs
  (``scripts/parity_sb3.py``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from gymnasium.wrappers import FlattenObservation
from torch import nn

from pomdp_bench.agents.common.networks import activation_class
from pomdp_bench.agents.common.spaces import check_observation_space, flatten_observations, needs_flattening
from pomdp_bench.agents.ppo.agent import PPO
from pomdp_bench.agents.ppo.networks import NetArch
from pomdp_bench.agents.ppo.settings import PPOSettings
from pomdp_bench.envs.wrappers import apply_wrappers, check_wrappers
from pomdp_bench.memory import MemoryConfig

try:
    from sb3_contrib import RecurrentPPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.evaluation import evaluate_policy
    from stable_baselines3.common.vec_env import VecNormalize
except ImportError as exc:  # pragma: no cover - only without the extra
    raise ImportError("pomdp_bench.agents.sb3 needs sb3-contrib: pip install 'pomdp-bench[sb3]'") from exc


def sb3_policy_kwargs(
    hidden_size: int,
    net_arch: list[int] | dict[str, list[int]] | None,
    activation: str,
    ortho_init: bool,
    shared_memory: bool = False,
    num_layers: int = 1,
) -> dict[str, Any]:
    """``MlpLstmPolicy`` keyword arguments for our PPO's architecture (LSTM memory, no encoder)."""
    arch = NetArch.parse(net_arch)
    if arch.encoder:
        raise ValueError(
            "sb3-contrib's MlpLstmPolicy has no encoder before the LSTM; use net_arch without 'encoder'"
        )
    return dict(
        lstm_hidden_size=hidden_size,
        n_lstm_layers=num_layers,
        net_arch=dict(pi=list(arch.pi), vf=list(arch.vf)),
        activation_fn=activation_class(activation),
        ortho_init=ortho_init,
        # sb3-contrib's shared LSTM trains on the actor's loss only; ours trains on both.
        enable_critic_lstm=not shared_memory,
        shared_lstm=shared_memory,
    )


def copy_sb3_weights(sb3_model: RecurrentPPO, ppo: PPO) -> None:
    """Copy a ``RecurrentPPO("MlpLstmPolicy")``'s weights into ``ppo`` in place.

    ``ppo`` must have an LSTM memory of the same size and layers, no encoder,
    and the same ``pi``/``vf`` widths and activation.

    Raises:
        ValueError: the architectures do not match (names the first mismatch).
    """
    src = sb3_model.policy
    dst = ppo.policy
    # A kind name on purpose: RecurrentPPO's weights are nn.LSTM's, which only our lstm takes.
    if dst.actor_trunk.memory.kind != "lstm":
        raise ValueError(
            f"our PPO needs an lstm memory to take sb3-contrib's weights, has {dst.actor_trunk.memory.kind!r}"
        )
    pairs: list[tuple[str, nn.Module, nn.Module]] = [
        ("lstm_actor", src.lstm_actor, dst.actor_trunk.memory.rnn),
        ("mlp_extractor.policy_net", src.mlp_extractor.policy_net, dst.pi_net),
        ("mlp_extractor.value_net", src.mlp_extractor.value_net, dst.vf_net),
        ("action_net", src.action_net, dst.action_head.linear),
        ("value_net", src.value_net, dst.value_head),
    ]
    if dst.critic_trunk is not None:
        if src.lstm_critic is None:
            raise ValueError("our PPO has a separate critic memory but the sb3 policy has no lstm_critic")
        pairs.append(("lstm_critic", src.lstm_critic, dst.critic_trunk.memory.rnn))
    elif src.lstm_critic is not None:
        raise ValueError("the sb3 policy has a critic LSTM but our PPO shares its memory")
    for name, a, b in pairs:
        sa, sb = a.state_dict(), b.state_dict()
        if {k: tuple(v.shape) for k, v in sa.items()} != {k: tuple(v.shape) for k, v in sb.items()}:
            raise ValueError(
                f"{name}: sb3 parameters {[(k, tuple(v.shape)) for k, v in sa.items()]} do not match ours "
                f"{[(k, tuple(v.shape)) for k, v in sb.items()]}"
            )
        b.load_state_dict(sa)
    if hasattr(src, "log_std"):
        with torch.no_grad():
            dst.action_head.log_std.copy_(src.log_std)


class _HistoryCallback(BaseCallback):
    """Appends ``{"timesteps", "mean_return", "episodes"}`` after every rollout."""

    def __init__(self, owner: SB3RecurrentPPO, user: Callable[[Any], bool | None] | None) -> None:
        super().__init__()
        self.owner, self.user, self._stop = owner, user, False

    def _on_step(self) -> bool:
        return not self._stop

    def _on_rollout_end(self) -> None:
        buf = self.model.ep_info_buffer
        self.owner.history.append(
            {
                "timesteps": self.model.num_timesteps,
                "mean_return": float(np.mean([e["r"] for e in buf])) if buf else float("nan"),
                "steps_per_second": (self.model.num_timesteps - self.owner._t0_steps)
                / (time.perf_counter() - self.owner._t0),
            }
        )
        if self.user is not None and self.user(self.owner) is False:
            self._stop = True


class SB3RecurrentPPO:
    """sb3-contrib's ``RecurrentPPO`` with our PPO's constructor and methods.

    Takes :class:`~pomdp_bench.agents.ppo.settings.PPOSettings`, as our PPO does, where
    they have an sb3-contrib counterpart: an LSTM memory only (the default here), and
    no ``bptt_length`` (sb3-contrib cuts its sequences at episode starts and minibatch
    edges). ``n_envs`` defaults to 8. Observation and reward normalisation
    use SB3's ``VecNormalize`` with the agent's gamma, as rl-zoo3 does.
    """

    def __init__(
        self,
        env: str,
        memory: MemoryConfig | dict[str, Any] | str | None = None,
        *,
        env_kwargs: dict[str, Any] | None = None,
        env_wrappers: list[str | dict[str, Any]] | None = None,
        settings: PPOSettings | None = None,
        device: str = "cpu",
        **changes: Any,
    ) -> None:
        self.env_wrappers = check_wrappers(env_wrappers)
        if memory is None and settings is None:
            memory = "lstm"  # the only memory RecurrentPPO has
        raw = PPOSettings.make(settings, **({} if memory is None else {"memory": memory}), **changes)
        if raw.memory.kind != "lstm":  # a kind name on purpose: RecurrentPPO is LSTM-only
            raise ValueError(
                f"sb3-contrib's RecurrentPPO has an LSTM memory only, got kind={raw.memory.kind!r}"
            )
        if raw.bptt_length is not None:
            raise ValueError("sb3-contrib's RecurrentPPO has no bptt_length (it cuts at episode starts)")
        if raw.obs_skip:
            raise ValueError("sb3-contrib's RecurrentPPO has no obs_skip (its heads read the LSTM only)")
        if raw.epsilon_soft:
            raise ValueError(f"sb3-contrib's RecurrentPPO has no epsilon_soft, got {raw.epsilon_soft}")
        if raw.uniform_kl_coef:
            raise ValueError(f"sb3-contrib's RecurrentPPO has no uniform_kl_coef, got {raw.uniform_kl_coef}")
        if raw.clip_rise != "ratio":
            raise ValueError(
                f"sb3-contrib's RecurrentPPO clips the ratio only (clip_rise='ratio'), got "
                f"clip_rise={raw.clip_rise!r}"
            )
        self.settings = s = raw.resolve(8 if raw.n_envs is None else raw.n_envs)
        n_envs, seed = s.n_envs, s.seed
        self.env_id, self.env_kwargs, self.seed = env, dict(env_kwargs or {}), seed
        self.n_envs, self.gamma = n_envs, s.gamma
        venv = make_vec_env(self._make_env, n_envs=n_envs, seed=seed)
        if s.normalize_observations or s.normalize_rewards:
            venv = VecNormalize(
                venv, norm_obs=s.normalize_observations, norm_reward=s.normalize_rewards, gamma=s.gamma
            )
        self.env = venv
        policy_kwargs = sb3_policy_kwargs(
            s.memory.hidden_size, s.net_arch, s.activation, s.ortho_init, s.shared_memory, s.memory.num_layers
        )
        self.model = RecurrentPPO(
            "MlpLstmPolicy",
            venv,
            n_steps=s.n_steps,
            batch_size=s.rollout_size // s.num_minibatches,
            n_epochs=s.n_epochs,
            gamma=s.gamma,
            gae_lambda=s.gae_lambda,
            clip_range=s.clip_range,
            clip_range_vf=s.clip_range_vf,
            ent_coef=s.ent_coef,
            vf_coef=s.vf_coef,
            max_grad_norm=s.max_grad_norm,
            learning_rate=s.learning_rate,
            policy_kwargs={**policy_kwargs, "log_std_init": s.log_std_init},
            seed=seed,
            device=device,
        )
        self.history: list[dict[str, float]] = []
        self._t0, self._t0_steps = time.perf_counter(), 0

    def _make_env(self) -> gym.Env:
        """One copy of the env (its named wrappers applied), read as our agents read it: Box and Discrete observations
        as they are, other spaces flattened by Gymnasium (:mod:`pomdp_bench.agents.common.spaces`)."""
        env = apply_wrappers(gym.make(self.env_id, **self.env_kwargs), self.env_wrappers)
        check_observation_space(env.observation_space)
        self._raw_observation_space = env.observation_space
        return FlattenObservation(env) if needs_flattening(env.observation_space) else env

    @property
    def num_timesteps(self) -> int:
        return int(self.model.num_timesteps)

    def learn(
        self,
        total_timesteps: int,
        progress_bar: bool = False,
        callback: Callable[[Any], bool | None] | None = None,
    ) -> SB3RecurrentPPO:
        """Train with ``RecurrentPPO.learn``; ``history`` gains an entry per rollout."""
        self._t0, self._t0_steps = time.perf_counter(), self.num_timesteps
        self.model.learn(
            total_timesteps,
            callback=_HistoryCallback(self, callback),
            progress_bar=progress_bar,
            reset_num_timesteps=self.num_timesteps == 0,
        )
        return self

    def predict(
        self,
        observation: np.ndarray,
        state: tuple[np.ndarray, ...] | None = None,
        episode_start: np.ndarray | None = None,
        deterministic: bool = False,
    ) -> tuple[np.ndarray, tuple[np.ndarray, ...] | None]:
        """``RecurrentPPO.predict`` on raw observations (normalised here as in training)."""
        if needs_flattening(self._raw_observation_space):
            flat, single = flatten_observations(self._raw_observation_space, observation)
            obs = flat[0] if single else flat
        else:
            obs = np.asarray(observation)
        if isinstance(self.env, VecNormalize):
            obs = self.env.normalize_obs(obs)
        return self.model.predict(obs, state=state, episode_start=episode_start, deterministic=deterministic)

    def evaluate(
        self, n_episodes: int = 20, deterministic: bool = True, seed: int | None = None
    ) -> np.ndarray:
        """Undiscounted returns of ``n_episodes`` episodes from zero memory (SB3's
        ``evaluate_policy`` with frozen normalisation statistics)."""
        n = min(n_episodes, self.n_envs)
        venv = make_vec_env(
            self._make_env,
            n_envs=n,
            seed=self.seed + 10_000 if seed is None else seed,
        )
        if isinstance(self.env, VecNormalize):
            venv = VecNormalize(venv, training=False, norm_obs=self.env.norm_obs, norm_reward=False)
            venv.obs_rms = self.env.obs_rms
        returns, _ = evaluate_policy(
            self.model,
            venv,
            n_eval_episodes=n_episodes,
            deterministic=deterministic,
            return_episode_rewards=True,
        )
        venv.close()
        return np.asarray(returns, dtype=np.float64)
