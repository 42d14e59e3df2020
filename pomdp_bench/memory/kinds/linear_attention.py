"""``linear_attention``: causal linear attention, a fast-weight memory whose state is the
running key-value sum (Katharopoulos et al., "Transformers are RNNs", ICML 2020;
Schlag, Irie & Schmidhuber, "Linear Transformers Are Secretly Fast Weight
Programmers", ICML 2021; POPGym's FART and FWP).

Softmax attention over the episode is replaced by a feature map ``φ(x) = elu(x) + 1``
(positive), which lets the sum over past steps be carried as a matrix. Per head::

    S[t] = γ S[t-1] + φ(k[t]) [v[t], 1]ᵀ        # [d, d + 1]: values and the normaliser
    out[t] = φ(q[t])ᵀ S[t][:, :d] / (φ(q[t])ᵀ S[t][:, d] + ε)

so every step attends to the whole episode so far, at a cost per step that does not
grow with it. ``S`` is the diagonal recurrence of
:func:`~pomdp_bench.memory.kernels.linear_scan.linear_scan` (decay 0 at an episode start).

The decay ``γ`` is learned per head (a retention factor, as RetNet's; Sun et al.
2023), starting at ``1 - 1/τ`` with timescales ``τ`` spaced geometrically from 4 to
1024 steps over the heads. Why a decay: docs/notes/linear-recurrences-probes.md.
The blocks are the transformer's, pre-LayerNorm:
``h + attn(LN(h))``, then ``h + mlp(LN(h))``, after ``Linear(D, H)`` and before a
final LayerNorm.
"""

from __future__ import annotations

import dataclasses

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from pomdp_bench.memory.base import Memory, State, StateSpec
from pomdp_bench.memory.config import MemoryConfig
from pomdp_bench.memory.kernels.linear_scan import linear_scan
from pomdp_bench.memory.options import (
    LegacyKeys,
    added_setting,
    check_heads,
    check_timescales,
    tune_timescales,
)
from pomdp_bench.memory.registry import register_memory

_EPS = 1e-6  # keeps the normaliser away from zero
# The initial retention timescales, in steps, spread geometrically over the heads.
TIMESCALE_MIN, TIMESCALE_MAX = 4.0, 1024.0


def initial_decay_logits(num_heads: int, timescales: tuple[float, float] | None = None) -> Tensor:
    """``logit(1 - 1/τ)`` per head, ``τ`` geometric in ``timescales`` (default ``[4,
    1024]``; one head: their geometric mean, 64 by default)."""
    shortest, longest = timescales or (TIMESCALE_MIN, TIMESCALE_MAX)
    if num_heads == 1:
        tau = torch.tensor([(shortest * longest) ** 0.5])
    else:
        tau = torch.logspace(
            torch.log10(torch.tensor(shortest)), torch.log10(torch.tensor(longest)), num_heads
        )
    return torch.log(tau - 1)  # logit(1 - 1/τ) = log(τ - 1)


@dataclasses.dataclass(frozen=True)
class LinearAttentionOptions(LegacyKeys):
    """Settings of ``linear_attention``.

    Args:
        num_heads: attention heads; must divide ``hidden_size``. Default 4.
        timescales: ``(shortest, longest)``, the heads' initial retention spans in
            steps (both > 1), spaced geometrically over the heads. None (default):
            ``(TIMESCALE_MIN, TIMESCALE_MAX)``, τ 4 to 1024.
    """

    num_heads: int = 4
    timescales: tuple[float, float] | None = added_setting(None)

    def __post_init__(self) -> None:
        self._check_ints("num_heads")
        object.__setattr__(self, "timescales", check_timescales(self.timescales))

    def check(self, config: MemoryConfig) -> None:
        check_heads(config, self.num_heads)


class LinearAttentionBlock(nn.Module):
    """A pre-LayerNorm block with causal linear attention, ``[T, B, H] -> [T, B, H]``;
    its state is ``[B, heads, d, d + 1]`` with ``d = H / heads``."""

    def __init__(
        self, hidden_size: int, num_heads: int, timescales: tuple[float, float] | None = None
    ) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.attn_norm = nn.LayerNorm(hidden_size)
        self.qkv = nn.Linear(hidden_size, 3 * hidden_size)
        self.attn_out = nn.Linear(hidden_size, hidden_size)
        self.decay_logit = nn.Parameter(initial_decay_logits(num_heads, timescales))  # γ = σ(·) per head
        self.mlp_norm = nn.LayerNorm(hidden_size)
        self.mlp = nn.Sequential(
            nn.Linear(hidden_size, 4 * hidden_size), nn.GELU(), nn.Linear(4 * hidden_size, hidden_size)
        )

    def forward(self, h: Tensor, s0: Tensor, keep: Tensor) -> tuple[Tensor, Tensor]:
        """``h [T, B, H]``, ``s0 [B, heads, d, d + 1]``, ``keep [T, B]`` -> ``(h, S)``."""
        steps, batch, hidden = h.shape
        q, k, v = self.qkv(self.attn_norm(h)).view(steps, batch, 3, self.num_heads, -1).unbind(2)
        q, k = F.elu(q) + 1, F.elu(k) + 1  # [T, B, heads, d], positive
        v1 = torch.cat([v, torch.ones_like(v[..., :1])], dim=-1)  # [T, B, heads, d + 1]
        kv = k.unsqueeze(-1) * v1.unsqueeze(-2)  # [T, B, heads, d, d + 1]
        decay = torch.sigmoid(self.decay_logit)[:, None, None] * keep[..., None, None, None]
        s = linear_scan(decay, kv, s0)  # decay [T, B, heads, 1, 1]  # [T, B, heads, d, d + 1]
        read = (q.unsqueeze(-2) @ s).squeeze(-2)  # [T, B, heads, d + 1]
        out = read[..., :-1] / (read[..., -1:] + _EPS)
        h = h + self.attn_out(out.reshape(steps, batch, hidden))
        return h + self.mlp(self.mlp_norm(h)), s[-1]


class LinearAttentionMemory(Memory):
    """``linear_attention``: stacked causal linear-attention blocks, ``[T, B, D] -> [T, B, H]``.

    State, batch-first: ``S [B, L, heads, d, d + 1]``, each layer's key-value sums and
    normalisers (``d = hidden_size / num_heads``).
    """

    kind = "linear_attention"
    trains_through_time = True

    def __init__(self, config: MemoryConfig, input_size: int) -> None:
        super().__init__(config, input_size, output_size=config.hidden_size)
        self.head_size = config.hidden_size // config.num_heads
        self.in_proj = nn.Linear(input_size, config.hidden_size)
        self.blocks = nn.ModuleList(
            LinearAttentionBlock(config.hidden_size, config.num_heads, config.timescales)
            for _ in range(config.num_layers)
        )
        self.final_norm = nn.LayerNorm(config.hidden_size)

    def state_spec(self) -> tuple[StateSpec, ...]:
        cfg, d = self.config, self.head_size
        return (((cfg.num_layers, cfg.num_heads, d, d + 1), True),)

    def _forward(self, x: Tensor, state: State, starts: Tensor) -> tuple[Tensor, State]:
        (sums,) = state
        keep = (~starts).to(x.dtype)
        h, finals = self.in_proj(x), []
        for layer, block in enumerate(self.blocks):
            h, last = self._maybe_checkpoint(block, h, sums[:, layer], keep)
            finals.append(last)
        return self.final_norm(h), (torch.stack(finals, 1),)


register_memory(
    "linear_attention", LinearAttentionMemory, options=LinearAttentionOptions, tuning=tune_timescales
)
