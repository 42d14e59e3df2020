"""SAC's recurrent actor and twin critics (Ni et al. 2022, "Recurrent model-free RL can
be a strong baseline for many POMDPs").

Both are ``features -> encoder -> memory -> MLP -> head``, time-first, built from
:class:`pomdp_bench.agents.common.networks.Trunk` (an MLP encoder and a memory block):

- :class:`SACActor` reads the observation. For ``Box`` actions its head is a
  tanh-squashed Gaussian (mean and state-dependent log standard deviation, as
  SB3's SAC); for ``Discrete`` actions, a categorical (SAC-Discrete).
- :class:`SACCritic` has its own memory, which reads the observation and the
  previous action (zero at an episode start), so that what it remembers does not
  depend on the action being scored. That action joins after the memory, at the
  twin Q heads (``Box``); for ``Discrete`` actions the heads score every action at
  once. The two heads share the critic's memory, as Ni et al.'s ``Critic_RNN``
  does; with no memory they are two independent MLPs, exactly SB3's twin critics.

A memory of kind ``none`` has no state: the critic then reads only the
observation (SB3's ``Q(s, a)``), since the previous action would only add an input.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
from gymnasium import spaces
from torch import Tensor, nn

from pomdp_bench.agents.common.networks import MemoryState, Trunk, activation_class, build_mlp, flat_obs_size
from pomdp_bench.agents.common.spaces import check_action_space
from pomdp_bench.memory import MemoryConfig

# SB3's bounds on the Gaussian's log standard deviation.
LOG_STD_MIN, LOG_STD_MAX = -20.0, 2.0
# SB3's TanhBijector epsilon: keeps log(1 - tanh(u)^2) finite at |tanh(u)| = 1.
_TANH_EPS = 1e-6


class SACNetArch(NamedTuple):
    """Hidden widths: ``encoder`` before the memory (actor and critic each have one),
    ``pi`` after the actor's memory, ``qf`` in each Q head."""

    encoder: list[int]
    pi: list[int]
    qf: list[int]

    @classmethod
    def parse(cls, net_arch: list[int] | dict[str, list[int]] | None) -> SACNetArch:
        """Read SB3's SAC forms: ``None`` (``pi=qf=[256, 256]``, SB3's default), a list
        (both), or a dict with keys ``pi``, ``qf`` and optionally ``encoder``."""
        if net_arch is None:
            return cls([], [256, 256], [256, 256])
        if isinstance(net_arch, (list, tuple)):
            return cls([], [int(w) for w in net_arch], [int(w) for w in net_arch])
        if isinstance(net_arch, dict):
            unknown = set(net_arch) - {"encoder", "pi", "qf"}
            if unknown:
                raise ValueError(f"net_arch has unknown keys {sorted(unknown)}; valid: encoder, pi, qf")
            return cls(*([int(w) for w in net_arch.get(k, [])] for k in ("encoder", "pi", "qf")))
        raise TypeError(f"net_arch must be None, a list of ints or a dict, got {net_arch!r}")


def action_features(actions: Tensor, space: spaces.Space) -> Tensor:
    """Actions as the critic reads them, ``[..., A']``: a ``Box`` action in tanh units
    ``[-1, 1]`` as is, a ``Discrete`` action one-hot (``A' = n``)."""
    if isinstance(space, spaces.Discrete):
        return nn.functional.one_hot(actions.long(), int(space.n)).float()
    return actions.float()


def action_feature_size(space: spaces.Space) -> int:
    """``A'``, the width of :func:`action_features`."""
    return int(space.n) if isinstance(space, spaces.Discrete) else int(space.shape[0])


class SACActor(nn.Module):
    """``obs -> encoder -> memory -> pi MLP -> policy head``.

    Args:
        observation_space: ``Box`` (flattened) or ``Discrete`` (one-hot).
        action_space: ``Discrete`` or a bounded 1-d ``Box``.
        memory: the memory block's settings.
        net_arch: hidden widths (``encoder`` and ``pi`` are used).
        activation: activation class of the MLPs.
    """

    def __init__(
        self,
        observation_space: spaces.Space,
        action_space: spaces.Space,
        memory: MemoryConfig,
        net_arch: SACNetArch,
        activation: type[nn.Module],
    ) -> None:
        super().__init__()
        check_action_space(action_space, "SAC")
        self.discrete = isinstance(action_space, spaces.Discrete)
        self.trunk = Trunk(flat_obs_size(observation_space), net_arch.encoder, memory, activation)
        self.latent_pi, size = build_mlp(self.trunk.output_size, net_arch.pi, activation)
        if self.discrete:
            self.logits = nn.Linear(size, int(action_space.n))
        else:
            self.mu = nn.Linear(size, int(action_space.shape[0]))
            self.log_std = nn.Linear(size, int(action_space.shape[0]))

    @property
    def stateful(self) -> bool:
        """Whether the memory carries anything from step to step (False for ``none``)."""
        return len(self.trunk.memory.state_spec()) > 0

    def initial_state(self, batch_size: int, device: torch.device | None = None) -> MemoryState:
        return self.trunk.initial_state(batch_size, device)

    def forward(self, x: Tensor, state: MemoryState, episode_starts: Tensor) -> tuple[Tensor, MemoryState]:
        """Latent features ``[T, B, P]`` of observation features ``x [T, B, D]`` from
        ``state``; returns them and the memory after step ``T - 1``."""
        y, state = self.trunk(x, state, episode_starts)
        return self.latent_pi(y), state

    def policy(self, latent: Tensor, generator: torch.Generator | None = None) -> tuple[Tensor, Tensor]:
        """The policy at ``latent [..., P]``.

        Returns:
            ``Box``: a reparameterised sample ``a = tanh(u)`` in ``[-1, 1]`` ``[..., A]``
            and its log density ``[...]`` (nats, with the tanh correction).
            ``Discrete``: the probabilities ``[..., n]`` and log-probabilities ``[..., n]``
            of every action (SAC-Discrete takes expectations over them exactly).
        """
        if self.discrete:
            log_probs = torch.log_softmax(self.logits(latent), dim=-1)
            return log_probs.exp(), log_probs
        mean = self.mu(latent)
        log_std = self.log_std(latent).clamp(LOG_STD_MIN, LOG_STD_MAX)
        noise = torch.randn(mean.shape, generator=generator, device=mean.device, dtype=mean.dtype)
        u = mean + noise * log_std.exp()
        action = torch.tanh(u)
        gaussian = -0.5 * noise.pow(2) - log_std - 0.5 * math.log(2 * math.pi)
        log_prob = (gaussian - torch.log(1.0 - action.pow(2) + _TANH_EPS)).sum(-1)
        return action, log_prob

    def act(self, latent: Tensor, deterministic: bool, generator: torch.Generator | None = None) -> Tensor:
        """Actions at ``latent [B, P]``: ``[B, A]`` in ``[-1, 1]`` (``Box``) or ``[B]`` int64."""
        if self.discrete:
            logits = self.logits(latent)
            if deterministic:
                return logits.argmax(-1)
            probs = torch.softmax(logits, dim=-1)
            return torch.multinomial(probs, 1, generator=generator).squeeze(-1)
        if deterministic:
            return torch.tanh(self.mu(latent))
        return self.policy(latent, generator)[0]


class SACCritic(nn.Module):
    """Twin Q functions around one memory: ``[obs, previous action] -> encoder ->
    memory``, then each head reads ``[memory output, action]`` (``Box``, one value) or
    the memory output alone (``Discrete``, one value per action).

    Args:
        observation_space: ``Box`` (flattened) or ``Discrete`` (one-hot).
        action_space: ``Discrete`` or a bounded 1-d ``Box``.
        memory: the memory block's settings.
        net_arch: hidden widths (``encoder`` and ``qf`` are used).
        activation: activation class of the MLPs.
        n_critics: how many Q heads (2: twin Q).
    """

    def __init__(
        self,
        observation_space: spaces.Space,
        action_space: spaces.Space,
        memory: MemoryConfig,
        net_arch: SACNetArch,
        activation: type[nn.Module],
        n_critics: int = 2,
    ) -> None:
        super().__init__()
        check_action_space(action_space, "SAC")
        self.discrete = isinstance(action_space, spaces.Discrete)
        # A stateless memory forgets the previous action at once: leave it out. The kind
        # name on purpose: "none" is the feedforward baseline, the stateless memory.
        self.reads_prev_action = memory.kind != "none"
        in_size = flat_obs_size(observation_space)
        if self.reads_prev_action:
            in_size += action_feature_size(action_space)
        self.trunk = Trunk(in_size, net_arch.encoder, memory, activation)
        head_in = self.trunk.output_size + (0 if self.discrete else int(action_space.shape[0]))
        head_out = int(action_space.n) if self.discrete else 1
        self.q_heads = nn.ModuleList()
        for _ in range(n_critics):
            mlp, size = build_mlp(head_in, net_arch.qf, activation)
            self.q_heads.append(nn.Sequential(mlp, nn.Linear(size, head_out)))

    @property
    def stateful(self) -> bool:
        """Whether the memory carries anything from step to step (False for ``none``)."""
        return len(self.trunk.memory.state_spec()) > 0

    def initial_state(self, batch_size: int, device: torch.device | None = None) -> MemoryState:
        return self.trunk.initial_state(batch_size, device)

    def inputs(self, obs_features: Tensor, prev_actions: Tensor) -> Tensor:
        """The memory's input ``[T, B, D (+ A')]`` from observation features
        ``[T, B, D]`` and previous-action features ``[T, B, A']`` (zero at starts)."""
        if self.reads_prev_action:
            return torch.cat([obs_features, prev_actions], dim=-1)
        return obs_features

    def forward(self, x: Tensor, state: MemoryState, episode_starts: Tensor) -> tuple[Tensor, MemoryState]:
        """Memory output ``[T, B, H]`` of inputs ``x [T, B, D']`` (from :meth:`inputs`)."""
        return self.trunk(x, state, episode_starts)

    def q_values(self, latent: Tensor, actions: Tensor | None = None) -> Tensor:
        """Q values of every head: ``[K, ...]`` for ``Box`` (``actions [..., A]`` in tanh
        units join here), ``[K, ..., n]`` for ``Discrete`` (``actions`` unused)."""
        x = latent if self.discrete else torch.cat([latent, actions], dim=-1)
        q = torch.stack([head(x) for head in self.q_heads])
        return q if self.discrete else q.squeeze(-1)


def make_sac_networks(
    observation_space: spaces.Space,
    action_space: spaces.Space,
    memory: MemoryConfig,
    net_arch: SACNetArch,
    activation: str,
) -> tuple[SACActor, SACCritic]:
    """The actor and the critic, each with its own memory."""
    act = activation_class(activation)
    return (
        SACActor(observation_space, action_space, memory, net_arch, act),
        SACCritic(observation_space, action_space, memory, net_arch, act),
    )
