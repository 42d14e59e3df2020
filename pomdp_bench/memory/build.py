"""``build_memory``: the one way to make a memory block from a config."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pomdp_bench.memory.base import Memory
from pomdp_bench.memory.config import MEMORY_KINDS, MemoryConfig
from pomdp_bench.memory.framestack import FrameStackMemory
from pomdp_bench.memory.mamba import MambaMemory
from pomdp_bench.memory.none import NoMemory
from pomdp_bench.memory.rnn import RecurrentMemory
from pomdp_bench.memory.transformer import TransformerMemory
from pomdp_bench.validation import check_int

_CLASSES: dict[str, type[Memory]] = {
    "none": NoMemory,
    "framestack": FrameStackMemory,
    "gru": RecurrentMemory,
    "lstm": RecurrentMemory,
    "transformer": TransformerMemory,
    "mamba": MambaMemory,
}
assert tuple(_CLASSES) == MEMORY_KINDS


def build_memory(config: MemoryConfig | Mapping[str, Any] | str | None, input_size: int) -> Memory:
    """Build the memory block that ``config`` describes for inputs of width ``input_size``.

    Args:
        config: a :class:`MemoryConfig`, a dict with the same keys, a kind name, or
            None for the feedforward baseline (see :meth:`MemoryConfig.from_any`).
        input_size: ``D``, the width of each input step.

    Returns:
        A :class:`Memory` (an ``nn.Module``) mapping ``[T, B, D]`` to
        ``[T, B, memory.output_size]``.
    """
    config = MemoryConfig.from_any(config)
    input_size = check_int("input_size", input_size, minimum=1)
    return _CLASSES[config.kind](config, input_size)
