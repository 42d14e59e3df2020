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
any device with a fused RNN kernel. :mod:`pomdp_bench.memory.rnn_reference` is the
plain masked loop this equals (values and gradients; ``tests/test_memory.py``).
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
        # Names of each layer's (w_ih, w_hh, b_ih, b_hh), looked up once.
        self._weight_names = [
            tuple(f"{n}_l{layer}" for n in _WEIGHT_NAMES) for layer in range(config.num_layers)
        ]
        # (starts, its version, layout) of the last _run_with_resets, see _layout.
        self._cached_layout: tuple[Tensor, int, _ResetLayout] | None = None
        self._lstm_columns: Tensor | None = None  # see _extra_columns
        self._cached_input: tuple[Tensor, int, _ResetLayout, Tensor] | None = None  # see _first_input
        # (starts and state, their versions, hx, inner starts) of the last _sequence_start
        self._cached_start: tuple[tuple[Tensor, ...], tuple[int, ...], tuple[Tensor, ...], bool] | None = None

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
        hx, inner_starts = self._sequence_start(starts, state)
        if inner_starts:
            return self._run_with_resets(x, starts, hx)
        y, hn = self.rnn(x, hx[0] if self.kind == "gru" else hx)
        hn = (hn,) if self.kind == "gru" else hn
        return (y, *(h.transpose(0, 1).contiguous() for h in hn))

    def _sequence_start(self, starts: Tensor, state: tuple[Tensor, ...]) -> tuple[tuple[Tensor, ...], bool]:
        """The state before a sequence, in torch's ``[L, B, H]`` layout and zeroed
        where step 0 starts an episode, and whether any copy starts one after step 0.

        Kept while the same unchanged ``starts`` and state tensors come back, none
        needing a gradient (a caller that passes the same sequence again, with the
        same starting state, pays for this once). "Unchanged" as in :meth:`_first_input`.
        """
        key = (starts, *state)
        cached = self._cached_start
        if (
            cached is not None
            and len(cached[0]) == len(key)
            and all(a is b for a, b in zip(cached[0], key, strict=True))
            and all(a._version == v for a, v in zip(cached[0], cached[1], strict=True))
        ):
            return cached[2], cached[3]
        reset = starts[0, None, :, None]  # [1, B, 1]: a start at step 0 zeroes the state
        hx = tuple(s.transpose(0, 1).masked_fill(reset, 0.0).contiguous() for s in state)  # [L, B, H]
        inner_starts = bool(starts[1:].any())
        if all(_may_keep(t) and not t.requires_grad for t in key):
            self._cached_start = (key, tuple(t._version for t in key), hx, inner_starts)
        return hx, inner_starts

    def _weights(self, layer: int) -> list[Tensor]:
        """``[w_ih, w_hh, b_ih, b_hh]`` of ``layer`` (a dict lookup: ``getattr`` on a
        module costs a microsecond each, and acting asks for them every step)."""
        params = self.rnn._parameters
        return [params[name] for name in self._weight_names[layer]]

    def _step(self, x: Tensor, state: tuple[Tensor, ...]) -> tuple[Tensor, ...]:
        """One step (acting, or pieces of length 1) as torch's cell ops, layer by layer:
        at ``T = 1`` the fused layer's fixed cost is about 3x the cell's.

        ``x [B, D]``, state ``[B, L, H]`` each (already reset) -> ``(y [1, B, H], *state)``.
        """
        layers = self.config.num_layers
        finals: list[list[Tensor]] = [[] for _ in state]
        for layer in range(layers):
            weights = self._weights(layer)
            if self.kind == "lstm":
                x, c = torch.lstm_cell(x, (state[0][:, layer], state[1][:, layer]), *weights)
                finals[1].append(c)
            else:
                x = torch.gru_cell(x, state[0][:, layer], *weights)
            finals[0].append(x)
        return (x.unsqueeze(0), *_stack_layers(finals))

    def _run_with_resets(self, x: Tensor, starts: Tensor, hx: tuple[Tensor, ...]) -> tuple[Tensor, ...]:
        """Through the fused kernel with reset and hold steps (see the module docstring).

        ``hx`` is in torch's ``[L, B, H]`` layout, already reset for starts at step 0.
        """
        steps, batch = starts.shape
        layout = self._layout(starts)
        inputs = self._first_input(x, layout)  # [length, B, D + 2]
        finals: list[list[Tensor]] = [[] for _ in hx]
        for layer in range(self.config.num_layers):
            w_ih, w_hh, b_ih, b_hh = self._weights(layer)
            weights = [torch.cat([w_ih, self._extra_columns(b_ih)], dim=1), w_hh, b_ih, b_hh]
            if layer > 0:
                inputs = torch.cat([inputs, layout.channels.to(x.dtype)], dim=-1)
            if self.kind == "lstm":
                state_in = (hx[0][layer : layer + 1], hx[1][layer : layer + 1])
                inputs, _, c_n = torch.lstm(
                    inputs, state_in, weights, True, 1, 0.0, self.training, False, False
                )
                finals[1].append(c_n[0])  # held exactly since the last real step
            else:
                inputs, _ = torch.gru(
                    inputs, hx[0][layer : layer + 1], weights, True, 1, 0.0, self.training, False, False
                )
            flat = inputs.reshape(layout.length * batch, -1)  # [length * B, H]
            finals[0].append(flat.index_select(0, layout.last))  # h at the last real step
        y = flat.index_select(0, layout.real).view(steps, batch, -1)
        return (y, *_stack_layers(finals))

    def _first_input(self, x: Tensor, layout: _ResetLayout) -> Tensor:
        """The first layer's input, ``[length, B, D + 2]``: ``x [T, B, D]`` at its real
        steps, zeros at the reset and hold steps, then the two channels.

        Kept while the same unchanged ``x`` comes back with the same layout and needs
        no gradient (a caller that passes the same input again pays for this once).
        "Unchanged" is
        torch's version counter, which in-place writes torch does not see (into a
        NumPy array that shares the memory, or through ``.data``) leave as it was;
        this cache and the layout's are for tensors changed through torch only.
        """
        cached = self._cached_input
        if (
            cached is not None
            and cached[0] is x
            and cached[1] == x._version
            and cached[2] is layout
            and not x.requires_grad
        ):
            return cached[3]
        steps, batch, width = x.shape
        placed = x.new_zeros(layout.length * batch, width).index_copy(
            0, layout.real, x.reshape(steps * batch, width)
        )
        inputs = torch.cat([placed.view(layout.length, batch, width), layout.channels.to(x.dtype)], dim=-1)
        if not x.requires_grad and _may_keep(x):
            self._cached_input = (x, x._version, layout, inputs)
        return inputs

    def _layout(self, starts: Tensor) -> _ResetLayout:
        """Where the real, reset and hold steps go for ``starts [T, B]``.

        The last layout is kept while the same, unchanged ``starts`` tensor comes back,
        so a caller that passes the same starts again pays for this once.
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
        positions = torch.arange(length, device=starts.device)[:, None]
        channels = torch.stack([positions <= last, positions > last], dim=-1)  # [length, B, 2]
        channels[where, arange_b.expand(steps, batch)] = False
        # Rows of the extended sequence flattened to [length * B]: row = step * B + copy.
        layout = _ResetLayout(
            real=(where * batch + arange_b).reshape(-1),
            last=last * batch + arange_b,
            channels=channels.float(),
            length=length,
        )
        if _may_keep(starts):
            self._cached_layout = (starts, starts._version, layout)
        return layout

    def _extra_columns(self, b_ih: Tensor) -> Tensor:
        """``[G * H, 2]`` input weights of the reset and hold channels (gate order as torch's).

        The LSTM's are constants, kept after the first call; the GRU's cancel ``b_ih``.
        """
        cached = self._lstm_columns
        if cached is not None and cached.dtype == b_ih.dtype and cached.device == b_ih.device:
            return cached
        hidden = self.config.hidden_size
        big = b_ih.new_full((hidden,), _SATURATE)
        zero = b_ih.new_zeros(hidden)
        if self.kind == "lstm":  # gates i, f, g, o: reset i = f = 0; hold i = 0, f = 1
            reset = torch.cat([-big, -big, zero, zero])
            hold = torch.cat([-big, big, zero, zero])
            self._lstm_columns = torch.stack([reset, hold], dim=1)
            return self._lstm_columns
        # gates r, z, n: reset r = z = 0 and n's input bias cancelled (n = 0); hold z = 1
        reset = torch.cat([-big, -big, -b_ih[2 * hidden :]])
        hold = torch.cat([zero, big, zero])
        return torch.stack([reset, hold], dim=1)


_WEIGHT_NAMES = ("weight_ih", "weight_hh", "bias_ih", "bias_hh")


def _stack_layers(finals: list[list[Tensor]]) -> tuple[Tensor, ...]:
    """Each state tensor's per-layer ``[B, H]`` parts as ``[B, L, H]``: a view when
    there is one layer, where a stack would copy."""
    if len(finals[0]) == 1:
        return tuple(f[0].unsqueeze(1) for f in finals)
    return tuple(torch.stack(f, dim=1) for f in finals)


def _may_keep(key: Tensor) -> bool:
    """Whether what was derived from ``key`` may be kept for a later call: not under
    inference mode (its results cannot enter a later backward pass), and ``key``
    has a version counter to detect in-place changes (inference tensors have none)."""
    return not key.is_inference() and not torch.is_inference_mode_enabled()


class _ResetLayout(NamedTuple):
    """The extended sequence of :meth:`RecurrentMemory._run_with_resets` for one ``starts``."""

    real: Tensor  # [T * B] row of each real step (t, b) in the extended sequence
    last: Tensor  # [B] row of each copy's last real step
    channels: Tensor  # [length, B, 2] float32 0/1: the reset and hold channels
    length: int  # T + the most starts of any copy
