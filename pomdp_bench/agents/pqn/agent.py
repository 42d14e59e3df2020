"""PQN (Gallici et al. 2024, "Simplifying Deep Temporal Difference Learning") with an
optional memory: Q-learning on rollouts of vectorised envs, without replay or target
network. ``Discrete`` actions only.

The algorithm reads top to bottom in :meth:`PQN._iterate`, as PPO's does: collect a
rollout of ``n_steps`` steps of ``n_envs`` copies, acting epsilon-greedily on the online
Q network (:meth:`PQN._collect_rollout`); compute Q(lambda) targets backward over it
from the Q values the network gave while acting (:func:`q_lambda_targets`); then
``n_epochs`` passes of ``num_minibatches`` gradient steps on whole pieces of the
rollout, each piece run from the memory the network had at its first step
(:meth:`PQN._update`), the loss next to its data.
``predict``, ``evaluate``, ``save`` and ``load`` come from the shared shell
(:class:`~pomdp_bench.agents.base.Agent`); the settings are
:class:`~pomdp_bench.agents.pqn.settings.PQNSettings`.

Semantics (see docs/DESIGN.md, "Semantics that are easy to get wrong"):

- The targets are Peng's Q(lambda) as PQN computes them:
  ``G_t = r_t + gamma * ((1 - lambda) * max_a Q(o_{t+1}, a) + lambda * G_{t+1})``,
  with ``Q`` the online network's values while collecting (no gradient). They stop
  bootstrapping at ``terminated`` only; where a time limit truncated an episode the
  target bootstraps on ``max_a Q`` of the final observation, read with the memory that
  episode built, and the trace stops there. The rollout's last step bootstraps on the
  next observation's values.
- The memory resets inside the forward pass where the previous step ended an episode.
  Pieces are PPO's: fixed windows of ``bptt_length`` steps of one copy, starting from
  the memory the network had there while collecting; no gradient flows past a piece's
  start. For the fixed-length episodes of T-Maze the tuned bands make each piece one
  whole episode.
- ``memory=None`` is plain feedforward PQN through the same code.
"""

from __future__ import annotations

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
from pomdp_bench.agents.common.flat_parameters import FlatAdam, FlatParameters
from pomdp_bench.agents.common.networks import (
    MemoryState,
    activation_class,
    flat_obs_size,
    observation_features,
)
from pomdp_bench.agents.common.q_learning import DQNNetArch, discrete_actions
from pomdp_bench.agents.pqn.settings import PQNSettings
from pomdp_bench.memory import MemoryConfig, build_memory


def q_lambda_targets(
    rewards: Tensor,
    terminated: Tensor,
    dones: Tensor,
    next_max_q: Tensor,
    gamma: float,
    q_lambda: float,
) -> Tensor:
    """Peng's Q(lambda) returns over a rollout, time-first.

    Args:
        rewards, terminated, dones: ``[T, B]``; ``dones`` is terminated or truncated.
        next_max_q: ``[T, B]``, ``max_a Q`` of the observation after step ``t``: the next
            step's for a step inside an episode, the final observation's where a time
            limit truncated it, the next rollout's first for the last step (any value
            where ``terminated``: it is not read).
        gamma: discount factor.
        q_lambda: 0 gives one-step Q-learning targets, 1 Monte-Carlo returns.

    Returns:
        ``[T, B]`` targets: ``G_t = r_t + gamma * (1 - term_t) * next_max_q_t + gamma *
        lambda * (1 - done_t) * (G_{t+1} - next_max_q_t)``, with ``G_T = next_max_q_{T-1}``.
    """
    boot = rewards + gamma * (~terminated).to(rewards.dtype) * next_max_q  # [T, B]
    trace = (~dones).to(rewards.dtype) * (gamma * q_lambda)  # [T, B]
    targets = torch.empty_like(rewards)
    later = next_max_q[-1]  # G_T: the last step's one-step target
    for t in range(rewards.shape[0] - 1, -1, -1):
        later = boot[t] + trace[t] * (later - next_max_q[t])
        targets[t] = later
    return targets


def _mlp(
    sizes: list[int], input_size: int, activation: type[nn.Module], layer_norm: bool
) -> tuple[nn.Module, int]:
    """``Linear -> [LayerNorm] -> activation`` per width; ``nn.Identity`` for none."""
    layers: list[nn.Module] = []
    size = input_size
    for width in sizes:
        layers.append(nn.Linear(size, width))
        if layer_norm:
            layers.append(nn.LayerNorm(width))
        layers.append(activation())
        size = width
    return (nn.Sequential(*layers) if layers else nn.Identity()), size


class PQNNetwork(nn.Module):
    """``observation features -> encoder -> memory -> MLP -> Q per action``, time-first,
    with LayerNorm after each hidden linear layer (PQN's torso).

    Args:
        observation_space: ``Box`` (flattened) or ``Discrete`` (one-hot).
        n_actions: the ``Discrete`` action count.
        memory: the memory block's settings.
        net_arch: hidden widths (``encoder`` before the memory, ``q`` after it).
        activation: activation name of the MLPs.
        layer_norm: LayerNorm in the MLPs.
        extra_inputs: features read beside the observation's (the previous action's one-hot).
    """

    def __init__(
        self,
        observation_space: spaces.Space,
        n_actions: int,
        memory: MemoryConfig,
        net_arch: DQNNetArch,
        activation: str,
        layer_norm: bool,
        extra_inputs: int = 0,
    ) -> None:
        super().__init__()
        act = activation_class(activation)
        inputs = flat_obs_size(observation_space) + extra_inputs
        self.encoder, size = _mlp(net_arch.encoder, inputs, act, layer_norm)
        self.memory = build_memory(memory, input_size=size)
        head, size = _mlp(net_arch.q, self.memory.output_size, act, layer_norm)
        self.q = nn.Sequential(head, nn.Linear(size, n_actions))
        #: whether the memory carries anything from step to step (False for ``none``)
        self.stateful = len(self.memory.state_spec()) > 0

    def initial_state(self, batch_size: int, device: torch.device | None = None) -> MemoryState:
        return tuple(self.memory.initial_state(batch_size, device=device))

    def forward(self, x: Tensor, state: MemoryState, episode_starts: Tensor) -> tuple[Tensor, MemoryState]:
        """Q values ``[T, B, n_actions]`` of features ``x [T, B, D]`` from ``state`` (the
        memory resets where ``episode_starts [T, B]``), and the memory after step ``T - 1``."""
        y = self.encoder(x)
        if self.stateful or self.memory.kind != "none":  # a kind name on purpose: "none" has no state
            y, state = self.memory(y, state, episode_starts)
        return self.q(y), state


class PQN(Agent[PQNSettings]):
    """Parallel Q-learning (PQN) with an optional memory.

    Built as every agent is (:class:`~pomdp_bench.agents.base.Agent`)::

        PQN(env, memory=None, *, env_kwargs=None, settings=None, device="auto", **changes)

    where ``changes`` are fields of :class:`~pomdp_bench.agents.pqn.settings.PQNSettings`
    (``n_steps``, ``q_lambda``, ``epsilon_end``, ``learning_rate``, ...).
    ``predict(deterministic=False)`` acts epsilon-greedily at the current
    ``exploration_rate``; ``evaluate`` acts greedily.

    Attributes:
        exploration_rate: the epsilon of the last rollout (``epsilon_start`` before any).

    Raises:
        ValueError: settings that cannot work, with what would be valid in the message;
            an action space other than ``Discrete`` (the message names PPO and SAC).
        TypeError: an unknown setting (the message lists the valid ones), or a wrong type.
    """

    settings_class = PQNSettings
    save_format = 1
    evaluation_copies = 16
    default_n_envs = 32
    # Random streams, seed + offset: the network 0, the minibatch shuffles 1 (on the
    # CPU), the exploration 3 (numpy), predict() 4, evaluate() 10_001 (the shell's).
    predict_stream = 4

    def _setup_model(self) -> None:
        s = self.settings
        self.n_actions, self._action_start = discrete_actions("PQN", self.action_space)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(s.seed)
            net = PQNNetwork(
                self.observation_space,
                self.n_actions,
                s.memory,
                DQNNetArch.parse(s.net_arch),
                s.activation,
                s.layer_norm,
                extra_inputs=self.n_actions if s.previous_action else 0,
            )
        self.q_net: PQNNetwork = net.to(self.device)
        # One flat buffer for all parameters: zeroing, clipping and Adam are one op each.
        self.flat_params = FlatParameters(self.q_net)
        self.optimizer = FlatAdam(self.flat_params.param, lr=s.learning_rate(1.0))

        T, B = s.n_steps, self.n_envs
        dev = self.device
        self._n_features = flat_obs_size(self.observation_space)
        width = self._n_features + (self.n_actions if s.previous_action else 0)
        # The rollout is written on the host, step by step, into NumPy arrays: no torch
        # operator per field and step. On a CPU the torch buffers are views of them;
        # elsewhere they are copied over once a rollout (_collect_rollout).
        self.host_obs = np.zeros((T, B, width), dtype=np.float32)  # the network's inputs
        self.host_actions = np.zeros((T, B), dtype=np.int64)
        self.host_rewards = np.zeros((T, B), dtype=np.float32)
        self.host_terminated = np.zeros((T, B), dtype=bool)
        self.host_dones = np.zeros((T, B), dtype=bool)
        self.host_starts = np.zeros((T, B), dtype=bool)
        self._host_next = np.zeros((B, width), dtype=np.float32)  # the bootstrap's inputs
        host = (self.host_obs, self.host_actions, self.host_rewards, self.host_terminated)
        host += (self.host_dones, self.host_starts)
        (
            self.buf_obs,
            self.buf_actions,
            self.buf_rewards,
            self.buf_terminated,
            self.buf_dones,
            self.buf_starts,
        ) = (
            torch.from_numpy(a)
            if dev.type == "cpu"
            else torch.zeros(a.shape, dtype=torch.from_numpy(a).dtype, device=dev)
            for a in host
        )
        self.buf_max_q = torch.zeros(T, B, device=dev)  # max_a Q(o_t) while acting
        self.buf_final_max_q = torch.zeros(T, B, device=dev)  # max_a Q(final obs) where truncated
        self._eye = np.eye(self.n_actions, dtype=np.float32)  # one-hot rows of the actions
        space = self.observation_space  # one-hot rows of a Discrete observation
        self._eye_obs = np.eye(int(space.n), dtype=np.float32) if isinstance(space, spaces.Discrete) else None
        self.piece_states: list[MemoryState] = [()] * (T // s.bptt_length)

        self._shuffle_generator = torch.Generator().manual_seed(s.seed + 1)
        self._explore_rng = np.random.default_rng(s.seed + 3)
        self.exploration_rate = s.epsilon_start
        self._copy_rates: np.ndarray | None = None  # [B] per-copy epsilons (epsilon_end_max)
        self._obs: np.ndarray | None = None  # the next observation of every copy, [N, *obs_shape]

    # ------------------------------------------------------------------------
    # Training
    # ------------------------------------------------------------------------
    def learn(
        self,
        total_timesteps: int,
        progress_bar: bool = False,
        callback: Any = None,
        log_interval: int = 1,
        tb_log_name: str | None = None,
        reset_num_timesteps: bool = True,
    ) -> PQN:
        """The shell's :meth:`~pomdp_bench.agents.common.base.Agent.learn`; epsilon's and
        the learning rate's schedules run over this call's ``total_timesteps``."""
        return super().learn(
            total_timesteps, progress_bar, callback, log_interval, tb_log_name, reset_num_timesteps
        )

    def _iterate(self, total_timesteps: int) -> Iterator[int]:
        """The training loop (``learn`` in the shell drives it): whole rollouts, each
        collected then trained on; yields the env steps of each.

        After each update ``self.history`` gains a dict: ``timesteps``, ``mean_return``
        (mean undiscounted return of the last 100 finished episodes, NaN before the
        first), ``episodes``, ``loss``, ``q`` (mean Q of the taken actions),
        ``exploration_rate``, ``learning_rate`` and ``steps_per_second``.
        """
        torch.set_grad_enabled(True)
        s = self.settings
        start_timesteps = self.num_timesteps
        rollout_size = s.rollout_size
        t0, steps0 = time.perf_counter(), self.num_timesteps
        for _ in range(math.ceil(total_timesteps / rollout_size)):
            done_fraction = (self.num_timesteps - start_timesteps) / max(total_timesteps, 1)
            self.exploration_rate = s.exploration_rate(done_fraction)
            self._copy_rates = s.copy_exploration_rates(done_fraction, self.n_envs)
            self._collect_rollout()
            targets = self._targets()
            progress_remaining = 1.0 - (self.num_timesteps - start_timesteps) / max(total_timesteps, 1)
            stats = self._update(targets, max(progress_remaining, 0.0))
            stats.update(
                timesteps=self.num_timesteps,
                episodes=len(self.episode_log),
                exploration_rate=self.exploration_rate,
                mean_return=self._mean_recent_return(),
                steps_per_second=(self.num_timesteps - steps0) / (time.perf_counter() - t0),
            )
            self.history.append(stats)
            yield rollout_size

    def _start_episodes(self) -> None:
        self._obs = self._reset_training_envs()
        self._q_state = self.q_net.initial_state(self.n_envs, self.device)
        self._episode_starts = torch.ones(self.n_envs, dtype=torch.bool, device=self.device)
        self._previous = self._no_action(self.n_envs)

    def _features(self, obs: np.ndarray) -> Tensor:
        return observation_features(torch.as_tensor(obs, device=self.device), self.observation_space)

    def _no_action(self, n: int) -> Tensor:
        """The previous-action input of an episode's first step, ``[n, A]`` zeros (``[n, 0]``
        without ``previous_action``)."""
        return torch.zeros(n, self.n_actions if self.settings.previous_action else 0, device=self.device)

    def _inputs(self, obs: np.ndarray, previous: Tensor, starts: Tensor) -> Tensor:
        """The network's inputs ``[B, D]``: observation features, and with
        ``previous_action`` the previous action's one-hot, zeroed where an episode starts."""
        x = self._features(obs)
        if not self.settings.previous_action:
            return x
        return torch.cat([x, previous * (~starts).unsqueeze(-1).to(previous.dtype)], dim=-1)

    def _one_hot(self, action: np.ndarray | Tensor) -> Tensor:
        """``[B, A]`` one-hot of ``action`` (``[B, 0]`` without ``previous_action``)."""
        if not self.settings.previous_action:
            return self._no_action(len(action))
        return F.one_hot(torch.as_tensor(action, device=self.device), self.n_actions).float()

    def _host_inputs(
        self, out: np.ndarray, obs: np.ndarray, previous: np.ndarray, starts: np.ndarray
    ) -> None:
        """Write the network's inputs ``[B, D]`` into ``out``, as :meth:`_inputs` computes them:
        observation features, then the previous action's one-hot ``previous [B, A]``
        zeroed where ``starts [B]`` (without ``previous_action``, the features only)."""
        n = self._n_features
        if isinstance(self.observation_space, spaces.Discrete):
            out[:, :n] = self._eye_obs[np.asarray(obs, dtype=np.int64)]
        else:
            out[:, :n] = obs.reshape(len(obs), n)
        if self.settings.previous_action:
            np.multiply(previous, ~starts[:, None], out=out[:, n:])

    def _collect_rollout(self) -> None:
        """Run ``n_steps`` epsilon-greedy steps in every copy into the buffers, keeping
        ``max_a Q`` of every observation (the targets' bootstraps) and the memory at
        every piece start.

        The step's fields go into the host arrays (``host_*``) with NumPy; the network
        reads its inputs from there without a copy on a CPU. :meth:`_collect_rollout_reference`
        is the plain torch loop it is tested equal to."""
        s, net, dev = self.settings, self.q_net, self.device
        T, B, L = s.n_steps, self.n_envs, s.bptt_length
        on_host = dev.type == "cpu"
        if net.training:
            net.train(False)
        # All of the rollout's exploration draws at once: the same stream however the
        # network acts.
        explore = self._explore_rng.random((T, B)) < self._epsilons()  # [T, B]
        random_actions = self._explore_rng.integers(self.n_actions, size=(T, B))
        state = self._q_state
        starts = self._episode_starts.cpu().numpy()  # [B]
        previous = self._previous.cpu().numpy()  # [B, A] (or [B, 0])
        self.host_starts[0] = starts
        self._host_inputs(self.host_obs[0], self._obs, previous, starts)
        with torch.inference_mode():
            for t in range(T):
                if t % L == 0:
                    self.piece_states[t // L] = tuple(h.clone() for h in state)
                x = torch.from_numpy(self.host_obs[t])  # [B, D]
                starts_t = torch.from_numpy(self.host_starts[t])  # [B]
                if not on_host:
                    x, starts_t = x.to(dev), starts_t.to(dev)
                q, state = net(x.unsqueeze(0), state, starts_t.unsqueeze(0))
                max_q, greedy = q[0].max(-1)
                self.buf_max_q[t] = max_q
                action = np.where(explore[t], random_actions[t], greedy.cpu().numpy())

                next_obs, reward, terminated, truncated, info = self.env.step(action + self._action_start)
                done = terminated | truncated
                self.num_timesteps += B
                self._track_episodes(reward, done)
                self.host_actions[t] = action
                self.host_rewards[t] = reward
                self.host_terminated[t] = terminated
                self.host_dones[t] = done
                previous = self._eye[action] if s.previous_action else previous
                cut = np.flatnonzero(truncated & ~terminated)
                if cut.size:  # max_a Q of the final observation, from the memory that episode built
                    final_obs = np.stack([info["final_obs"][i] for i in cut])
                    final_x = np.zeros((cut.size, self.host_obs.shape[-1]), dtype=np.float32)
                    self._host_inputs(final_x, final_obs, previous[cut], np.zeros(cut.size, dtype=bool))
                    idx = torch.as_tensor(cut, device=dev)
                    q_final, _ = net(
                        torch.from_numpy(final_x).to(dev).unsqueeze(0),
                        tuple(h.index_select(0, idx) for h in state),
                        torch.zeros(1, cut.size, dtype=torch.bool, device=dev),
                    )
                    self.buf_final_max_q[t, idx] = q_final[0].max(-1).values
                if t + 1 < T:
                    self.host_starts[t + 1] = done
                    self._host_inputs(self.host_obs[t + 1], next_obs, previous, done)
                else:
                    self._host_inputs(self._host_next, next_obs, previous, done)
            if not on_host:  # one copy a rollout to the device
                for host, buf in (
                    (self.host_obs, self.buf_obs),
                    (self.host_actions, self.buf_actions),
                    (self.host_rewards, self.buf_rewards),
                    (self.host_terminated, self.buf_terminated),
                    (self.host_dones, self.buf_dones),
                    (self.host_starts, self.buf_starts),
                ):
                    buf.copy_(torch.from_numpy(host))
            starts_t = torch.as_tensor(done.copy(), device=dev)
            # the bootstrap of the rollout's last step
            q_next, _ = net(
                torch.from_numpy(self._host_next).to(dev).unsqueeze(0), state, starts_t.unsqueeze(0)
            )
        self._last_max_q = q_next[0].max(-1).values
        self._obs, self._episode_starts, self._q_state = next_obs, starts_t, state
        self._previous = torch.as_tensor(previous, device=dev)

    def _collect_rollout_reference(self) -> None:
        """:meth:`_collect_rollout` written plainly in torch, one buffer write per field and
        step: the reference the fast loop is tested equal to (``tests/test_pqn.py``)."""
        s, net, dev = self.settings, self.q_net, self.device
        T, B, L = s.n_steps, self.n_envs, s.bptt_length
        if net.training:
            net.train(False)
        explore = self._explore_rng.random((T, B)) < self._epsilons()  # [T, B]
        random_actions = self._explore_rng.integers(self.n_actions, size=(T, B))
        state = self._q_state
        starts = self._episode_starts
        x = self._inputs(self._obs, self._previous, starts)
        for t in range(T):
            if t % L == 0:
                self.piece_states[t // L] = tuple(h.clone() for h in state)
            with torch.inference_mode():
                q, state = net(x.unsqueeze(0), state, starts.unsqueeze(0))
                max_q, greedy = q[0].max(-1)
            action = np.where(explore[t], random_actions[t], greedy.cpu().numpy())
            self.buf_obs[t] = x
            self.buf_starts[t] = starts
            self.buf_max_q[t] = max_q

            next_obs, reward, terminated, truncated, info = self.env.step(action + self._action_start)
            done = terminated | truncated
            self.num_timesteps += B
            self._track_episodes(reward, done)
            self.buf_actions[t] = torch.as_tensor(action, device=dev)
            self.buf_rewards[t] = torch.as_tensor(reward, dtype=torch.float32, device=dev)
            self.buf_terminated[t] = torch.as_tensor(terminated, device=dev)
            self.buf_dones[t] = starts = torch.as_tensor(done, device=dev)
            cut = np.flatnonzero(truncated & ~terminated)
            previous = self._one_hot(action)
            if cut.size:  # max_a Q of the final observation, from the memory that episode built
                final_obs = np.stack([info["final_obs"][i] for i in cut])
                idx = torch.as_tensor(cut, device=dev)
                no_start = torch.zeros(cut.size, dtype=torch.bool, device=dev)
                with torch.inference_mode():
                    q_final, _ = net(
                        self._inputs(final_obs, previous[idx], no_start).unsqueeze(0),
                        tuple(h.index_select(0, idx) for h in state),
                        torch.zeros(1, cut.size, dtype=torch.bool, device=dev),
                    )
                self.buf_final_max_q[t, idx] = q_final[0].max(-1).values
            x = self._inputs(next_obs, previous, starts)
        self._obs, self._episode_starts, self._q_state, self._previous = next_obs, starts, state, previous
        with torch.inference_mode():  # the bootstrap of the rollout's last step
            q_next, _ = net(x.unsqueeze(0), state, starts.unsqueeze(0))
        self._last_max_q = q_next[0].max(-1).values

    def _epsilons(self) -> float | np.ndarray:
        """The rollout's epsilon: one number, or ``[B]`` with per-copy epsilons
        (``epsilon_end_max``)."""
        return self.exploration_rate if self._copy_rates is None else self._copy_rates

    def _targets(self) -> Tensor:
        """Q(lambda) targets ``[T, B]`` of the rollout (:func:`q_lambda_targets`)."""
        s = self.settings
        next_max_q = torch.cat([self.buf_max_q[1:], self._last_max_q.unsqueeze(0)])
        truncated = self.buf_dones & ~self.buf_terminated
        next_max_q = torch.where(truncated, self.buf_final_max_q, next_max_q)
        return q_lambda_targets(
            self.buf_rewards, self.buf_terminated, self.buf_dones, next_max_q, s.gamma, s.q_lambda
        )

    def _pieces(self, x: Tensor) -> Tensor:
        """``[T, B, ...] -> [L, K * B, ...]``: piece ``k * B + b`` is copy b's k-th piece."""
        steps, envs = x.shape[:2]
        length = self.settings.bptt_length
        x = x.reshape(steps // length, length, envs, *x.shape[2:]).transpose(0, 1)
        return x.reshape(length, (steps // length) * envs, *x.shape[3:])

    def _update(self, targets: Tensor, progress_remaining: float) -> dict[str, float]:
        """``n_epochs`` passes of ``num_minibatches`` gradient steps on whole pieces."""
        s, net = self.settings, self.q_net
        lr = s.learning_rate(progress_remaining)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        net.train(True)
        self.flat_params.check()
        obs, actions, starts, target = (
            self._pieces(f) for f in (self.buf_obs, self.buf_actions, self.buf_starts, targets)
        )  # [L, P, ...]
        piece_state = tuple(torch.cat(parts) for parts in zip(*self.piece_states, strict=True))  # [P, ...]
        n_pieces = obs.shape[1]
        huber = s.loss == "huber"
        losses, qs = [], []
        for epoch in range(s.n_epochs):
            order = torch.randperm(n_pieces, generator=self._shuffle_generator).to(self.device)
            for i, idx in enumerate(order.chunk(s.num_minibatches)):
                # Each piece runs from its stored memory; no gradient reaches past its start.
                state = tuple(h.index_select(0, idx) for h in piece_state)
                q_all, _ = net(obs.index_select(1, idx), state, starts.index_select(1, idx))  # [L, P_mb, A]
                q = q_all.gather(-1, actions.index_select(1, idx).unsqueeze(-1)).squeeze(-1)  # [L, P_mb]
                y = target.index_select(1, idx)
                loss = F.smooth_l1_loss(q, y) if huber else 0.5 * F.mse_loss(q, y)

                self.flat_params.zero_grad()
                loss.backward()
                grad_norm = self.flat_params.clip_grad_norm_(s.max_grad_norm)
                self._check_finite(
                    loss.detach() + grad_norm,
                    "the loss plus the gradient norm",
                    f"epoch {epoch + 1}, minibatch {i + 1}",
                    loss=loss,
                    gradient_norm=grad_norm,
                )
                self.optimizer.step()
                losses.append(loss.detach())
                qs.append(q.detach().mean())
        self.n_updates += 1
        net.train(False)
        bad = self.flat_params.nonfinite()
        if bad:
            raise FloatingPointError(
                f"PQN update {self.n_updates} (timesteps {self.num_timesteps}) left non-finite parameters: {bad}"
            )
        return {
            "loss": float(torch.stack(losses).mean()),
            "q": float(torch.stack(qs).mean()),
            "learning_rate": lr,
            "update": self.n_updates,
        }

    # ------------------------------------------------------------------------
    # Acting and persistence (the shell's hooks)
    # ------------------------------------------------------------------------
    def _initial_actor_state(self, n: int) -> MemoryState:
        """The memory's state, and with ``previous_action`` a last ``[n, A]`` tensor: the
        previous action's one-hot (zeros at a start)."""
        state = self.q_net.initial_state(n, self.device)
        return (*state, self._no_action(n)) if self.settings.previous_action else state

    def _act(
        self,
        obs: np.ndarray,
        state: MemoryState,
        starts: Tensor,
        deterministic: bool,
        generator: torch.Generator,
    ) -> tuple[np.ndarray, MemoryState]:
        if self.q_net.training:
            self.q_net.train(False)
        previous = self._no_action(len(obs))
        if self.settings.previous_action:
            state, previous = tuple(state[:-1]), state[-1]
        with torch.inference_mode():
            x = self._inputs(obs, previous, starts)
            q, state = self.q_net(x.unsqueeze(0), state, starts.unsqueeze(0))
            action = q[0].argmax(-1)  # [B]
            if not deterministic:  # epsilon-greedy at the current exploration rate
                n = action.shape[0]
                explore = torch.rand(n, generator=generator, device=self.device) < self.exploration_rate
                random = torch.randint(self.n_actions, (n,), generator=generator, device=self.device)
                action = torch.where(explore, random, action)
            if self.settings.previous_action:
                state = (*state, self._one_hot(action))
        return action.cpu().numpy() + self._action_start, state

    def _networks(self) -> tuple[torch.nn.Module, ...]:
        return (self.q_net,)

    def _state_dicts(self) -> dict[str, Any]:
        return {
            "q_net": self.q_net.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "exploration_rate": self.exploration_rate,
        }

    def _load_state_dicts(self, data: Mapping[str, Any]) -> None:
        self.q_net.load_state_dict(data["q_net"])
        self.optimizer.load_state_dict(data["optimizer"])
        self.exploration_rate = float(data["exploration_rate"])
