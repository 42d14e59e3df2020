"""``mamba2``: Mamba-2's block around the state-space dual (SSD) layer (Dao & Gu,
"Transformers are SSMs", ICML 2024), trained with the chunked SSD algorithm.

Per layer, a pre-RMSNorm residual block around the mixer (the reference's
``Mamba2`` module with one group)::

    z, xBC, dt = in_proj(u)                   # inner width E = expand * H, P = head_size
    x, B, C = SiLU(causal_conv(xBC))          # width d_conv, never across a start
    Δ = softplus(dt + dt_bias)                # one step size per head
    S[t] = exp(Δ[t] A) S[t-1] + Δ[t] x[t] B[t]ᵀ     # A < 0 a scalar per head; S [P, N]
    y[t] = S[t] C[t] + D x[t]
    out = out_proj(RMSNorm(y ⊙ SiLU(z)))

Unlike Mamba-1 (``mamba``), the decay is one scalar per head and ``B``, ``C`` are
shared by the heads, so the recurrence is a linear attention with a decay mask:
:func:`~pomdp_bench.memory.kernels.delta_rule.delta_rule_chunkwise` runs it chunk by
chunk (``[L, L]`` products inside a chunk, the state carried between chunks), the
chunked SSD algorithm. Acting (``T = 1``) takes the one-step recurrence. An episode
start zeroes the convolution's input history and ``S``. Inits are the reference's:
``A`` uniform in ``[1, 16]``, ``Δ`` log-uniform in ``[0.001, 0.1]`` (floored at
1e-4) through ``dt_bias``, ``D = 1``. It shares Mamba-1's reset-masked convolution
windows (:func:`~pomdp_bench.memory.kernels.episodes.history_windows`) and step-size
range.
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
from pomdp_bench.memory.kernels.episodes import history_windows
from pomdp_bench.memory.kinds.mamba import _DT_MAX, _DT_MIN
from pomdp_bench.memory.options import MemoryOptions
from pomdp_bench.memory.registry import register_memory
from pomdp_bench.validation import check_int

#: The range the heads' initial ``-A`` is drawn from (uniformly), the reference's.
A_INIT_RANGE = (1.0, 16.0)
_DT_FLOOR = 1e-4
#: The state sizes a study tries.
MAMBA2_STATES: list[int] = [16, 128]


def initial_dt_bias(size: int) -> Tensor:
    """``softplus⁻¹(Δ)`` with ``Δ`` log-uniform in ``[0.001, 0.1]``, floored at 1e-4."""
    log_dt = torch.empty(size).uniform_(math.log(_DT_MIN), math.log(_DT_MAX))
    dt = log_dt.exp().clamp(min=_DT_FLOOR)
    return dt + torch.log(-torch.expm1(-dt))


def check_divides(kind: str, what: str, value: int, width_name: str, width: int) -> None:
    """Refuse ``value`` that does not divide ``width``, listing the values that do."""
    if width % value:
        divisors = [h for h in range(1, width + 1) if width % h == 0]
        raise ValueError(
            f"{kind}: {what}={value} must divide {width_name} = {width}; valid {what}: {divisors}"
        )


@dataclasses.dataclass(frozen=True)
class Mamba2Options(MemoryOptions):
    """Settings of ``mamba2``.

    Args:
        d_state: state size ``N`` per head (the width of ``B`` and ``C``). Default 128,
            the reference module's. An int >= 1.
        d_conv: width of the causal depthwise convolution. Default 4, the paper's. An
            int >= 1 (1: no look-back).
        expand: the inner width is ``E = expand * hidden_size``. Default 2, the
            paper's. An int >= 1.
        head_size: channels ``P`` per head; ``E / P`` heads, each with its own decay
            and ``[P, N]`` state. Default 64, the paper's. An int >= 1 that divides ``E``.
        chunk_size: steps per chunk of the SSD algorithm. Default 256, the reference
            kernels'. It changes the arithmetic's rounding only. An int >= 1.
    """

    d_state: int = 128
    d_conv: int = 4
    expand: int = 2
    head_size: int = 64
    chunk_size: int = 256

    def __post_init__(self) -> None:
        for name in ("d_state", "d_conv", "expand", "head_size", "chunk_size"):
            check_int(name, getattr(self, name), minimum=1)

    def check(self, config: MemoryConfig) -> None:
        inner = self.expand * config.hidden_size
        check_divides("mamba2", "head_size", self.head_size, "expand * hidden_size", inner)


def tune_mamba2(trial: Any, hidden: int) -> dict[str, Any]:
    """A study's memory settings for ``mamba2``: ``hidden`` units and the state sizes of
    :data:`MAMBA2_STATES` (Optuna parameter ``"memory_d_state"``)."""
    return {"hidden_size": hidden, "d_state": trial.suggest_categorical("memory_d_state", MAMBA2_STATES)}


class Mamba2Mixer(nn.Module):
    """The SSD mixer of one layer: ``[T, B, H] -> [T, B, H]``.

    Its state: the convolution's last inputs ``[B, d_conv - 1, E + 2N]`` and
    ``S [B, E / P, P, N]``.
    """

    def __init__(self, hidden_size: int, options: Mamba2Options) -> None:
        super().__init__()
        inner = options.expand * hidden_size
        self.inner, self.d_state, self.head_size = inner, options.d_state, options.head_size
        self.num_heads = inner // options.head_size
        self.chunk_size = options.chunk_size
        conv_width = inner + 2 * options.d_state
        self.in_proj = nn.Linear(hidden_size, inner + conv_width + self.num_heads, bias=False)
        self.conv = nn.Conv1d(conv_width, conv_width, options.d_conv, groups=conv_width)  # weights only
        self.dt_bias = nn.Parameter(initial_dt_bias(self.num_heads))
        self.A_log = nn.Parameter(torch.empty(self.num_heads).uniform_(*A_INIT_RANGE).log())
        self.D = nn.Parameter(torch.ones(self.num_heads))
        self.norm = nn.RMSNorm(inner, eps=1e-5)
        self.out_proj = nn.Linear(inner, hidden_size, bias=False)

    def forward(
        self, u: Tensor, history: Tensor, ssm: Tensor, starts: Tensor
    ) -> tuple[Tensor, Tensor, Tensor]:
        """``u [T, B, H]``, ``history [B, K - 1, E + 2N]``, ``ssm [B, heads, P, N]``,
        ``starts [T, B]`` -> ``(out [T, B, H], history, ssm)``."""
        steps, batch, _ = u.shape
        z, xbc, dt = self.in_proj(u).split([self.inner, self.inner + 2 * self.d_state, self.num_heads], -1)
        windows, history = history_windows(xbc, history, starts)  # [T, B, K, E + 2N]
        xbc = F.silu((windows * self.conv.weight[:, 0].t()).sum(2) + self.conv.bias)
        x, b, c = xbc.split([self.inner, self.d_state, self.d_state], dim=-1)
        delta = F.softplus(dt + self.dt_bias)  # [T, B, heads]
        x = x.view(steps, batch, self.num_heads, self.head_size)  # [T, B, heads, P]
        heads = (steps, batch, self.num_heads, self.d_state)
        q, k = c.unsqueeze(2).expand(heads), b.unsqueeze(2).expand(heads)  # shared by the heads
        log_w = (-torch.exp(self.A_log) * delta).unsqueeze(-1)  # [T, B, heads, 1]
        v = x * delta.unsqueeze(-1)
        if steps == 1:
            y, ssm = delta_rule_sequential(q, k, v, log_w, None, None, starts, ssm)
        else:
            y, ssm = delta_rule_chunkwise(q, k, v, log_w, None, None, starts, ssm, self.chunk_size)
        y = (y + self.D[:, None] * x).reshape(steps, batch, self.inner)
        return self.out_proj(self.norm(y * F.silu(z))), history, ssm


class Mamba2Memory(Memory):
    """``mamba2``: stacked Mamba-2 blocks, ``[T, B, D] -> [T, B, H]``.

    ``Linear(D, H)``, then per layer ``h + mixer(RMSNorm(h))``, then a final
    RMSNorm. State, batch-first, per layer ``L``: the convolution's inputs
    ``[B, L, d_conv - 1, E + 2N]`` and ``S [B, L, E / P, P, N]`` (``E = expand *
    hidden_size``, ``P = head_size``, ``N = d_state``).
    """

    kind = "mamba2"
    trains_through_time = True

    def __init__(self, config: MemoryConfig, input_size: int) -> None:
        super().__init__(config, input_size, output_size=config.hidden_size)
        hidden = config.hidden_size
        self.in_proj = nn.Linear(input_size, hidden)
        self.norms = nn.ModuleList(nn.RMSNorm(hidden, eps=1e-5) for _ in range(config.num_layers))
        self.mixers = nn.ModuleList(Mamba2Mixer(hidden, config.options) for _ in range(config.num_layers))
        self.final_norm = nn.RMSNorm(hidden, eps=1e-5)

    def state_spec(self) -> tuple[StateSpec, ...]:
        cfg, mixer = self.config, self.mixers[0]
        return (
            ((cfg.num_layers, cfg.d_conv - 1, mixer.inner + 2 * cfg.d_state), True),
            ((cfg.num_layers, mixer.num_heads, cfg.head_size, cfg.d_state), True),
        )

    def _forward(self, x: Tensor, state: State, starts: Tensor) -> tuple[Tensor, State]:
        conv, ssm = state
        h, convs, ssms = self.in_proj(x), [], []
        for layer, (norm, mixer) in enumerate(zip(self.norms, self.mixers, strict=True)):
            h, c, s = self._maybe_checkpoint(
                lambda h, c, s, norm=norm, mixer=mixer: _residual(h, *mixer(norm(h), c, s, starts)),
                h,
                conv[:, layer],
                ssm[:, layer],
            )
            convs.append(c)
            ssms.append(s)
        return self.final_norm(h), (torch.stack(convs, 1), torch.stack(ssms, 1))


def _residual(h: Tensor, out: Tensor, *state: Tensor) -> tuple[Tensor, ...]:
    return (h + out, *state)


register_memory("mamba2", Mamba2Memory, options=Mamba2Options, tuning=tune_mamba2)
