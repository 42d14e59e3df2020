"""What ``gru`` and ``lstm`` share: multi-layer ``nn.GRU`` / ``nn.LSTM`` with resets inside
the forward, their settings (:class:`RNNOptions`), inits and tuning space. Each kind's
module (:mod:`~pomdp_bench.memory.kinds.gru`, :mod:`~pomdp_bench.memory.kinds.lstm`)
registers them.

What it computes is the plain masked loop of :mod:`pomdp_bench.memory.kernels.rnn_reference`:
before each step, the state of every copy that starts an episode there is zeroed.
How it computes it depends on the batch:

- one step (acting): torch's cell ops, layer by layer (at ``T = 1`` the fused
  layer's fixed cost is about 3x the cell's);
- no episode start after step 0: the fused ``nn.GRU`` / ``nn.LSTM``, once;
- starts inside the sequence: still the fused kernel, once per layer, with extra
  reset and hold steps (:mod:`pomdp_bench.memory.kernels.rnn_fused` explains how).

``tests/test_memory.py`` holds all three equal to the reference, values and gradients,
for one and two layers.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch
from torch import Tensor, nn

from pomdp_bench.memory.base import Memory, State, StateSpec
from pomdp_bench.memory.config import MemoryConfig
from pomdp_bench.memory.kernels import gru_cpp
from pomdp_bench.memory.kernels.rnn_fused import FusedResets, stack_layers
from pomdp_bench.memory.options import LegacyKeys, added_setting
from pomdp_bench.validation import check_choice, check_float, check_int

#: The ``init`` values gru and lstm understand. None: torch's defaults. "orthogonal":
#: weights orthogonal, biases zero. "forget_bias": torch's weights, biases zero except
#: the gate that keeps the state (LSTM's forget gate, GRU's update gate) at
#: ``gate_bias`` (default 2), so an untrained state keeps sigmoid(2) = 88% a step
#: instead of half, and a gradient reaches a cue 20 steps back. "chrono": Tallec &
#: Ollivier's chrono initialisation (ICLR 2018) for ``timescale`` steps: biases zero
#: except the keep gate's, drawn per unit as ``log(U(1, timescale - 1))`` (LSTM: the
#: input gate's is its negative), so the units' untrained memory spans are spread up
#: to the horizon.
RNN_INITS: tuple[str | None, ...] = (None, "orthogonal", "forget_bias", "chrono")
#: The paths a gru or lstm sequence can take in training (``RNNOptions.kernel``).
RNN_KERNELS = ("fused", "cpp")
_GATE_BIAS = 2.0


@dataclasses.dataclass(frozen=True)
class RNNOptions(LegacyKeys):
    """Settings of ``gru`` and ``lstm`` (see :data:`RNN_INITS` for their inits).

    Args:
        timescale: with ``init="chrono"`` only (and required there): the longest
            memory span, in steps, the keep-gate biases are drawn for; set it to the
            task's memory horizon. Default None.
        gate_bias: with ``init="forget_bias"`` only: the keep gate's initial bias (2,
            the default: 88% kept a step, 8% over 20 steps; 4: 98%, 16% over 100 steps).
        kernel: the path a sequence takes in training. "fused" (default): torch's
            ``nn.GRU`` / ``nn.LSTM`` with resets inside (``rnn_fused.py``). "cpp", gru
            only: the masked loop in C++ (:mod:`~pomdp_bench.memory.kernels.gru_cpp`),
            several times faster on a CPU, equal to the reference within float32
            rounding; it changes the run key. Where it cannot be built, gru warns once
            and runs "fused".
    """

    timescale: int | None = added_setting(None)
    gate_bias: float = added_setting(_GATE_BIAS)
    kernel: str = added_setting("fused")

    def __post_init__(self) -> None:
        object.__setattr__(self, "gate_bias", check_float("gate_bias", self.gate_bias))
        check_choice("kernel", self.kernel, RNN_KERNELS)

    def check(self, config: MemoryConfig) -> None:
        if config.init == "chrono":
            if self.timescale is None:
                raise ValueError(
                    "init='chrono' needs timescale, the longest memory span in steps "
                    "(the task's memory horizon), an int >= 2; got None"
                )
            check_int("timescale", self.timescale, minimum=2)
        elif self.timescale is not None:
            raise ValueError(
                f"timescale={self.timescale!r} applies only to init='chrono', not init={config.init!r}"
            )
        if self.kernel != "fused" and config.kind != "gru":
            raise ValueError(
                f"kernel={self.kernel!r} is a path of gru only; {config.kind}'s kernels: ['fused']"
            )
        if config.init != "forget_bias" and self.gate_bias != _GATE_BIAS:
            raise ValueError(
                f"gate_bias={self.gate_bias!r} applies to {config.kind} only with init='forget_bias', "
                f"not init={config.init!r}"
            )


def tune_rnn(trial: Any, hidden: int) -> dict[str, Any]:
    """A study's gru or lstm: ``hidden`` units, ``init="forget_bias"`` against torch's
    default (Optuna parameter ``"memory_init"``)."""
    memory: dict[str, Any] = {"hidden_size": hidden}
    init = trial.suggest_categorical("memory_init", ["default", "forget_bias"])
    if init != "default":
        memory["init"] = init
    return memory


_WEIGHT_NAMES = ("weight_ih", "weight_hh", "bias_ih", "bias_hh")


class RecurrentMemory(Memory):
    """A stacked GRU or LSTM: ``[T, B, D] -> [T, B, H]``.

    ``self.rnn`` is a plain ``nn.GRU`` or ``nn.LSTM`` (input_size ``D``, hidden_size
    ``H``, ``num_layers``, time-first, with biases) with torch's parameter names, so
    weights from another library's ``nn.LSTM`` (sb3-contrib's, say) load into it directly.

    State, batch-first: gru ``(h [B, L, H],)``; lstm ``(h [B, L, H], c [B, L, H])``.
    """

    trains_through_time = True

    def __init__(self, config: MemoryConfig, input_size: int) -> None:
        super().__init__(config, input_size, output_size=config.hidden_size)
        self.kind = config.kind
        rnn_class = {"gru": nn.GRU, "lstm": nn.LSTM}[config.kind]
        self.rnn: nn.GRU | nn.LSTM = rnn_class(input_size, config.hidden_size, config.num_layers)
        if config.init == "orthogonal":
            for name, param in self.rnn.named_parameters():
                if name.startswith("weight"):
                    nn.init.orthogonal_(param)
                else:
                    nn.init.zeros_(param)
        elif config.init in ("forget_bias", "chrono"):
            self._open_keep_gate(config)
        # Names of each layer's (w_ih, w_hh, b_ih, b_hh), looked up once.
        self._weight_names = [
            tuple(f"{n}_l{layer}" for n in _WEIGHT_NAMES) for layer in range(config.num_layers)
        ]
        self._fused = FusedResets(config.kind, config.hidden_size, config.num_layers)
        self._cpp = config.kind == "gru" and config.kernel == "cpp"
        if self._cpp and gru_cpp.load() is None:
            gru_cpp.warn_fallback("gru")
            self._cpp = False

    def _open_keep_gate(self, config: MemoryConfig) -> None:
        """Zero the biases, then bias open the gate that keeps the state: the second gate
        of both (LSTM: i, f, g, o; GRU: r, z, n with h' = (1 - z) n + z h).

        forget_bias: ``gate_bias`` (2) everywhere, so a cue survives 20 steps at 0.88^20 = 8%, not 1e-6.
        chrono: log(u), u ~ U(1, T - 1) per unit, which keeps u / (1 + u) of the state a
        step, so the untrained spans u are spread over 1..T (LSTM: input gate the negative).
        """
        size = config.hidden_size
        with torch.no_grad():
            for name, param in self.rnn.named_parameters():
                if not name.startswith("bias"):
                    continue
                param.zero_()
                if not name.startswith("bias_ih"):
                    continue
                if config.init == "forget_bias":
                    param[size : 2 * size] = config.gate_bias
                else:
                    keep = torch.log(torch.empty(size).uniform_(1.0, config.timescale - 1.0))
                    param[size : 2 * size] = keep
                    if config.kind == "lstm":
                        param[:size] = -keep

    def state_spec(self) -> tuple[StateSpec, ...]:
        shape = (self.config.num_layers, self.config.hidden_size)
        return ((shape, True),) * (2 if self.kind == "lstm" else 1)

    def _forward(self, x: Tensor, state: State, starts: Tensor) -> tuple[Tensor, State]:
        out = self._maybe_checkpoint(self._run, x, starts, *state)
        return out[0], tuple(out[1:])

    def _run(self, x: Tensor, starts: Tensor, *state: Tensor) -> tuple[Tensor, ...]:
        """``x [T, B, D]``, ``starts [T, B]``, state ``[B, L, H]`` each -> ``(y, *state)``."""
        if x.shape[0] == 1:
            reset = starts[0, :, None, None]  # a start at step 0 zeroes the state
            return self._step(x[0], tuple(s.masked_fill(reset, 0.0) for s in state))
        if self._cpp and x.device.type == "cpu" and x.dtype == torch.float32:
            weights = [self._weights(layer) for layer in range(self.config.num_layers)]
            return gru_cpp.gru_layers(x, state[0], starts, weights)
        hx, inner_starts = self._fused.sequence_start(starts, state)  # [L, B, H] each
        if inner_starts:
            weights = [self._weights(layer) for layer in range(self.config.num_layers)]
            return self._fused.run(x, starts, hx, weights, self.training)
        y, hn = self.rnn(x, hx[0] if self.kind == "gru" else hx)
        hn = (hn,) if self.kind == "gru" else hn
        return (y, *(h.transpose(0, 1).contiguous() for h in hn))

    def _weights(self, layer: int) -> list[Tensor]:
        """``[w_ih, w_hh, b_ih, b_hh]`` of ``layer`` (a dict lookup: ``getattr`` on a
        module costs a microsecond each, and acting asks for them every step)."""
        params = self.rnn._parameters
        return [params[name] for name in self._weight_names[layer]]

    def _step(self, x: Tensor, state: tuple[Tensor, ...]) -> tuple[Tensor, ...]:
        """One step as torch's cell ops, layer by layer.

        ``x [B, D]``, state ``[B, L, H]`` each (already reset) -> ``(y [1, B, H], *state)``.
        """
        finals: list[list[Tensor]] = [[] for _ in state]
        for layer in range(self.config.num_layers):
            weights = self._weights(layer)
            if self.kind == "lstm":
                x, c = torch.lstm_cell(x, (state[0][:, layer], state[1][:, layer]), *weights)
                finals[1].append(c)
            else:
                x = torch.gru_cell(x, state[0][:, layer], *weights)
            finals[0].append(x)
        return (x.unsqueeze(0), *stack_layers(finals))
