"""The fast path of ``gru`` and ``lstm``: episode resets inside one fused RNN call.

:mod:`pomdp_bench.memory.kernels.rnn_reference` says what is computed (a masked loop, one
step at a time); this module computes the same numbers, values and gradients
(``tests/test_memory.py``), fast.

A fused RNN cannot reset one copy mid-sequence, and the usual ways around that are
slow on a CPU: a cell loop under autograd costs about 4.5x the fused layer (T=32,
B=8, H=64), and packed sequences leave the fused kernel for a per-step path whose
backward allocates the whole sequence at every step (about 12x here).

So a batch with starts inside it still runs the fused kernel, once per layer, on a
slightly longer sequence built from two kinds of extra step, driven by two extra
input channels whose weights saturate the gates (±``SATURATE``):

* a **reset step** before each episode start: the input and forget gates (LSTM) or
  the reset and update gates with the candidate (GRU) are pinned to 0, so the step
  outputs a state of exactly zero, and passes back a gradient of exactly zero,
  whatever came before it;
* **hold steps** at the end of copies with fewer starts than the most, so all copies
  end together: the forget gate (LSTM) or update gate (GRU) is pinned to 1, which
  keeps the cell (LSTM) or hidden state (GRU) exactly. The final ``h`` is read from
  the output at the copy's last real step.

A copy with ``k`` starts is ``k`` steps longer, so with a few starts the cost stays
close to the whole-sequence cost (see ``benchmarks/test_bench_memory.py``), on any
device with a fused RNN kernel.

Caches. A caller may pass the same tensors again (the same minibatch scored in
several epochs, say). :class:`FusedResets` keeps what it derived from the last
``starts`` (the layout), the last input (the first layer's extended input) and the
last starting state, and reuses them while the *same, unchanged* tensors come back
(identity, and torch's version counter for "unchanged"), none needing a gradient.
In-place writes torch does not see (into a NumPy array sharing the memory, or
through ``.data``) leave the version as it was: these caches are for tensors changed
through torch only.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor

# Far beyond any pre-activation the weights and inputs produce, so a sigmoid of
# ±SATURATE is exactly 0 or 1 in float32, bfloat16 and float16 alike.
SATURATE = 1e4


class ResetLayout(NamedTuple):
    """The extended sequence of :meth:`FusedResets.run` for one ``starts``."""

    real: Tensor  # [T * B] row of each real step (t, b) in the extended sequence
    last: Tensor  # [B] row of each copy's last real step
    channels: Tensor  # [length, B, 2] float32 0/1: the reset and hold channels
    length: int  # T + the most starts of any copy


class FusedResets:
    """Runs a stacked GRU or LSTM's weights through ``torch.gru`` / ``torch.lstm`` over
    sequences with episode starts, keeping the caches described in the module docstring.

    Args:
        kind: ``"gru"`` or ``"lstm"``.
        hidden_size: ``H``.
        num_layers: ``L``.
    """

    def __init__(self, kind: str, hidden_size: int, num_layers: int) -> None:
        self.kind, self.hidden_size, self.num_layers = kind, hidden_size, num_layers
        # (starts, its version, layout) of the last layout
        self._cached_layout: tuple[Tensor, int, ResetLayout] | None = None
        self._lstm_columns: Tensor | None = None  # see _extra_columns
        self._cached_input: tuple[Tensor, int, ResetLayout, Tensor] | None = None  # see _first_input
        # (starts and state, their versions, hx, inner starts) of the last sequence_start
        self._cached_start: tuple[tuple[Tensor, ...], tuple[int, ...], tuple[Tensor, ...], bool] | None = None

    def sequence_start(self, starts: Tensor, state: tuple[Tensor, ...]) -> tuple[tuple[Tensor, ...], bool]:
        """The state before a sequence, in torch's ``[L, B, H]`` layout and zeroed where
        step 0 starts an episode, and whether any copy starts one after step 0.

        ``starts [T, B]``, ``state`` batch-first ``[B, L, H]`` each. Kept while the same
        unchanged ``starts`` and state tensors come back, none needing a gradient.
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

    def run(
        self,
        x: Tensor,
        starts: Tensor,
        hx: tuple[Tensor, ...],
        weights: list[list[Tensor]],
        training: bool,
    ) -> tuple[Tensor, ...]:
        """Through the fused kernel with reset and hold steps.

        Args:
            x: ``[T, B, D]``.
            starts: ``[T, B]`` bool.
            hx: torch's ``[L, B, H]`` layout, already reset for starts at step 0.
            weights: per layer ``[w_ih, w_hh, b_ih, b_hh]``, as ``nn.GRU`` / ``nn.LSTM``.
            training: the module's training flag (torch's kernels take it).

        Returns:
            ``(y [T, B, H], *state)`` with the state batch-first, ``[B, L, H]`` each.
        """
        steps, batch = starts.shape
        layout = self._layout(starts)
        inputs = self._first_input(x, layout)  # [length, B, D + 2]
        finals: list[list[Tensor]] = [[] for _ in hx]
        for layer in range(self.num_layers):
            w_ih, w_hh, b_ih, b_hh = weights[layer]
            layer_weights = [torch.cat([w_ih, self._extra_columns(b_ih)], dim=1), w_hh, b_ih, b_hh]
            if layer > 0:
                inputs = torch.cat([inputs, layout.channels.to(x.dtype)], dim=-1)
            if self.kind == "lstm":
                state_in = (hx[0][layer : layer + 1], hx[1][layer : layer + 1])
                inputs, _, c_n = torch.lstm(
                    inputs, state_in, layer_weights, True, 1, 0.0, training, False, False
                )
                finals[1].append(c_n[0])  # held exactly since the last real step
            else:
                inputs, _ = torch.gru(
                    inputs, hx[0][layer : layer + 1], layer_weights, True, 1, 0.0, training, False, False
                )
            flat = inputs.reshape(layout.length * batch, -1)  # [length * B, H]
            finals[0].append(flat.index_select(0, layout.last))  # h at the last real step
        y = flat.index_select(0, layout.real).view(steps, batch, -1)
        return (y, *stack_layers(finals))

    def _first_input(self, x: Tensor, layout: ResetLayout) -> Tensor:
        """The first layer's input, ``[length, B, D + 2]``: ``x [T, B, D]`` at its real
        steps, zeros at the reset and hold steps, then the two channels. Kept while the
        same unchanged ``x`` comes back with the same layout and needs no gradient."""
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

    def _layout(self, starts: Tensor) -> ResetLayout:
        """Where the real, reset and hold steps go for ``starts [T, B]``; the last layout
        is kept while the same, unchanged ``starts`` tensor comes back."""
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
        layout = ResetLayout(
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
        hidden = self.hidden_size
        big = b_ih.new_full((hidden,), SATURATE)
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


def stack_layers(finals: list[list[Tensor]]) -> tuple[Tensor, ...]:
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
