"""DQN's Q network: ``observation features -> encoder -> memory -> MLP -> Q per action``,
time-first, built from :class:`pomdp_bench.agents.common.networks.Trunk`.

Without a memory and without an encoder it is SB3's ``QNetwork`` layer for layer
(``Linear, activation, ..., Linear``), so SB3's weights copy over one to one
(:func:`copy_sb3_q_weights`).
"""

from __future__ import annotations

import torch
from gymnasium import spaces
from torch import Tensor, nn

from pomdp_bench.agents.common.networks import MemoryState, Trunk, activation_class, build_mlp, flat_obs_size
from pomdp_bench.agents.dqn.settings import DQNNetArch
from pomdp_bench.memory import MemoryConfig


class QNetwork(nn.Module):
    """Q values of every action from observation features.

    Args:
        observation_space: ``Box`` (flattened) or ``Discrete`` (one-hot).
        n_actions: the ``Discrete`` action count.
        memory: the memory block's settings.
        net_arch: hidden widths (``encoder`` before the memory, ``q`` after it).
        activation: activation name of the MLPs (``"relu"``).
    """

    def __init__(
        self,
        observation_space: spaces.Space,
        n_actions: int,
        memory: MemoryConfig,
        net_arch: DQNNetArch,
        activation: str,
    ) -> None:
        super().__init__()
        act = activation_class(activation)
        self.trunk = Trunk(flat_obs_size(observation_space), net_arch.encoder, memory, act)
        mlp, size = build_mlp(self.trunk.output_size, net_arch.q, act)
        self.q = nn.Sequential(mlp, nn.Linear(size, n_actions))
        #: whether the memory carries anything from step to step (False for ``none``)
        self.stateful = len(self.trunk.memory.state_spec()) > 0

    def initial_state(self, batch_size: int, device: torch.device | None = None) -> MemoryState:
        return self.trunk.initial_state(batch_size, device)

    def forward(self, x: Tensor, state: MemoryState, episode_starts: Tensor) -> tuple[Tensor, MemoryState]:
        """Q values ``[T, B, n_actions]`` of observation features ``x [T, B, D]`` from
        ``state`` (the memory resets where ``episode_starts [T, B]``); returns them and
        the memory after step ``T - 1``."""
        # a kind name on purpose: "none" computes y = x, so skip the memory and its checks
        if not self.stateful and self.trunk.memory.kind == "none":
            return self.q(self.trunk.encoder(x)), state
        y, state = self.trunk(x, state, episode_starts)
        return self.q(y), state


def linear_layers(module: nn.Module) -> list[nn.Linear]:
    """The ``nn.Linear`` layers of ``module`` in order."""
    return [m for m in module.modules() if isinstance(m, nn.Linear)]


def copy_sb3_q_weights(sb3_q_net: nn.Module, ours: QNetwork) -> None:
    """Copy an SB3 ``QNetwork``'s weights (``model.q_net``) into a memoryless ``QNetwork``
    with the same widths and no encoder.

    Raises:
        ValueError: the layer shapes differ.
    """
    theirs, mine = linear_layers(sb3_q_net), linear_layers(ours)
    shapes = [tuple(m.weight.shape) for m in theirs], [tuple(m.weight.shape) for m in mine]
    if shapes[0] != shapes[1]:
        raise ValueError(f"layer shapes differ: SB3's {shapes[0]}, ours {shapes[1]}")
    with torch.no_grad():
        for a, b in zip(theirs, mine, strict=True):
            b.weight.copy_(a.weight)
            b.bias.copy_(a.bias)
