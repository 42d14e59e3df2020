"""``gated_deltanet``: Gated DeltaNet (Yang, Kautz & Hatamizadeh, "Gated Delta Networks:
Improving Mamba2 with Delta Rule", ICLR 2025), trained with the chunkwise delta rule;
``gate=False`` is plain DeltaNet (Schlag et al. 2021; Yang et al., "Parallelizing
Linear Transformers with the Delta Rule over Sequence Length", NeurIPS 2024).

Per head, a fast-weight matrix ``S [dv, dk]`` that is corrected towards each new
key-value pair rather than only added to (the delta rule), and decayed by a gate::

    S[t] = α[t] S[t-1] (I - β[t] k[t] k[t]ᵀ) + β[t] v[t] k[t]ᵀ
    o[t] = S[t] q[t]

with ``k`` and ``q`` L2-normalised (``q`` then scaled by ``1/√dk``), a writing strength
``β = σ(W_β x)`` and a decay ``α = exp(-exp(A_log) softplus(W_α x + dt_bias))`` per
head, Mamba-2's (``α = 1`` without the gate). The layer, as the paper's Figure 2 and
the flash-linear-attention reference::

    q, k, v = SiLU(causal_conv(W_q x)), SiLU(causal_conv(W_k x)), SiLU(causal_conv(W_v x))
    o = out_proj(RMSNorm_head(o) ⊙ SiLU(W_g x))

and each block is ``h + layer(RMSNorm(h))``, then ``h + SwiGLU(RMSNorm(h))``, after
``Linear(D, H)`` and before a final RMSNorm. Keys are ``dk = H / num_heads`` wide
and values ``expand_v`` times that. Training runs
:func:`~pomdp_bench.memory.kernels.delta_rule.delta_rule_chunkwise` (the WY / UT
form: one triangular solve per chunk); acting takes the one-step recurrence. An
episode start zeroes ``S`` and the convolutions' input history. Difference from the
paper's models: heads split ``hidden_size`` as in the other kinds (the paper's
1.3B model has 6 heads of 256 keys at width 2048).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from pomdp_bench.memory.base import Memory, State, StateSpec
from pomdp_bench.memory.config import MemoryConfig
from pomdp_bench.memory.kernels.delta_rule import delta_rule_chunkwise, delta_rule_sequential
from pomdp_bench.memory.kernels.episodes import history_windows
from pomdp_bench.memory.kinds.mamba2 import A_INIT_RANGE, check_divides, initial_dt_bias
from pomdp_bench.memory.options import MemoryOptions
from pomdp_bench.memory.registry import register_memory
from pomdp_bench.validation import check_bool, check_float, check_int

#: The head counts a study tries.
GATED_DELTANET_HEADS: list[int] = [1, 4]


@dataclasses.dataclass(frozen=True)
class GatedDeltaNetOptions(MemoryOptions):
    """Settings of ``gated_deltanet``.

    Args:
        num_heads: heads, each with its own ``[dv, dk]`` memory, ``dk = hidden_size /
            num_heads``. Default 4. An int >= 1 that divides ``hidden_size``.
        expand_v: values are ``expand_v * dk`` wide. Default 2.0, the paper's. A
            number > 0 that makes the value width a whole number.
        gate: the decay gate ``α``; False is plain DeltaNet (``α = 1``). Default True.
        conv_kernel: width of the causal convolutions on ``q``, ``k`` and ``v``.
            Default 4, the paper's. An int >= 1 (1: no look-back).
        mlp_factor: the SwiGLU MLP after each layer is ``mlp_factor * hidden_size``
            wide; 0 leaves it out. Default 4.0 (the paper's models': hidden ratio 4, of
            which SwiGLU keeps two thirds). A number >= 0.
        chunk_size: steps per chunk of the chunkwise form. Default 64, the reference
            kernels'. It changes the arithmetic's rounding only. An int >= 1.
    """

    num_heads: int = 4
    expand_v: float = 2.0
    gate: bool = True
    conv_kernel: int = 4
    mlp_factor: float = 4.0
    chunk_size: int = 64

    def __post_init__(self) -> None:
        for name in ("num_heads", "conv_kernel", "chunk_size"):
            check_int(name, getattr(self, name), minimum=1)
        object.__setattr__(self, "gate", check_bool("gate", self.gate))
        object.__setattr__(
            self, "expand_v", check_float("expand_v", self.expand_v, minimum=0.0, strict_minimum=True)
        )
        object.__setattr__(self, "mlp_factor", check_float("mlp_factor", self.mlp_factor, minimum=0.0))

    def value_size(self, hidden_size: int) -> int:
        """Each head's value width ``dv``."""
        return round(self.expand_v * hidden_size / self.num_heads)

    def check(self, config: MemoryConfig) -> None:
        hidden = config.hidden_size
        check_divides("gated_deltanet", "num_heads", self.num_heads, "hidden_size", hidden)
        dv = self.expand_v * hidden / self.num_heads
        if abs(dv - round(dv)) > 1e-9:
            raise ValueError(
                f"gated_deltanet: expand_v={self.expand_v} times the key width "
                f"hidden_size / num_heads = {hidden // self.num_heads} must be a whole number, got {dv}"
            )


def tune_gated_deltanet(trial: Any, hidden: int) -> dict[str, Any]:
    """A study's memory settings for ``gated_deltanet``: ``hidden`` units and the heads
    of :data:`GATED_DELTANET_HEADS` (Optuna parameter ``"memory_num_heads"``)."""
    heads = trial.suggest_categorical("memory_num_heads", GATED_DELTANET_HEADS)
    return {"hidden_size": hidden, "num_heads": heads}


class SwiGLU(nn.Module):
    """``W_down(SiLU(W_gate x) ⊙ W_up x)``, ``round(2/3 · factor · H)`` wide."""

    def __init__(self, hidden_size: int, factor: float) -> None:
        super().__init__()
        width = max(1, round(2 * factor * hidden_size / 3))
        self.up = nn.Linear(hidden_size, 2 * width, bias=False)
        self.down = nn.Linear(width, hidden_size, bias=False)

    def forward(self, x: Tensor) -> Tensor:
        gate, up = self.up(x).chunk(2, dim=-1)
        return self.down(F.silu(gate) * up)


class GatedDeltaNetBlock(nn.Module):
    """One Gated DeltaNet block, ``[T, B, H] -> [T, B, H]`` (module docstring).

    Its state: the convolutions' last inputs ``[B, K - 1, 2H + heads · dv]`` and
    ``S [B, heads, dv, dk]``.
    """

    def __init__(self, hidden_size: int, options: GatedDeltaNetOptions) -> None:
        super().__init__()
        heads = options.num_heads
        self.num_heads, self.key_size = heads, hidden_size // heads
        self.value_size = options.value_size(hidden_size)
        self.chunk_size = options.chunk_size
        self.gate = options.gate
        width = 2 * hidden_size + heads * self.value_size
        self.norm = nn.RMSNorm(hidden_size, eps=1e-6)
        self.qkv = nn.Linear(hidden_size, width, bias=False)
        self.conv = nn.Conv1d(width, width, options.conv_kernel, groups=width, bias=False)  # weights only
        self.beta = nn.Linear(hidden_size, heads, bias=False)
        if options.gate:
            self.alpha = nn.Linear(hidden_size, heads, bias=False)
            self.A_log = nn.Parameter(torch.empty(heads).uniform_(*A_INIT_RANGE).log())
            self.dt_bias = nn.Parameter(initial_dt_bias(heads))
        self.out_gate = nn.Linear(hidden_size, heads * self.value_size, bias=False)
        self.head_norm = nn.RMSNorm(self.value_size, eps=1e-5)
        self.out_proj = nn.Linear(heads * self.value_size, hidden_size, bias=False)
        self.mlp_norm = nn.RMSNorm(hidden_size, eps=1e-6) if options.mlp_factor else None
        self.mlp = SwiGLU(hidden_size, options.mlp_factor) if options.mlp_factor else None

    def forward(self, h: Tensor, history: Tensor, s: Tensor, starts: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """``h [T, B, H]`` -> ``(h, history, S)``."""
        steps, batch, hidden = h.shape
        x = self.norm(h)
        windows, history = history_windows(self.qkv(x), history, starts)  # [T, B, K, W]
        qkv = F.silu(torch.einsum("tbkw,wk->tbw", windows, self.conv.weight[:, 0]))
        q, k, v = qkv.split([hidden, hidden, self.num_heads * self.value_size], -1)
        q = F.normalize(q.view(steps, batch, self.num_heads, -1), dim=-1) * self.key_size**-0.5
        k = F.normalize(k.view(steps, batch, self.num_heads, -1), dim=-1)  # [T, B, heads, dk]
        beta = torch.sigmoid(self.beta(x)).unsqueeze(-1)  # [T, B, heads, 1]
        v = v.view(steps, batch, self.num_heads, -1) * beta
        if self.gate:
            log_w = -torch.exp(self.A_log) * F.softplus(self.alpha(x) + self.dt_bias)
            log_w = log_w.unsqueeze(-1)  # [T, B, heads, 1]
        else:
            log_w = torch.zeros_like(beta)
        # S (I - β k kᵀ) α = S diag(α) + (S k)(-α β k)ᵀ
        b = -torch.exp(log_w) * beta * k
        if steps == 1:
            o, s = delta_rule_sequential(q, k, v, log_w, k, b, starts, s)
        else:
            o, s = delta_rule_chunkwise(q, k, v, log_w, k, b, starts, s, self.chunk_size)
        o = self.head_norm(o).reshape(steps, batch, -1) * F.silu(self.out_gate(x))
        h = h + self.out_proj(o)
        if self.mlp is not None:
            h = h + self.mlp(self.mlp_norm(h))
        return h, history, s


class GatedDeltaNetMemory(Memory):
    """``gated_deltanet``: stacked Gated DeltaNet blocks, ``[T, B, D] -> [T, B, H]``.

    State, batch-first, per layer ``L``: the convolutions' inputs
    ``[B, L, K - 1, 2H + heads · dv]`` and ``S [B, L, heads, dv, dk]`` (``dk = H /
    num_heads``, ``dv = expand_v · dk``, ``K = conv_kernel``).
    """

    kind = "gated_deltanet"
    trains_through_time = True

    def __init__(self, config: MemoryConfig, input_size: int) -> None:
        super().__init__(config, input_size, output_size=config.hidden_size)
        self.in_proj = nn.Linear(input_size, config.hidden_size)
        self.blocks = nn.ModuleList(
            GatedDeltaNetBlock(config.hidden_size, config.options) for _ in range(config.num_layers)
        )
        self.final_norm = nn.RMSNorm(config.hidden_size, eps=1e-6)

    def state_spec(self) -> tuple[StateSpec, ...]:
        cfg, block = self.config, self.blocks[0]
        width = 2 * cfg.hidden_size + cfg.num_heads * block.value_size
        return (
            ((cfg.num_layers, cfg.conv_kernel - 1, width), True),
            ((cfg.num_layers, cfg.num_heads, block.value_size, block.key_size), True),
        )

    def _forward(self, x: Tensor, state: State, starts: Tensor) -> tuple[Tensor, State]:
        conv, memory = state
        h, convs, mems = self.in_proj(x), [], []
        for layer, block in enumerate(self.blocks):
            h, c, s = self._maybe_checkpoint(
                lambda h, c, s, block=block: block(h, c, s, starts), h, conv[:, layer], memory[:, layer]
            )
            convs.append(c)
            mems.append(s)
        return self.final_norm(h), (torch.stack(convs, 1), torch.stack(mems, 1))


register_memory(
    "gated_deltanet", GatedDeltaNetMemory, options=GatedDeltaNetOptions, tuning=tune_gated_deltanet
)
