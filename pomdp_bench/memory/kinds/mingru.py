"""``mingru``: minGRU (Feng et al., "Were RNNs All We Needed?", 2024), the GRU with its
gates reading only the input, trained with a parallel scan;
:mod:`~pomdp_bench.memory.kinds.minrnn` holds what it shares with minlstm.

Per layer::

    z[t] = σ(W_z x[t] + b_z)              # the update gate, from the input only
    h̃[t] = W_h x[t] + b_h                 # the candidate, no tanh, no reset gate
    h[t] = (1 - z[t]) ⊙ h[t-1] + z[t] ⊙ h̃[t]

so ``h[t] = a[t] h[t-1] + b[t]`` with ``a = 1 - z = σ(-k_z)`` and ``b = σ(k_z) h̃``.
"""

from __future__ import annotations

import torch
from torch import Tensor

from pomdp_bench.memory.kinds.minrnn import MinCell, MinRNNMemory, MinRNNOptions, tune_minrnn
from pomdp_bench.memory.registry import register_memory


class MinGRUCell(MinCell):
    """minGRU's recurrence: an update gate and a candidate, both linear in the input."""

    gates = 2

    def coefficients(self, parts: tuple[Tensor, ...]) -> tuple[Tensor, Tensor]:
        k_z, candidate = parts
        return torch.sigmoid(-k_z), torch.sigmoid(k_z) * candidate


class MinGRUMemory(MinRNNMemory):
    """``mingru``: stacked minGRU blocks (see the module docstring)."""

    kind = "mingru"
    cell_class = MinGRUCell


register_memory("mingru", MinGRUMemory, options=MinRNNOptions, tuning=tune_minrnn)
