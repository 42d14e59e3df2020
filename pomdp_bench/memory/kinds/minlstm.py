"""``minlstm``: minLSTM (Feng et al., "Were RNNs All We Needed?", 2024), the LSTM with
its gates reading only the input and normalised to sum to one, trained with a
parallel scan; :mod:`~pomdp_bench.memory.kinds.minrnn` holds what it shares with mingru.

Per layer::

    f[t] = σ(W_f x[t] + b_f),  i[t] = σ(W_i x[t] + b_i)
    h̃[t] = W_h x[t] + b_h
    h[t] = f[t] / (f[t] + i[t]) ⊙ h[t-1] + i[t] / (f[t] + i[t]) ⊙ h̃[t]

The normalised gates keep the state's scale independent of time, so there is no
separate cell and output state: ``h`` is both.
"""

from __future__ import annotations

from torch import Tensor

from pomdp_bench.memory.kinds.minrnn import (
    MinCell,
    MinRNNMemory,
    MinRNNOptions,
    log_sigmoid_pair,
    tune_minrnn,
)
from pomdp_bench.memory.registry import register_memory


class MinLSTMCell(MinCell):
    """minLSTM's recurrence: forget and input gates, normalised, and a candidate."""

    gates = 3

    def coefficients(self, parts: tuple[Tensor, ...]) -> tuple[Tensor, Tensor]:
        k_f, k_i, candidate = parts
        keep, write = log_sigmoid_pair(k_f, k_i)
        return keep, write * candidate


class MinLSTMMemory(MinRNNMemory):
    """``minlstm``: stacked minLSTM blocks (see the module docstring)."""

    kind = "minlstm"
    cell_class = MinLSTMCell


register_memory("minlstm", MinLSTMMemory, options=MinRNNOptions, tuning=tune_minrnn)
