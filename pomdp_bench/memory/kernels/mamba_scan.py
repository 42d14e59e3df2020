"""Mamba's selective scan, run as a chunked parallel scan with a hand-written backward.

The recurrence, per copy ``b``, channel ``e`` and state index ``n``::

    a[t] = keep[t] * exp(Δ[t, e] * A[e, n])          # decay; keep = 0 at an episode start
    h[t] = a[t] * h[t-1] + Δ[t, e] * u[t, e] * B[t, n]
    y[t, e] = Σ_n C[t, n] * h[t, n, e]

Stepped in Python under autograd this records several nodes per step over
``[B, N, E]`` tensors, and written as whole-sequence tensor operations it
allocates a dozen ``[T, B, N, E]`` temporaries; on a CPU both are slow.
:func:`selective_scan` instead runs a two-level chunked scan on slabs that stay
in cache:

1. cut the ``T`` steps into ``n ≈ √T`` chunks of ``C ≈ √T`` steps and scan every chunk
   from a zero state at once (``C`` vectorised steps over all chunks), keeping the
   product of the decays of each chunk;
2. carry the state across chunk boundaries (``n`` small steps);
3. scan every chunk again from its true incoming state, writing ``y``.

That is about ``3√T`` vectorised steps instead of ``T``, and exact: no logarithms,
so no cancellation or overflow whatever the decay. The backward pass is the same
scan run backwards on the adjoint ``g[t] = C[t] ⊗ dy[t] + a[t+1] * g[t+1]``, and
the gradients of Δ, A, B, C and u are small reductions per step.

States are laid out ``[..., N, E]`` (state index before channel) because the
reductions over ``N`` then run as fast batched matrix products.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor


def selective_scan(
    delta: Tensor, a: Tensor, b: Tensor, c: Tensor, u: Tensor, keep: Tensor, h0: Tensor
) -> tuple[Tensor, Tensor]:
    """Run the selective recurrence over a sequence.

    Args:
        delta: ``[T, B, E]`` step sizes Δ (positive).
        a: ``[E, N]`` the continuous decay rates A, negative.
        b: ``[T, B, N]`` input projections B.
        c: ``[T, B, N]`` output projections C.
        u: ``[T, B, E]`` inputs.
        keep: ``[T, B]`` 1, or 0 to zero the state before step ``t`` (an episode start).
        h0: ``[B, N, E]`` the state before step 0.

    Returns:
        ``y [T, B, E]`` and the state after the last step, ``[B, N, E]``. Differentiable
        in everything but ``keep``. A single step takes the plain one-step recurrence.
    """
    if delta.shape[0] == 1:  # acting: the one-step recurrence
        return selective_scan_sequential(delta, a, b, c, u, keep, h0)
    return _SelectiveScan.apply(delta, a, b, c, u, keep, h0)


def selective_scan_sequential(
    delta: Tensor, a: Tensor, b: Tensor, c: Tensor, u: Tensor, keep: Tensor, h0: Tensor
) -> tuple[Tensor, Tensor]:
    """:func:`selective_scan` one Python step at a time under autograd.

    The acting path (``T = 1``), and the reference the parallel scan is tested and
    benchmarked against.
    """
    a_t = a.t()  # [N, E]
    h, ys = h0, []
    for t in range(delta.shape[0]):
        decay = torch.exp(delta[t].unsqueeze(1) * a_t) * keep[t, :, None, None]  # [B, N, E]
        h = decay * h + b[t].unsqueeze(2) * (delta[t] * u[t]).unsqueeze(1)
        ys.append((c[t].unsqueeze(1) @ h).squeeze(1))  # [B, E]
    return torch.stack(ys), h


def _chunking(steps: int) -> tuple[int, int]:
    """``(chunk length C, number of chunks n)`` with ``n * C >= steps``, both about √T."""
    size = max(1, math.isqrt(steps - 1) + 1)
    return size, -(-steps // size)


def _to_slabs(x: Tensor, size: int, chunks: int, fill: float = 0.0) -> Tensor:
    """``[T, B, X]`` -> ``[C, n * B, X]``: slab ``i`` holds step ``i`` of every chunk."""
    steps, batch = x.shape[:2]
    x = F.pad(x, (0, 0, 0, 0, 0, chunks * size - steps), value=fill)
    return x.view(chunks, size, batch, -1).transpose(0, 1).reshape(size, chunks * batch, -1)


def _from_slabs(x: Tensor, steps: int, batch: int) -> Tensor:
    """``[C, n * B, X]`` -> ``[T, B, X]``, the inverse of :func:`_to_slabs`."""
    size = x.shape[0]
    x = x.view(size, -1, batch, x.shape[-1]).transpose(0, 1)
    return x.reshape(-1, batch, x.shape[-1])[:steps]


class _Decay:
    """The decays ``exp(Δ A)`` of one slab at a time, ``[R, N, E]``, into a reused buffer.

    Recomputing them per slab (in cache) is cheaper on a CPU than storing all
    ``[T, B, N, E]`` of them, whose first touch alone costs more than the ``exp``.
    """

    def __init__(self, d_inf: Tensor, a_t: Tensor) -> None:
        self.d_inf, self.a_t = d_inf, a_t
        self.buffer = d_inf.new_empty((d_inf.shape[1], *a_t.shape))

    def __call__(self, i: int) -> Tensor:
        return torch.mul(self.d_inf[i].unsqueeze(1), self.a_t, out=self.buffer).exp_()


class _SelectiveScan(torch.autograd.Function):
    @staticmethod
    def forward(  # type: ignore[override]
        ctx, delta: Tensor, a: Tensor, b: Tensor, c: Tensor, u: Tensor, keep: Tensor, h0: Tensor
    ) -> tuple[Tensor, Tensor]:
        steps, batch, _ = delta.shape
        size, chunks = _chunking(steps)
        a_t = a.t().contiguous()  # [N, E]
        # Padding steps hold the state: Δ = 0 gives decay 1 and no input.
        d = _to_slabs(delta, size, chunks)  # [C, R, E], R = chunks * batch
        du = _to_slabs(delta * u, size, chunks)
        bs = _to_slabs(b, size, chunks).unsqueeze(-1)  # [C, R, N, 1]
        cs = _to_slabs(c, size, chunks).unsqueeze(-2)  # [C, R, 1, N]
        start = _to_slabs(keep.unsqueeze(-1), size, chunks, fill=1.0) == 0  # [C, R, 1]
        d_inf = d.masked_fill(start, math.inf)  # Δ = inf at a start: the decay is exactly 0
        decay = _Decay(d_inf, a_t)

        # 1. Every chunk from zero, all chunks at once; and each chunk's total decay.
        local = bs[0] * du[0].unsqueeze(1)  # [R, N, E]
        total = decay(0).clone()
        for i in range(1, size):
            a_i = decay(i)
            local.mul_(a_i).addcmul_(bs[i], du[i].unsqueeze(1))
            total.mul_(a_i)
        # 2. The state entering each chunk.
        local = local.view(chunks, batch, *local.shape[1:])
        total = total.view_as(local)
        incoming = torch.empty_like(local)
        carry = h0
        for j in range(chunks):
            incoming[j] = carry
            carry = torch.addcmul(local[j], total[j], carry)
        # 3. Every chunk again from its incoming state, writing y (and keeping the states
        # for the backward pass when there will be one).
        keep_states = any(ctx.needs_input_grad)
        h = incoming.view(-1, *incoming.shape[2:]).clone()
        states = h.new_empty((size, *h.shape)) if keep_states else None
        y = d.new_empty(d.shape)
        for i in range(size):
            if states is not None:
                h = torch.mul(decay(i), h, out=states[i])
            else:
                h.mul_(decay(i))
            h.addcmul_(bs[i], du[i].unsqueeze(1))
            y[i] = (cs[i] @ h).squeeze(1)
        if keep_states:
            ctx.save_for_backward(a_t, d, d_inf, du, bs, cs, states, incoming, total, delta, u)
        return _from_slabs(y, steps, batch), carry

    @staticmethod
    def backward(ctx, d_y: Tensor, d_last: Tensor) -> tuple[Tensor | None, ...]:  # type: ignore[override]
        a_t, d, d_inf, du, bs, cs, states, incoming, total, delta, u = ctx.saved_tensors
        decay = _Decay(d_inf, a_t)
        steps, batch, _ = delta.shape
        size, chunks = d.shape[0], incoming.shape[0]
        gy = _to_slabs(d_y, size, chunks).unsqueeze(-2)  # [C, R, 1, E]
        # The adjoint g[t] = dL/dh[t] obeys g[t] = C[t] ⊗ dy[t] + a[t+1] g[t+1]: the same
        # scan, backwards. q is the part a[t+1] g[t+1] arriving from later steps.
        # 1. Every chunk from a zero adjoint at its end.
        q = torch.zeros_like(states[0])
        for i in range(size - 1, -1, -1):
            q = decay(i) * torch.addcmul(q, cs[i].transpose(-1, -2), gy[i])
        # 2. The adjoint arriving at each chunk's end; what leaves chunk 0 is dL/dh0.
        q = q.view_as(incoming)
        arriving = torch.empty_like(incoming)
        carry = d_last
        for j in range(chunks - 1, -1, -1):
            arriving[j] = carry
            carry = torch.addcmul(q[j], total[j], carry)
        d_h0 = carry
        # 3. Every chunk again from its true arriving adjoint, with the per-step gradients.
        d_c = d.new_empty(size, d.shape[1], cs.shape[-1])  # [C, R, N]
        d_b = torch.empty_like(d_c)
        d_du = torch.empty_like(du)  # [C, R, E] gradient of Δu
        d_da = torch.empty_like(du)  # [C, R, E] gradient of Δ through the decay
        d_a_acc = torch.zeros_like(states[0])  # Σ over steps of dL/d(ΔA) * Δ
        q = arriving.view_as(states[0]).clone()
        scratch, scratch_e = torch.empty_like(q), torch.empty_like(q)
        flat_in = incoming.view_as(q)
        for i in range(size - 1, -1, -1):
            a_i = decay(i)
            g = torch.addcmul(q, cs[i].transpose(-1, -2), gy[i])  # [R, N, E]
            # Reductions over E as multiply-and-sum, over N as batched products (faster).
            torch.sum(torch.mul(states[i], gy[i], out=scratch_e), -1, out=d_c[i])
            torch.sum(torch.mul(g, du[i].unsqueeze(1), out=scratch_e), -1, out=d_b[i])
            d_du[i] = (bs[i].transpose(-1, -2) @ g).squeeze(1)
            # dL/d(Δ A) = g * h[t-1] * a[t]; zero at a start, where a[t] = 0.
            torch.mul(g, states[i - 1] if i > 0 else flat_in, out=scratch).mul_(a_i)
            d_a_acc.addcmul_(scratch, d[i].unsqueeze(1))
            torch.sum(scratch.mul_(a_t), 1, out=d_da[i])
            torch.mul(a_i, g, out=q)
        d_du_t = _from_slabs(d_du, steps, batch)
        d_delta = _from_slabs(d_da, steps, batch) + d_du_t * u
        d_a = d_a_acc.sum(0).t()
        d_b_t = _from_slabs(d_b, steps, batch)
        d_c_t = _from_slabs(d_c, steps, batch)
        return d_delta, d_a, d_b_t, d_c_t, d_du_t * delta, None, d_h0
