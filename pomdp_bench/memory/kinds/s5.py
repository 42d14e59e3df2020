"""``s5``: Simplified State Space layers (Smith, Warrington & Linderman, ICLR 2023), a
diagonal complex state-space layer; :mod:`pomdp_bench.memory.kinds.ssm` holds what it
shares with lru."""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from pomdp_bench.memory.kinds.ssm import DiagonalLayer, DiagonalSSMMemory, SSMOptions
from pomdp_bench.memory.options import tune_timescales
from pomdp_bench.memory.registry import register_memory

# S5's initial step sizes Δ, log-uniform in this range.
S5_DT_MIN, S5_DT_MAX = 1e-3, 1e-1


def s5_steps(timescales: tuple[float, float] | None) -> tuple[float, float]:
    """S5's range ``(Δ_min, Δ_max)`` for its initial steps: the paper's, or the steps for
    which ``|λ| = exp(-Δ/2)`` (HiPPO-N's real part is -1/2) equals ``1 - 1/τ`` at the
    ends of ``timescales``."""
    if timescales is None:
        return S5_DT_MIN, S5_DT_MAX
    return -2 * math.log1p(-1 / timescales[1]), -2 * math.log1p(-1 / timescales[0])


def hippo_n_eigenvalues(size: int) -> Tensor:
    """The ``size`` eigenvalues with positive imaginary part of the ``2 * size`` HiPPO-N
    matrix (the normal part of HiPPO-LegS), sorted by imaginary part: ``[size]`` complex.

    HiPPO-LegS is ``A[n, k] = -sqrt((2n+1)(2k+1))`` below the diagonal and ``-(n+1)`` on
    it; adding ``P Pᵀ`` with ``P[n] = sqrt(n + 1/2)`` leaves ``-1/2 I`` plus a skew matrix,
    whose eigenvalues are ``-1/2 ± iω``.
    """
    n = 2 * size
    index = torch.arange(n, dtype=torch.float64)
    q = torch.sqrt(2 * index + 1)
    legs = -torch.tril(torch.outer(q, q), -1) - torch.diag(index + 1)
    p = torch.sqrt(index + 0.5)
    normal = legs + torch.outer(p, p)
    eig = torch.linalg.eigvals(normal)
    upper = eig[eig.imag > 0]
    return upper[torch.argsort(upper.imag)][:size].to(torch.complex64)


class S5Layer(DiagonalLayer):
    """S5: continuous ``Λ`` from HiPPO-N, a learned step per state, zero-order hold."""

    output_scale = 2.0

    def __init__(self, hidden_size: int, d_state: int, timescales: tuple[float, float] | None = None) -> None:
        super().__init__(hidden_size, d_state)
        lam = hippo_n_eigenvalues(d_state)
        self.lambda_re_log = nn.Parameter(torch.log(-lam.real))  # Re Λ = -exp(·) < 0
        self.lambda_im = nn.Parameter(lam.imag.clone())
        dt_min, dt_max = s5_steps(timescales)
        log_dt = torch.empty(d_state).uniform_(math.log(dt_min), math.log(dt_max))
        self.log_dt = nn.Parameter(log_dt)
        self.b_re = nn.Parameter(torch.randn(d_state, hidden_size) / math.sqrt(2 * hidden_size))
        self.b_im = nn.Parameter(torch.randn(d_state, hidden_size) / math.sqrt(2 * hidden_size))

    def discretised(self) -> tuple[Tensor, Tensor]:
        cont = torch.complex(-torch.exp(self.lambda_re_log), self.lambda_im)  # Λ [N]
        lam = torch.exp(cont * torch.exp(self.log_dt))
        b_bar = ((lam - 1) / cont).unsqueeze(-1) * torch.complex(self.b_re, self.b_im)
        return lam, b_bar


class S5Memory(DiagonalSSMMemory):
    """``s5``: stacked S5 layers (see the module docstring)."""

    kind = "s5"
    layer_class = S5Layer


register_memory("s5", S5Memory, options=SSMOptions, tuning=tune_timescales)
