"""What ``mingru`` and ``minlstm`` share: the minimal RNNs of Feng et al., "Were RNNs All
We Needed?" (2024), whose gates read only the input, so the recurrence is linear in
the state and trains with a parallel scan. Each kind's module
(:mod:`~pomdp_bench.memory.kinds.mingru`, :mod:`~pomdp_bench.memory.kinds.minlstm`)
gives its cell and registers it.

Both cells run, per layer and copy, the diagonal recurrence::

    h[t] = a[t] ⊙ h[t-1] + b[t]          # a, b, h [B, E]; E = expand * hidden_size
    minGRU:  z = σ(W_z x), h̃ = W_h x;  a = 1 - z,  b = z ⊙ h̃
    minLSTM: f = σ(W_f x), i = σ(W_i x), h̃ = W_h x;  a = f / (f + i),  b = i / (f + i) ⊙ h̃

The paper trains them with a scan "in log space" (Heinsen 2023): ``log h[t]`` as a
``logcumsumexp`` of ``log b - cumsum(log a)``. That form exists because the closed
form ``h[t] = A[t] (h0 + Σ b[k] / A[k])``, with ``A`` the running product of the
decays, divides by a product that underflows. We run the same recurrence with
:func:`~pomdp_bench.memory.kernels.linear_scan.linear_scan` instead: its chunked
scan multiplies decays forward and never divides or takes a logarithm, so it needs
no log space. It also keeps two things the log-space scan cannot: an episode start
is an exact zero decay (``log 0 = -inf`` would turn the scan's differences into
NaN), and ``h̃`` may be negative (the log-space form needs the paper's positive
``g(·)`` in place of ``W_h x``). The gates are computed in log space where that is
more accurate: minLSTM's normalised forget gate is ``σ(-d)`` with
``d = softplus(-k_f) - softplus(-k_i) = log i - log f``, never the ratio of two
sigmoids. Acting (``T = 1``) takes the one-step recurrence;
:func:`~pomdp_bench.memory.kernels.linear_scan.linear_scan_sequential` is the plain
loop both kinds are tested equal to.

The stack: ``Linear(D, H)``, then per layer ``h + out(cell(LN(h)))`` and
``h + MLP(LN(h))`` (``out`` maps ``E`` back to ``H`` when ``expand > 1``), then a
final LayerNorm, as the paper's language models wrap the cell in pre-norm residual
blocks with a feed-forward layer.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from pomdp_bench.memory.base import Memory, State, StateSpec
from pomdp_bench.memory.config import MemoryConfig
from pomdp_bench.memory.kernels.linear_scan import linear_scan
from pomdp_bench.memory.options import MemoryOptions
from pomdp_bench.validation import check_int

#: The widths a study tries for the recurrence, as multiples of hidden_size.
EXPANDS: list[int] = [1, 2]


@dataclasses.dataclass(frozen=True)
class MinRNNOptions(MemoryOptions):
    """Settings of ``mingru`` and ``minlstm``.

    Args:
        expand: the recurrence is ``expand * hidden_size`` wide, with a ``Linear``
            back to ``hidden_size`` when ``expand > 1``. Default 1: the paper's
            minimal cell, as wide as its input. An int >= 1.
    """

    expand: int = 1

    def __post_init__(self) -> None:
        check_int("expand", self.expand, minimum=1)


def tune_minrnn(trial: Any, hidden: int) -> dict[str, Any]:
    """A study's memory settings for ``mingru`` / ``minlstm``: ``hidden`` units and the
    width of :data:`EXPANDS` (Optuna parameter ``"memory_expand"``)."""
    return {"hidden_size": hidden, "expand": trial.suggest_categorical("memory_expand", EXPANDS)}


class MinCell(nn.Module):
    """One minimal recurrence ``[T, B, H] -> [T, B, E]``; subclasses give the decay and
    input of the scan (:meth:`coefficients`) from ``gates`` of these widths."""

    gates = 2

    def __init__(self, hidden_size: int, width: int) -> None:
        super().__init__()
        self.proj = nn.Linear(hidden_size, self.gates * width)

    def coefficients(self, parts: tuple[Tensor, ...]) -> tuple[Tensor, Tensor]:
        """``(a, b)`` of ``h[t] = a[t] h[t-1] + b[t]`` from the projections, each ``[T, B, E]``."""
        raise NotImplementedError

    def forward(self, u: Tensor, h0: Tensor, keep: Tensor) -> Tensor:
        """``u [T, B, H]``, ``h0 [B, E]``, ``keep [T, B]`` (0 at a start) -> ``h [T, B, E]``."""
        a, b = self.coefficients(self.proj(u).chunk(self.gates, dim=-1))
        return linear_scan(a * keep.unsqueeze(-1), b, h0)


class MinRNNMemory(Memory):
    """Stacked minimal RNN blocks (mingru or minlstm): ``[T, B, D] -> [T, B, H]``.

    State, batch-first: ``h [B, L, E]``, each layer's recurrent state
    (``E = expand * hidden_size``).
    """

    trains_through_time = True
    cell_class: type[MinCell]

    def __init__(self, config: MemoryConfig, input_size: int) -> None:
        super().__init__(config, input_size, output_size=config.hidden_size)
        hidden, layers = config.hidden_size, config.num_layers
        self.width = config.expand * hidden
        self.in_proj = nn.Linear(input_size, hidden)
        self.norms = nn.ModuleList(nn.LayerNorm(hidden) for _ in range(layers))
        self.cells = nn.ModuleList(self.cell_class(hidden, self.width) for _ in range(layers))
        self.outs = nn.ModuleList(
            nn.Linear(self.width, hidden) if config.expand > 1 else nn.Identity() for _ in range(layers)
        )
        self.mlp_norms = nn.ModuleList(nn.LayerNorm(hidden) for _ in range(layers))
        self.mlps = nn.ModuleList(
            nn.Sequential(nn.Linear(hidden, 4 * hidden), nn.GELU(), nn.Linear(4 * hidden, hidden))
            for _ in range(layers)
        )
        self.final_norm = nn.LayerNorm(hidden)

    def state_spec(self) -> tuple[StateSpec, ...]:
        return (((self.config.num_layers, self.width), True),)

    def _forward(self, x: Tensor, state: State, starts: Tensor) -> tuple[Tensor, State]:
        (h_state,) = state
        keep = (~starts).to(x.dtype)
        h, finals = self.in_proj(x), []
        for layer in range(self.config.num_layers):
            h, last = self._maybe_checkpoint(self._block_fn(layer), h, h_state[:, layer], keep)
            finals.append(last)
        return self.final_norm(h), (torch.stack(finals, 1),)

    def _block_fn(self, layer: int):
        def block(h: Tensor, h0: Tensor, keep: Tensor) -> tuple[Tensor, Tensor]:
            states = self.cells[layer](self.norms[layer](h), h0, keep)  # [T, B, E]
            h = h + self.outs[layer](states)
            return h + self.mlps[layer](self.mlp_norms[layer](h)), states[-1]

        return block


def log_sigmoid_pair(k_keep: Tensor, k_in: Tensor) -> tuple[Tensor, Tensor]:
    """``(f / (f + i), i / (f + i))`` for ``f = σ(k_keep)``, ``i = σ(k_in)``, computed as
    ``σ(∓d)`` with ``d = log i - log f = softplus(-k_keep) - softplus(-k_in)``."""
    d = F.softplus(-k_keep) - F.softplus(-k_in)
    return torch.sigmoid(-d), torch.sigmoid(d)
