"""The shipped memory kinds' names, in the order tables and plots list them: plain data.

:mod:`pomdp_bench.memory.kinds` registers a kind per name, in this order (and checks
the registry agrees); :mod:`pomdp_bench.memory` re-exports the tuple as
``MEMORY_KINDS``. It lives outside the memory package so that reporting reads it
without importing torch.
"""

from __future__ import annotations

#: The shipped kinds, in the order tables and plots list them; each is a module of
#: :mod:`pomdp_bench.memory.kinds`.
MEMORY_KINDS: tuple[str, ...] = (
    "none",
    "framestack",
    "gru",
    "lstm",
    "transformer",
    "mamba",
    "lru",
    "s5",
    "ffm",
    "linear_attention",
    "gtrxl",
    "mingru",
    "minlstm",
    "mlstm",
    "slstm",
    "mamba2",
    "gated_deltanet",
    "rwkv7",
)
