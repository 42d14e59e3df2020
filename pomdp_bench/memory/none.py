"""``none``: the feedforward baseline, with the memory interface and no state."""

from __future__ import annotations

from torch import Tensor

from pomdp_bench.memory.base import Memory, State, StateSpec
from pomdp_bench.memory.config import MemoryConfig


class NoMemory(Memory):
    """Passes each step through unchanged: ``y = x``, ``[T, B, D] -> [T, B, D]``.

    Its state is the empty tuple, so an agent handles it like any other kind.
    """

    kind = "none"
    trains_through_time = False

    def __init__(self, config: MemoryConfig, input_size: int) -> None:
        super().__init__(config, input_size, output_size=input_size)

    def state_spec(self) -> tuple[StateSpec, ...]:
        return ()

    def _forward(self, x: Tensor, state: State, starts: Tensor) -> tuple[Tensor, State]:
        return x, ()
