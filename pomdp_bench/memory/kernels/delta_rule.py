"""The chunkwise form of the linear recurrences with a diagonal-plus-rank-one transition,
shared by ``mamba2`` (SSD), ``gated_deltanet`` and ``rwkv7``.

Per head, with a matrix state ``S [dv, dk]`` (values first)::

    S[t] = S[t-1] (diag(w[t]) + a[t] b[t]ᵀ) + v[t] k[t]ᵀ
    o[t] = S[t] q[t]

- Mamba-2's SSD (Dao & Gu 2024): ``w`` a scalar per head (``exp(Δ A)``), no rank-one
  term (``a = b = 0``), ``v = Δ x``, ``k = B``, ``q = C``.
- Gated DeltaNet (Yang et al. 2025): ``S[t] = α S[t-1] (I - β k kᵀ) + β v kᵀ``, so
  ``w = α`` (a scalar per head), ``a = k``, ``b = -α β k`` and the value written is
  ``β v``; DeltaNet is ``α = 1``.
- RWKV-7 (Peng et al. 2025): ``w`` a vector per head, ``a = -κ̂``, ``b = κ̂ ⊙ ā``.

**Chunkwise form.** Inside a chunk, with ``Γ[t] = Π_{j <= t} diag(w[j])`` from the
chunk's first step, the state unrolls to ``S[t] = S₀ Γ[t] + Σ_{s <= t} (z[s] b[s]ᵀ +
v[s] k[s]ᵀ) Γ[t] Γ[s]⁻¹`` with ``z[t] = S[t-1] a[t]``. The ``z`` of a chunk solve
one unit lower-triangular system (the WY / UT form of the delta rule's products of
Householder-like factors)::

    (I - M_ab) Z = Ã S₀ᵀ + M_ak V,   M_xy[t, s] = Σ_i x[t, i] y[s, i] Γ[t-1, i] / Γ[s, i]  (s < t)

with ``Ã[t] = a[t] ⊙ Γ[t-1]``; then ``O = Q̃ S₀ᵀ + M_qb Z + M_qk V`` (the same
products with ``Γ[t]`` and ``s <= t``, ``Q̃[t] = q[t] ⊙ Γ[t]``) and the state after
the chunk follows from ``Z`` and ``V``. Chunks run one after another: ``T / L``
Python steps of ``[L, L]`` matrix products and one triangular solve.

**Decays.** ``log_w`` is ``[T, B, H, 1]`` (a scalar per head) or ``[T, B, H, dk]``.
A scalar decay takes the pairwise factors ``exp(F[t] - F[s])`` (``F`` the cumulative
``log w``) as an ``[L, L]`` matrix masked before the ``exp``, exact for any decay.
A vector decay factors them as ``exp(F[t]) · exp(-F[s])``, which is exact too but
needs ``exp(-F)`` finite over a chunk: ``-log w <= c`` per step keeps it below
``exp(c L)``. RWKV-7's decay ``w >= exp(-e^(-1/2))`` gives ``c = 0.61``, so chunks of
up to 64 steps stay below ``e^39`` (float32 holds ``e^88``).

**Episode starts.** A start zeroes ``S`` before the step is read. Inside a chunk it
cuts the pairs ``(t, s)`` across it and the incoming state for the steps after it;
the decay at the start step itself is never used (it would multiply the zeroed
state). :func:`delta_rule_sequential` is the plain loop the chunkwise form is tested
against, values, states and gradients.
"""

from __future__ import annotations

import torch
from torch import Tensor


def delta_rule_chunkwise(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    log_w: Tensor,
    a: Tensor | None,
    b: Tensor | None,
    starts: Tensor,
    state: Tensor,
    chunk_size: int,
) -> tuple[Tensor, Tensor]:
    """Every output of ``S[t] = S[t-1] (diag(w[t]) + a[t] b[t]ᵀ) + v[t] k[t]ᵀ``,
    ``o[t] = S[t] q[t]``, chunk by chunk.

    Args:
        q, k: ``[T, B, H, dk]`` queries and keys.
        v: ``[T, B, H, dv]`` values.
        log_w: ``[T, B, H, 1]`` (a scalar decay per head) or ``[T, B, H, dk]``: ``log w <= 0``.
        a, b: ``[T, B, H, dk]`` the rank-one term, or both None (no rank-one term).
        starts: ``[T, B]`` bool, step ``t`` begins an episode.
        state: ``S [B, H, dv, dk]`` before step 0.
        chunk_size: steps per chunk.

    Returns:
        ``o [T, B, H, dv]`` and the state after step ``T - 1``.
    """
    outputs = []
    for lo in range(0, q.shape[0], chunk_size):
        hi = lo + chunk_size
        ab = None if a is None or b is None else (a[lo:hi], b[lo:hi])
        o, state = _chunk(q[lo:hi], k[lo:hi], v[lo:hi], log_w[lo:hi], ab, starts[lo:hi], state)
        outputs.append(o)
    return torch.cat(outputs), state


def _pairs(x: Tensor, fx: Tensor, y: Tensor, fy: Tensor, mask: Tensor, scalar: bool) -> Tensor:
    """``M[t, s] = Σ_i x[t, i] y[s, i] exp(fx[t, i] - fy[s, i])`` where ``mask``, else 0.

    ``x [B, H, L, d]``, ``fx``/``fy`` ``[B, H, L, 1 or d]``, ``mask [B, 1, L, L]``."""
    if scalar:
        log_d = (fx - fy.transpose(-1, -2)).masked_fill(~mask, float("-inf"))  # [B, H, L, L]
        return (x @ y.transpose(-1, -2)) * torch.exp(log_d)
    return ((x * torch.exp(fx)) @ (y * torch.exp(-fy)).transpose(-1, -2)) * mask


def _chunk(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    log_w: Tensor,
    ab: tuple[Tensor, Tensor] | None,
    starts: Tensor,
    s0: Tensor,
) -> tuple[Tensor, Tensor]:
    """One chunk of the module docstring's chunkwise form."""
    steps = q.shape[0]
    scalar = log_w.shape[-1] == 1
    q, k, v, log_w = (t.permute(1, 2, 0, 3) for t in (q, k, v, log_w))  # [B, H, L, ·]
    st = starts.t()  # [B, L]
    segment = st.long().cumsum(-1)  # [B, L]: starts so far in the chunk
    carried = (segment == 0)[:, None, :, None].to(q.dtype)  # [B, 1, L, 1]: still sees S₀
    index = torch.arange(steps, device=q.device)
    same = (segment.unsqueeze(-1) == segment.unsqueeze(-2)).unsqueeze(1)  # [B, 1, L, L]
    upto = same & (index[:, None] >= index[None, :])  # s <= t
    cum = log_w.cumsum(-2)  # F [B, H, L, 1 or dk]
    prev = cum - log_w  # F[t - 1]
    last = cum[..., -1:, :]  # F[L - 1]
    # The incoming state, read at each step that still sees it.
    o = (q * torch.exp(cum) * carried) @ s0.transpose(-1, -2)  # [B, H, L, dv]
    o = o + _pairs(q, cum, k, cum, upto, scalar) @ v
    # Each step's weight in the state after the chunk: pairs with the chunk's last step.
    in_last = (segment == segment[:, -1:])[:, None, :, None].to(q.dtype)  # [B, 1, L, 1]
    tail = torch.exp(last - cum) * in_last  # [B, H, L, 1 or dk]
    s = s0 * torch.exp(last) * carried[..., -1:, :] + v.transpose(-1, -2) @ (k * tail)
    if ab is not None:
        a, b = (t.permute(1, 2, 0, 3) for t in ab)
        before = same & (index[:, None] > index[None, :])  # s < t
        m_ab = _pairs(a, prev, b, cum, before, scalar)
        rhs = (a * torch.exp(prev) * carried) @ s0.transpose(-1, -2) + _pairs(
            a, prev, k, cum, before, scalar
        ) @ v
        eye = torch.eye(steps, dtype=q.dtype, device=q.device)
        z = torch.linalg.solve_triangular(eye - m_ab, rhs, upper=False, unitriangular=True)  # [B, H, L, dv]
        o = o + _pairs(q, cum, b, cum, upto, scalar) @ z
        s = s + z.transpose(-1, -2) @ (b * tail)
    return o.permute(2, 0, 1, 3), s


def delta_rule_sequential(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    log_w: Tensor,
    a: Tensor | None,
    b: Tensor | None,
    starts: Tensor,
    state: Tensor,
) -> tuple[Tensor, Tensor]:
    """:func:`delta_rule_chunkwise` one step at a time, the recurrence as written: the
    reference, and the acting path (``T = 1``)."""
    s, outputs = state, []
    for t in range(q.shape[0]):
        s = s * (~starts[t]).to(s.dtype)[:, None, None, None]
        new = s * torch.exp(log_w[t]).unsqueeze(-2)  # S diag(w): scales S's key columns
        if a is not None and b is not None:
            new = new + (s @ a[t].unsqueeze(-1)) * b[t].unsqueeze(-2)
        s = new + v[t].unsqueeze(-1) * k[t].unsqueeze(-2)
        outputs.append((s @ q[t].unsqueeze(-1)).squeeze(-1))
    return torch.stack(outputs), s
