"""``gru`` and ``lstm``: multi-layer ``nn.GRU`` / ``nn.LSTM`` with resets inside the forward.

A batch with no episode start after step 0 runs the fused ``nn.GRU`` / ``nn.LSTM``
once over the whole sequence. A fused RNN cannot reset one copy mid-sequence, and
the usual ways around that are slow on a CPU: a cell loop under autograd costs
about 4.5x the fused layer (T=32, B=8, H=64), and packed sequences leave the fused
kernel for a per-step path whose backward allocates the whole sequence at every
step (about 12x here).

So a batch with starts inside it still runs the fused kernel, once per layer, on
a slightly longer sequence built from two kinds of extra step, driven by two
extra input channels whose weights saturate the gates (±``_SATURATE``):

* a **reset step** before each episode start: the input and forget gates (LSTM)
  or the reset and update gates with the candidate (GRU) are pinned to 0, so the
  step outputs a state of exactly zero, and passes back a gradient of exactly
  zero, whatever came before it;
* **hold steps** at the end of copies with fewer starts than the most, so all copies
  end together: the forget gate (LSTM) or update gate (GRU) is pinned to 1, which
  keeps the cell (LSTM) or hidden state (GRU) exactly. The final ``h`` is read from
  the output at the copy's last real step.

A copy with ``k`` starts is ``k`` steps longer, so with a few starts the cost stays
close to the whole-sequence cost (see ``benchmarks/test_bench_memory.py``), on
any device with a fused RNN kernel.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor, nn

from pomdp_bench.memory.base import Memory, State, StateSpec
from pomdp_bench.memory.config import MemoryConfig

# Far beyond any pre-activation the weights and inputs produce, so a sigmoid of
# ±_SATURATE is exactly 0 or 1 in float32, bfloat16 and float16 alike.
_SATURATE = 1e4


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
        # (starts, its version, layout) of the last _run_with_resets, see _layout.
        self._cached_layout: tuple[Tensor, int, _ResetLayout] | None = None

    def state_spec(self) -> tuple[StateSpec, ...]:
        shape = (self.config.num_layers, self.config.hidden_size)
        return ((shape, True),) * (2 if self.kind == "lstm" else 1)

    def _forward(self, x: Tensor, state: State, starts: Tensor) -> tuple[Tensor, State]:
        out = self._maybe_checkpoint(self._run, x, starts, *state)
        return out[0], tuple(out[1:])

    def _run(self, x: Tensor, starts: Tensor, *state: Tensor) -> tuple[Tensor, ...]:
        """``x [T, B, D]``, ``starts [T, B]``, state ``[B, L, H]`` each -> ``(y, *state)``."""
        keep = (~starts[0]).to(x.dtype)[:, None, None]  # a start at step 0 zeroes the state
        if x.shape[0] == 1:
            return self._step(x[0], tuple(s * keep for s in state))
        hx = tuple((s * keep).transpose(0, 1).contiguous() for s in state)  # torch's [L, B, H]
        if bool(starts[1:].any()):
            return self._run_with_resets(x, starts, hx)
        y, hn = self.rnn(x, hx[0] if self.kind == "gru" else hx)
        hn = (hn,) if self.kind == "gru" else hn
        return (y, *(h.transpose(0, 1).contiguous() for h in hn))

    def _step(self, x: Tensor, state: tuple[Tensor, ...]) -> tuple[Tensor, ...]:
        """One step (acting, or pieces of length 1) as torch's cell ops, layer by layer:
        at ``T = 1`` the fused layer's fixed cost is about 3x the cell's.

        ``x [B, D]``, state ``[B, L, H]`` each (already reset) -> ``(y [1, B, H], *state)``.
        """
        finals: list[list[Tensor]] = [[] for _ in state]
        for layer in range(self.config.num_layers):
            weights = [getattr(self.rnn, f"{n}_l{layer}") for n in _WEIGHT_NAMES]
            if self.kind == "lstm":
                x, c = torch.lstm_cell(x, (state[0][:, layer], state[1][:, layer]), *weights)
                finals[1].append(c)
            else:
                x = torch.gru_cell(x, state[0][:, layer], *weights)
            finals[0].append(x)
        return (x.unsqueeze(0), *(torch.stack(f, dim=1) for f in finals))

    def _run_with_resets(self, x: Tensor, starts: Tensor, hx: tuple[Tensor, ...]) -> tuple[Tensor, ...]:
        """Through the fused kernel with reset and hold steps (see the module docstring).

        ``hx`` is in torch's ``[L, B, H]`` layout, already reset for starts at step 0.
        """
        batch = x.shape[1]
        layout = self._layout(starts)
        real, last, channels, length = layout.real, layout.last, layout.channels.to(x.dtype), layout.length
        arange_b = real[1][0]
        inputs = x.new_zeros(length, batch, x.shape[-1]).index_put(real, x)
        finals: list[list[Tensor]] = [[] for _ in hx]
        for layer in range(self.config.num_layers):
            w_ih, w_hh, b_ih, b_hh = (getattr(self.rnn, f"{n}_l{layer}") for n in _WEIGHT_NAMES)
            weights = [torch.cat([w_ih, self._extra_columns(b_ih)], dim=1), w_hh, b_ih, b_hh]
            layer_in = torch.cat([inputs, channels], dim=-1)
            if self.kind == "lstm":
                state_in = (hx[0][layer : layer + 1], hx[1][layer : layer + 1])
                inputs, _, c_n = torch.lstm(
                    layer_in, state_in, weights, True, 1, 0.0, self.training, False, False
                )
                finals[1].append(c_n[0])  # held exactly since the last real step
            else:
                inputs, _ = torch.gru(
                    layer_in, hx[0][layer : layer + 1], weights, True, 1, 0.0, self.training, False, False
                )
            finals[0].append(inputs[last, arange_b])  # h at the last real step
        y = inputs[real]
        return (y, *(torch.stack(f, dim=1) for f in finals))

    def _layout(self, starts: Tensor) -> _ResetLayout:
        """Where the real, reset and hold steps go for ``starts [T, B]``.

        PPO scores one minibatch every epoch, so the last layout is kept while the
        same, unchanged ``starts`` tensor comes back.
        """
        cached = self._cached_layout
        if cached is not None and cached[0] is starts and cached[1] == starts._version:
            return cached[2]
        steps, batch = starts.shape
        inner = starts.clone()
        inner[0] = False
        shift = inner.long().cumsum(0)  # [T, B] reset steps inserted before each step
        counts = shift[-1]  # [B] starts per copy
        length = steps + int(counts.max())
        where = torch.arange(steps, device=starts.device)[:, None] + shift  # [T, B] each real step
        last = steps - 1 + counts  # [B] each copy's last real step
        # Every step that is not real is a reset step (before a start) or a hold step
        # (after the copy's last real step).
        arange_b = torch.arange(batch, device=starts.device)
        real = (where, arange_b.expand(steps, batch))  # index of the real steps in [length, B]
        positions = torch.arange(length, device=starts.device)[:, None]
        channels = torch.stack([positions <= last, positions > last], dim=-1)
        channels = channels.index_put(real, channels.new_zeros(()))
        layout = _ResetLayout(real, last, channels, length)
        if not starts.is_inference():  # inference tensors have no version counter
            self._cached_layout = (starts, starts._version, layout)
        return layout

    def _extra_columns(self, b_ih: Tensor) -> Tensor:
        """``[G * H, 2]`` input weights of the reset and hold channels (gate order as torch's)."""
        hidden = self.config.hidden_size
        big = b_ih.new_full((hidden,), _SATURATE)
        zero = b_ih.new_zeros(hidden)
        if self.kind == "lstm":  # gates i, f, g, o: reset i = f = 0; hold i = 0, f = 1
            reset = torch.cat([-big, -big, zero, zero])
            hold = torch.cat([-big, big, zero, zero])
        else:  # gates r, z, n: reset r = z = 0 and n's input bias cancelled (n = 0); hold z = 1
            reset = torch.cat([-big, -big, -b_ih[2 * hidden :]])
            hold = torch.cat([zero, big, zero])
        return torch.stack([reset, hold], dim=1)


_WEIGHT_NAMES = ("weight_ih", "weight_hh", "bias_ih", "bias_hh")


class _ResetLayout(NamedTuple):
    """The extended sequence of :meth:`RecurrentMemory._run_with_resets` for one ``starts``."""

    real: tuple[Tensor, Tensor]  # ([T, B] step index, [T, B] copy index) of the real steps
    last: Tensor  # [B] each copy's last real step
    channels: Tensor  # [length, B, 2] bool: the reset and hold channels
    length: int  # T + the most starts of any copy
