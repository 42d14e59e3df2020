"""``build_memory``: the one way to make a memory block from a config."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pomdp_bench.memory.base import Memory
from pomdp_bench.memory.config import MemoryConfig
from pomdp_bench.memory.registry import memory_class, register_memory
from pomdp_bench.validation import check_int

__all__ = ["build_memory", "memory_class", "register_memory"]


def build_memory(config: MemoryConfig | Mapping[str, Any] | str | None, input_size: int) -> Memory:
    """Build the memory block that ``config`` describes for inputs of width ``input_size``.

    Args:
        config: a :class:`MemoryConfig`, a flat dict of its settings, a kind name, or
            None for the feedforward baseline (see :meth:`MemoryConfig.from_any`).
        input_size: ``D``, the width of each input step.

    Returns:
        A :class:`Memory` (an ``nn.Module``) mapping ``[T, B, D]`` to
        ``[T, B, memory.output_size]``.
    """
    config = MemoryConfig.from_any(config)
    input_size = check_int("input_size", input_size, minimum=1)
    return memory_class(config.kind)(config, input_size)
