"""The diagonal linear recurrence ``h[t] = a[t] * h[t-1] + b[t]``, run as a parallel scan.

Shared by the linear-recurrent kinds: ``lru`` and ``s5`` (complex decays per state),
``ffm`` (complex decays per trace), ``linear_attention`` (a decay per head on the
running key-value sum), ``mingru`` and ``minlstm`` (a real decay per unit, from the input). Each folds its episode starts into ``a``: ``a[t] = 0`` at a start
zeroes the state before step ``t`` reads it, so one call can span episodes.

The composition ``(a1, b1) ∘ (a2, b2) = (a1 a2, a2 b1 + b2)`` is associative, so
the recurrence is a scan. On a CPU the cheapest exact form is a two-level scan:

1. cut the ``T`` steps into ``n ≈ √T`` chunks of ``C ≈ √T`` steps and scan every
   chunk from a zero state at once (``C`` vectorised steps over all chunks), with
   the running product of the decays inside each chunk (one ``cumprod``);
2. carry the state across the chunk boundaries (``n`` small steps);
3. add each chunk's incoming state, scaled by the running decay product, to its
   local states: one vectorised operation, no third loop.

That is about ``2√T`` vectorised steps instead of ``T``, with no division and no
logarithm, so a zero decay (an episode start) is exact. The backward pass is the
same scan run backwards: the adjoint ``g[t] = dh[t] + conj(a[t+1]) g[t+1]`` gives
``db = g``, ``da = g conj(h[t-1])`` and ``dh0 = conj(a[0]) g[0]`` (PyTorch's complex
gradient convention; real tensors ignore the ``conj``).

:func:`linear_scan_sequential` is the plain loop the scan is tested and
benchmarked against, and the acting path (``T = 1``).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor


def linear_scan(a: Tensor, b: Tensor, h0: Tensor) -> Tensor:
    """Every state of ``h[t] = a[t] * h[t-1] + b[t]``, with ``h[-1] = h0``.

    Args:
        a: ``[T, B, ...]`` decays, broadcastable to ``b`` (a size-1 trailing dimension
            shares one decay); real or complex. Zero at an episode start.
        b: ``[T, B, *S]`` inputs, real or complex.
        h0: ``[B, *S]`` the state before step 0.

    Returns:
        ``h [T, B, *S]``, every state (``h[-1]`` is the state to carry on).
        Differentiable in ``a``, ``b`` and ``h0``. A single step takes the plain
        one-step recurrence.
    """
    if a.shape[0] == 1:
        return linear_scan_sequential(a, b, h0)
    return _LinearScan.apply(a, b, h0)


def linear_scan_sequential(a: Tensor, b: Tensor, h0: Tensor) -> Tensor:
    """:func:`linear_scan` one Python step at a time under autograd: the reference."""
    h, states = h0, []
    for t in range(b.shape[0]):
        h = a[t] * h + b[t]
        states.append(h)
    return torch.stack(states)


def _chunking(steps: int) -> tuple[int, int]:
    """``(chunk length C, number of chunks n)`` with ``n * C >= steps``, both about √T."""
    size = max(1, math.isqrt(steps - 1) + 1)
    return size, -(-steps // size)


def _chunks(x: Tensor, size: int, count: int, fill: float) -> Tensor:
    """``[T, ...]`` -> ``[C, n, ...]``: padded with ``fill`` to ``n * C`` steps; entry
    ``[i, j]`` is step ``i`` of chunk ``j``."""
    pad = count * size - x.shape[0]
    if pad:
        x = F.pad(x.flatten(1), (0, 0, 0, pad), value=fill).view(-1, *x.shape[1:])
    return x.view(count, size, *x.shape[1:]).transpose(0, 1)


def _scan(a: Tensor, b: Tensor, h0: Tensor) -> Tensor:
    """The two-level chunked scan of the module docstring, without autograd."""
    steps = b.shape[0]
    size, count = _chunking(steps)
    # Padding steps hold the state: decay 1, input 0.
    a_c = _chunks(a, size, count, 1.0)  # [C, n, B, ...]
    b_c = _chunks(b, size, count, 0.0)  # [C, n, B, *S]
    # 1. Every chunk from a zero state, all chunks at once.
    local = torch.empty_like(b_c)
    local[0] = b_c[0]
    for i in range(1, size):
        torch.addcmul(b_c[i], a_c[i], local[i - 1], out=local[i])
    decay = torch.cumprod(a_c, dim=0)  # [C, n, B, ...] product of the decays up to step i
    # 2. The state entering each chunk.
    incoming = torch.empty_like(local[0])  # [n, B, *S]
    carry = h0
    for j in range(count):
        incoming[j] = carry
        carry = torch.addcmul(local[-1, j], decay[-1, j], carry)
    # 3. Each state is its chunk's local state plus the incoming state, decayed so far.
    h = local.addcmul_(decay, incoming.unsqueeze(0))
    return h.transpose(0, 1).reshape(-1, *b.shape[1:])[:steps]


def _sum_to(x: Tensor, shape: torch.Size, is_complex: bool) -> Tensor:
    """``x`` summed down to ``shape`` (an input's), real if that input is real."""
    if not is_complex and x.is_complex():
        x = x.real
    return x.sum_to_size(shape)


class _LinearScan(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a: Tensor, b: Tensor, h0: Tensor) -> Tensor:  # type: ignore[override]
        h = _scan(a, b, h0)
        # b itself is not needed backwards (db = g), only its shape and type: not keeping
        # it spares linear_attention's [T, B, heads, d, d + 1] key-value products.
        ctx.b_meta = (b.shape, b.is_complex())
        ctx.save_for_backward(a, h0, h)
        return h

    @staticmethod
    def backward(ctx, d_h: Tensor) -> tuple[Tensor | None, ...]:  # type: ignore[override]
        a, h0, h = ctx.saved_tensors
        # The adjoint runs backwards with the next step's decay: g[t] = dh[t] + conj(a[t+1]) g[t+1].
        a_next = torch.cat([a[1:], torch.zeros_like(a[:1])]).conj()
        g = _scan(a_next.flip(0), d_h.flip(0), torch.zeros_like(d_h[0])).flip(0)  # [T, B, *S]
        h_prev = torch.cat([h0.unsqueeze(0), h[:-1]])
        d_a = _sum_to(g * h_prev.conj(), a.shape, a.is_complex()) if ctx.needs_input_grad[0] else None
        d_b = _sum_to(g, *ctx.b_meta) if ctx.needs_input_grad[1] else None
        d_h0 = _sum_to(a[0].conj() * g[0], h0.shape, h0.is_complex()) if ctx.needs_input_grad[2] else None
        return d_a, d_b, d_h0
