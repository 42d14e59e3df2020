"""Deep Q-learning with sequence replay, for every memory kind and for none.

DQN (Mnih et al. 2015) as Stable-Baselines3's ``DQN``, on replayed sequences as R2D2
(Kapturowski et al. 2019) and Memory-RL (Ni et al. 2023) replay them, with double Q
(van Hasselt et al. 2016) and n-step returns as settings. ``Discrete`` actions only.

The algorithm reads top to bottom in :meth:`DQN._iterate` (act, store, update) and
:meth:`DQN._gradient_step` (one update: start states, TD targets, loss).
``predict``, ``evaluate``, ``save`` and ``load`` come from the shared shell
(:class:`~pomdp_bench.agents.common.base.Agent`); the settings are
:class:`~pomdp_bench.agents.dqn.settings.DQNSettings`.

Semantics (see docs/DESIGN.md, "Semantics that are easy to get wrong"):

- The buffer (:mod:`pomdp_bench.agents.dqn.buffer`) stores whole trajectories per
  copy and samples contiguous sequences of ``burn_in + sequence_length + n_steps``
  rows (with ``align_to_episodes``, only those starting at an episode start). The
  memory starts from zero and runs through the ``burn_in`` rows without gradient, or
  starts from the stored state (``stored_state``); the loss uses the next
  ``sequence_length`` rows. An episode start inside a sequence resets the memory.
- TD targets stop bootstrapping at ``terminated`` only: where a time limit truncated
  an episode, the target bootstraps on the final observation (the buffer keeps it as
  a final row of the episode), read by the memory that episode built. An n-step
  return stops at either end of its episode.
- ``memory=None`` with ``burn_in=0, sequence_length=1`` is SB3's DQN update:
  sequences of two rows are transitions, and ``batch_size`` counts them.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from gymnasium import spaces
from torch import Tensor, nn

from pomdp_bench.agents.common.base import Agent
from pomdp_bench.agents.common.networks import MemoryState, observation_features
from pomdp_bench.agents.common.q_learning import DQNNetArch, discrete_actions
from pomdp_bench.agents.common.sequence_buffer import SequenceBatch
from pomdp_bench.agents.dqn.buffer import DQNReplayBuffer
from pomdp_bench.agents.dqn.networks import QNetwork
from pomdp_bench.agents.dqn.settings import DQNSettings
from pomdp_bench.validation import check_int


def n_step_returns(
    rewards: Tensor, terminated: Tensor, final: Tensor, gamma: float, n: int, length: int
) -> tuple[Tensor, Tensor, Tensor]:
    """n-step returns of the first ``length`` rows of ``R = length + n`` rows.

    Row ``t``'s return sums ``gamma^k r[t + k]`` for ``k < n`` and stops early where its
    episode ends: after a terminated step (no bootstrap) or before a final row (a
    truncation: it bootstraps on that row, the final observation).

    Args:
        rewards, terminated, final: ``[R, B]`` rows as sampled (from row ``burn_in`` on).
        gamma: discount factor.
        n: steps of reward at most.
        length: ``L``, the rows that get a return.

    Returns:
        ``(returns [L, B], boot_row [L, B] int64, boot_discount [L, B])``: the target of
        row ``t`` is ``returns + boot_discount * V(row boot_row)``; ``boot_discount`` is
        ``gamma^k`` for a bootstrap ``k`` rows on, 0 after a termination.
    """
    returns = torch.zeros_like(rewards[:length])
    running = torch.ones_like(terminated[:length])  # [L, B] still inside the episode
    steps = torch.full(returns.shape, n, dtype=torch.long, device=rewards.device)
    bootstrap = torch.ones_like(running)
    for k in range(n):
        now = slice(k, k + length)  # row t + k for every t
        returns = returns + (gamma**k) * rewards[now] * running
        ended = terminated[now] & running  # the episode terminated at t + k: no bootstrap
        cut = final[k + 1 : k + 1 + length] & running  # truncated: bootstrap on the final row
        stop = ended | cut
        steps = torch.where(stop, k + 1, steps)
        bootstrap = bootstrap & ~ended
        running = running & ~stop
    rows = torch.arange(length, device=rewards.device).unsqueeze(1) + steps  # [L, B]
    return returns, rows, (gamma**steps) * bootstrap


def _columns(part: Tensor | tuple[Tensor, ...], cols: slice) -> Any:
    """Columns ``cols`` of a batch field: ``[W, B, ...]`` tensors on dim 1, a state's
    ``[B, ...]`` tensors on dim 0; an empty field as it is."""
    if isinstance(part, tuple):
        return tuple(t[cols] for t in part)
    return part[:, cols] if part.dim() >= 2 else part


def rows_at(values: Tensor, rows: Tensor) -> Tensor:
    """``values [R, B, A]`` at row ``rows[t, b]`` of column ``b``: ``[L, B, A]``."""
    return values.gather(0, rows.unsqueeze(-1).expand(-1, -1, values.shape[-1]))


class DQN(Agent[DQNSettings]):
    """Deep Q-learning with an optional memory, trained on replayed sequences.

    Built as every agent is (:class:`~pomdp_bench.agents.common.base.Agent`)::

        DQN(env, memory=None, *, env_kwargs=None, settings=None, device="auto", **changes)

    where ``changes`` are fields of :class:`~pomdp_bench.agents.dqn.settings.DQNSettings`
    (``burn_in``, ``sequence_length``, ``double_q``, ``n_steps``, ``batch_size``, ...).
    ``predict(deterministic=False)`` acts epsilon-greedily at the current
    ``exploration_rate``; ``evaluate`` acts greedily.

    Attributes:
        exploration_rate: the epsilon of the last training step (``exploration_initial_eps``
            before any).

    Raises:
        ValueError: settings that cannot work, with what would be valid in the message;
            an action space other than ``Discrete`` (the message names PPO and SAC).
        TypeError: an unknown setting (the message lists the valid ones), or a wrong type.
    """

    settings_class = DQNSettings
    save_format = 1
    evaluation_copies = 16
    default_n_envs = 1
    # Random streams, seed + offset: the network 0, the replay draws 2 (on the CPU), the
    # exploration 3 (numpy), predict() 4, evaluate() 10_001 (the shell's).
    predict_stream = 4

    def _setup_model(self) -> None:
        s = self.settings
        self.n_actions, self._action_start = discrete_actions("DQN", self.action_space)

        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(s.seed)
            q_net = QNetwork(
                self.observation_space, self.n_actions, s.memory, DQNNetArch.parse(s.net_arch), s.activation
            )
        self.q_net: QNetwork = q_net.to(self.device)
        self.q_target: QNetwork = copy.deepcopy(self.q_net).requires_grad_(False)
        # fused: one kernel for the whole update (a third of foreach's time on one CPU thread).
        self.optimizer = torch.optim.Adam(self.q_net.parameters(), lr=s.learning_rate(1.0), fused=True)

        state_spec = None
        if s.stored_state:
            state_spec = tuple(
                (tuple(x.shape[1:]), x.dtype) for x in self.q_net.initial_state(1, self.device)
            )
        self.buffer = DQNReplayBuffer(
            capacity=s.buffer_size // self.n_envs,
            n_envs=self.n_envs,
            obs_shape=self.observation_space.shape,
            obs_dtype=torch.long if isinstance(self.observation_space, spaces.Discrete) else torch.float32,
            action_shape=(),
            action_dtype=torch.long,
            action_feature_size=0,
            burn_in=s.burn_in,
            sequence_length=s.sequence_length,
            n_steps=s.n_steps,
            align_to_episodes=s.align_to_episodes,
            state_spec=state_spec,
            device=self.device,
        )
        self._sample_generator = torch.Generator().manual_seed(s.seed + 2)
        self._explore_rng = np.random.default_rng(s.seed + 3)
        self.exploration_rate = s.exploration_initial_eps
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
    ) -> DQN:
        """The shell's :meth:`~pomdp_bench.agents.common.base.Agent.learn`, with
        ``log_interval``: env steps between entries of ``self.history``, each written to
        the logger (SB3's off-policy ``log_interval`` counts episodes). Epsilon's
        schedule runs over this call's ``total_timesteps``, as SB3's."""
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
        acting epsilon-greedily (uniformly at random before ``learning_starts``),
        storing the step and updating the target network every
        ``target_update_interval`` env steps; every ``train_freq`` steps past
        ``learning_starts``, ``gradient_steps`` gradient steps on sampled sequences.
        Yields the env steps of each vector step.

        Every ``log_interval`` env steps ``self.history`` gains a dict: ``timesteps``,
        ``mean_return`` (mean undiscounted return of the last 100 finished episodes,
        NaN before the first, SB3's ``rollout/ep_rew_mean``), ``episodes``,
        ``n_updates``, ``exploration_rate``, the last gradient step's ``loss`` and
        ``q`` (mean Q of the taken actions), and ``steps_per_second`` (env steps per
        wall-clock second in this call, updates included).
        """
        torch.set_grad_enabled(True)
        s = self.settings
        start_timesteps = self.num_timesteps
        n_steps = math.ceil(total_timesteps / self.n_envs)
        target_every = max(s.target_update_interval // self.n_envs, 1)  # vector steps, as SB3
        t0 = time.perf_counter()
        next_log = self.num_timesteps + self._log_interval
        for step in range(n_steps):
            self._collect_step()
            if (self.num_timesteps // self.n_envs) % target_every == 0:
                self._update_target()
            done_fraction = (self.num_timesteps - start_timesteps) / max(total_timesteps, 1)
            self.exploration_rate = s.exploration_rate(done_fraction)
            if (step + 1) % s.train_freq == 0 and self.num_timesteps > s.learning_starts:
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
            exploration_rate=self.exploration_rate,
            mean_return=self._mean_recent_return(),
            steps_per_second=(self.num_timesteps - start_timesteps) / (time.perf_counter() - t0),
        )
        self.history.append(stats)

    def _start_episodes(self) -> None:
        self._obs = self._reset_training_envs()
        self._q_state = self.q_net.initial_state(self.n_envs, self.device)
        self._episode_starts = np.ones(self.n_envs, dtype=bool)
        self._no_features = torch.zeros(self.n_envs, 0, device=self.device)

    def _collect_step(self) -> None:
        """One vector step: act epsilon-greedily, step the env, store the step (and a
        final row per truncated episode)."""
        obs = torch.as_tensor(self._obs, device=self.device)
        starts = torch.as_tensor(self._episode_starts, device=self.device)
        state_before = self._q_state
        # Epsilon-greedy: the draws come every step, so acting does not shift the stream.
        explore = self._explore_rng.random(self.n_envs) < self.exploration_rate
        random = self._explore_rng.integers(self.n_actions, size=self.n_envs)
        if self.num_timesteps < self.settings.learning_starts:  # uniformly at random, as SB3
            explore[:] = True
        if self.q_net.stateful or not explore.all():  # a memory runs every step
            self._training_mode(False)
            with torch.inference_mode():
                q, self._q_state = self.q_net(
                    observation_features(obs, self.observation_space).unsqueeze(0),
                    state_before,
                    starts.unsqueeze(0),
                )
            action = np.where(explore, random, q[0].argmax(-1).cpu().numpy())
        else:
            action = random
        next_obs, reward, terminated, truncated, info = self.env.step(action + self._action_start)
        done = terminated | truncated
        self.num_timesteps += self.n_envs

        self.buffer.add(
            obs,
            self._no_features,
            torch.as_tensor(action, device=self.device),
            torch.as_tensor(reward, dtype=torch.float32, device=self.device),
            torch.as_tensor(terminated, device=self.device),
            starts,
            state_before,
        )
        # A truncated episode's final observation becomes its last row, read by the
        # memory that episode built (the state after its last step).
        cut = np.flatnonzero(truncated & ~terminated)
        if cut.size:
            final_obs = np.stack([info["final_obs"][i] for i in cut])
            idx = torch.as_tensor(cut, device=self.device)
            self.buffer.add_final(
                cut,
                torch.as_tensor(final_obs, device=self.device),
                self._no_features[idx],
                tuple(x[idx] for x in self._q_state),
            )

        self._track_episodes(reward, done)
        self._obs = next_obs
        self._episode_starts = done

    def _update_target(self) -> None:
        """Polyak-average the target network toward the online one (``tau`` 1: a copy)."""
        with torch.no_grad():
            torch._foreach_lerp_(
                list(self.q_target.parameters()), list(self.q_net.parameters()), self.settings.tau
            )

    def _training_mode(self, mode: bool) -> None:
        """Put the online network in training (dropout on) or acting mode, when it changes
        (``Module.train`` walks every submodule: too slow for every step)."""
        if self.q_net.training != mode:
            self.q_net.train(mode)

    def _train(self, gradient_steps: int, progress_remaining: float) -> None:
        """``gradient_steps`` gradient steps, each on its own ``batch_size`` sequences.

        The target network changes only between updates (``_update_target`` runs while
        collecting), so without double Q the TD targets of all the steps are computed at
        once, by one target pass over every sampled sequence.
        """
        s = self.settings
        lr = s.learning_rate(progress_remaining)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        self._training_mode(True)
        B = s.batch_size
        batch = self.buffer.sample(gradient_steps * B, self._sample_generator)  # [W, K * B] sequences
        targets = None if s.double_q else self._td_targets(batch, None)  # [L, K * B]
        for k in range(gradient_steps):
            cols = slice(k * B, (k + 1) * B)
            step_batch = SequenceBatch(*(_columns(part, cols) for part in batch))
            self._last_stats = self._gradient_step(step_batch, None if targets is None else targets[:, cols])

    def _warm_up(self, net: QNetwork, x: Tensor, starts: Tensor) -> MemoryState:
        """The memory of ``net`` after the burn-in rows of ``x [W, B, D]``, from zero and
        without gradient."""
        state = net.initial_state(x.shape[1], self.device)
        burn_in = self.settings.burn_in
        if burn_in == 0 or not net.stateful:
            return state
        with torch.no_grad():
            _, state = net(x[:burn_in], state, starts[:burn_in])
        return state

    def _start_state(self, net: QNetwork, batch: SequenceBatch, x: Tensor) -> MemoryState:
        """Where ``net``'s memory starts the learned rows: the stored state (R2D2), or the
        burn-in rows run from zero without gradient."""
        if self.settings.stored_state:
            return batch.actor_state
        return self._warm_up(net, x, batch.episode_starts)

    @torch.no_grad()
    def _td_targets(self, batch: SequenceBatch, q_online: Tensor | None) -> Tensor:
        """n-step TD targets ``[L, B]`` of the learned rows, bootstrapped by the target
        network: its best action's value, or with ``q_online [L + n, B, A]`` (double Q)
        the value of the online network's best action."""
        s = self.settings
        b, L = s.burn_in, s.sequence_length
        x = observation_features(batch.obs, self.observation_space)  # [W, B, D]
        starts = batch.episode_starts  # [W, B]
        returns, boot_row, boot_discount = n_step_returns(
            batch.rewards[b:], batch.terminated[b:], batch.final[b:], s.gamma, s.n_steps, L
        )  # [L, B] each; boot_row counts from row b
        # A memory reads every row from b on; a stateless network only the bootstrap rows.
        first = 0 if self.q_target.stateful else 1
        state = self._start_state(self.q_target, batch, x)
        q_target_all, _ = self.q_target(x[b + first :], state, starts[b + first :])  # [L + n - first, B, A]
        q_next = rows_at(q_target_all, boot_row - first)  # [L, B, A]
        if q_online is None:
            v_next = q_next.max(-1).values  # [L, B]
        else:  # double Q: the online network picks the action, the target scores it
            best = rows_at(q_online, boot_row).argmax(-1, keepdim=True)  # [L, B, 1]
            v_next = q_next.gather(-1, best).squeeze(-1)
        return returns + boot_discount * v_next  # [L, B]

    def _gradient_step(self, batch: SequenceBatch, target: Tensor | None = None) -> dict[str, Tensor]:
        """One DQN update on ``B`` sampled sequences of ``W = burn_in + L + n`` rows.

        Rows ``[0, burn_in)`` only warm the memory; the loss uses the ``L`` rows
        ``learn = [burn_in, burn_in + L)``, each bootstrapping ``n`` rows on or where
        its episode ends. Final rows (after a truncation) carry no loss. ``target``:
        the TD targets ``[L, B]`` when already computed (:meth:`_train`).
        """
        s = self.settings
        b, L = s.burn_in, s.sequence_length
        learn = slice(b, b + L)
        x = observation_features(batch.obs, self.observation_space)  # [W, B, D]
        starts = batch.episode_starts  # [W, B]
        # Mean over the rows that carry a loss (not final rows).
        weight = (~batch.final[learn]).float()  # [L, B]
        weight = weight / weight.sum().clamp(min=1.0)

        # -- online Q values of the learned rows (and the bootstrap rows for double Q) ----
        rows = x.shape[0] - b if s.double_q else L
        state = self._start_state(self.q_net, batch, x)
        q_online, _ = self.q_net(x[b : b + rows], state, starts[b : b + rows])  # [rows, B, A]

        # -- TD targets: n-step returns, bootstrapped by the target network ---------------
        if target is None:
            target = self._td_targets(batch, q_online.detach() if s.double_q else None)  # [L, B]

        # -- loss: Huber (SB3) or squared TD error on the taken actions ---------------------
        q = q_online[:L].gather(-1, batch.actions[learn].long().unsqueeze(-1)).squeeze(-1)  # [L, B]
        huber = s.loss == "huber"
        per_step = F.smooth_l1_loss(q, target, reduction="none") if huber else (q - target).pow(2)
        loss = (per_step * weight).sum()
        self._check_finite(loss, "the TD loss")
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if s.max_grad_norm is not None:
            norm = nn.utils.clip_grad_norm_(self.q_net.parameters(), s.max_grad_norm, foreach=True)
            self._check_finite(norm, "the gradient norm")
        self.optimizer.step()
        self.n_updates += 1
        return {"loss": loss.detach(), "q": (q.detach() * weight).sum()}

    # ------------------------------------------------------------------------
    # Acting and persistence (the shell's hooks)
    # ------------------------------------------------------------------------
    def _initial_actor_state(self, n: int) -> MemoryState:
        return self.q_net.initial_state(n, self.device)

    def _act(
        self,
        obs: np.ndarray,
        state: MemoryState,
        starts: Tensor,
        deterministic: bool,
        generator: torch.Generator,
    ) -> tuple[np.ndarray, MemoryState]:
        x = observation_features(torch.as_tensor(obs, device=self.device), self.observation_space)
        self._training_mode(False)
        with torch.inference_mode():
            q, state = self.q_net(x.unsqueeze(0), state, starts.unsqueeze(0))
            action = q[0].argmax(-1)  # [B]
            if not deterministic:  # epsilon-greedy at the current exploration rate
                n = action.shape[0]
                explore = torch.rand(n, generator=generator, device=self.device) < self.exploration_rate
                random = torch.randint(self.n_actions, (n,), generator=generator, device=self.device)
                action = torch.where(explore, random, action)
        return action.cpu().numpy() + self._action_start, state

    def _networks(self) -> tuple[torch.nn.Module, ...]:
        return (self.q_net,)

    def _state_dicts(self) -> dict[str, Any]:
        return {
            "q_net": self.q_net.state_dict(),
            "q_target": self.q_target.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "exploration_rate": self.exploration_rate,
        }

    def _load_state_dicts(self, data: Mapping[str, Any]) -> None:
        self.q_net.load_state_dict(data["q_net"])
        self.q_target.load_state_dict(data["q_target"])
        self.optimizer.load_state_dict(data["optimizer"])
        self.exploration_rate = float(data["exploration_rate"])
