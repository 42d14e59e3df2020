"""Memory blocks behind one contract: none, framestack, gru, lstm, transformer, mamba,
lru, s5, ffm, linear_attention, gtrxl, mingru, minlstm, mlstm, slstm, mamba2,
gated_deltanet, rwkv7.

::

    from pomdp_bench.memory import build_memory

    memory = build_memory({"kind": "gru", "hidden_size": 64}, input_size=D)
    state = memory.initial_state(batch_size)             # zeros: a fresh episode
    y, state = memory(x, state, episode_starts)          # [T, B, D] -> [T, B, H]

See :class:`Memory` for the contract, :mod:`pomdp_bench.memory.contract` for the checks
every kind passes, :class:`MemoryConfig` for the settings, :mod:`pomdp_bench.memory.kinds`
for the kinds (one module each, with its own settings) and :func:`register_memory` to
add a kind.
"""

from pomdp_bench.memory.base import Memory, State
from pomdp_bench.memory.build import build_memory
from pomdp_bench.memory.config import MemoryConfig
from pomdp_bench.memory.kinds import MEMORY_KINDS
from pomdp_bench.memory.options import MemoryOptions, added_setting
from pomdp_bench.memory.registry import memory_class, memory_kind, memory_kinds, register_memory, tuning_space

__all__ = [
    "MEMORY_KINDS",
    "Memory",
    "MemoryConfig",
    "MemoryOptions",
    "State",
    "added_setting",
    "build_memory",
    "memory_class",
    "memory_kind",
    "memory_kinds",
    "register_memory",
    "tuning_space",
]
