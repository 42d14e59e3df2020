"""What ``lru`` and ``s5`` share: diagonal complex state-space layers trained with a
parallel scan, and their settings (:class:`SSMOptions`). Each kind's module
(:mod:`~pomdp_bench.memory.kinds.lru`, :mod:`~pomdp_bench.memory.kinds.s5`) gives its
layer and registers it.

Both run, per layer and copy, the diagonal linear recurrence over ``N`` complex states::

    h[t] = λ ⊙ h[t-1] + B̄ u[t]          # λ [N] complex, |λ| < 1; B̄ [N, H] complex
    y[t] = Re(C h[t]) + D ⊙ u[t]        # C [H, N] complex, D [H] real

with :func:`~pomdp_bench.memory.kernels.linear_scan.linear_scan` (``λ = 0`` at an episode
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

import dataclasses
import math
from functools import partial

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from pomdp_bench.memory.base import Memory, State, StateSpec
from pomdp_bench.memory.config import MemoryConfig
from pomdp_bench.memory.kernels.linear_scan import linear_scan
from pomdp_bench.memory.options import LegacyKeys, added_setting, check_timescales


@dataclasses.dataclass(frozen=True)
class SSMOptions(LegacyKeys):
    """Settings of ``lru`` and ``s5``.

    Args:
        d_state: complex states ``N`` per layer. Default 16.
        timescales: ``(shortest, longest)``, the initial memory spans of the decays,
            in steps, where a decay ``λ`` per step keeps a state for
            ``τ = 1 / (1 - |λ|)`` steps (both > 1). lru draws ``|λ|`` on the ring
            ``[1 - 1/shortest, 1 - 1/longest]``; s5 draws its steps ``Δ`` log-uniform
            so that ``|λ| = exp(-Δ/2)`` spans the same range. None (default) keeps the
            papers' ranges: lru ``|λ|`` in [0.9, 0.999] (τ 10 to 1000), s5 ``Δ`` in
            [0.001, 0.1] (τ about 20 to 2000). Short spans (2 steps) let a layer take a
            difference of consecutive inputs, as a velocity needs.
    """

    d_state: int = 16
    timescales: tuple[float, float] | None = added_setting(None)

    def __post_init__(self) -> None:
        self._check_ints("d_state")
        object.__setattr__(self, "timescales", check_timescales(self.timescales))


class DiagonalLayer(nn.Module):
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


class DiagonalSSMMemory(Memory):
    """Stacked diagonal complex SSM layers (lru or s5): ``[T, B, D] -> [T, B, H]``.

    State, batch-first: ``h [B, L, N, 2]``, each layer's complex state as real pairs
    (``N = d_state``).
    """

    trains_through_time = True
    layer_class: type[DiagonalLayer]

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
