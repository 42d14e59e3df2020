"""``mlstm``: xLSTM's matrix-memory LSTM (Beck et al., "xLSTM: Extended Long Short-Term
Memory", NeurIPS 2024) in its pre-up-projection block, trained chunkwise in parallel.

The cell (:mod:`~pomdp_bench.memory.kernels.mlstm_scan`, with the paper's stabiliser
``m``) stores a ``d x d`` matrix per head, written with an exponential input gate and
decayed by a sigmoid forget gate, and read with a query: a linear attention with
gates. The block, per layer, as the paper's Figure 10 (mLSTM block)::

    x, z = split(Linear(H, 2E)(LN(h)))               # up-projection, E = proj_factor * H
    c = SiLU(causal_conv(x))                          # width conv_kernel, never across a start
    q, k = W_q c, W_k c / √d;  v = W_v x              # d = E / num_heads
    ĩ, f̃ = W_ĩ [q, k, v], W_f̃ [q, k, v]               # one scalar per head
    y = (headwise_norm(mLSTM(q, k, v, ĩ, f̃)) + s ⊙ c) ⊙ SiLU(z)
    h = h + Linear(E, H)(y)

after ``Linear(D, H)`` and before a final LayerNorm. Differences from the paper's
block, kept small: ``W_q``, ``W_k`` and ``W_v`` are full matrices rather than
block-diagonal ones with blocks of 4, and the headwise norm is a LayerNorm per head.
The gate init is the reference code's: zero weights, forget biases spaced linearly
from 3 to 6 over the heads (the memory starts long: ``f = σ(3..6)`` keeps 95% to
99.8% a step) and input biases drawn from ``N(0, 0.1²)``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from pomdp_bench.memory.base import Memory, State, StateSpec
from pomdp_bench.memory.config import MemoryConfig
from pomdp_bench.memory.kernels.episodes import history_windows
from pomdp_bench.memory.kernels.mlstm_scan import mlstm_chunkwise
from pomdp_bench.memory.options import MemoryOptions
from pomdp_bench.memory.registry import register_memory
from pomdp_bench.validation import check_float, check_int

#: The forget gates' initial biases, spaced linearly over the heads (the reference code's).
FORGET_BIAS_RANGE = (3.0, 6.0)
#: The head counts a study tries.
MLSTM_HEADS: list[int] = [1, 4]


@dataclasses.dataclass(frozen=True)
class MLSTMOptions(MemoryOptions):
    """Settings of ``mlstm``.

    Args:
        num_heads: heads ``N`` of the cell, each with its own ``d x d`` memory,
            ``d = proj_factor * hidden_size / num_heads``. Default 4, the paper's. An
            int >= 1 that divides the inner width.
        proj_factor: the block's up-projection, inner width
            ``E = proj_factor * hidden_size``. Default 2.0, the paper's. A number >= 1
            that makes ``E`` a whole number.
        conv_kernel: width of the causal convolution before the queries and keys.
            Default 4, the paper's. An int >= 1 (1: no look-back).
        chunk_size: steps per chunk of the chunkwise parallel form: training costs
            ``T / chunk_size`` sequential steps of ``[chunk_size, chunk_size]``
            attention. Default 64, the reference kernels'. It changes the arithmetic's
            rounding only. An int >= 1.
    """

    num_heads: int = 4
    proj_factor: float = 2.0
    conv_kernel: int = 4
    chunk_size: int = 64

    def __post_init__(self) -> None:
        for name in ("num_heads", "conv_kernel", "chunk_size"):
            check_int(name, getattr(self, name), minimum=1)
        object.__setattr__(self, "proj_factor", check_float("proj_factor", self.proj_factor, minimum=1.0))

    def inner_size(self, hidden_size: int) -> int:
        """The block's inner width ``E``."""
        return round(self.proj_factor * hidden_size)

    def check(self, config: MemoryConfig) -> None:
        hidden = config.hidden_size
        inner = self.proj_factor * hidden
        if abs(inner - round(inner)) > 1e-9:
            raise ValueError(
                f"mlstm: proj_factor={self.proj_factor} times hidden_size={hidden} must be a whole "
                f"number (the inner width), got {inner}"
            )
        if round(inner) % self.num_heads:
            divisors = [h for h in range(1, round(inner) + 1) if round(inner) % h == 0]
            raise ValueError(
                f"mlstm: num_heads={self.num_heads} must divide the inner width "
                f"proj_factor * hidden_size = {round(inner)}; valid num_heads: {divisors}"
            )


def tune_mlstm(trial: Any, hidden: int) -> dict[str, Any]:
    """A study's memory settings for ``mlstm``: ``hidden`` units and the heads of
    :data:`MLSTM_HEADS` (Optuna parameter ``"memory_num_heads"``)."""
    return {"hidden_size": hidden, "num_heads": trial.suggest_categorical("memory_num_heads", MLSTM_HEADS)}


class MLSTMBlock(nn.Module):
    """One pre-up-projection mLSTM block, ``[T, B, H] -> [T, B, H]`` (module docstring).

    Its state: the convolution's last inputs ``[B, K - 1, E]`` and the cell's
    ``C̄ [B, N, d, d]``, ``n̄ [B, N, d]`` and ``m [B, N]``.
    """

    def __init__(self, hidden_size: int, options: MLSTMOptions) -> None:
        super().__init__()
        inner = options.inner_size(hidden_size)
        self.num_heads, self.head_size = options.num_heads, inner // options.num_heads
        self.chunk_size = options.chunk_size
        self.norm = nn.LayerNorm(hidden_size)
        self.up = nn.Linear(hidden_size, 2 * inner)
        self.conv = nn.Conv1d(
            inner, inner, options.conv_kernel, groups=inner
        )  # weights only: applied to windows
        self.qk = nn.Linear(inner, 2 * inner)
        self.v = nn.Linear(inner, inner)
        self.gates = nn.Linear(3 * inner, 2 * options.num_heads)  # ĩ, f̃ per head
        self.head_norm = nn.LayerNorm(self.head_size, bias=False)
        self.skip = nn.Parameter(torch.ones(inner))
        self.down = nn.Linear(inner, hidden_size)
        with torch.no_grad():
            nn.init.zeros_(self.gates.weight)
            i_bias, f_bias = self.gates.bias.view(2, -1)
            i_bias.normal_(0.0, 0.1)
            f_bias.copy_(torch.linspace(*FORGET_BIAS_RANGE, options.num_heads))

    def forward(
        self, h: Tensor, history: Tensor, cell: tuple[Tensor, Tensor, Tensor], starts: Tensor
    ) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
        """``h [T, B, H]`` -> ``(h, history, C̄, n̄, m)``."""
        steps, batch, _ = h.shape
        x, z = self.up(self.norm(h)).chunk(2, dim=-1)  # [T, B, E]
        windows, history = history_windows(x, history, starts)  # [T, B, K, E]
        conv = torch.einsum("tbke,ek->tbe", windows, self.conv.weight[:, 0]) + self.conv.bias
        c = F.silu(conv)
        q, k = self.qk(c).chunk(2, dim=-1)
        v = self.v(x)
        i_pre, f_pre = self.gates(torch.cat([q, k, v], dim=-1)).chunk(2, dim=-1)  # [T, B, N]
        heads = (steps, batch, self.num_heads, self.head_size)
        out, cell = mlstm_chunkwise(
            q.view(heads),
            k.view(heads) / self.head_size**0.5,
            v.view(heads),
            i_pre,
            F.logsigmoid(f_pre),
            starts,
            cell,
            self.chunk_size,
        )
        y = self.head_norm(out).reshape(steps, batch, -1) + self.skip * c
        return h + self.down(y * F.silu(z)), history, *cell


class MLSTMMemory(Memory):
    """``mlstm``: stacked mLSTM blocks, ``[T, B, D] -> [T, B, H]``.

    State, batch-first, per layer ``L``: the convolution's inputs ``[B, L, K - 1, E]``,
    ``C̄ [B, L, N, d, d]``, ``n̄ [B, L, N, d]`` and ``m [B, L, N]`` (``E = proj_factor *
    hidden_size``, ``d = E / num_heads``, ``K = conv_kernel``).
    """

    kind = "mlstm"
    trains_through_time = True

    def __init__(self, config: MemoryConfig, input_size: int) -> None:
        super().__init__(config, input_size, output_size=config.hidden_size)
        self.inner = config.options.inner_size(config.hidden_size)
        self.in_proj = nn.Linear(input_size, config.hidden_size)
        self.blocks = nn.ModuleList(
            MLSTMBlock(config.hidden_size, config.options) for _ in range(config.num_layers)
        )
        self.final_norm = nn.LayerNorm(config.hidden_size)

    def state_spec(self) -> tuple[StateSpec, ...]:
        cfg = self.config
        layers, heads, d = cfg.num_layers, cfg.num_heads, self.inner // cfg.num_heads
        return (
            ((layers, cfg.conv_kernel - 1, self.inner), True),
            ((layers, heads, d, d), True),
            ((layers, heads, d), True),
            ((layers, heads), True),
        )

    def _forward(self, x: Tensor, state: State, starts: Tensor) -> tuple[Tensor, State]:
        h, finals = self.in_proj(x), []
        for layer, block in enumerate(self.blocks):
            history, c, n, m = (s[:, layer] for s in state)
            h, *last = self._maybe_checkpoint(
                lambda h, history, c, n, m, block=block: block(h, history, (c, n, m), starts),
                h,
                history,
                c,
                n,
                m,
            )
            finals.append(last)
        return self.final_norm(h), tuple(torch.stack(parts, 1) for parts in zip(*finals, strict=True))


register_memory("mlstm", MLSTMMemory, options=MLSTMOptions, tuning=tune_mlstm)
