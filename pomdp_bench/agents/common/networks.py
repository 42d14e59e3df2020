"""The network pieces several agents share: encoder -> memory, and how observations and
memory states are read.

- :func:`build_mlp` and :func:`activation_class`: plain MLPs.
- :func:`flat_obs_size` and :func:`observation_features`: an observation as a flat
  float vector (a ``Box`` flattened, a ``Discrete`` one-hot).
- :class:`Trunk`: an optional MLP encoder followed by a memory block
  (:mod:`pomdp_bench.memory`), time-first ``[T, B, D] -> [T, B, H]``.
- :data:`MemoryState`, :func:`state_to_numpy`, :func:`state_from_numpy`: a memory's
  state as tensors and as numpy arrays.

Each agent's own networks (heads, actor-critics, Q networks) live in its package.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from torch import Tensor, nn

from pomdp_bench.memory import MemoryConfig, build_memory

MemoryState = tuple[Tensor, ...]

_ACTIVATIONS: dict[str, type[nn.Module]] = {
    "relu": nn.ReLU,
    "tanh": nn.Tanh,
    "elu": nn.ELU,
    "gelu": nn.GELU,
    "silu": nn.SiLU,
    "leaky_relu": nn.LeakyReLU,
}


def activation_class(name: str) -> type[nn.Module]:
    """The activation module class called ``name`` (``"relu"``, ``"tanh"``, ...)."""
    try:
        return _ACTIVATIONS[name.lower()]
    except (KeyError, AttributeError):
        raise ValueError(f"activation={name!r} is not one of {sorted(_ACTIVATIONS)}") from None


def build_mlp(input_size: int, sizes: list[int], activation: type[nn.Module]) -> tuple[nn.Module, int]:
    """``Linear -> activation`` for each width in ``sizes``.

    Returns:
        ``(module, output_size)``; an empty ``sizes`` gives ``nn.Identity``.
    """
    layers: list[nn.Module] = []
    size = input_size
    for width in sizes:
        layers += [nn.Linear(size, width), activation()]
        size = width
    return (nn.Sequential(*layers) if layers else nn.Identity()), size


def flat_obs_size(space: spaces.Space) -> int:
    """The width of one observation as the networks read it: a flattened ``Box``,
    or a one-hot ``Discrete``."""
    if isinstance(space, spaces.Box):
        return int(np.prod(space.shape))
    if isinstance(space, spaces.Discrete):
        return int(space.n)
    raise TypeError(f"observation space {space} is not supported: use Box or Discrete")


class Trunk(nn.Module):
    """An MLP encoder followed by a memory block, time-first.

    Args:
        input_size: observation width ``D``.
        encoder: hidden widths of the encoder (empty: none).
        memory: the memory block's settings.
        activation: activation class of the encoder.
        skip: also output the encoded input beside the memory's output.
    """

    def __init__(
        self,
        input_size: int,
        encoder: list[int],
        memory: MemoryConfig,
        activation: type[nn.Module],
        skip: bool = False,
    ) -> None:
        super().__init__()
        self.encoder, enc_size = build_mlp(input_size, encoder, activation)
        self.memory = build_memory(memory, input_size=enc_size)
        self.skip = skip
        self.output_size: int = self.memory.output_size + (enc_size if skip else 0)

    def initial_state(self, batch_size: int, device: torch.device | None = None) -> MemoryState:
        return tuple(self.memory.initial_state(batch_size, device=device))

    def forward(self, x: Tensor, state: MemoryState, episode_starts: Tensor) -> tuple[Tensor, MemoryState]:
        """Run ``x [T, B, D]`` from ``state`` (each tensor ``[B, ...]``).

        Args:
            x: ``[T, B, D]`` observations.
            state: the memory before step 0.
            episode_starts: ``[T, B]`` bool; the memory of copy ``b`` resets before step ``t``.

        Returns:
            ``(y [T, B, H], state after step T - 1)``; with ``skip``, ``y [T, B, H + E]``
            is the memory's output and the encoded input side by side.
        """
        encoded = self.encoder(x)
        y, state = self.memory(encoded, state, episode_starts)
        return (torch.cat([y, encoded], dim=-1) if self.skip else y), state


def observation_features(obs: Tensor, space: spaces.Space) -> Tensor:
    """Observations ``[..., *obs_shape]`` as float features ``[..., D]``: a ``Box``
    flattened, a ``Discrete`` one-hot (``D = flat_obs_size(space)``)."""
    if isinstance(space, spaces.Discrete):
        return nn.functional.one_hot(obs.long(), int(space.n)).float()
    return obs.reshape(*obs.shape[: obs.dim() - len(space.shape)], flat_obs_size(space)).float()


def state_to_numpy(state: MemoryState) -> tuple[np.ndarray, ...]:
    """A memory state as numpy arrays (``[B, ...]`` each)."""
    return tuple(s.detach().cpu().numpy() for s in state)


def state_from_numpy(state: Any, device: torch.device) -> MemoryState:
    """The inverse of :func:`state_to_numpy`."""
    return tuple(torch.as_tensor(np.asarray(s), device=device) for s in state)
