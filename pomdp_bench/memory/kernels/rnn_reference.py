"""The plain reference for ``gru`` and ``lstm``: a masked loop, one step at a time.

This is what :class:`~pomdp_bench.memory.kinds.rnn.RecurrentMemory` computes, written the
way CleanRL writes it (``for h, d in zip(hidden, done)``): before each step, the
state of every copy that starts an episode there is zeroed, then torch's own
``nn.GRU`` / ``nn.LSTM`` takes the step. ``rnn.py`` gets the same numbers from cell
ops (one step), one fused call (no start inside), or one fused call per layer with
extra reset and hold steps (``rnn_fused.py``); ``tests/test_memory.py`` holds them
equal, values and gradients. Read this one to know what the fast one means.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn


def masked_loop(
    rnn: nn.GRU | nn.LSTM, x: Tensor, state: tuple[Tensor, ...], starts: Tensor
) -> tuple[Tensor, tuple[Tensor, ...]]:
    """Run ``rnn`` over ``x [T, B, D]`` from ``state`` (batch-first, each ``[B, L, H]``),
    resetting copy ``b`` before step ``t`` where ``starts[t, b]``.

    Returns ``y [T, B, H]`` and the final state, batch-first like the input state.
    """
    hx = tuple(s.transpose(0, 1) for s in state)  # torch's layout: [L, B, H]
    outputs = []
    for t in range(x.shape[0]):
        keep = (~starts[t]).to(x.dtype)[None, :, None]  # [1, B, 1]: 0 where an episode starts
        hx = tuple(s * keep for s in hx)
        y, out = rnn(x[t : t + 1], hx if isinstance(rnn, nn.LSTM) else hx[0])
        hx = out if isinstance(out, tuple) else (out,)
        outputs.append(y)
    return torch.cat(outputs), tuple(s.transpose(0, 1) for s in hx)
