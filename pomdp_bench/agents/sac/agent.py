"""Soft Actor-Critic with sequence replay, for every memory kind and for none.

``Box`` actions: SAC with a tanh-squashed Gaussian policy (Haarnoja et al. 2018, as
Stable-Baselines3's ``SAC``). ``Discrete`` actions: SAC-Discrete (Christodoulou 2019),
whose losses take the expectation over the actions exactly.

The algorithm reads top to bottom in :meth:`SAC._iterate` (act, store, update) and
:meth:`SAC._gradient_step` (one update, each loss next to its data). ``predict``,
``evaluate``, ``save`` and ``load`` come from the shared shell
(:class:`~pomdp_bench.agents.common.base.Agent`); the settings are
:class:`~pomdp_bench.agents.sac.settings.SACSettings`.

Semantics (see docs/DESIGN.md, "Semantics that are easy to get wrong"):

- The buffer (:mod:`pomdp_bench.agents.common.sequence_buffer`) stores whole trajectories
  per copy and samples contiguous windows of ``burn_in + sequence_length + 1``
  steps. The memory starts from zero, runs through the ``burn_in`` steps without
  gradient, and the losses use the next ``sequence_length`` steps; an episode start
  inside a window resets the memory there. With ``stored_state`` the actor starts
  the learned steps from the memory it had when it acted; the critics are still
  burned in from zero.
- The memory resets where ``terminated or truncated`` ended the previous step. TD
  targets stop bootstrapping at ``terminated`` only: where a time limit truncated
  an episode, the target bootstraps on the final observation, read by the memory
  that episode built (the buffer keeps it as a final row of the episode).
- The actor and the critics have separate memories; a critic's memory reads the
  observation and the previous action, and the action being scored joins after the
  memory (:mod:`pomdp_bench.agents.sac.networks`).
- ``memory=None`` with ``burn_in=0, sequence_length=1`` is SB3's SAC step for step:
  windows of two rows are transitions, and ``batch_size`` counts them.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from torch import Tensor, nn

from pomdp_bench.agents.common.base import Agent
from pomdp_bench.agents.common.networks import MemoryState, observation_features
from pomdp_bench.agents.common.sequence_buffer import SequenceBatch, SequenceReplayBuffer
from pomdp_bench.agents.common.spaces import check_action_space
from pomdp_bench.agents.sac.networks import (
    SACActor,
    SACCritic,
    SACNetArch,
    action_feature_size,
    action_features,
    make_sac_networks,
)
from pomdp_bench.agents.sac.settings import SACSettings, parse_ent_coef
from pomdp_bench.validation import check_int


class SAC(Agent[SACSettings]):
    """Soft Actor-Critic with an optional memory, trained on replayed sequences.

    Built as every agent is (:class:`~pomdp_bench.agents.common.base.Agent`)::

        SAC(env, memory=None, *, env_kwargs=None, settings=None, device="auto", **changes)

    where ``changes`` are fields of :class:`~pomdp_bench.agents.sac.settings.SACSettings`
    (``burn_in``, ``sequence_length``, ``stored_state``, ``batch_size``, ``seed``, ...).
    The memory block serves the actor and the critic, each getting its own.

    Raises:
        ValueError: settings that cannot work, with what would be valid in the message.
        TypeError: an unknown setting (the message lists the valid ones), an
            unsupported action or observation space, or a wrong type.
    """

    settings_class = SACSettings
    save_format = 2  # 2: settings beside the env; 1: one flat "config" dict
    legacy_format = 1
    evaluation_copies = 16
    default_n_envs = 1
    # Random streams, seed + offset: the networks and action sampling 0, the policy
    # noise in the losses 1, the replay draws 2 (on the CPU), the uniform exploration 3
    # (numpy), predict() 4, evaluate() 10_001 (the shell's).
    predict_stream = 4

    def _setup_model(self) -> None:
        s = self.settings
        check_action_space(self.action_space, "SAC")
        self.discrete = isinstance(self.action_space, spaces.Discrete)
        self.target_entropy = s.target_entropy_for(
            int(self.action_space.n) if self.discrete else None, int(np.prod(self.action_space.shape))
        )

        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(s.seed)
            actor, critic = make_sac_networks(
                self.observation_space,
                self.action_space,
                s.memory,
                SACNetArch.parse(s.net_arch),
                s.activation,
            )
        self.actor: SACActor = actor.to(self.device)
        self.critic: SACCritic = critic.to(self.device)
        self.critic_target: SACCritic = copy.deepcopy(self.critic).requires_grad_(False)
        lr = s.learning_rate(1.0)
        # foreach: one fused update over all parameters (torch defaults to a loop on CPU).
        self.actor_optimizer = torch.optim.Adam(self.actor.parameters(), lr=lr, foreach=True)
        self.critic_optimizer = torch.optim.Adam(self.critic.parameters(), lr=lr, foreach=True)
        learn_ent_coef, ent_coef_init = parse_ent_coef(s.ent_coef)
        self.log_ent_coef = torch.tensor(
            math.log(ent_coef_init), device=self.device, requires_grad=learn_ent_coef
        )
        self.ent_coef_optimizer = torch.optim.Adam([self.log_ent_coef], lr=lr) if learn_ent_coef else None

        state_spec = None
        if s.stored_state:
            state_spec = tuple(
                (tuple(x.shape[1:]), x.dtype) for x in self.actor.initial_state(1, self.device)
            )
        self.buffer = SequenceReplayBuffer(
            capacity=s.buffer_size // self.n_envs,
            n_envs=self.n_envs,
            obs_shape=self.observation_space.shape,
            obs_dtype=torch.long if isinstance(self.observation_space, spaces.Discrete) else torch.float32,
            action_shape=self.action_space.shape,
            action_dtype=torch.long if self.discrete else torch.float32,
            action_feature_size=action_feature_size(self.action_space),
            burn_in=s.burn_in,
            sequence_length=s.sequence_length,
            state_spec=state_spec,
            device=self.device,
        )
        self._act_generator = self._stream(0)
        self._noise_generator = self._stream(1)
        self._sample_generator = torch.Generator().manual_seed(s.seed + 2)
        self._explore_rng = np.random.default_rng(s.seed + 3)
        if not self.discrete:
            self._action_low = self.action_space.low.astype(np.float64)
            self._action_high = self.action_space.high.astype(np.float64)
        self._last_stats: dict[str, Tensor] = {}
        self._log_interval = 1_000  # set by learn()
        self._obs: np.ndarray | None = None  # the next observation of every copy, [N, *obs_shape]

    # ------------------------------------------------------------------------
    # Training
    # ------------------------------------------------------------------------
    def learn(
        self,
        total_timesteps: int,
        progress_bar: bool = False,
        callback: Any = None,
        log_interval: int = 1_000,
        tb_log_name: str | None = None,
        reset_num_timesteps: bool = True,
    ) -> SAC:
        """The shell's :meth:`~pomdp_bench.agents.common.base.Agent.learn`, with
        ``log_interval``: env steps between entries of ``self.history``, each written to
        the logger (SB3's off-policy ``log_interval`` counts episodes)"""
        self._log_interval = check_int("log_interval", log_interval, minimum=1)
        return super().learn(
            total_timesteps,
            progress_bar,
            callback,
            tb_log_name=tb_log_name,
            reset_num_timesteps=reset_num_timesteps,
        )

    def _iterate(self, total_timesteps: int) -> Iterator[int]:
        """The training loop (``learn`` in the shell drives it): vector steps, each
        acting (uniformly at random before ``learning_starts``) and storing the step,
        and every ``train_freq`` steps past ``learning_starts`` ``gradient_steps``
        gradient steps on sampled sequences; yields the env steps of each.

        Every ``log_interval`` env steps ``self.history`` gains a dict: ``timesteps``,
        ``mean_return`` (mean undiscounted return of the last 100 finished episodes,
        NaN before the first, like SB3's ``rollout/ep_rew_mean``), ``episodes``,
        ``n_updates``, the last gradient step's ``critic_loss``, ``actor_loss``,
        ``ent_coef`` and ``ent_coef_loss``, and ``steps_per_second`` (env steps per
        wall-clock second in this call, updates included).
        """
        torch.set_grad_enabled(True)
        s = self.settings
        start_timesteps = self.num_timesteps
        n_steps = math.ceil(total_timesteps / self.n_envs)
        t0 = time.perf_counter()
        next_log = self.num_timesteps + self._log_interval
        for step in range(n_steps):
            self._collect_step()
            if (step + 1) % s.train_freq == 0 and self.num_timesteps > s.learning_starts:
                # SB3's progress: the fraction of this call's budget left.
                done_fraction = (self.num_timesteps - start_timesteps) / max(total_timesteps, 1)
                n_grad = s.gradient_steps if s.gradient_steps > 0 else s.train_freq * self.n_envs
                self._train(n_grad, progress_remaining=max(1.0 - done_fraction, 0.0))
            if self.num_timesteps >= next_log or step == n_steps - 1:
                next_log = self.num_timesteps + self._log_interval
                self._log(start_timesteps, t0)
            yield self.n_envs

    def _log(self, start_timesteps: int, t0: float) -> None:
        stats = {k: float(v) for k, v in self._last_stats.items()}
        stats.update(
            timesteps=self.num_timesteps,
            episodes=len(self.episode_log),
            n_updates=self.n_updates,
            mean_return=self._mean_recent_return(),
            steps_per_second=(self.num_timesteps - start_timesteps) / (time.perf_counter() - t0),
        )
        self.history.append(stats)

    def _start_episodes(self) -> None:
        self._obs = self._reset_training_envs()
        self._actor_state = self.actor.initial_state(self.n_envs, self.device)
        self._episode_starts = np.ones(self.n_envs, dtype=bool)
        self._prev_actions = torch.zeros(
            self.n_envs, action_feature_size(self.action_space), device=self.device
        )

    def _collect_step(self) -> None:
        """One vector step: act, step the env, store the step (and a final row per
        truncated episode)."""
        obs = torch.as_tensor(self._obs, device=self.device)
        starts = torch.as_tensor(self._episode_starts, device=self.device)
        state_before = self._actor_state
        self.actor.train(False)
        with torch.inference_mode():
            latent, self._actor_state = self.actor(
                observation_features(obs, self.observation_space).unsqueeze(0),
                state_before,
                starts.unsqueeze(0),
            )
            action = self.actor.act(latent[0], deterministic=False, generator=self._act_generator)
        if self.num_timesteps < self.settings.learning_starts:  # explore uniformly, as SB3
            if self.discrete:
                random = self._explore_rng.integers(int(self.action_space.n), size=self.n_envs)
            else:
                random = self._explore_rng.uniform(-1.0, 1.0, size=(self.n_envs, *self.action_space.shape))
            action = torch.as_tensor(random, dtype=action.dtype, device=self.device)
        next_obs, reward, terminated, truncated, info = self.env.step(
            self._to_env_action(action.cpu().numpy())
        )
        done = terminated | truncated
        self.num_timesteps += self.n_envs

        self.buffer.add(
            obs,
            self._prev_actions,
            action,
            torch.as_tensor(reward, dtype=torch.float32, device=self.device),
            torch.as_tensor(terminated, device=self.device),
            starts,
            state_before,
        )
        # A truncated episode's final observation becomes its last row, read by the
        # memory that episode built (the actor's state after its last step).
        acted = action_features(action, self.action_space)
        cut = np.flatnonzero(truncated & ~terminated)
        if cut.size:
            final_obs = np.stack([info["final_obs"][i] for i in cut])
            idx = torch.as_tensor(cut, device=self.device)
            self.buffer.add_final(
                cut,
                torch.as_tensor(final_obs, device=self.device),
                acted[idx],
                tuple(s[idx] for s in self._actor_state),
            )

        self._track_episodes(reward, done)

        self._obs = next_obs
        self._episode_starts = done
        # The critic reads the previous action, zero at an episode start.
        self._prev_actions = acted * torch.as_tensor(~done, device=self.device).unsqueeze(-1)

    def _train(self, gradient_steps: int, progress_remaining: float) -> None:
        lr = self.settings.learning_rate(progress_remaining)
        optimizers = [self.actor_optimizer, self.critic_optimizer]
        if self.ent_coef_optimizer is not None:
            optimizers.append(self.ent_coef_optimizer)
        for optimizer in optimizers:
            for group in optimizer.param_groups:
                group["lr"] = lr
        self.actor.train(True)
        self.critic.train(True)
        for _ in range(gradient_steps):
            self._last_stats = self._gradient_step(
                self.buffer.sample(self.settings.batch_size, self._sample_generator)
            )

    def _warm_up(self, net: SACActor | SACCritic, x: Tensor, starts: Tensor) -> MemoryState:
        """The memory of ``net`` after the burn-in rows of ``x [W, B, D]``, from zero and
        without gradient."""
        state = net.initial_state(x.shape[1], self.device)
        burn_in = self.settings.burn_in
        if burn_in == 0 or not net.stateful:
            return state
        with torch.no_grad():
            _, state = net(x[:burn_in], state, starts[:burn_in])
        return state

    def _gradient_step(self, batch: SequenceBatch) -> dict[str, Tensor]:
        """One SAC update on ``B`` sampled windows of ``W = burn_in + L + 1`` rows.

        Rows ``[0, burn_in)`` only warm the memories; the losses use the ``L`` rows
        ``learn = [burn_in, burn_in + L)``, each bootstrapping on the row after it.
        Final rows (after a truncation) carry no loss. Order as SB3: entropy
        coefficient, critic, actor (scored by the updated Q heads), target critic.
        """
        s = self.settings
        b, L = s.burn_in, s.sequence_length
        learn = slice(b, b + L)
        obs = observation_features(batch.obs, self.observation_space)  # [W, B, D]
        starts = batch.episode_starts  # [W, B]
        # Mean over the rows that carry a loss (not final rows).
        weight = (~batch.final[learn]).float()  # [L, B]
        weight = weight / weight.sum().clamp(min=1.0)

        # -- the policy on the learned rows and the row after them ------------------
        # The actor starts from the stored state or from zero after the burn-in.
        actor_state = batch.actor_state if s.stored_state else self._warm_up(self.actor, obs, starts)
        latent_pi, _ = self.actor(obs[b:], actor_state, starts[b:])  # [L + 1, B, P]
        # Box: a reparameterised action [L+1, B, A] and its log density [L+1, B];
        # Discrete: every action's probability and log-probability [L+1, B, n].
        pi, log_pi = self.actor.policy(latent_pi, self._noise_generator)
        neg_entropy = (pi * log_pi).sum(-1) if self.discrete else log_pi  # [L + 1, B]

        # -- entropy coefficient: drive the policy's entropy to target_entropy -------
        ent_coef = self.log_ent_coef.detach().exp()
        ent_coef_loss = torch.zeros((), device=self.device)
        if self.ent_coef_optimizer is not None:
            ent_coef_loss = -(
                self.log_ent_coef * (neg_entropy[:L] + self.target_entropy).detach() * weight
            ).sum()
            self._check_finite(ent_coef_loss, "the entropy coefficient loss")
            self.ent_coef_optimizer.zero_grad(set_to_none=True)
            ent_coef_loss.backward()
            self.ent_coef_optimizer.step()

        # -- critic: soft TD targets from the target critic over the whole window ----
        critic_x = self.critic.inputs(obs, batch.prev_actions)  # [W, B, D + A']
        with torch.no_grad():
            # A memory with state reads the whole window; a stateless one only the next rows.
            first = 0 if self.critic_target.stateful else b + 1
            latent_next, _ = self.critic_target(
                critic_x[first:], self.critic_target.initial_state(obs.shape[1], self.device), starts[first:]
            )
            latent_next = latent_next[b + 1 - first :]  # [L, B, H], rows b + 1 ... b + L
            if self.discrete:  # V(h') = sum_a' pi(a'|h') (min_k Q_k(h', a') - alpha log pi(a'|h'))
                q_next = self.critic_target.q_values(latent_next).min(0).values  # [L, B, n]
                v_next = (pi[1:] * (q_next - ent_coef * log_pi[1:])).sum(-1)
            else:  # V(h') = min_k Q_k(h', a') - alpha log pi(a'|h'), a' ~ pi(.|h')
                q_next = self.critic_target.q_values(latent_next, pi[1:]).min(0).values  # [L, B]
                v_next = q_next - ent_coef * log_pi[1:]
            # No bootstrap past a termination; a truncation's next row is its final obs.
            target_q = batch.rewards[learn] + s.gamma * (~batch.terminated[learn]) * v_next  # [L, B]
        critic_state = self._warm_up(self.critic, critic_x, starts)
        latent_q, _ = self.critic(critic_x[learn], critic_state, starts[learn])  # [L, B, H]
        if self.discrete:
            index = batch.actions[learn].long()[None, :, :, None].expand(len(self.critic.q_heads), -1, -1, 1)
            q = self.critic.q_values(latent_q).gather(-1, index).squeeze(-1)  # [K, L, B]
        else:
            q = self.critic.q_values(latent_q, batch.actions[learn])  # [K, L, B]
        critic_loss = 0.5 * ((q - target_q).pow(2) * weight).sum()  # SB3: 0.5 * sum_k MSE_k
        self._check_finite(critic_loss, "the critic loss")
        self.critic_optimizer.zero_grad(set_to_none=True)
        critic_loss.backward()
        self._clip_and_check("critic", self.critic)
        self.critic_optimizer.step()

        # -- actor: maximise the updated soft Q of its own actions --------------------
        # Scored by the critic after its step, trunk and memory included (as SB3 and Ni et
        # al. recompute it); the critic's output is held fixed: this loss trains the actor only.
        with torch.no_grad():
            critic_state = self._warm_up(self.critic, critic_x, starts)
            latent_q, _ = self.critic(critic_x[learn], critic_state, starts[learn])  # [L, B, H]
        if self.discrete:
            with torch.no_grad():
                q_pi = self.critic.q_values(latent_q.detach()).min(0).values  # [L, B, n]
            actor_loss = ((pi[:L] * (ent_coef * log_pi[:L] - q_pi)).sum(-1) * weight).sum()
        else:
            self.critic.requires_grad_(False)  # gradients reach the actions, not the critic
            q_pi = self.critic.q_values(latent_q.detach(), pi[:L]).min(0).values  # [L, B]
            self.critic.requires_grad_(True)
            actor_loss = ((ent_coef * log_pi[:L] - q_pi) * weight).sum()
        self._check_finite(actor_loss, "the actor loss")
        self.actor_optimizer.zero_grad(set_to_none=True)
        actor_loss.backward()
        self._clip_and_check("actor", self.actor)
        self.actor_optimizer.step()

        # -- target critic: Polyak average -------------------------------------------
        self.n_updates += 1
        if self.n_updates % s.target_update_interval == 0:
            with torch.no_grad():
                torch._foreach_lerp_(
                    list(self.critic_target.parameters()), list(self.critic.parameters()), s.tau
                )
        return {
            "critic_loss": critic_loss.detach(),
            "actor_loss": actor_loss.detach(),
            "ent_coef": ent_coef,
            "ent_coef_loss": ent_coef_loss.detach(),
        }

    def _clip_and_check(self, name: str, net: nn.Module) -> None:
        if self.settings.max_grad_norm is None:
            return
        norm = nn.utils.clip_grad_norm_(net.parameters(), self.settings.max_grad_norm)
        self._check_finite(norm, f"the {name} gradient norm")

    # ------------------------------------------------------------------------
    # Acting and persistence (the shell's hooks)
    # ------------------------------------------------------------------------
    def _to_env_action(self, action: np.ndarray) -> np.ndarray:
        """Actions in tanh units ``[-1, 1]`` scaled into the action bounds (clipped, so
        float rounding never leaves them); ``Discrete`` actions unchanged."""
        if self.discrete:
            return action
        scaled = self._action_low + 0.5 * (action.astype(np.float64) + 1.0) * (
            self._action_high - self._action_low
        )
        return np.clip(scaled, self._action_low, self._action_high).astype(self.action_space.dtype)

    def _initial_actor_state(self, n: int) -> MemoryState:
        return self.actor.initial_state(n, self.device)

    def _act(
        self,
        obs: np.ndarray,
        state: MemoryState,
        starts: Tensor,
        deterministic: bool,
        generator: torch.Generator,
    ) -> tuple[np.ndarray, MemoryState]:
        x = observation_features(torch.as_tensor(obs, device=self.device), self.observation_space)
        self.actor.train(False)
        with torch.inference_mode():
            latent, state = self.actor(x.unsqueeze(0), state, starts.unsqueeze(0))
            action = self.actor.act(latent[0], deterministic, generator)
        return self._to_env_action(action.cpu().numpy()), state

    def _networks(self) -> tuple[torch.nn.Module, ...]:
        return (self.actor, self.critic)

    def _state_dicts(self) -> dict[str, Any]:
        return {
            "actor": self.actor.state_dict(),
            "critic": self.critic.state_dict(),
            "critic_target": self.critic_target.state_dict(),
            "log_ent_coef": self.log_ent_coef.detach().cpu(),
            "actor_optimizer": self.actor_optimizer.state_dict(),
            "critic_optimizer": self.critic_optimizer.state_dict(),
            "ent_coef_optimizer": None
            if self.ent_coef_optimizer is None
            else self.ent_coef_optimizer.state_dict(),
        }

    def _load_state_dicts(self, data: Mapping[str, Any]) -> None:
        self.actor.load_state_dict(data["actor"])
        self.critic.load_state_dict(data["critic"])
        self.critic_target.load_state_dict(data["critic_target"])
        with torch.no_grad():
            self.log_ent_coef.copy_(data["log_ent_coef"])
        self.actor_optimizer.load_state_dict(data["actor_optimizer"])
        self.critic_optimizer.load_state_dict(data["critic_optimizer"])
        if self.ent_coef_optimizer is not None:
            self.ent_coef_optimizer.load_state_dict(data["ent_coef_optimizer"])
