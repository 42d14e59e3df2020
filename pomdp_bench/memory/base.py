"""``Memory``: the one contract every memory kind implements.

::

    state = memory.initial_state(batch_size)                 # zeros: a fresh episode
    y, state = memory(x, state, episode_starts)              # x [T, B, D] -> y [T, B, H]

``episode_starts[t, b]`` true means step ``t`` begins a new episode for copy ``b``:
its memory is reset before step ``t`` is read, inside the forward pass, so one
call can span several episodes. Acting is the ``T = 1`` case of the same forward.

The state is a tuple of tensors, every one batch-first ``[B, ...]`` (integer
bookkeeping included), so buffers can store, index and concatenate states without
knowing the kind: ``tuple(s[idx] for s in state)``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import TYPE_CHECKING

import torch
from torch import Tensor, nn
from torch.utils.checkpoint import checkpoint

if TYPE_CHECKING:
    from pomdp_bench.memory.config import MemoryConfig

State = tuple[Tensor, ...]
# One state tensor without its batch dimension: (shape, is_float). Integer entries are int64.
StateSpec = tuple[tuple[int, ...], bool]


class Memory(nn.Module, ABC):
    """Base class of the memory kinds; build one with :func:`build_memory`.

    Attributes:
        kind: the kind name, one of ``MEMORY_KINDS`` or a registered kind.
        config: the :class:`MemoryConfig` it was built from.
        input_size: ``D``, the width of each input step.
        output_size: ``H``, the width of each output step.
        trains_through_time: whether the memory learns what to carry from step to
            step, so the BPTT length matters (every kind with parameters); False for
            none and framestack, whose reach into the past is fixed.
    """

    kind: str = ""
    trains_through_time: bool = False

    def __init__(self, config: MemoryConfig, input_size: int, output_size: int) -> None:
        super().__init__()
        self.config = config
        self.input_size = input_size
        self.output_size = output_size

    @classmethod
    def visible_past(cls, config: MemoryConfig) -> tuple[int, str] | None:
        """How far back a memory of ``config`` can see by construction, whatever it learns.

        Returns:
            ``(steps, what bounds them)``: the oldest step before the current one whose
            input can reach the output, and the name the tables give that bound
            (``"window"``, ``"frames"``); ``None`` for a kind with no such bound (the
            recurrent ones, ``none``). The horizon analysis marks a longer task it cannot
            see across (:func:`pomdp_bench.harness.generalisation.limited_by`).
        """
        return None

    # ----------------------------------------------------------------- the contract
    @abstractmethod
    def state_spec(self) -> tuple[StateSpec, ...]:
        """Shapes (without the batch dimension) and float-ness of the state tensors."""

    @abstractmethod
    def _forward(self, x: Tensor, state: State, starts: Tensor) -> tuple[Tensor, State]:
        """The kind's forward on checked inputs: ``x [T, B, D]``, ``starts [T, B]`` bool."""

    def initial_state(self, batch_size: int, device: torch.device | str | None = None) -> State:
        """The state of ``batch_size`` copies at the start of an episode: all zeros.

        Float entries take the dtype of the parameters, integer entries are int64;
        the device defaults to the parameters' device.
        """
        ref = next(self.parameters(), None)
        device = ref.device if device is None and ref is not None else device
        dtype = ref.dtype if ref is not None else torch.get_default_dtype()
        return tuple(
            torch.zeros((batch_size, *shape), dtype=dtype if is_float else torch.long, device=device)
            for shape, is_float in self.state_spec()
        )

    def forward(self, x: Tensor, state: State, episode_starts: Tensor) -> tuple[Tensor, State]:
        """Run ``T`` steps of ``B`` copies.

        Args:
            x: ``[T, B, D]`` inputs.
            state: the state before step 0, from :meth:`initial_state` or a previous call.
            episode_starts: ``[T, B]`` bool (or 0/1): step ``t`` begins an episode, so
                the memory of that copy is reset before step ``t`` is read.

        Returns:
            ``y [T, B, H]`` and the state after step ``T - 1``.
        """
        starts = self._check_inputs(x, state, episode_starts)
        return self._forward(x, tuple(state), starts)

    # ------------------------------------------------------------------- helpers
    def _check_inputs(self, x: Tensor, state: State, episode_starts: Tensor) -> Tensor:
        """Check shapes and return the starts as a bool ``[T, B]`` tensor."""
        if x.dim() != 3 or x.shape[-1] != self.input_size:
            raise ValueError(f"{self.kind}: x must be [T, B, {self.input_size}], got {list(x.shape)}")
        steps, batch = x.shape[:2]
        if steps == 0:
            raise ValueError(f"{self.kind}: x must hold at least one step, got {list(x.shape)}")
        if tuple(episode_starts.shape) != (steps, batch):
            raise ValueError(
                f"{self.kind}: episode_starts must be [T, B] = {[steps, batch]}, "
                f"got {list(episode_starts.shape)}"
            )
        spec = self.state_spec()
        if len(state) != len(spec):
            raise ValueError(
                f"{self.kind}: state must be a tuple of {len(spec)} tensors "
                f"(from initial_state), got {len(state)}"
            )
        for i, (s, (shape, _)) in enumerate(zip(state, spec, strict=True)):
            if tuple(s.shape) != (batch, *shape):
                raise ValueError(f"{self.kind}: state[{i}] must be {[batch, *shape]}, got {list(s.shape)}")
        if episode_starts.dtype == torch.bool:
            return episode_starts
        return episode_starts != 0

    def _maybe_checkpoint(self, fn: Callable[..., object], *args: Tensor) -> object:
        """Call ``fn(*args)``, recomputing its activations in the backward pass when the
        config asks for gradient checkpointing and gradients are being recorded."""
        if self.config.gradient_checkpoint and torch.is_grad_enabled():
            return checkpoint(fn, *args, use_reentrant=False)
        return fn(*args)

    def extra_repr(self) -> str:
        return f"kind={self.kind!r}, input_size={self.input_size}, output_size={self.output_size}"
