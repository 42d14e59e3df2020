"""``lru`` and ``s5``: diagonal complex state-space layers trained with a parallel scan.

Both run, per layer and copy, the diagonal linear recurrence over ``N`` complex states::

    h[t] = λ ⊙ h[t-1] + B̄ u[t]          # λ [N] complex, |λ| < 1; B̄ [N, H] complex
    y[t] = Re(C h[t]) + D ⊙ u[t]        # C [H, N] complex, D [H] real

with :func:`~pomdp_bench.memory.linear_scan.linear_scan` (``λ = 0`` at an episode
start). They differ in how ``λ`` and ``B̄`` are parameterised:

- **lru**, the Linear Recurrent Unit (Orvieto et al., "Resurrecting Recurrent Neural
  Networks for Long Sequences", ICML 2023): ``λ = exp(-exp(ν) + i exp(θ))``, the
  stable exponential parameterisation, with ``|λ|`` drawn uniformly on the ring
  ``[r_min, r_max]`` and the phase in ``[0, max_phase]``; the input is normalised
  by ``γ = sqrt(1 - |λ|²)`` (learned from that start), so a state's variance does
  not grow as ``|λ| → 1``.
- **s5** (Smith, Warrington & Linderman, "Simplified State Space Layers for Sequence
  Modeling", ICLR 2023): a continuous-time ``Λ`` initialised at the eigenvalues of
  the HiPPO-N matrix (conjugate symmetry: the ``N`` with positive imaginary part of a
  ``2N`` matrix, output ``2 Re(C h)``), a learned step ``Δ`` per state drawn
  log-uniform in ``[0.001, 0.1]``, and zero-order-hold discretisation
  ``λ = exp(ΛΔ)``, ``B̄ = (λ - 1) / Λ · B``. S5 draws ``B`` and ``C`` real and maps
  them through the eigenvectors ``V`` of that (normal) matrix; ``V`` is unitary,
  so that is the same in distribution as drawing ``B`` and ``C`` complex Gaussian
  directly, which is what we do.

The stack is the papers' deep model: ``Linear(D, H)``, then per layer
``h + GLU(GELU(layer(LayerNorm(h))))``, then a final LayerNorm. The complex state is
kept as real pairs, ``[B, L, N, 2]``, so buffers handle it like any other.
"""

from __future__ import annotations

import math
from functools import partial

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from pomdp_bench.memory.base import Memory, State, StateSpec
from pomdp_bench.memory.config import MemoryConfig
from pomdp_bench.memory.linear_scan import linear_scan

# LRU's init ring for |λ| and its largest initial phase: the values the paper uses for
# its long-range tasks (sCIFAR, ListOps; its Table 10), where memory spans hundreds of steps.
LRU_R_MIN, LRU_R_MAX, LRU_MAX_PHASE = 0.9, 0.999, math.pi / 10
# S5's initial step sizes Δ, log-uniform in this range.
S5_DT_MIN, S5_DT_MAX = 1e-3, 1e-1


def lru_ring(timescales: tuple[float, float] | None) -> tuple[float, float]:
    """LRU's init ring ``(r_min, r_max)`` for ``|λ|``: the paper's, or ``1 - 1/τ`` at the
    ends of ``timescales`` (see ``MemoryConfig.timescales``)."""
    if timescales is None:
        return LRU_R_MIN, LRU_R_MAX
    return 1 - 1 / timescales[0], 1 - 1 / timescales[1]


def s5_steps(timescales: tuple[float, float] | None) -> tuple[float, float]:
    """S5's range ``(Δ_min, Δ_max)`` for its initial steps: the paper's, or the steps for
    which ``|λ| = exp(-Δ/2)`` (HiPPO-N's real part is -1/2) equals ``1 - 1/τ`` at the
    ends of ``timescales``."""
    if timescales is None:
        return S5_DT_MIN, S5_DT_MAX
    return -2 * math.log1p(-1 / timescales[1]), -2 * math.log1p(-1 / timescales[0])


class _DiagonalLayer(nn.Module):
    """One diagonal complex recurrence ``[T, B, H] -> [T, B, H]``; subclasses give
    ``λ`` and ``B̄`` (:meth:`discretised`) and take ``(hidden_size, d_state,
    timescales)``."""

    output_scale = 1.0  # s5's conjugate symmetry doubles the real part

    def __init__(self, hidden_size: int, d_state: int) -> None:
        super().__init__()
        self.d_state = d_state
        self.c_re = nn.Parameter(torch.randn(hidden_size, d_state) / math.sqrt(2 * d_state))
        self.c_im = nn.Parameter(torch.randn(hidden_size, d_state) / math.sqrt(2 * d_state))
        self.d = nn.Parameter(torch.randn(hidden_size))

    def discretised(self) -> tuple[Tensor, Tensor]:
        """``(λ [N] complex, B̄ [N, H] complex)``."""
        raise NotImplementedError

    def forward(self, u: Tensor, h0: Tensor, keep: Tensor) -> tuple[Tensor, Tensor]:
        """``u [T, B, H]``, ``h0 [B, N]`` complex, ``keep [T, B]`` (0 at a start)
        -> ``(y [T, B, H], h [B, N])``."""
        lam, b_bar = self.discretised()
        bu = u.to(b_bar.dtype) @ b_bar.t()  # [T, B, N]
        h = linear_scan(lam * keep.unsqueeze(-1), bu, h0)  # [T, B, N]
        c = torch.complex(self.c_re, self.c_im)
        y = self.output_scale * (h @ c.t()).real + self.d * u
        return y, h[-1]


class LRULayer(_DiagonalLayer):
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


class S5Layer(_DiagonalLayer):
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


class DiagonalSSMMemory(Memory):
    """Stacked diagonal complex SSM layers (lru or s5): ``[T, B, D] -> [T, B, H]``.

    State, batch-first: ``h [B, L, N, 2]``, each layer's complex state as real pairs
    (``N = d_state``).
    """

    trains_through_time = True
    layer_class: type[_DiagonalLayer]

    def __init__(self, config: MemoryConfig, input_size: int) -> None:
        super().__init__(config, input_size, output_size=config.hidden_size)
        hidden = config.hidden_size
        self.in_proj = nn.Linear(input_size, hidden)
        self.norms = nn.ModuleList(nn.LayerNorm(hidden) for _ in range(config.num_layers))
        self.layers = nn.ModuleList(
            self.layer_class(hidden, config.d_state, config.timescales) for _ in range(config.num_layers)
        )
        self.glus = nn.ModuleList(nn.Linear(hidden, 2 * hidden) for _ in range(config.num_layers))
        self.final_norm = nn.LayerNorm(hidden)

    def state_spec(self) -> tuple[StateSpec, ...]:
        return (((self.config.num_layers, self.config.d_state, 2), True),)

    def _forward(self, x: Tensor, state: State, starts: Tensor) -> tuple[Tensor, State]:
        (h_state,) = state
        keep = (~starts).to(x.dtype)
        h = self.in_proj(x)
        finals = []
        for layer in range(self.config.num_layers):
            h0 = torch.view_as_complex(h_state[:, layer].contiguous())  # [B, N]
            h, last = self._maybe_checkpoint(partial(self._block, layer), h, h0, keep)
            finals.append(torch.view_as_real(last))
        return self.final_norm(h), (torch.stack(finals, 1),)

    def _block(self, layer: int, h: Tensor, h0: Tensor, keep: Tensor) -> tuple[Tensor, Tensor]:
        """One residual block: ``h + GLU(GELU(layer(LN(h))))``, and the layer's last state."""
        y, last = self.layers[layer](self.norms[layer](h), h0, keep)
        return h + F.glu(self.glus[layer](F.gelu(y)), dim=-1), last


class LRUMemory(DiagonalSSMMemory):
    """``lru``: stacked Linear Recurrent Units (see the module docstring)."""

    kind = "lru"
    layer_class = LRULayer


class S5Memory(DiagonalSSMMemory):
    """``s5``: stacked S5 layers (see the module docstring)."""

    kind = "s5"
    layer_class = S5Layer
