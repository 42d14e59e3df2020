"""Memory blocks behind one contract: none, framestack, gru, lstm, transformer, mamba,
lru, s5, ffm, linear_attention, gtrxl.

::

    from pomdp_bench.memory import build_memory

    memory = build_memory({"kind": "gru", "hidden_size": 64}, input_size=D)
    state = memory.initial_state(batch_size)             # zeros: a fresh episode
    y, state = memory(x, state, episode_starts)          # [T, B, D] -> [T, B, H]

See :class:`Memory` for the contract, :mod:`pomdp_bench.memory.contract` for the checks
every kind passes, :class:`MemoryConfig` for the settings, and :func:`register_memory`
to add a kind.
"""

from pomdp_bench.memory.base import Memory, State
from pomdp_bench.memory.build import build_memory, memory_class, register_memory
from pomdp_bench.memory.config import MEMORY_KINDS, MemoryConfig, memory_kinds

__all__ = [
    "MEMORY_KINDS",
    "Memory",
    "MemoryConfig",
    "State",
    "build_memory",
    "memory_class",
    "memory_kinds",
    "register_memory",
]
