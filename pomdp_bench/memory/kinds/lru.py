"""``lru``: the Linear Recurrent Unit (Orvieto et al., ICML 2023), a diagonal complex
state-space layer; :mod:`pomdp_bench.memory.kinds.ssm` holds what it shares with s5."""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from pomdp_bench.memory.kinds.ssm import DiagonalLayer, DiagonalSSMMemory, SSMOptions
from pomdp_bench.memory.options import tune_timescales
from pomdp_bench.memory.registry import register_memory

# LRU's init ring for |λ| and its largest initial phase: the values the paper uses for
# its long-range tasks (sCIFAR, ListOps; its Table 10), where memory spans hundreds of steps.
LRU_R_MIN, LRU_R_MAX, LRU_MAX_PHASE = 0.9, 0.999, math.pi / 10


def lru_ring(timescales: tuple[float, float] | None) -> tuple[float, float]:
    """LRU's init ring ``(r_min, r_max)`` for ``|λ|``: the paper's, or ``1 - 1/τ`` at the
    ends of ``timescales`` (see :class:`~pomdp_bench.memory.kinds.ssm.SSMOptions`)."""
    if timescales is None:
        return LRU_R_MIN, LRU_R_MAX
    return 1 - 1 / timescales[0], 1 - 1 / timescales[1]


class LRULayer(DiagonalLayer):
    """The Linear Recurrent Unit: ``λ = exp(-exp(ν) + i exp(θ))``, input normalised by γ."""

    def __init__(self, hidden_size: int, d_state: int, timescales: tuple[float, float] | None = None) -> None:
        super().__init__(hidden_size, d_state)
        # |λ| uniform on the ring [r_min, r_max] (its area, as the paper draws it).
        r_min, r_max = lru_ring(timescales)
        u1, u2 = torch.rand(d_state), torch.rand(d_state)
        radius_sq = u1 * (r_max**2 - r_min**2) + r_min**2
        self.nu_log = nn.Parameter(torch.log(-0.5 * torch.log(radius_sq)))
        self.theta_log = nn.Parameter(torch.log(LRU_MAX_PHASE * u2 + 1e-8))
        self.gamma_log = nn.Parameter(0.5 * torch.log(1 - radius_sq))  # log sqrt(1 - |λ|²)
        self.b_re = nn.Parameter(torch.randn(d_state, hidden_size) / math.sqrt(2 * hidden_size))
        self.b_im = nn.Parameter(torch.randn(d_state, hidden_size) / math.sqrt(2 * hidden_size))

    def discretised(self) -> tuple[Tensor, Tensor]:
        lam = torch.exp(torch.complex(-torch.exp(self.nu_log), torch.exp(self.theta_log)))
        b_bar = torch.complex(self.b_re, self.b_im) * torch.exp(self.gamma_log).unsqueeze(-1)
        return lam, b_bar


class LRUMemory(DiagonalSSMMemory):
    """``lru``: stacked Linear Recurrent Units (see the module docstring)."""

    kind = "lru"
    layer_class = LRULayer


register_memory("lru", LRUMemory, options=SSMOptions, tuning=tune_timescales)
