"""Soft Actor-Critic with sequence replay, for every memory kind and for none.

``Box`` actions: SAC with a tanh-squashed Gaussian policy (Haarnoja et al. 2018, as
Stable-Baselines3's ``SAC``). ``Discrete`` actions: SAC-Discrete (Christodoulou 2019),
whose losses take the expectation over the actions exactly.

The algorithm reads top to bottom in :meth:`SAC.learn` (act, store, update) and
:meth:`SAC._gradient_step` (one update, each loss next to its data).

Semantics (see docs/DESIGN.md, "Semantics that are easy to get wrong"):

- The buffer (:mod:`pomdp_bench.agents.sequence_buffer`) stores whole trajectories
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
  memory (:mod:`pomdp_bench.agents.sac_networks`).
- ``memory=None`` with ``burn_in=0, sequence_length=1`` is SB3's SAC step for step:
  windows of two rows are transitions, and ``batch_size`` counts them.
"""

from __future__ import annotations

import collections
import copy
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from gymnasium.vector import VectorEnv
from torch import Tensor, nn
from tqdm.auto import tqdm

from pomdp_bench.agents.evaluation import evaluate_episodes
from pomdp_bench.agents.networks import MemoryState, state_from_numpy, state_to_numpy
from pomdp_bench.agents.sac_networks import (
    SACActor,
    SACCritic,
    SACNetArch,
    action_feature_size,
    action_features,
    check_action_space,
    make_sac_networks,
    observation_features,
)
from pomdp_bench.agents.schedules import ScheduleLike, as_schedule, schedule_to_data
from pomdp_bench.agents.seeding import env_seeds
from pomdp_bench.agents.sequence_buffer import SequenceBatch, SequenceReplayBuffer
from pomdp_bench.envs.make import training_env
from pomdp_bench.memory import MemoryConfig
from pomdp_bench.validation import check_bool, check_float, check_int

_SAVE_FORMAT = 1
# Keys Gymnasium adds to a vector env's spec.kwargs that are not the env's own.
# SAC-Discrete's default target entropy, as a fraction of the uniform policy's log(n).
# Christodoulou 2019 used 0.98 and CleanRL's sac_atari 0.89, which keep the behaviour
# close to uniform; 0.5 lets it commit enough to reach the end of a T-Maze corridor
# often (tests/test_sac_learning.py).
DISCRETE_TARGET_ENTROPY_SCALE = 0.5


class SAC:
    """Soft Actor-Critic with an optional memory, trained on replayed sequences.

    Args:
        env: an env id (built with :func:`pomdp_bench.envs.make.make_vector_env` from
            ``env_kwargs``), or a Gymnasium vector env in ``SAME_STEP`` autoreset mode.
        memory: the memory block of the actor and of the critic (each gets its own):
            ``None`` (feedforward), a kind name, a dict or a
            :class:`~pomdp_bench.memory.MemoryConfig`.
        burn_in: steps at the start of each sampled sequence that warm the memories up,
            without gradient and without loss (``>= 0``).
        sequence_length: steps of each sampled sequence that the losses use (``>= 1``).
        stored_state: store the actor's memory at every step and start the actor's
            learned steps from it (R2D2's stored state); needs a memory. Each stored
            step then also holds the actor's state (gru: ``num_layers * H`` floats;
            transformer and mamba: thousands), so size ``buffer_size`` to match.
        buffer_size: replay capacity in steps over all copies (``buffer_size // n_envs``
            rows per copy; a truncated episode takes one more row for its final
            observation).
        batch_size: sequences per gradient step (each gives ``sequence_length`` loss
            terms; with ``sequence_length=1`` this is SB3's transitions per batch).
        learning_starts: env steps (over all copies) of uniformly random actions before
            the first update; ``learning_starts // n_envs`` must exceed
            ``burn_in + sequence_length + 1`` so that every copy holds a whole sequence.
        train_freq: vector-env steps between updates.
        gradient_steps: gradient steps per update; ``-1``: as many as env steps were
            collected since the last update (``train_freq * n_envs``).
        learning_rate: Adam's step size for the actor, the critic and the entropy
            coefficient; a number or a schedule (``"lin_1e-3"``).
        tau: Polyak coefficient of the target critic (1: hard copy).
        gamma: discount factor.
        ent_coef: the entropy coefficient alpha: ``"auto"`` learns it from 1.0,
            ``"auto_0.1"`` from 0.1, a number fixes it.
        target_entropy: the entropy the learned alpha aims at, in nats: ``"auto"`` is
            ``-dim(A)`` for ``Box`` (SB3) and ``0.5 * log(n)`` for ``Discrete``; a number
            sets it.
        target_update_interval: gradient steps between target-critic updates.
        max_grad_norm: clip each network's gradient to this global norm (``None``: no
            clipping, as SB3).
        n_envs: copies stepped together; 1 for an id, the vector env's ``num_envs``
            otherwise.
        env_kwargs: keyword arguments of the env, when ``env`` is an id.
        net_arch: hidden widths: a list for the policy and the Q heads, or a dict with
            ``pi``, ``qf`` (after the memory) and ``encoder`` (before it); ``None`` gives
            SB3's ``pi=qf=[256, 256]`` and no encoder.
        activation: activation of the MLPs (``"relu"``, SB3's SAC default).
        seed: seeds the networks, the env resets, the exploration, the replay draws and
            the policy noise; the same seed gives the same learning curve on CPU.
        device: ``"auto"`` (CUDA when available), ``"cpu"``, ``"cuda"``, ...

    Raises:
        ValueError: settings that cannot work, with what would be valid in the message.
        TypeError: an unsupported action or observation space, or a wrong type.
    """

    def __init__(
        self,
        env: str | VectorEnv,
        memory: MemoryConfig | dict[str, Any] | str | None = None,
        *,
        burn_in: int = 8,
        sequence_length: int = 16,
        stored_state: bool = False,
        buffer_size: int = 1_000_000,
        batch_size: int = 32,
        learning_starts: int = 1_000,
        train_freq: int = 1,
        gradient_steps: int = 1,
        learning_rate: ScheduleLike = 3e-4,
        tau: float = 0.005,
        gamma: float = 0.99,
        ent_coef: str | float = "auto",
        target_entropy: str | float = "auto",
        target_update_interval: int = 1,
        max_grad_norm: float | None = None,
        n_envs: int | None = None,
        env_kwargs: dict[str, Any] | None = None,
        net_arch: list[int] | dict[str, list[int]] | None = None,
        activation: str = "relu",
        seed: int = 0,
        device: str | torch.device = "auto",
    ) -> None:
        # -- the environment ----------------------------------------------------
        resolved = training_env(env, env_kwargs, n_envs, default_n_envs=1)
        self.env, self.env_id, self.env_kwargs = resolved.env, resolved.env_id, resolved.env_kwargs
        n_envs = self.n_envs = resolved.n_envs
        self.observation_space = self.env.single_observation_space
        self.action_space = self.env.single_action_space
        if not isinstance(self.observation_space, (spaces.Box, spaces.Discrete)):
            raise TypeError(
                f"observation space {self.observation_space} is not supported: use Box or Discrete"
            )
        check_action_space(self.action_space)
        self.discrete = isinstance(self.action_space, spaces.Discrete)

        # -- settings -----------------------------------------------------------
        self.memory_config = MemoryConfig.from_any(memory)
        self.burn_in = check_int("burn_in", burn_in, minimum=0)
        self.sequence_length = check_int("sequence_length", sequence_length, minimum=1)
        self.stored_state = check_bool("stored_state", stored_state)
        if self.stored_state and self.memory_config.kind == "none":
            raise ValueError(
                "stored_state=True needs a memory to store: pass memory= (one of 'framestack', 'gru', "
                "'lstm', 'transformer', 'mamba') or use stored_state=False"
            )
        self.window = self.burn_in + self.sequence_length + 1
        self.buffer_size = check_int("buffer_size", buffer_size, minimum=1)
        if self.buffer_size // n_envs < self.window:
            raise ValueError(
                f"buffer_size={buffer_size} keeps {self.buffer_size // n_envs} steps per copy "
                f"(n_envs={n_envs}), fewer than one sequence of burn_in + sequence_length + 1 = "
                f"{self.window}; raise buffer_size to at least {self.window} * n_envs = {self.window * n_envs}"
            )
        self.batch_size = check_int("batch_size", batch_size, minimum=1)
        self.learning_starts = check_int("learning_starts", learning_starts, minimum=0)
        if self.learning_starts // n_envs <= self.window:
            raise ValueError(
                f"learning_starts={learning_starts} leaves each of the n_envs={n_envs} copies "
                f"{self.learning_starts // n_envs} steps before the first update, but one sampled sequence "
                f"needs burn_in + sequence_length + 1 = {self.window}: learning_starts // n_envs must "
                f"exceed {self.window}, so use learning_starts >= {(self.window + 1) * n_envs}, or a "
                f"shorter burn_in or sequence_length"
            )
        self.train_freq = check_int("train_freq", train_freq, minimum=1)
        self.gradient_steps = check_int("gradient_steps", gradient_steps, minimum=-1)
        if self.gradient_steps == 0:
            raise ValueError("gradient_steps must be >= 1, or -1 for as many as env steps collected; got 0")
        self.learning_rate = as_schedule("learning_rate", learning_rate)
        self.tau = check_float("tau", tau, minimum=0.0, maximum=1.0, strict_minimum=True)
        self.gamma = check_float("gamma", gamma, minimum=0.0, maximum=1.0)
        self.target_update_interval = check_int("target_update_interval", target_update_interval, minimum=1)
        self.max_grad_norm = (
            None
            if max_grad_norm is None
            else check_float("max_grad_norm", max_grad_norm, minimum=0.0, strict_minimum=True)
        )
        self.seed = check_int("seed", seed)
        self.device = torch.device(
            ("cuda" if torch.cuda.is_available() else "cpu") if str(device) == "auto" else device
        )
        self.net_arch = SACNetArch.parse(net_arch)
        learn_ent_coef, ent_coef_init = _parse_ent_coef(ent_coef)
        if target_entropy == "auto":
            if self.discrete:
                self.target_entropy = DISCRETE_TARGET_ENTROPY_SCALE * math.log(int(self.action_space.n))
            else:
                self.target_entropy = -float(np.prod(self.action_space.shape))
        else:
            self.target_entropy = check_float("target_entropy", target_entropy)
        # Everything needed to rebuild this agent (save/load); plain data only.
        self._config: dict[str, Any] = dict(
            env=self.env_id, memory=self.memory_config.to_dict(), burn_in=self.burn_in,
            sequence_length=self.sequence_length, stored_state=self.stored_state, buffer_size=buffer_size,
            batch_size=batch_size, learning_starts=learning_starts, train_freq=train_freq,
            gradient_steps=gradient_steps, learning_rate=schedule_to_data(self.learning_rate), tau=tau,
            gamma=gamma, ent_coef=ent_coef, target_entropy=target_entropy,
            target_update_interval=target_update_interval, max_grad_norm=max_grad_norm, n_envs=n_envs,
            env_kwargs=self.env_kwargs, net_arch=self.net_arch._asdict(), activation=activation, seed=seed,
        )  # fmt: skip

        # -- networks, optimisers, buffer ---------------------------------------
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            actor, critic = make_sac_networks(
                self.observation_space, self.action_space, self.memory_config, self.net_arch, activation
            )
        self.actor: SACActor = actor.to(self.device)
        self.critic: SACCritic = critic.to(self.device)
        self.critic_target: SACCritic = copy.deepcopy(self.critic).requires_grad_(False)
        lr = self.learning_rate(1.0)
        # foreach: one fused update over all parameters (torch defaults to a loop on CPU).
        self.actor_optimizer = torch.optim.Adam(self.actor.parameters(), lr=lr, foreach=True)
        self.critic_optimizer = torch.optim.Adam(self.critic.parameters(), lr=lr, foreach=True)
        self.log_ent_coef = torch.tensor(
            math.log(ent_coef_init), device=self.device, requires_grad=learn_ent_coef
        )
        self.ent_coef_optimizer = torch.optim.Adam([self.log_ent_coef], lr=lr) if learn_ent_coef else None

        state_spec = None
        if self.stored_state:
            state_spec = tuple(
                (tuple(s.shape[1:]), s.dtype) for s in self.actor.initial_state(1, self.device)
            )
        self.buffer = SequenceReplayBuffer(
            capacity=self.buffer_size // n_envs,
            n_envs=n_envs,
            obs_shape=self.observation_space.shape,
            obs_dtype=torch.long if isinstance(self.observation_space, spaces.Discrete) else torch.float32,
            action_shape=self.action_space.shape,
            action_dtype=torch.long if self.discrete else torch.float32,
            action_feature_size=action_feature_size(self.action_space),
            burn_in=self.burn_in,
            sequence_length=self.sequence_length,
            state_spec=state_spec,
            device=self.device,
        )
        self._act_generator = torch.Generator(device=self.device).manual_seed(seed)
        self._noise_generator = torch.Generator(device=self.device).manual_seed(seed + 1)
        self._sample_generator = torch.Generator().manual_seed(seed + 2)
        # predict() draws from its own generator, so calling it between learn() calls
        # leaves training exactly as it would have been.
        self._predict_generator = torch.Generator(device=self.device).manual_seed(seed + 4)
        self._explore_rng = np.random.default_rng(seed + 3)
        if not self.discrete:
            self._action_low = self.action_space.low.astype(np.float64)
            self._action_high = self.action_space.high.astype(np.float64)

        # -- training state -----------------------------------------------------
        self.num_timesteps = 0
        self.n_updates = 0  # gradient steps taken
        self.history: list[dict[str, float]] = []  # one entry per log_interval, see learn()
        self.episode_log: list[tuple[int, float, int]] = []  # (timesteps, return, length) per episode
        self._recent_returns: collections.deque[float] = collections.deque(maxlen=100)
        self._last_stats: dict[str, Tensor] = {}
        self._obs: np.ndarray | None = None  # the next observation of every copy, [N, *obs_shape]

    # ------------------------------------------------------------------------
    # Training
    # ------------------------------------------------------------------------
    def learn(
        self,
        total_timesteps: int,
        progress_bar: bool = False,
        callback: Callable[[SAC], bool | None] | None = None,
        log_interval: int = 1_000,
    ) -> SAC:
        """Train for ``total_timesteps`` env steps (rounded up to whole vector steps).

        Each vector step: act (uniformly at random before ``learning_starts``), store
        the step, and every ``train_freq`` steps past ``learning_starts`` take
        ``gradient_steps`` gradient steps on sampled sequences.

        Args:
            total_timesteps: env steps, over all copies.
            progress_bar: show a tqdm bar.
            callback: called with the agent after every vector step; returning ``False``
                stops training.
            log_interval: env steps between entries of ``self.history``.

        Every ``log_interval`` env steps ``self.history`` gains a dict: ``timesteps``,
        ``mean_return`` (mean undiscounted return of the last 100 finished episodes,
        NaN before the first, like SB3's ``rollout/ep_rew_mean``), ``episodes``,
        ``n_updates``, the last gradient step's ``critic_loss``, ``actor_loss``,
        ``ent_coef`` and ``ent_coef_loss``, and ``steps_per_second`` (env steps per
        wall-clock second in this call, updates included). ``self.episode_log`` holds
        ``(timesteps, return, length)`` per episode.

        Raises:
            FloatingPointError: a NaN or inf in a loss or gradient, naming the update.
        """
        total_timesteps = check_int("total_timesteps", total_timesteps, minimum=0)
        torch.set_grad_enabled(True)
        start_timesteps = self.num_timesteps
        if self._obs is None:
            self._start_episodes()
        n_steps = math.ceil(total_timesteps / self.n_envs)
        bar = tqdm(total=n_steps * self.n_envs, disable=not progress_bar, unit="step")
        t0 = time.perf_counter()
        next_log = self.num_timesteps + log_interval
        try:
            for step in range(n_steps):
                self._collect_step()
                if (step + 1) % self.train_freq == 0 and self.num_timesteps > self.learning_starts:
                    # SB3's progress: the fraction of this call's budget left.
                    done_fraction = (self.num_timesteps - start_timesteps) / max(total_timesteps, 1)
                    n_grad = self.gradient_steps if self.gradient_steps > 0 else self.train_freq * self.n_envs
                    self._train(n_grad, progress_remaining=max(1.0 - done_fraction, 0.0))
                bar.update(self.n_envs)
                if self.num_timesteps >= next_log or step == n_steps - 1:
                    next_log = self.num_timesteps + log_interval
                    self._log(start_timesteps, t0)
                    bar.set_postfix(mean_return=f"{self.history[-1]['mean_return']:.3g}")
                if callback is not None and callback(self) is False:
                    break
        finally:
            bar.close()
        return self

    def _log(self, start_timesteps: int, t0: float) -> None:
        stats = {k: float(v) for k, v in self._last_stats.items()}
        stats.update(
            timesteps=self.num_timesteps,
            episodes=len(self.episode_log),
            n_updates=self.n_updates,
            mean_return=float(np.mean(self._recent_returns)) if self._recent_returns else math.nan,
            steps_per_second=(self.num_timesteps - start_timesteps) / (time.perf_counter() - t0),
        )
        self.history.append(stats)

    def _start_episodes(self) -> None:
        self._obs, _ = self.env.reset(seed=env_seeds(self.seed, "train", self.n_envs))
        self._actor_state = self.actor.initial_state(self.n_envs, self.device)
        self._episode_starts = np.ones(self.n_envs, dtype=bool)
        self._prev_actions = torch.zeros(
            self.n_envs, action_feature_size(self.action_space), device=self.device
        )
        self._episode_return = np.zeros(self.n_envs)
        self._episode_length = np.zeros(self.n_envs, dtype=np.int64)

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
        if self.num_timesteps < self.learning_starts:  # explore uniformly, as SB3
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

        self._episode_return += reward
        self._episode_length += 1
        for i in np.flatnonzero(done):
            self.episode_log.append(
                (self.num_timesteps, float(self._episode_return[i]), int(self._episode_length[i]))
            )
            self._recent_returns.append(float(self._episode_return[i]))
        self._episode_return[done] = 0.0
        self._episode_length[done] = 0

        self._obs = next_obs
        self._episode_starts = done
        # The critic reads the previous action, zero at an episode start.
        self._prev_actions = acted * torch.as_tensor(~done, device=self.device).unsqueeze(-1)

    def _train(self, gradient_steps: int, progress_remaining: float) -> None:
        lr = self.learning_rate(progress_remaining)
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
                self.buffer.sample(self.batch_size, self._sample_generator)
            )

    def _warm_up(self, net: SACActor | SACCritic, x: Tensor, starts: Tensor) -> MemoryState:
        """The memory of ``net`` after the burn-in rows of ``x [W, B, D]``, from zero and
        without gradient."""
        state = net.initial_state(x.shape[1], self.device)
        if self.burn_in == 0 or not net.stateful:
            return state
        with torch.no_grad():
            _, state = net(x[: self.burn_in], state, starts[: self.burn_in])
        return state

    def _gradient_step(self, batch: SequenceBatch) -> dict[str, Tensor]:
        """One SAC update on ``B`` sampled windows of ``W = burn_in + L + 1`` rows.

        Rows ``[0, burn_in)`` only warm the memories; the losses use the ``L`` rows
        ``learn = [burn_in, burn_in + L)``, each bootstrapping on the row after it.
        Final rows (after a truncation) carry no loss. Order as SB3: entropy
        coefficient, critic, actor (scored by the updated Q heads), target critic.
        """
        b, L = self.burn_in, self.sequence_length
        learn = slice(b, b + L)
        obs = observation_features(batch.obs, self.observation_space)  # [W, B, D]
        starts = batch.episode_starts  # [W, B]
        # Mean over the rows that carry a loss (not final rows).
        weight = (~batch.final[learn]).float()  # [L, B]
        weight = weight / weight.sum().clamp(min=1.0)

        # -- the policy on the learned rows and the row after them ------------------
        # The actor starts from the stored state or from zero after the burn-in.
        actor_state = batch.actor_state if self.stored_state else self._warm_up(self.actor, obs, starts)
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
            self._check_finite("entropy coefficient", ent_coef_loss)
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
            target_q = batch.rewards[learn] + self.gamma * (~batch.terminated[learn]) * v_next  # [L, B]
        critic_state = self._warm_up(self.critic, critic_x, starts)
        latent_q, _ = self.critic(critic_x[learn], critic_state, starts[learn])  # [L, B, H]
        if self.discrete:
            index = batch.actions[learn].long()[None, :, :, None].expand(len(self.critic.q_heads), -1, -1, 1)
            q = self.critic.q_values(latent_q).gather(-1, index).squeeze(-1)  # [K, L, B]
        else:
            q = self.critic.q_values(latent_q, batch.actions[learn])  # [K, L, B]
        critic_loss = 0.5 * ((q - target_q).pow(2) * weight).sum()  # SB3: 0.5 * sum_k MSE_k
        self._check_finite("critic", critic_loss)
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
        self._check_finite("actor", actor_loss)
        self.actor_optimizer.zero_grad(set_to_none=True)
        actor_loss.backward()
        self._clip_and_check("actor", self.actor)
        self.actor_optimizer.step()

        # -- target critic: Polyak average -------------------------------------------
        self.n_updates += 1
        if self.n_updates % self.target_update_interval == 0:
            with torch.no_grad():
                torch._foreach_lerp_(
                    list(self.critic_target.parameters()), list(self.critic.parameters()), self.tau
                )
        return {
            "critic_loss": critic_loss.detach(),
            "actor_loss": actor_loss.detach(),
            "ent_coef": ent_coef,
            "ent_coef_loss": ent_coef_loss.detach(),
        }

    def _check_finite(self, name: str, loss: Tensor) -> None:
        if not bool(torch.isfinite(loss)):
            raise FloatingPointError(
                f"SAC gradient step {self.n_updates + 1} (timesteps {self.num_timesteps}): the {name} "
                f"loss is {loss.item()}"
            )

    def _clip_and_check(self, name: str, net: nn.Module) -> None:
        if self.max_grad_norm is None:
            return
        norm = nn.utils.clip_grad_norm_(net.parameters(), self.max_grad_norm)
        if not bool(torch.isfinite(norm)):
            raise FloatingPointError(
                f"SAC gradient step {self.n_updates + 1} (timesteps {self.num_timesteps}): the {name} "
                f"gradient norm is {norm.item()}"
            )

    # ------------------------------------------------------------------------
    # Acting
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

    def _actor_step(
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

    def predict(
        self,
        observation: np.ndarray,
        state: tuple[np.ndarray, ...] | None = None,
        episode_start: np.ndarray | None = None,
        deterministic: bool = False,
    ) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
        """The policy's action for observations, carrying the actor's memory.

        As sb3-contrib's ``RecurrentPPO.predict``: pass the returned state back in with
        the next observation, and ``episode_start`` true where a new episode begins
        (the memory resets there).

        Args:
            observation: ``[B, *obs_shape]``, or one observation ``[*obs_shape]``.
            state: the actor memory from the previous call (``None``: fresh).
            episode_start: ``[B]`` bool (``None``: all false).
            deterministic: the mean action (``Box``) or the most likely one
                (``Discrete``) instead of a sample.

        Returns:
            ``(action [B, ...] or [...], state)``: actions in the env's units, ``state`` a
            tuple of numpy arrays ``[B, ...]``.
        """
        obs = np.asarray(observation)
        single = obs.shape == self.observation_space.shape
        if single:
            obs = obs[None]
        n = obs.shape[0]
        mem = (
            self.actor.initial_state(n, self.device)
            if state is None
            else state_from_numpy(state, self.device)
        )
        starts = (
            torch.zeros(n, dtype=torch.bool, device=self.device)
            if episode_start is None
            else torch.as_tensor(np.asarray(episode_start, bool).reshape(n), device=self.device)
        )
        action, mem = self._actor_step(obs, mem, starts, deterministic, self._predict_generator)
        return (action[0] if single else action), state_to_numpy(mem)

    def evaluate(
        self,
        n_episodes: int = 20,
        deterministic: bool = True,
        env: VectorEnv | None = None,
        seed: int | None = None,
    ) -> np.ndarray:
        """Undiscounted returns of ``n_episodes`` episodes, each starting from zero memory.

        Runs its own copies of the env (``min(n_episodes, 16)`` of them, each running
        its share of the episodes, as SB3's ``evaluate_policy`` does, so short episodes
        are not over-represented).

        Args:
            n_episodes: how many episodes.
            deterministic: act with the mean (``Box``) or most likely (``Discrete``) action.
            env: a ``SAME_STEP`` vector env to evaluate on (default: a new one of the
                training env id and kwargs).
            seed: root of the evaluation episodes (default: the agent's seed); each
                copy resets from its own stream split from it, never shared with
                training (:mod:`pomdp_bench.agents.seeding`).

        Returns:
            ``[n_episodes]`` float64 returns, in order of completion per copy.
        """
        n_episodes = check_int("n_episodes", n_episodes, minimum=1)
        generator = torch.Generator(device=self.device).manual_seed(self.seed + 10_001)
        mem = None

        def act(obs: np.ndarray, starts: np.ndarray) -> np.ndarray:
            nonlocal mem
            if mem is None:
                mem = self.actor.initial_state(len(obs), self.device)
            action, mem = self._actor_step(
                obs, mem, torch.as_tensor(starts, device=self.device), deterministic, generator
            )
            return action

        return evaluate_episodes(
            act,
            n_episodes,
            seed=self.seed if seed is None else seed,
            env=env,
            env_id=self.env_id,
            env_kwargs=self.env_kwargs,
        )

    # ------------------------------------------------------------------------
    # Persistence
    # ------------------------------------------------------------------------
    def save(self, path: str | Path) -> None:
        """Write settings, weights, optimisers and the entropy coefficient to ``path``
        (not the replay buffer)."""
        torch.save(
            {
                "format": _SAVE_FORMAT,
                "config": self._config,
                "actor": self.actor.state_dict(),
                "critic": self.critic.state_dict(),
                "critic_target": self.critic_target.state_dict(),
                "log_ent_coef": self.log_ent_coef.detach().cpu(),
                "actor_optimizer": self.actor_optimizer.state_dict(),
                "critic_optimizer": self.critic_optimizer.state_dict(),
                "ent_coef_optimizer": None
                if self.ent_coef_optimizer is None
                else self.ent_coef_optimizer.state_dict(),
                "num_timesteps": self.num_timesteps,
                "n_updates": self.n_updates,
            },
            path,
        )

    @classmethod
    def load(
        cls, path: str | Path, env: str | VectorEnv | None = None, device: str | torch.device = "auto"
    ) -> SAC:
        """Rebuild a saved agent (with an empty replay buffer); ``env`` overrides the saved
        env id (required when the agent was trained on a vector env without an id)."""
        data = torch.load(path, map_location="cpu", weights_only=True)
        if data.get("format") != _SAVE_FORMAT:
            raise ValueError(f"{path} is not a SAC save of format {_SAVE_FORMAT}")
        config = dict(data["config"])
        if env is not None:
            config["env"] = env
            if not isinstance(env, str):
                config.pop("env_kwargs")
                config.pop("n_envs")
        if config["env"] is None:
            raise ValueError(f"{path} was trained on a vector env without an id; pass env=")
        model = cls(**config, device=device)
        model.actor.load_state_dict(data["actor"])
        model.critic.load_state_dict(data["critic"])
        model.critic_target.load_state_dict(data["critic_target"])
        with torch.no_grad():
            model.log_ent_coef.copy_(data["log_ent_coef"])
        model.actor_optimizer.load_state_dict(data["actor_optimizer"])
        model.critic_optimizer.load_state_dict(data["critic_optimizer"])
        if model.ent_coef_optimizer is not None:
            model.ent_coef_optimizer.load_state_dict(data["ent_coef_optimizer"])
        model.num_timesteps = int(data["num_timesteps"])
        model.n_updates = int(data["n_updates"])
        return model


def _parse_ent_coef(ent_coef: str | float) -> tuple[bool, float]:
    """``(learned, initial value)`` from SB3's forms ``"auto"``, ``"auto_<init>"`` or a number."""
    if isinstance(ent_coef, str) and (ent_coef == "auto" or ent_coef.startswith("auto_")):
        try:
            init = 1.0 if ent_coef == "auto" else float(ent_coef[len("auto_") :])
        except ValueError:
            init = -1.0
        if init > 0:
            return True, init
    elif not isinstance(ent_coef, (str, bool)) and isinstance(ent_coef, (int, float)) and ent_coef >= 0:
        return False, max(float(ent_coef), 1e-30)  # stored as a log
    raise ValueError(
        f"ent_coef={ent_coef!r} is not valid: use 'auto' (learned from 1.0), 'auto_<init>' with "
        f"init > 0 (learned from init), or a fixed number >= 0"
    )
