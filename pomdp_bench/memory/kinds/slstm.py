"""``slstm``: xLSTM's scalar LSTM (Beck et al., "xLSTM: Extended Long Short-Term Memory",
NeurIPS 2024) with exponential gating, a normaliser and the stabiliser, in its
post-up-projection block.

Per head (block-diagonal recurrent weights ``R``, so heads do not mix), with
pre-activations ``W x[t] + R h[t-1] + b`` for each of ``ĩ, f̃, z̃, õ``::

    m[t] = max(logσ(f̃) + m[t-1], ĩ)         # the stabiliser; ĩ alone when n[t-1] = 0
    i' = exp(ĩ - m[t]),  f' = exp(logσ(f̃) + m[t-1] - m[t])
    c[t] = f' c[t-1] + i' tanh(z̃)            # cell
    n[t] = f' n[t-1] + i'                    # normaliser, >= 1 after the first step
    h[t] = σ(õ) ⊙ c[t] / n[t]

``h`` is a ratio of two states scaled alike by ``e^(-m)``, so ``m`` changes no output;
it is held without gradient (exact, as for mlstm). The input gate is exponential, so
a new input can overwrite the memory (``i'`` up to 1 while ``f'`` falls), which the
paper's "revising storage decisions" means; the forget gate is a sigmoid, as in
the reference code.

It is recurrent through ``h[t-1]``, so it has no parallel form: training runs the
steps one by one. What is fused: the input projections of all steps are one matmul
before the loop, and each step is one batched matmul over the heads (all four gates
at once) and one pointwise update; the reset runs only at steps where some copy
starts. An episode start zeroes ``h``, ``c``, ``n`` and ``m`` before the step is
read, so the zero state is a fresh episode.

The block, per layer: ``h + headwise_norm(sLSTM(LN(h)))``, then
``h + Linear(GELU(a) ⊙ b)`` with ``a, b = split(Linear(H, 2F)(LN(h)))``,
``F = ff_factor * H``, after ``Linear(D, H)`` and before a final LayerNorm. It leaves
out the paper's optional causal convolution before the input and forget gates.
Forget biases start spaced linearly from 3 to 6 over the units (as mlstm's heads;
the reference code draws a power law per block), other biases at 0.
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
from pomdp_bench.memory.options import MemoryOptions, check_heads
from pomdp_bench.memory.registry import register_memory
from pomdp_bench.validation import check_float, check_int

#: The forget gates' initial biases, spaced linearly over the units.
FORGET_BIAS_RANGE = (3.0, 6.0)
#: The head counts a study tries.
SLSTM_HEADS: list[int] = [1, 4]

SLSTMState = tuple[Tensor, Tensor, Tensor, Tensor]  # h, c, n, m, each [N, B, d]


@dataclasses.dataclass(frozen=True)
class SLSTMOptions(MemoryOptions):
    """Settings of ``slstm``.

    Args:
        num_heads: heads of the recurrence; ``R`` is block-diagonal with one
            ``d x 4d`` block per head, ``d = hidden_size / num_heads``. Default 4, the
            paper's. An int >= 1 that divides ``hidden_size``.
        ff_factor: width of the block's gated feed-forward layer, ``ff_factor *
            hidden_size`` (at least 1). Default 4/3, the paper's. A number > 0.
    """

    num_heads: int = 4
    ff_factor: float = 4 / 3

    def __post_init__(self) -> None:
        check_int("num_heads", self.num_heads, minimum=1)
        ff = check_float("ff_factor", self.ff_factor, minimum=0.0, strict_minimum=True)
        object.__setattr__(self, "ff_factor", ff)

    def check(self, config: MemoryConfig) -> None:
        check_heads(config, self.num_heads)


def tune_slstm(trial: Any, hidden: int) -> dict[str, Any]:
    """A study's memory settings for ``slstm``: ``hidden`` units and the heads of
    :data:`SLSTM_HEADS` (Optuna parameter ``"memory_num_heads"``)."""
    return {"hidden_size": hidden, "num_heads": trial.suggest_categorical("memory_num_heads", SLSTM_HEADS)}


def slstm_step(raw: Tensor, state: SLSTMState) -> SLSTMState:
    """One stabilised sLSTM update from the pre-activations ``raw [N, B, 4d]`` (``ĩ, f̃, z̃,
    õ``) and the state after any reset; returns the new ``(h, c, n, m)``."""
    _, c, n, m = state
    i_pre, f_pre, z_pre, o_pre = raw.chunk(4, dim=-1)
    log_f_m = F.logsigmoid(f_pre) + m
    m_new = torch.where(n == 0, i_pre, torch.maximum(i_pre, log_f_m)).detach()
    write, forget = torch.exp(i_pre - m_new), torch.exp(log_f_m - m_new)
    c = forget * c + write * torch.tanh(z_pre)
    n = forget * n + write
    return torch.sigmoid(o_pre) * c / n, c, n, m_new


class SLSTMLayer(nn.Module):
    """The sLSTM recurrence over ``[T, B, H]`` (module docstring); its state is ``(h, c,
    n, m)``, each ``[N, B, d]``."""

    def __init__(self, hidden_size: int, num_heads: int) -> None:
        super().__init__()
        self.num_heads, self.head_size = num_heads, hidden_size // num_heads
        d = self.head_size
        # Gate-major per head: [N, 4d] columns ĩ, f̃, z̃, õ of d units each.
        self.w = nn.Linear(hidden_size, 4 * hidden_size)
        self.r = nn.Parameter(torch.empty(num_heads, d, 4 * d).uniform_(-1 / math.sqrt(d), 1 / math.sqrt(d)))
        with torch.no_grad():
            self.w.bias.zero_()
            bias = self.w.bias.view(num_heads, 4, d)
            bias[:, 1] = torch.linspace(*FORGET_BIAS_RANGE, hidden_size).view(num_heads, d)

    def forward(self, u: Tensor, state: SLSTMState, keep: Tensor) -> tuple[Tensor, SLSTMState]:
        """``u [T, B, H]``, ``keep [T, B]`` (0 at a start) -> ``(h [T, B, H], state)``."""
        steps, batch, _ = u.shape
        pre = self.w(u).view(steps, batch, self.num_heads, -1).transpose(1, 2)  # [T, N, B, 4d]
        resets = (keep == 0).any(dim=1).tolist()  # the steps where some copy starts an episode
        keep = keep.view(steps, 1, batch, 1)
        outputs = []
        for t in range(steps):
            if resets[t]:
                state = tuple(s * keep[t] for s in state)
            raw = torch.baddbmm(pre[t], state[0], self.r)  # [N, B, 4d]
            state = slstm_step(raw, state)
            outputs.append(state[0])
        h = torch.stack(outputs)  # [T, N, B, d]
        return h.permute(0, 2, 1, 3).reshape(steps, batch, -1), state


class SLSTMMemory(Memory):
    """``slstm``: stacked sLSTM blocks, ``[T, B, D] -> [T, B, H]``.

    State, batch-first: ``h``, ``c``, ``n`` and ``m``, each ``[B, L, H]`` (layer ``L``,
    heads side by side).
    """

    kind = "slstm"
    trains_through_time = True

    def __init__(self, config: MemoryConfig, input_size: int) -> None:
        super().__init__(config, input_size, output_size=config.hidden_size)
        hidden, layers, heads = config.hidden_size, config.num_layers, config.num_heads
        ff = max(1, round(config.ff_factor * hidden))
        self.in_proj = nn.Linear(input_size, hidden)
        self.norms = nn.ModuleList(nn.LayerNorm(hidden) for _ in range(layers))
        self.cells = nn.ModuleList(SLSTMLayer(hidden, heads) for _ in range(layers))
        self.head_norms = nn.ModuleList(nn.LayerNorm(hidden // heads, bias=False) for _ in range(layers))
        self.ff_norms = nn.ModuleList(nn.LayerNorm(hidden) for _ in range(layers))
        self.ff_up = nn.ModuleList(nn.Linear(hidden, 2 * ff) for _ in range(layers))
        self.ff_down = nn.ModuleList(nn.Linear(ff, hidden) for _ in range(layers))
        self.final_norm = nn.LayerNorm(hidden)

    def state_spec(self) -> tuple[StateSpec, ...]:
        shape = (self.config.num_layers, self.config.hidden_size)
        return ((shape, True),) * 4

    def _forward(self, x: Tensor, state: State, starts: Tensor) -> tuple[Tensor, State]:
        keep = (~starts).to(x.dtype)
        heads = self.config.num_heads
        h, finals = self.in_proj(x), []
        for layer in range(self.config.num_layers):
            # [B, H] -> [N, B, d] per state tensor
            cell = tuple(s[:, layer].view(s.shape[0], heads, -1).transpose(0, 1) for s in state)
            h, *last = self._maybe_checkpoint(
                lambda h, keep, *cell, layer=layer: self._block(layer, h, cell, keep), h, keep, *cell
            )
            finals.append([s.transpose(0, 1).reshape(s.shape[1], -1) for s in last])
        return self.final_norm(h), tuple(torch.stack(parts, 1) for parts in zip(*finals, strict=True))

    def _block(self, layer: int, h: Tensor, cell: SLSTMState, keep: Tensor) -> tuple[Tensor, ...]:
        """One block: the recurrence with its residual, then the gated feed-forward."""
        steps, batch, hidden = h.shape
        y, cell = self.cells[layer](self.norms[layer](h), cell, keep)
        heads = self.config.num_heads
        h = h + self.head_norms[layer](y.view(steps, batch, heads, -1)).reshape(steps, batch, hidden)
        a, b = self.ff_up[layer](self.ff_norms[layer](h)).chunk(2, dim=-1)
        return h + self.ff_down[layer](F.gelu(a) * b), *cell


register_memory("slstm", SLSTMMemory, options=SLSTMOptions, tuning=tune_slstm)
