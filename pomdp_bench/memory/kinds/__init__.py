"""The shipped memory kinds, one module each; importing a module registers its kind.

Each module holds the kind's class, its own settings (a
:class:`~pomdp_bench.memory.options.MemoryOptions` dataclass), the inits it
understands and its tuning space, registered in one
:func:`~pomdp_bench.memory.register_memory` call. ``rnn``, ``ssm`` and ``minrnn`` hold what gru
and lstm, lru and s5, and mingru and minlstm share.
"""

from __future__ import annotations

import importlib

from pomdp_bench.memory.registry import memory_kinds, seal_shipped
from pomdp_bench.memory_names import MEMORY_KINDS  # the order tables list them (plain data)

for _kind in MEMORY_KINDS:
    importlib.import_module(f"{__name__}.{_kind}")
assert memory_kinds()[: len(MEMORY_KINDS)] == MEMORY_KINDS, memory_kinds()
seal_shipped(MEMORY_KINDS)
