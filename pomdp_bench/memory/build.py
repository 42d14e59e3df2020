"""``build_memory``: the one way to make a memory block from a config; ``register_memory``
adds a kind."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pomdp_bench.memory.base import Memory
from pomdp_bench.memory.config import MEMORY_KINDS, MemoryConfig, add_kind
from pomdp_bench.memory.ffm import FFMMemory
from pomdp_bench.memory.framestack import FrameStackMemory
from pomdp_bench.memory.gtrxl import GTrXLMemory
from pomdp_bench.memory.linear_attention import LinearAttentionMemory
from pomdp_bench.memory.mamba import MambaMemory
from pomdp_bench.memory.none import NoMemory
from pomdp_bench.memory.rnn import RecurrentMemory
from pomdp_bench.memory.ssm import LRUMemory, S5Memory
from pomdp_bench.memory.transformer import TransformerMemory
from pomdp_bench.validation import check_int

_CLASSES: dict[str, type[Memory]] = {
    "none": NoMemory,
    "framestack": FrameStackMemory,
    "gru": RecurrentMemory,
    "lstm": RecurrentMemory,
    "transformer": TransformerMemory,
    "mamba": MambaMemory,
    "lru": LRUMemory,
    "s5": S5Memory,
    "ffm": FFMMemory,
    "linear_attention": LinearAttentionMemory,
    "gtrxl": GTrXLMemory,
}
assert tuple(_CLASSES) == MEMORY_KINDS


def register_memory(kind: str, memory_class: type[Memory], inits: tuple[str | None, ...] = (None,)) -> None:
    """Add a memory kind: afterwards a config may name ``kind`` and :func:`build_memory`
    builds ``memory_class(config, input_size)``.

    ``memory_class`` subclasses :class:`~pomdp_bench.memory.Memory` and should pass
    :func:`pomdp_bench.memory.contract.check_memory` (see ``examples/new_memory_kind.py``).
    It reads the settings it needs from the :class:`MemoryConfig` it is given
    (``hidden_size``, ``num_layers``, ``window``, ...). Registering a kind again
    replaces it; the shipped kinds cannot be replaced. A sweep's worker processes
    must register the kind too (import the module that registers it).

    Args:
        kind: the new kind's name.
        memory_class: the class that builds it.
        inits: the ``init`` values it understands (``None``: torch's defaults).

    Raises:
        ValueError: ``kind`` is a shipped kind or not a non-empty name.
        TypeError: ``memory_class`` is not a ``Memory`` subclass.
    """
    if not isinstance(kind, str) or not kind.isidentifier():
        raise ValueError(f"a memory kind must be a name like 'my_rnn', got {kind!r}")
    if kind in MEMORY_KINDS:
        raise ValueError(f"{kind!r} is a shipped memory kind and cannot be replaced; pick another name")
    if not (isinstance(memory_class, type) and issubclass(memory_class, Memory)):
        raise TypeError(f"memory_class must be a subclass of pomdp_bench.memory.Memory, got {memory_class!r}")
    add_kind(kind, tuple(inits))
    _CLASSES[kind] = memory_class


def memory_class(kind: str) -> type[Memory]:
    """The class that builds ``kind`` (a shipped or registered kind)."""
    if kind not in _CLASSES:
        raise ValueError(f"unknown memory kind {kind!r}; known: {list(_CLASSES)}")
    return _CLASSES[kind]


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
