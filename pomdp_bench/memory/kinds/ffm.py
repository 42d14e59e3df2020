"""``ffm``: Fast and Forgetful Memory (Morad, Kortvelesy, Liwicki & Prorok, NeurIPS 2023).

A memory built for RL: a bank of decaying, oscillating traces of a gated input,
read out through a mixing layer, with a gated skip around it. Per layer::

    x̃, thru, g_in, g_out = split(Linear(u))              # [m], [H], [m], [H]
    S[t] = γ ⊙ S[t-1] + (x̃[t] ⊙ σ(g_in[t])) ⊗ 1_c         # S [m, c] complex
    γ[j, k] = exp(α_j + i ω_k)                             # α_j < 0 decays, ω_k oscillates
    z[t] = Linear([Re S[t], Im S[t]])                      # [H]
    y[t] = LN(z[t]) ⊙ σ(g_out[t]) + thru[t] ⊙ (1 - σ(g_out[t]))

``m = d_state`` traces each with ``c = context_size`` frequencies. As in the paper,
``α`` starts evenly spaced from a decay of one half a step to one that keeps 1% of
a trace after ``FFM_MAX_PERIOD`` steps, and ``ω = 2π / period`` with periods evenly
spaced in ``[1, FFM_MAX_PERIOD]``; both are learned, and ``α`` is clamped below zero
so the traces always decay. The paper computes the traces in closed form with a
cumulative sum (which needs care with overflow over long sequences); here they are
the diagonal recurrence of :func:`~pomdp_bench.memory.kernels.linear_scan.linear_scan`,
exact at any length, with ``γ = 0`` at an episode start.

Layers stack: the first reads the ``D`` inputs, the rest their predecessor's ``H``
outputs. The complex state is kept as real pairs, ``[B, L, m, c, 2]``.
"""

from __future__ import annotations

import dataclasses
import math

import torch
from torch import Tensor, nn

from pomdp_bench.memory.base import Memory, State, StateSpec
from pomdp_bench.memory.config import MemoryConfig
from pomdp_bench.memory.kernels.linear_scan import linear_scan
from pomdp_bench.memory.options import LegacyKeys, added_setting
from pomdp_bench.memory.registry import register_memory

# The longest initial period and trace span, in steps (the paper's default).
FFM_MAX_PERIOD = 1024
_FORGOTTEN_AT = 0.01  # a trace is forgotten at this fraction of its input
_ALPHA_MAX = -1e-6  # α is clamped to at most this: every trace decays


@dataclasses.dataclass(frozen=True)
class FFMOptions(LegacyKeys):
    """Settings of ``ffm``.

    Args:
        d_state: traces ``m`` per layer. Default 16.
        context_size: frequencies ``c`` per trace (the state holds
            ``d_state * context_size`` complex numbers per layer). Default 4.
    """

    d_state: int = 16
    context_size: int = added_setting(4)

    def __post_init__(self) -> None:
        self._check_ints("d_state", "context_size")


class FFMLayer(nn.Module):
    """One FFM cell: ``[T, B, D_in] -> [T, B, H]`` with traces ``[B, m, c]`` complex."""

    def __init__(self, input_size: int, hidden_size: int, memory_size: int, context_size: int) -> None:
        super().__init__()
        self.sizes = (memory_size, hidden_size, memory_size, hidden_size)
        self.pre = nn.Linear(input_size, sum(self.sizes))
        alpha = torch.linspace(math.log(0.5), math.log(_FORGOTTEN_AT) / FFM_MAX_PERIOD, memory_size)
        self.alpha = nn.Parameter(alpha)
        self.omega = nn.Parameter(2 * math.pi / torch.linspace(1.0, FFM_MAX_PERIOD, context_size))
        self.mix = nn.Linear(2 * memory_size * context_size, hidden_size)
        self.norm = nn.LayerNorm(hidden_size, elementwise_affine=False)

    def decay(self) -> Tensor:
        """``γ [m, c]`` complex, ``|γ| < 1``."""
        magnitude = torch.exp(self.alpha.clamp(max=_ALPHA_MAX))  # [m]
        return magnitude.unsqueeze(1) * torch.exp(1j * self.omega).unsqueeze(0)

    def forward(self, u: Tensor, s0: Tensor, keep: Tensor) -> tuple[Tensor, Tensor]:
        """``u [T, B, D_in]``, ``s0 [B, m, c]`` complex, ``keep [T, B]`` (0 at a start)
        -> ``(y [T, B, H], S [B, m, c])``."""
        x, thru, g_in, g_out = self.pre(u).split(self.sizes, dim=-1)
        x = (x * torch.sigmoid(g_in)).unsqueeze(-1).expand(*x.shape, s0.shape[-1])  # [T, B, m, c]
        a = self.decay() * keep[..., None, None]  # [T, B, m, c]
        s = linear_scan(a, x.to(s0.dtype), s0)
        z = self.mix(torch.view_as_real(s).flatten(2))  # [T, B, H]
        gate = torch.sigmoid(g_out)
        return self.norm(z) * gate + thru * (1 - gate), s[-1]


class FFMMemory(Memory):
    """``ffm``: stacked Fast and Forgetful Memory cells: ``[T, B, D] -> [T, B, H]``.

    State, batch-first: ``S [B, L, m, c, 2]``, each layer's complex traces as real
    pairs (``m = d_state``, ``c = context_size``).
    """

    kind = "ffm"
    trains_through_time = True

    def __init__(self, config: MemoryConfig, input_size: int) -> None:
        super().__init__(config, input_size, output_size=config.hidden_size)
        sizes = [input_size] + [config.hidden_size] * (config.num_layers - 1)
        self.layers = nn.ModuleList(
            FFMLayer(size, config.hidden_size, config.d_state, config.context_size) for size in sizes
        )

    def state_spec(self) -> tuple[StateSpec, ...]:
        cfg = self.config
        return (((cfg.num_layers, cfg.d_state, cfg.context_size, 2), True),)

    def _forward(self, x: Tensor, state: State, starts: Tensor) -> tuple[Tensor, State]:
        (traces,) = state
        keep = (~starts).to(x.dtype)
        h, finals = x, []
        for layer, cell in enumerate(self.layers):
            s0 = torch.view_as_complex(traces[:, layer].contiguous())
            h, last = self._maybe_checkpoint(cell, h, s0, keep)
            finals.append(torch.view_as_real(last))
        return h, (torch.stack(finals, 1),)


register_memory("ffm", FFMMemory, options=FFMOptions)
