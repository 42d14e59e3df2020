"""``none``: the feedforward baseline, with the memory interface and no state."""

from __future__ import annotations

from typing import Any

from torch import Tensor

from pomdp_bench.memory.base import Memory, State, StateSpec
from pomdp_bench.memory.config import MemoryConfig
from pomdp_bench.memory.options import LegacyKeys
from pomdp_bench.memory.registry import register_memory


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


def _tune_none(trial: Any, hidden: int) -> dict[str, Any]:
    """A study's none: nothing to size or sample."""
    return {}


register_memory("none", NoMemory, options=LegacyKeys, tuning=_tune_none)
