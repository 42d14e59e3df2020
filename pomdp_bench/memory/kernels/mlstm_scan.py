"""xLSTM's matrix-memory cell (mLSTM; Beck et al., "xLSTM: Extended Long Short-Term
Memory", NeurIPS 2024), chunkwise parallel, with the paper's stabiliser.

Per head, with keys, queries and values of width ``d``::

    C[t] = f[t] C[t-1] + i[t] v[t] k[t]ᵀ       # [d, d] matrix memory
    n[t] = f[t] n[t-1] + i[t] k[t]             # [d] normaliser
    h[t] = C[t] q[t] / max(|n[t]ᵀ q[t]|, 1)

with an exponential input gate ``i = exp(ĩ)`` and a sigmoid forget gate
``log f = logσ(f̃)``. ``exp`` overflows, so the paper carries a stabiliser ``m`` and the
scaled states ``C̄ = C e^(-m)``, ``n̄ = n e^(-m)``::

    m[t] = max(log f[t] + m[t-1], ĩ[t])
    C̄[t] = e^(log f[t] + m[t-1] - m[t]) C̄[t-1] + e^(ĩ[t] - m[t]) v[t] k[t]ᵀ   (n̄ alike)
    h[t] = C̄[t] q[t] / max(|n̄[t]ᵀ q[t]|, e^(-m[t]))

Every exponent is <= 0. ``h`` does not depend on the value of ``m``, only on the pair
it scales, so ``m`` is held without gradient: treating it as a constant gives the
exact gradient of ``h`` and of the states.

**Episode starts.** A start zeroes ``C̄``, ``n̄`` and ``m`` before the step is read,
so the zero state is a fresh episode. ``m = 0`` after a reset keeps the step
recurrence above unchanged, and the chunkwise form reproduces it exactly.

**Chunkwise form.** Unrolled over a chunk from its incoming state
``(C̄₀, n̄₀, m₀)``, with ``F[t]`` the sum of ``log f`` over the chunk up to ``t``::

    m[t] = max(m₀ + F[t], max_{s <= t} F[t] - F[s] + ĩ[s])
    C̄[t] = e^(m₀ + F[t] - m[t]) C̄₀ + Σ_{s <= t} e^(F[t] - F[s] + ĩ[s] - m[t]) v[s] k[s]ᵀ

so the outputs of a chunk of ``L`` steps are an ``[L, L]`` attention with decay
weights, plus the incoming state read through ``q``. Inside a chunk a start cuts
pairs ``(t, s)`` across it and the incoming state for the steps after it, and
``m₀`` becomes 0 with ``F`` counted from the start. Chunks run one after another
(``T / L`` Python steps); :func:`mlstm_sequential` is the plain loop it is tested
against, values and gradients.
"""

from __future__ import annotations

import torch
from torch import Tensor

MLSTMState = tuple[Tensor, Tensor, Tensor]  # C̄ [B, N, d, d], n̄ [B, N, d], m [B, N]


def mlstm_chunkwise(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    i_pre: Tensor,
    log_f: Tensor,
    starts: Tensor,
    state: MLSTMState,
    chunk_size: int,
) -> tuple[Tensor, MLSTMState]:
    """Every output of the stabilised mLSTM, chunk by chunk.

    Args:
        q, k, v: ``[T, B, N, d]`` queries, keys (already scaled by ``1/√d``) and values
            of ``N`` heads.
        i_pre: ``[T, B, N]`` input gate pre-activations ``ĩ``.
        log_f: ``[T, B, N]`` log forget gates (<= 0).
        starts: ``[T, B]`` bool, step ``t`` begins an episode.
        state: ``(C̄ [B, N, d, d], n̄ [B, N, d], m [B, N])`` before step 0; ``C̄`` holds
            ``v kᵀ`` (values first).
        chunk_size: steps per chunk.

    Returns:
        ``h [T, B, N, d]`` and the state after step ``T - 1``.
    """
    outputs = []
    for a in range(0, q.shape[0], chunk_size):
        b = a + chunk_size
        h, state = _chunk(q[a:b], k[a:b], v[a:b], i_pre[a:b], log_f[a:b], starts[a:b], state)
        outputs.append(h)
    return torch.cat(outputs), state


def _chunk(
    q: Tensor, k: Tensor, v: Tensor, i_pre: Tensor, log_f: Tensor, starts: Tensor, state: MLSTMState
) -> tuple[Tensor, MLSTMState]:
    """One chunk of the module docstring's chunkwise form."""
    c0, n0, m0 = state
    steps = q.shape[0]
    q, k, v = (t.permute(1, 2, 0, 3) for t in (q, k, v))  # [B, N, L, d]
    i_pre, log_f = i_pre.permute(1, 2, 0), log_f.permute(1, 2, 0)  # [B, N, L]
    st = starts.t()  # [B, L]
    index = torch.arange(steps, device=q.device)
    segment = st.long().cumsum(-1)  # [B, L]: starts so far in the chunk
    carried = (segment == 0).unsqueeze(1)  # [B, 1, L]: the step still sees the incoming state
    cum = log_f.cumsum(-1)  # F [B, N, L]
    # Σ log f from the step's segment start: its episode's start, or the chunk's first step.
    last_start = torch.where(st, index, 0).cummax(-1).values  # [B, L]
    before = (cum - log_f).gather(-1, last_start.unsqueeze(1).expand_as(cum))
    base = cum - before + torch.where(carried, m0.unsqueeze(-1), 0.0)  # [B, N, L]
    pairs = (segment.unsqueeze(-1) == segment.unsqueeze(-2)) & (index[:, None] >= index[None, :])
    log_d = cum.unsqueeze(-1) - cum.unsqueeze(-2) + i_pre.unsqueeze(-2)  # [B, N, L(t), L(s)]
    log_d = log_d.masked_fill(~pairs.unsqueeze(1), float("-inf"))
    m = torch.maximum(base, log_d.amax(-1)).detach()  # [B, N, L]
    decay = torch.exp(log_d - m.unsqueeze(-1))  # [B, N, L, L], 0 across a start
    incoming = torch.where(carried, torch.exp(base - m), 0.0)  # [B, N, L]
    weights = decay * (q @ k.transpose(-1, -2))  # [B, N, L, L]
    num = weights @ v + incoming.unsqueeze(-1) * (q @ c0.transpose(-1, -2))  # [B, N, L, d]
    den = weights.sum(-1) + incoming * (q @ n0.unsqueeze(-1)).squeeze(-1)  # [B, N, L]
    h = num / torch.maximum(den.abs(), torch.exp(-m)).unsqueeze(-1)
    last = decay[..., -1, :]  # [B, N, L]: each step's weight in the final state
    c = incoming[..., -1, None, None] * c0 + (v * last.unsqueeze(-1)).transpose(-1, -2) @ k
    n = incoming[..., -1, None] * n0 + (k * last.unsqueeze(-1)).sum(-2)
    return h.permute(2, 0, 1, 3), (c, n, m[..., -1])


def mlstm_sequential(
    q: Tensor, k: Tensor, v: Tensor, i_pre: Tensor, log_f: Tensor, starts: Tensor, state: MLSTMState
) -> tuple[Tensor, MLSTMState]:
    """:func:`mlstm_chunkwise` one step at a time, the paper's stabilised recurrence as
    written: the reference."""
    c, n, m = state
    outputs = []
    for t in range(q.shape[0]):
        keep = (~starts[t]).to(q.dtype)[:, None]  # [B, 1]
        c, n, m = c * keep[..., None, None], n * keep[..., None], m * keep
        m_new = torch.maximum(log_f[t] + m, i_pre[t]).detach()
        forget = torch.exp(log_f[t] + m - m_new)  # [B, N]
        write = torch.exp(i_pre[t] - m_new)
        c = forget[..., None, None] * c + write[..., None, None] * (v[t].unsqueeze(-1) * k[t].unsqueeze(-2))
        n = forget[..., None] * n + write[..., None] * k[t]
        num = (c @ q[t].unsqueeze(-1)).squeeze(-1)  # [B, N, d]
        den = (n * q[t]).sum(-1)  # [B, N]
        outputs.append(num / torch.maximum(den.abs(), torch.exp(-m_new)).unsqueeze(-1))
        m = m_new
    return torch.stack(outputs), (c, n, m)
