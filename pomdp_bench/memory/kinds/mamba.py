"""``mamba``: a selective state-space block after Gu & Dao (2023), in pure PyTorch.

Each layer is a pre-LayerNorm residual block around the Mamba mixer::

    x, z = in_proj(u)                         # inner width E = expand * H
    x = silu(causal_depthwise_conv(x))        # width d_conv, never across an episode start
    Δ, B, C = softplus(dt_proj(·)), ·, ·      # all three read from x: the selection
    h[t] = exp(Δ[t] A) * h[t-1] + Δ[t] B[t] x[t]      # A [E, N] diagonal, negative
    y[t] = C[t] · h[t] + D * x[t]
    out = out_proj(y * silu(z))

Training runs the recurrence with the chunked parallel scan of
:mod:`pomdp_bench.memory.kernels.mamba_scan`; acting (``T = 1``) takes the one-step recurrence.
An episode start zeroes both the convolution's input history and ``h``.
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
from pomdp_bench.memory.kernels import mamba_cpp
from pomdp_bench.memory.kernels.episodes import history_windows
from pomdp_bench.memory.kernels.mamba_scan import selective_scan
from pomdp_bench.memory.options import LegacyKeys, added_setting
from pomdp_bench.memory.registry import register_memory
from pomdp_bench.validation import check_choice

#: The inits of mamba. "mamba": step sizes Δ log-uniform in [0.001, 0.1].
MAMBA_INITS: tuple[str | None, ...] = (None, "mamba")

#: The paths mamba's selective scan can take in training (``MambaOptions.kernel``).
MAMBA_KERNELS = ("chunked", "cpp")

# The "mamba" init draws each channel's step size log-uniformly in this range.
_DT_MIN, _DT_MAX = 1e-3, 1e-1


@dataclasses.dataclass(frozen=True)
class MambaOptions(LegacyKeys):
    """Settings of ``mamba``.

    Args:
        d_state: state size ``N`` per channel. Default 16.
        d_conv: causal depthwise convolution width. Default 4.
        expand: the inner width is ``expand * hidden_size``. Default 2.
        kernel: the path of the selective scan. "chunked" (default): a chunked scan of
            torch operators (:mod:`~pomdp_bench.memory.kernels.mamba_scan`). "cpp": one
            C++ loop (:mod:`~pomdp_bench.memory.kernels.mamba_cpp`), faster on a CPU,
            equal to the reference within float32 rounding; it changes the run key.
            Where it cannot be built, mamba warns once and runs "chunked".
    """

    d_state: int = 16
    d_conv: int = 4
    expand: int = 2
    kernel: str = added_setting("chunked")

    def __post_init__(self) -> None:
        self._check_ints("d_state", "d_conv", "expand")
        check_choice("kernel", self.kernel, MAMBA_KERNELS)


class MambaMixer(nn.Module):
    """The selective SSM mixer of one layer: ``[T, B, H] -> [T, B, H]``.

    Its state: the last ``d_conv - 1`` convolution inputs ``[B, d_conv - 1, E]`` and the
    SSM state ``[B, N, E]``.
    """

    def __init__(self, hidden_size: int, d_state: int, d_conv: int, expand: int) -> None:
        super().__init__()
        inner = expand * hidden_size
        self.dt_rank = math.ceil(hidden_size / 16)  # Δ is low-rank in x, as in Mamba
        self.d_state = d_state
        self.in_proj = nn.Linear(hidden_size, 2 * inner, bias=False)
        # Holds the depthwise conv's weights; forward applies them to reset-masked windows.
        self.conv = nn.Conv1d(inner, inner, d_conv, groups=inner)
        self.x_proj = nn.Linear(inner, self.dt_rank + 2 * d_state, bias=False)
        self.dt_proj = nn.Linear(self.dt_rank, inner)
        # S4D-real: A[e, n] = -(n + 1), stored as a log so it stays negative.
        a = torch.arange(1, d_state + 1, dtype=torch.float32).repeat(inner, 1)
        self.A_log = nn.Parameter(torch.log(a))
        self.D = nn.Parameter(torch.ones(inner))
        self.out_proj = nn.Linear(inner, hidden_size, bias=False)
        self.cpp = False  # the scan's C++ path (MambaOptions.kernel), set by MambaMemory

    def reset_dt(self) -> None:
        """Mamba's step-size init: Δ log-uniform in [0.001, 0.1] through dt_proj's bias."""
        nn.init.uniform_(self.dt_proj.weight, -(self.dt_rank**-0.5), self.dt_rank**-0.5)
        log_dt = torch.empty_like(self.dt_proj.bias).uniform_(math.log(_DT_MIN), math.log(_DT_MAX))
        dt = log_dt.exp()
        with torch.no_grad():
            self.dt_proj.bias.copy_(dt + torch.log(-torch.expm1(-dt)))  # softplus⁻¹(dt)

    def forward(
        self, u: Tensor, conv_history: Tensor, ssm: Tensor, starts: Tensor
    ) -> tuple[Tensor, Tensor, Tensor]:
        """``u [T, B, H]``, ``conv_history [B, K - 1, E]``, ``ssm [B, N, E]``, ``starts [T, B]``
        -> ``(out [T, B, H], conv_history, ssm)``."""
        x, z = self.in_proj(u).chunk(2, dim=-1)  # [T, B, E] each
        windows, conv_history = history_windows(x, conv_history, starts)  # [T, B, K, E]
        # The depthwise causal conv; a multiply-and-sum beats einsum's batched matmul here.
        x = F.silu((windows * self.conv.weight[:, 0].t()).sum(2) + self.conv.bias)
        dt, b, c = self.x_proj(x).split([self.dt_rank, self.d_state, self.d_state], dim=-1)
        delta = F.softplus(self.dt_proj(dt))  # [T, B, E]
        keep = (~starts).to(x.dtype)  # a start zeroes the SSM state
        on_cpu = self.cpp and x.device.type == "cpu" and x.dtype == torch.float32
        scan = mamba_cpp.selective_scan_cpp if on_cpu else selective_scan
        y, ssm = scan(delta, -torch.exp(self.A_log), b, c, x, keep, ssm)
        return self.out_proj((y + self.D * x) * F.silu(z)), conv_history, ssm


class MambaMemory(Memory):
    """Stacked Mamba blocks: ``[T, B, D] -> [T, B, H]``.

    ``Linear(D, H)``, then per layer ``h + mixer(LayerNorm(h))``, then a final
    LayerNorm. State, batch-first, one slice per layer:
    ``(conv [B, L, d_conv - 1, E], ssm [B, L, N, E])`` with ``E = expand * H`` and
    ``N = d_state``.
    """

    kind = "mamba"
    trains_through_time = True

    def __init__(self, config: MemoryConfig, input_size: int) -> None:
        super().__init__(config, input_size, output_size=config.hidden_size)
        hidden = config.hidden_size
        self.inner = config.expand * hidden
        self.in_proj = nn.Linear(input_size, hidden)
        self.norms = nn.ModuleList(nn.LayerNorm(hidden) for _ in range(config.num_layers))
        self.mixers = nn.ModuleList(
            MambaMixer(hidden, config.d_state, config.d_conv, config.expand) for _ in range(config.num_layers)
        )
        self.final_norm = nn.LayerNorm(hidden)
        if config.init == "mamba":
            for mixer in self.mixers:
                mixer.reset_dt()
        cpp = config.kernel == "cpp"
        if cpp and mamba_cpp.load() is None:
            mamba_cpp.warn_fallback("mamba")
            cpp = False
        for mixer in self.mixers:
            mixer.cpp = cpp

    def state_spec(self) -> tuple[StateSpec, ...]:
        cfg = self.config
        return (
            ((cfg.num_layers, cfg.d_conv - 1, self.inner), True),
            ((cfg.num_layers, cfg.d_state, self.inner), True),
        )

    def _forward(self, x: Tensor, state: State, starts: Tensor) -> tuple[Tensor, State]:
        conv, ssm = state
        h = self.in_proj(x)
        convs, ssms = [], []
        for layer in range(self.config.num_layers):
            block = partial(self._block, layer)
            h, c, s = self._maybe_checkpoint(block, h, conv[:, layer], ssm[:, layer], starts)
            convs.append(c)
            ssms.append(s)
        return self.final_norm(h), (torch.stack(convs, 1), torch.stack(ssms, 1))

    def _block(
        self, layer: int, h: Tensor, conv: Tensor, ssm: Tensor, starts: Tensor
    ) -> tuple[Tensor, Tensor, Tensor]:
        """One pre-LayerNorm residual block: ``h + mixer(LN(h))``, and the layer's new state."""
        out, conv, ssm = self.mixers[layer](self.norms[layer](h), conv, ssm, starts)
        return h + out, conv, ssm


register_memory("mamba", MambaMemory, options=MambaOptions, inits=MAMBA_INITS)
