"""``rwkv7``: RWKV-7 "Goose" (Peng et al., "RWKV-7 "Goose" with Expressive Dynamic State
Evolution", 2025): the generalised delta rule with vector gates, trained chunkwise.

Per head, a matrix state ``S [N, N]`` (values first), with a vector decay ``w`` and
an in-context learning rate ``ā`` per channel::

    S[t] = S[t-1] (diag(w[t]) - κ̂[t] (ā[t] ⊙ κ̂[t])ᵀ) + v[t] k̃[t]ᵀ
    o[t] = S[t] r[t]

``κ̂`` is the L2-normalised removal key, ``k̃ = k ⊙ (1 + (ā - 1) k_a)`` the
replacement key. The time-mixing layer, as the reference code (BlinkDL/RWKV-LM,
RWKV-v7)::

    x' = x + (x[t-1] - x) ⊙ μ_·                  # token shift, one mix per branch
    r, k, v = W_r x'_r, W_k x'_k, W_v x'_v
    w = exp(-e^(-0.5) σ(w₀ + tanh(x'_w W_w1) W_w2))   # decay in (0.545, 1)
    ā = σ(a₀ + x'_a W_a1 W_a2)
    v = v + (v₁ - v) σ(v₀ + x'_v W_v1 W_v2)     # value residual: v₁ is layer 0's v
    g = σ(x'_g W_g1) W_g2                        # output gate
    κ̂ = normalize(k ⊙ k_k);  k̃ = k ⊙ (1 + (ā - 1) k_a)
    o = GroupNorm_head(o) + ((r ⊙ k̃ ⊙ r_k)·1) v     # per head: the bonus of the current token
    out = W_o(o ⊙ g)

and the channel-mixing layer ``W_v relu(W_k x'_k)²`` (width 4H). Each block is
``h + tmix(LN(h))``, then ``h + cmix(LN(h))``, after ``Linear(D, H)`` and a LayerNorm
(the reference's ``ln0``), before a final LayerNorm. The recurrence runs
:func:`~pomdp_bench.memory.kernels.delta_rule.delta_rule_chunkwise` with
``a = -κ̂``, ``b = κ̂ ⊙ ā`` (chunks of 16, the reference kernel's); acting takes the
one-step recurrence. An episode start zeroes ``S`` and both token-shift inputs (the
reference's zero padding before a sequence).

The inits follow the reference's (the decay speeds ``w₀`` from -6.5 to -1.5 over
the channels, the token-shift mixes by channel and depth, ``k_k = 0.85``,
``k_a = 1``, ``v₀ = 1``, ``ā₀ = 0``), with two differences so that every parameter
takes a gradient from the first step: the first LoRA factors (``W_w1``, ``W_a1``,
``W_v1``) start at ``N(0, 0.1²)`` rather than zero, and ``W_o`` and the channel
mix's ``W_v`` keep PyTorch's default init rather than zero.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from pomdp_bench.memory.base import Memory, State, StateSpec
from pomdp_bench.memory.config import MemoryConfig
from pomdp_bench.memory.kernels.delta_rule import delta_rule_chunkwise, delta_rule_sequential
from pomdp_bench.memory.kinds.mamba2 import check_divides
from pomdp_bench.memory.options import MemoryOptions
from pomdp_bench.memory.registry import register_memory
from pomdp_bench.validation import check_int

#: The largest chunk: the vector decay's factors stay below e^(0.61 · 64) (see the kernel).
MAX_CHUNK = 64
#: The head sizes a study tries.
RWKV7_HEAD_SIZES: list[int] = [8, 32]
_W_SCALE = math.exp(-0.5)  # -log w = e^(-0.5) σ(·): the reference's soft clamp


@dataclasses.dataclass(frozen=True)
class RWKV7Options(MemoryOptions):
    """Settings of ``rwkv7``.

    Args:
        head_size: channels ``N`` per head, each head with its own ``[N, N]`` state.
            Default 64, the paper's. An int >= 1 that divides ``hidden_size``.
        lora_rank: width of the low-rank maps of the decay, learning rate, value
            residual and output gate. None (default): the reference's suggestion,
            ``max(32, round(k √H / 32) · 32)`` per map (``k`` 2.5, 2.5, 1.7 and 5).
            An int >= 1.
        chunk_size: steps per chunk of the chunkwise form. Default 16, the
            reference kernel's. It changes the arithmetic's rounding only. An int
            from 1 to 64.
    """

    head_size: int = 64
    lora_rank: int | None = None
    chunk_size: int = 16

    def __post_init__(self) -> None:
        check_int("head_size", self.head_size, minimum=1)
        check_int("chunk_size", self.chunk_size, minimum=1, maximum=MAX_CHUNK)
        if self.lora_rank is not None:
            check_int("lora_rank", self.lora_rank, minimum=1)

    def ranks(self, hidden_size: int) -> tuple[int, int, int, int]:
        """The LoRA widths of the decay, learning rate, value residual and gate maps."""
        if self.lora_rank is not None:
            return (self.lora_rank,) * 4
        return tuple(max(32, round(k * hidden_size**0.5 / 32) * 32) for k in (2.5, 2.5, 1.7, 5.0))  # type: ignore[return-value]

    def check(self, config: MemoryConfig) -> None:
        check_divides("rwkv7", "head_size", self.head_size, "hidden_size", config.hidden_size)


def tune_rwkv7(trial: Any, hidden: int) -> dict[str, Any]:
    """A study's memory settings for ``rwkv7``: ``hidden`` units and the head sizes of
    :data:`RWKV7_HEAD_SIZES` (Optuna parameter ``"memory_head_size"``)."""
    return {
        "hidden_size": hidden,
        "head_size": trial.suggest_categorical("memory_head_size", RWKV7_HEAD_SIZES),
    }


def _shifted(x: Tensor, last: Tensor, starts: Tensor) -> Tensor:
    """``x[t-1]`` at every step (``last`` before step 0), zero at an episode start."""
    prev = torch.cat([last.unsqueeze(0), x[:-1]])
    return prev * (~starts).to(x.dtype).unsqueeze(-1)


class TimeMix(nn.Module):
    """RWKV-7's time mixing (module docstring), ``[T, B, H] -> [T, B, H]``."""

    def __init__(self, hidden: int, options: RWKV7Options, layer: int, layers: int) -> None:
        super().__init__()
        self.layer, self.head_size = layer, options.head_size
        self.num_heads = hidden // options.head_size
        self.chunk_size = options.chunk_size
        deep = layer / (layers - 1) if layers > 1 else 0.0  # 0 to 1
        shallow = 1.0 - layer / layers  # 1 to almost 0
        ddd = torch.arange(hidden) / hidden
        mixes = [
            1 - ddd ** (0.2 * shallow),  # r
            1 - ddd ** (0.9 * shallow),  # w
            1 - (ddd ** (0.9 * shallow) + 0.4 * deep),  # k
            1 - (ddd ** (0.4 * shallow) + 0.6 * deep),  # v
            1 - ddd ** (0.9 * shallow),  # a
            1 - ddd ** (0.2 * shallow),  # g
        ]
        self.mix = nn.Parameter(torch.stack(mixes))  # [6, H]
        speed = -7 + 5 * (torch.arange(hidden) / max(hidden - 1, 1)) ** (0.85 + deep**0.5)
        self.w0 = nn.Parameter(speed + 0.5)
        r_w, r_a, r_v, r_g = options.ranks(hidden)
        self.w1, self.w2 = nn.Parameter(0.1 * torch.randn(hidden, r_w)), nn.Parameter(_ortho(r_w, hidden))
        self.a0 = nn.Parameter(torch.zeros(hidden))
        self.a1, self.a2 = nn.Parameter(0.1 * torch.randn(hidden, r_a)), nn.Parameter(_ortho(r_a, hidden))
        if layer > 0:  # layer 0's value is the residual the others mix in
            self.v0 = nn.Parameter(torch.ones(hidden))
            self.v1, self.v2 = nn.Parameter(0.1 * torch.randn(hidden, r_v)), nn.Parameter(_ortho(r_v, hidden))
        self.g1, self.g2 = nn.Parameter(torch.zeros(hidden, r_g)), nn.Parameter(_ortho(r_g, hidden))
        self.k_k = nn.Parameter(torch.full((hidden,), 0.85))
        self.k_a = nn.Parameter(torch.ones(hidden))
        self.r_k = nn.Parameter(torch.zeros(self.num_heads, options.head_size))
        self.receptance = nn.Linear(hidden, hidden, bias=False)
        self.key = nn.Linear(hidden, hidden, bias=False)
        self.value = nn.Linear(hidden, hidden, bias=False)
        self.output = nn.Linear(hidden, hidden, bias=False)
        self.ln_x = nn.GroupNorm(self.num_heads, hidden, eps=64e-5)
        bound = hidden**-0.5
        with torch.no_grad():
            self.receptance.weight.uniform_(-0.5 * bound, 0.5 * bound)
            self.key.weight.uniform_(-0.05 * bound, 0.05 * bound)
            self.value.weight.uniform_(-0.5 * bound, 0.5 * bound)

    def forward(
        self, x: Tensor, last: Tensor, s: Tensor, starts: Tensor, v_first: Tensor | None
    ) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """``x [T, B, H]``, ``last [B, H]``, ``S [B, heads, N, N]`` -> ``(out, last, S, v_first)``."""
        steps, batch, hidden = x.shape
        xx = _shifted(x, last, starts) - x
        xr, xw, xk, xv, xa, xg = (x + xx * m for m in self.mix)
        r, k, v = self.receptance(xr), self.key(xk), self.value(xv)
        log_w = -_W_SCALE * torch.sigmoid(self.w0 + torch.tanh(xw @ self.w1) @ self.w2)  # log w
        if v_first is None:
            v_first = v
        else:
            v = v + (v_first - v) * torch.sigmoid(self.v0 + (xv @ self.v1) @ self.v2)
        a = torch.sigmoid(self.a0 + (xa @ self.a1) @ self.a2)
        g = torch.sigmoid(xg @ self.g1) @ self.g2
        heads = (steps, batch, self.num_heads, self.head_size)
        kk = F.normalize((k * self.k_k).view(heads), dim=-1)
        k = k * (1 + (a - 1) * self.k_a)
        r, k, v, log_w, a = (t.view(heads) for t in (r, k, v, log_w, a))
        args = (r, k, v, log_w, -kk, kk * a, starts, s)
        o, s = delta_rule_sequential(*args) if steps == 1 else delta_rule_chunkwise(*args, self.chunk_size)
        o = self.ln_x(o.reshape(-1, hidden)).view(steps, batch, hidden)
        bonus = (r * k * self.r_k).sum(-1, keepdim=True) * v  # [T, B, heads, N]
        out = self.output((o + bonus.reshape(steps, batch, hidden)) * g)
        return out, x[-1], s, v_first


class ChannelMix(nn.Module):
    """RWKV-7's channel mixing: ``W_v relu(W_k x'_k)²`` with a token shift, 4H wide."""

    def __init__(self, hidden: int, layer: int, layers: int) -> None:
        super().__init__()
        shallow = 1.0 - layer / layers
        self.mix = nn.Parameter(1 - (torch.arange(hidden) / hidden) ** (shallow**4))
        self.key = nn.Linear(hidden, 4 * hidden, bias=False)
        self.value = nn.Linear(4 * hidden, hidden, bias=False)

    def forward(self, x: Tensor, last: Tensor, starts: Tensor) -> tuple[Tensor, Tensor]:
        k = x + (_shifted(x, last, starts) - x) * self.mix
        return self.value(torch.relu(self.key(k)).square()), x[-1]


def _ortho(rows: int, cols: int, scale: float = 0.1) -> Tensor:
    """An orthogonal ``[rows, cols]`` matrix times ``scale`` (the reference's LoRA init)."""
    w = torch.empty(rows, cols)
    nn.init.orthogonal_(w, gain=scale * (math.sqrt(rows / cols) if rows > cols else 1.0))
    return w


class RWKV7Block(nn.Module):
    """One RWKV-7 block: ``h + tmix(LN(h))``, then ``h + cmix(LN(h))``."""

    def __init__(self, hidden: int, options: RWKV7Options, layer: int, layers: int) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(hidden), nn.LayerNorm(hidden)
        self.tmix = TimeMix(hidden, options, layer, layers)
        self.cmix = ChannelMix(hidden, layer, layers)

    def forward(
        self, h: Tensor, t_last: Tensor, c_last: Tensor, s: Tensor, starts: Tensor, v_first: Tensor | None
    ) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
        out, t_last, s, v_first = self.tmix(self.ln1(h), t_last, s, starts, v_first)
        h = h + out
        out, c_last = self.cmix(self.ln2(h), c_last, starts)
        return h + out, t_last, c_last, s, v_first


class RWKV7Memory(Memory):
    """``rwkv7``: stacked RWKV-7 blocks, ``[T, B, D] -> [T, B, H]``.

    State, batch-first, per layer ``L``: the two token-shift inputs ``[B, L, 2, H]``
    (time mix, channel mix) and ``S [B, L, H / N, N, N]`` (``N = head_size``).
    """

    kind = "rwkv7"
    trains_through_time = True

    def __init__(self, config: MemoryConfig, input_size: int) -> None:
        super().__init__(config, input_size, output_size=config.hidden_size)
        hidden, layers = config.hidden_size, config.num_layers
        self.in_proj = nn.Linear(input_size, hidden)
        self.ln0 = nn.LayerNorm(hidden)
        self.blocks = nn.ModuleList(RWKV7Block(hidden, config.options, i, layers) for i in range(layers))
        self.final_norm = nn.LayerNorm(hidden)

    def state_spec(self) -> tuple[StateSpec, ...]:
        cfg = self.config
        n = cfg.head_size
        return (
            ((cfg.num_layers, 2, cfg.hidden_size), True),
            ((cfg.num_layers, cfg.hidden_size // n, n, n), True),
        )

    def _forward(self, x: Tensor, state: State, starts: Tensor) -> tuple[Tensor, State]:
        shift, memory = state
        h, shifts, mems, v_first = self.ln0(self.in_proj(x)), [], [], None
        for layer, block in enumerate(self.blocks):
            args = (h, shift[:, layer, 0], shift[:, layer, 1], memory[:, layer])
            if v_first is None:
                h, t_last, c_last, s, v_first = self._maybe_checkpoint(
                    lambda h, t, c, s, block=block: block(h, t, c, s, starts, None), *args
                )
            else:
                h, t_last, c_last, s, v_first = self._maybe_checkpoint(
                    lambda h, t, c, s, v1, block=block: block(h, t, c, s, starts, v1), *args, v_first
                )
            shifts.append(torch.stack([t_last, c_last], 1))
            mems.append(s)
        return self.final_norm(h), (torch.stack(shifts, 1), torch.stack(mems, 1))


register_memory("rwkv7", RWKV7Memory, options=RWKV7Options, tuning=tune_rwkv7)
