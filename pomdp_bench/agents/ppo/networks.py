"""PPO's networks: encoder -> memory -> heads.

- :class:`NetArch`: the hidden widths, read from SB3's forms.
- :class:`CategoricalHead`, :class:`MultiCategoricalHead`, :class:`DiagGaussianHead`:
  action distributions for ``Discrete``, ``MultiDiscrete`` and ``Box`` action spaces,
  written directly on tensors (no
  ``torch.distributions`` objects, which cost time on every step).
- :class:`ActorCritic`: PPO's policy and value networks, with separate actor
  and critic memories (sb3-contrib's default, ``enable_critic_lstm=True``) or
  one shared memory.

The encoder and memory are the shared :class:`~pomdp_bench.agents.common.networks.Trunk`.
The layout of :class:`ActorCritic` with an LSTM memory and an empty encoder is
sb3-contrib's ``MlpLstmPolicy``, so its weights copy over one to one
(:mod:`pomdp_bench.agents.sb3`).
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


class NetArch(NamedTuple):
    """Hidden layer widths: ``encoder`` before the memory, ``pi``/``vf`` after it."""

    encoder: list[int]
    pi: list[int]
    vf: list[int]

    @classmethod
    def parse(cls, net_arch: list[int] | dict[str, list[int]] | None) -> NetArch:
        """Read SB3's forms: ``None`` (``pi=vf=[64, 64]``), a list (both heads), or a
        dict with keys ``pi``, ``vf`` and optionally ``encoder``."""
        if net_arch is None:
            return cls([], [64, 64], [64, 64])
        if isinstance(net_arch, (list, tuple)):
            return cls([], list(net_arch), list(net_arch))
        if isinstance(net_arch, dict):
            unknown = set(net_arch) - {"encoder", "pi", "vf"}
            if unknown:
                raise ValueError(f"net_arch has unknown keys {sorted(unknown)}; valid: encoder, pi, vf")
            return cls(
                list(net_arch.get("encoder", [])), list(net_arch.get("pi", [])), list(net_arch.get("vf", []))
            )
        raise TypeError(f"net_arch must be None, a list of ints or a dict, got {net_arch!r}")


def epsilon_soft_log_probs(logits: Tensor, epsilon: float) -> Tensor:
    """Log-probabilities ``[..., n]`` of the policy ``(1 - epsilon) * softmax(logits) + epsilon / n``.

    An epsilon-soft policy (Sutton & Barto): every action keeps a probability of at
    least ``epsilon / n``, however far the logits have moved, so an action that the
    rest of the state space taught the policy to avoid is still tried. ``epsilon = 0``
    is the plain ``log_softmax``, computed as before.
    """
    log_probs = torch.log_softmax(logits, dim=-1)
    if epsilon == 0.0:
        return log_probs
    # log((1 - e) p + e / n) without leaving log space: exact for p -> 0.
    return torch.logaddexp(
        log_probs + math.log1p(-epsilon), log_probs.new_tensor(math.log(epsilon / logits.shape[-1]))
    )


def uniform_kl(log_probs: Tensor) -> Tensor:
    """``KL(U || pi) [...]`` of the uniform distribution ``U`` over ``n`` actions from a
    policy with normalised log-probabilities ``log_probs [..., n]``.

    As a penalty it is a log barrier, ``-mean_a log pi(a)`` up to a constant: its
    gradient on an action's logit is ``pi(a) - 1/n``, which does not vanish as
    ``pi(a) -> 0``. The entropy's, ``-pi(a) (log pi(a) + H)``, does: an entropy bonus
    cannot bring back an action the policy has all but ruled out, this penalty does.
    """
    return -math.log(log_probs.shape[-1]) - log_probs.mean(-1)


class CategoricalHead(nn.Module):
    """A categorical distribution over ``n`` actions; its parameters are the
    normalised logits ``[..., n]``. With ``epsilon_soft > 0`` they are those of the
    epsilon-soft mixture (:func:`epsilon_soft_log_probs`), for sampling, log-probs
    and entropy alike; the mode is unchanged."""

    def __init__(self, latent_size: int, n: int, epsilon_soft: float = 0.0) -> None:
        super().__init__()
        self.linear = nn.Linear(latent_size, n)
        self.n = n
        self.epsilon_soft = epsilon_soft

    def forward(self, latent: Tensor) -> Tensor:
        return epsilon_soft_log_probs(self.linear(latent), self.epsilon_soft)

    def log_prob(self, logits: Tensor, actions: Tensor) -> Tensor:
        return logits.gather(-1, actions.long().unsqueeze(-1)).squeeze(-1)

    def entropy(self, logits: Tensor) -> Tensor:
        return -(logits.exp() * logits).sum(-1)

    def uniform_kl(self, logits: Tensor) -> Tensor:
        """``KL(uniform || pi) [...]`` = ``-log n - mean_a log pi(a)``: 0 at the uniform
        policy, and unbounded as any action's probability goes to 0 (:func:`uniform_kl`)."""
        return uniform_kl(logits)

    def sample(self, logits: Tensor, generator: torch.Generator | None) -> Tensor:
        # Inverse-CDF sampling: a few elementwise ops, cheaper per step than multinomial.
        u = torch.rand((*logits.shape[:-1], 1), generator=generator, device=logits.device, dtype=logits.dtype)
        return (logits.exp().cumsum(-1) < u).sum(-1).clamp_(max=self.n - 1)

    def mode(self, logits: Tensor) -> Tensor:
        return logits.argmax(-1)


class MultiCategoricalHead(nn.Module):
    """Independent categoricals over ``K`` action dimensions of ``nvec[k]`` choices each
    (a ``MultiDiscrete`` space, as SB3's ``MultiCategoricalDistribution``): one logit
    group per dimension, log-probabilities and entropies summed over the dimensions.
    Its parameters are the groups' normalised logits side by side ``[..., sum(nvec)]``;
    actions are ``[..., K]`` indices from 0."""

    def __init__(self, latent_size: int, nvec: list[int], epsilon_soft: float = 0.0) -> None:
        super().__init__()
        self.nvec = [int(n) for n in nvec]
        self.linear = nn.Linear(latent_size, sum(self.nvec))
        self.epsilon_soft = epsilon_soft

    def _groups(self, logits: Tensor) -> tuple[Tensor, ...]:
        return torch.split(logits, self.nvec, dim=-1)

    def forward(self, latent: Tensor) -> Tensor:
        groups = self._groups(self.linear(latent))
        return torch.cat([epsilon_soft_log_probs(g, self.epsilon_soft) for g in groups], dim=-1)

    def log_prob(self, logits: Tensor, actions: Tensor) -> Tensor:
        parts = [
            g.gather(-1, actions[..., k].long().unsqueeze(-1)).squeeze(-1)
            for k, g in enumerate(self._groups(logits))
        ]
        return torch.stack(parts, dim=-1).sum(-1)

    def entropy(self, logits: Tensor) -> Tensor:
        return -(logits.exp() * logits).sum(-1)  # the sum over groups of each group's entropy

    def uniform_kl(self, logits: Tensor) -> Tensor:
        """The sum over groups of each group's ``KL(uniform || pi)`` ``[...]``."""
        return torch.stack([uniform_kl(g) for g in self._groups(logits)], dim=-1).sum(-1)

    def sample(self, logits: Tensor, generator: torch.Generator | None) -> Tensor:
        # Inverse-CDF sampling per group, as CategoricalHead.
        u = torch.rand(
            (*logits.shape[:-1], len(self.nvec)),
            generator=generator,
            device=logits.device,
            dtype=logits.dtype,
        )
        picks = [
            (g.exp().cumsum(-1) < u[..., k : k + 1]).sum(-1).clamp_(max=n - 1)
            for k, (g, n) in enumerate(zip(self._groups(logits), self.nvec, strict=True))
        ]
        return torch.stack(picks, dim=-1)

    def mode(self, logits: Tensor) -> Tensor:
        return torch.stack([g.argmax(-1) for g in self._groups(logits)], dim=-1)


class DiagGaussianHead(nn.Module):
    """A diagonal Gaussian over ``A``-dimensional actions with a learned,
    state-independent log standard deviation; its parameters are the means ``[..., A]``."""

    def __init__(self, latent_size: int, action_dim: int, log_std_init: float = 0.0) -> None:
        super().__init__()
        self.linear = nn.Linear(latent_size, action_dim)
        self.log_std = nn.Parameter(torch.full((action_dim,), float(log_std_init)))

    def forward(self, latent: Tensor) -> Tensor:
        return self.linear(latent)

    def log_prob(self, mean: Tensor, actions: Tensor) -> Tensor:
        z = (actions - mean) * torch.exp(-self.log_std)
        return (-0.5 * z.pow(2) - self.log_std - 0.5 * math.log(2 * math.pi)).sum(-1)

    def entropy(self, mean: Tensor) -> Tensor:
        per_dim = 0.5 + 0.5 * math.log(2 * math.pi) + self.log_std
        return per_dim.sum().expand(mean.shape[:-1])

    def sample(self, mean: Tensor, generator: torch.Generator | None) -> Tensor:
        noise = torch.randn(mean.shape, generator=generator, device=mean.device, dtype=mean.dtype)
        return mean + noise * self.log_std.exp()

    def mode(self, mean: Tensor) -> Tensor:
        return mean


def make_action_head(
    space: spaces.Space, latent_size: int, log_std_init: float = 0.0, epsilon_soft: float = 0.0
) -> nn.Module:
    """The action distribution head for ``space`` (``Discrete``, ``MultiDiscrete`` with a
    1-d ``nvec``, or a 1-d ``Box``); its actions count from 0 (the agent adds ``start``).

    Raises:
        ValueError: ``epsilon_soft > 0`` with a ``Box`` space (it mixes in a uniform
            distribution over discrete actions).
    """
    check_action_space(space, "PPO")
    if isinstance(space, spaces.Discrete):
        return CategoricalHead(latent_size, int(space.n), epsilon_soft)
    if isinstance(space, spaces.MultiDiscrete):
        return MultiCategoricalHead(latent_size, space.nvec.tolist(), epsilon_soft)
    if epsilon_soft:
        raise ValueError(f"epsilon_soft needs discrete actions, got epsilon_soft={epsilon_soft} and {space}")
    return DiagGaussianHead(latent_size, int(space.shape[0]), log_std_init)


class ActorCriticState(NamedTuple):
    """The memories of the actor and the critic, each a tuple of ``[B, ...]``
    tensors; ``critic`` is ``()`` when the memory is shared."""

    actor: MemoryState
    critic: MemoryState


class ActorCritic(nn.Module):
    """PPO's policy and value networks around one or two memories.

    ``obs -> encoder -> memory -> pi MLP -> action head`` and
    ``obs -> encoder -> memory -> vf MLP -> value``; the critic has its own
    encoder and memory unless ``shared_memory``, in which case both losses train
    the one trunk (as CleanRL's recurrent PPO does).

    Args:
        observation_space: a ``Box`` (flattened) or ``Discrete`` (one-hot) space
            (other spaces reach it flattened: :mod:`pomdp_bench.agents.common.spaces`).
        action_space: ``Discrete``, ``MultiDiscrete`` (1-d) or a 1-d ``Box``.
        memory: the memory block's settings (``kind="none"`` for feedforward).
        net_arch: hidden widths, see :meth:`NetArch.parse`.
        activation: activation name of the MLPs.
        shared_memory: one trunk for actor and critic.
        obs_skip: the heads read the encoded observation beside the memory's output.
        ortho_init: SB3's orthogonal initialisation of the MLPs and heads
            (gains sqrt(2), 0.01 for the action head, 1 for the value head); the
            memory keeps its own initialisation, as sb3-contrib's LSTMs do.
        log_std_init: initial log standard deviation of a Gaussian policy.
        epsilon_soft: each discrete action's probability is at least
            ``epsilon_soft / n`` (:func:`epsilon_soft_log_probs`).
    """

    def __init__(
        self,
        observation_space: spaces.Space,
        action_space: spaces.Space,
        memory: MemoryConfig,
        net_arch: NetArch,
        activation: str = "tanh",
        shared_memory: bool = False,
        ortho_init: bool = True,
        log_std_init: float = 0.0,
        obs_skip: bool = False,
        epsilon_soft: float = 0.0,
    ) -> None:
        super().__init__()
        self.observation_space = observation_space
        self.obs_size = flat_obs_size(observation_space)
        act = activation_class(activation)
        self.shared_memory = shared_memory
        self.actor_trunk = Trunk(self.obs_size, net_arch.encoder, memory, act, obs_skip)
        self.critic_trunk = (
            None if shared_memory else Trunk(self.obs_size, net_arch.encoder, memory, act, obs_skip)
        )
        self.pi_net, pi_size = build_mlp(self.actor_trunk.output_size, net_arch.pi, act)
        self.vf_net, vf_size = build_mlp(self.actor_trunk.output_size, net_arch.vf, act)
        self.action_head = make_action_head(action_space, pi_size, log_std_init, epsilon_soft)
        self.value_head = nn.Linear(vf_size, 1)
        self.recurrent: bool = bool(self.actor_trunk.memory.trains_through_time)
        if ortho_init:
            trunks = (
                [self.actor_trunk, self.critic_trunk] if self.critic_trunk is not None else [self.actor_trunk]
            )
            gains: list[tuple[nn.Module, float]] = [(t.encoder, math.sqrt(2)) for t in trunks]
            gains += [(self.pi_net, math.sqrt(2)), (self.vf_net, math.sqrt(2))]
            gains += [(self.action_head, 0.01), (self.value_head, 1.0)]
            for module, gain in gains:
                for layer in module.modules():
                    if isinstance(layer, nn.Linear):
                        nn.init.orthogonal_(layer.weight, gain=gain)
                        nn.init.zeros_(layer.bias)

    # -- pieces -----------------------------------------------------------------
    def preprocess(self, obs: Tensor) -> Tensor:
        """Observations ``[..., *obs_shape]`` as float features ``[..., D]``."""
        if isinstance(self.observation_space, spaces.Discrete):
            return nn.functional.one_hot(obs.long(), self.obs_size).float()
        shape = self.observation_space.shape
        if len(shape) == 1:  # already [..., D]: float32 comes back as the same tensor,
            return obs.float()  # which lets a memory keep what it derived from it
        return obs.reshape(*obs.shape[: obs.dim() - len(shape)], self.obs_size).float()

    def initial_state(self, batch_size: int, device: torch.device | None = None) -> ActorCriticState:
        """Fresh memories for ``batch_size`` copies."""
        critic = () if self.critic_trunk is None else self.critic_trunk.initial_state(batch_size, device)
        return ActorCriticState(self.actor_trunk.initial_state(batch_size, device), critic)

    def _trunks(
        self, x: Tensor, state: ActorCriticState, episode_starts: Tensor
    ) -> tuple[Tensor, Tensor, ActorCriticState]:
        latent, actor_state = self.actor_trunk(x, state.actor, episode_starts)
        if self.critic_trunk is None:
            return latent, latent, ActorCriticState(actor_state, ())
        latent_vf, critic_state = self.critic_trunk(x, state.critic, episode_starts)
        return latent, latent_vf, ActorCriticState(actor_state, critic_state)

    def value_from_latent(self, latent_vf: Tensor) -> Tensor:
        return self.value_head(self.vf_net(latent_vf)).squeeze(-1)

    # -- the three uses ---------------------------------------------------------
    def actor_step(
        self,
        obs: Tensor,
        state: MemoryState,
        episode_starts: Tensor,
        deterministic: bool,
        generator: torch.Generator | None = None,
    ) -> tuple[Tensor, Tensor, MemoryState]:
        """The actor alone for one step.

        Args:
            obs: ``[B, *obs_shape]``.
            state: the actor's memory before this step.
            episode_starts: ``[B]`` bool, this step begins an episode.

        Returns:
            ``(action [B, ...], log_prob [B], actor state after this step)``
        """
        x = self.preprocess(obs).unsqueeze(0)
        latent, state = self.actor_trunk(x, state, episode_starts.unsqueeze(0))
        action, log_prob = self._sample(latent[0], deterministic, generator)
        return action, log_prob, state

    def _sample(
        self, latent_pi: Tensor, deterministic: bool, generator: torch.Generator | None
    ) -> tuple[Tensor, Tensor]:
        """``(action [B, ...], log_prob [B])`` from the actor's latent ``[B, H]``."""
        params = self.action_head(self.pi_net(latent_pi))
        action = (
            self.action_head.mode(params) if deterministic else self.action_head.sample(params, generator)
        )
        return action, self.action_head.log_prob(params, action)

    def critic_memory(self, state: ActorCriticState) -> tuple[Trunk, MemoryState]:
        """The trunk the critic reads through, and its memory in ``state`` (the actor's
        trunk and memory when the memory is shared)."""
        if self.critic_trunk is None:
            return self.actor_trunk, state.actor
        return self.critic_trunk, state.critic

    def predict_values(self, obs: Tensor, state: ActorCriticState, episode_starts: Tensor) -> Tensor:
        """Critic values ``[T, B]`` of ``obs [T, B, *obs_shape]`` from ``state``."""
        trunk, memory = self.critic_memory(state)
        latent, _ = trunk(self.preprocess(obs), memory, episode_starts)
        return self.value_from_latent(latent)

    def evaluate_actions(
        self,
        obs: Tensor,
        actions: Tensor,
        state: ActorCriticState,
        episode_starts: Tensor,
        uniform_kl: bool = False,
    ) -> tuple[Tensor, Tensor, Tensor, Tensor | None]:
        """Score a batch of sequences for the loss.

        Args:
            obs: ``[T, B, *obs_shape]``.
            actions: ``[T, B]`` (Discrete), ``[T, B, K]`` (MultiDiscrete, from 0) or
                ``[T, B, A]`` (Box).
            state: the memories before step 0 (``[B, ...]`` tensors).
            episode_starts: ``[T, B]`` bool.
            uniform_kl: also return ``KL(uniform || pi)`` (discrete actions only).

        Returns:
            ``(log_prob [T, B], entropy [T, B], value [T, B], uniform_kl [T, B] or None)``
        """
        x = self.preprocess(obs)
        latent_pi, latent_vf, _ = self._trunks(x, state, episode_starts)
        params = self.action_head(self.pi_net(latent_pi))
        log_prob = self.action_head.log_prob(params, actions)
        kl = self.action_head.uniform_kl(params) if uniform_kl else None
        return log_prob, self.action_head.entropy(params), self.value_from_latent(latent_vf), kl
