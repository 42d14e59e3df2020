"""A fast path of ``gru`` on a CPU (``kernel: cpp``): the masked GRU loop in C++.

torch runs ``nn.LSTM`` on a CPU as oneDNN's fused layer, but ``nn.GRU`` as about 25
small operators a step, each with its dispatch cost; so gru trained several times
slower than lstm although it has fewer gates (``studies/gru_paths.py``). This module
computes what :func:`~pomdp_bench.memory.kernels.rnn_reference.masked_loop` computes
for a GRU layer, values and gradients (``tests/test_gru_cpp.py``):

- the input projection of all steps, and the three weight gradients, as single
  matrix products (``torch.addmm``, ``torch.mm``);
- per step, one matrix product with the recurrent weights, torch's vectorised sigmoid
  and tanh, and C++ loops for the rest of the gates (forward) and for their gradients
  (backward), in float32.

The C++ is built on first use with torch's ``cpp_extension`` (the system's C++
compiler and ``ninja``; about a minute once, then read from torch's extension cache).
Where it cannot be built, :func:`load` says why and gru runs its usual path
(``rnn.py``), with one warning.

The loops are plain C++ compiled without ``-march``: they take the same path on any
x86-64 CPU. The matrix products, sigmoid and tanh are torch's, under the kernel setting.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from pomdp_bench.memory.kernels.cpp_build import InlineExtension

_SOURCE = r"""
#include <torch/extension.h>
#include <cmath>
#include <vector>
using torch::Tensor;

// gi [T, B, 3H] = x W_ih^T + b_ih; h0 [B, H]; keep [T, B] (0 where an episode starts);
// w_hh [3H, H]; b_hh [3H]. Returns out [T, B, H], the last state [B, H], the state
// entering each step [T, B, H] and the gates r, z, n and W_hn h + b_hn [T, B, 4H].
std::vector<Tensor> gru_forward(Tensor gi, Tensor h0, Tensor keep, Tensor w_hh, Tensor b_hh) {
  const int64_t T = gi.size(0), B = gi.size(1), H = h0.size(1);
  auto out = torch::empty({T, B, H}, gi.options());
  auto entering = torch::empty({T, B, H}, gi.options());
  auto gates = torch::empty({T, B, 4 * H}, gi.options());
  auto gh = torch::empty({B, 3 * H}, gi.options());
  auto w_t = w_hh.t();
  Tensor h = h0.contiguous().clone();
  auto pre = torch::empty({B, 3 * H}, gi.options());  // r, z and n before their nonlinearity
  for (int64_t t = 0; t < T; ++t) {
    float* hp = h.data_ptr<float>();
    const float* kp = keep.data_ptr<float>() + t * B;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t j = 0; j < H; ++j) hp[b * H + j] *= kp[b];
    entering[t].copy_(h);
    at::addmm_out(gh, b_hh, h, w_t);
    const float* g = gi.data_ptr<float>() + t * B * 3 * H;
    const float* q = gh.data_ptr<float>();
    float* pp = pre.data_ptr<float>();
    for (int64_t i = 0; i < B * 3 * H; ++i) pp[i] = g[i] + q[i];  // the n part is redone below
    pre.narrow(1, 0, 2 * H).sigmoid_();  // torch's vectorised kernel, under the kernel setting
    for (int64_t b = 0; b < B; ++b)
      for (int64_t j = 0; j < H; ++j)
        pp[b * 3 * H + 2 * H + j] = g[b * 3 * H + 2 * H + j] + pp[b * 3 * H + j] * q[b * 3 * H + 2 * H + j];
    pre.narrow(1, 2 * H, H).tanh_();
    float* s = gates.data_ptr<float>() + t * B * 4 * H;
    float* o = out.data_ptr<float>() + t * B * H;
    for (int64_t b = 0; b < B; ++b) {
      const float* pb = pp + b * 3 * H;
      const float* qb = q + b * 3 * H;
      float* sb = s + b * 4 * H;
      for (int64_t j = 0; j < H; ++j) {
        const float r = pb[j], z = pb[H + j], n = pb[2 * H + j];
        sb[j] = r; sb[H + j] = z; sb[2 * H + j] = n; sb[3 * H + j] = qb[2 * H + j];
        o[b * H + j] = n + z * (hp[b * H + j] - n);
        hp[b * H + j] = o[b * H + j];
      }
    }
  }
  return {out, h, entering, gates};
}

// The gradients of gru_forward's gi [T, B, 3H], of W_hh h + b_hh [T, B, 3H], and of h0.
std::vector<Tensor> gru_backward(Tensor d_out, Tensor d_last, Tensor keep, Tensor w_hh,
                                 Tensor entering, Tensor gates) {
  const int64_t T = d_out.size(0), B = d_out.size(1), H = d_out.size(2);
  auto d_gi = torch::empty({T, B, 3 * H}, d_out.options());
  auto d_gh = torch::empty({T, B, 3 * H}, d_out.options());
  Tensor dh = d_last.contiguous().clone();
  auto direct = torch::empty({B, H}, d_out.options());
  auto back = torch::empty({B, H}, d_out.options());
  for (int64_t t = T - 1; t >= 0; --t) {
    float* dp = dh.data_ptr<float>();
    const float* dop = d_out.data_ptr<float>() + t * B * H;
    const float* s = gates.data_ptr<float>() + t * B * 4 * H;
    const float* ep = entering.data_ptr<float>() + t * B * H;
    float* dgi = d_gi.data_ptr<float>() + t * B * 3 * H;
    float* dgh = d_gh.data_ptr<float>() + t * B * 3 * H;
    float* dir = direct.data_ptr<float>();
    for (int64_t b = 0; b < B; ++b) {
      const float* sb = s + b * 4 * H;
      float* gib = dgi + b * 3 * H;
      float* ghb = dgh + b * 3 * H;
      for (int64_t j = 0; j < H; ++j) {
        const float d = dp[b * H + j] + dop[b * H + j];
        const float r = sb[j], z = sb[H + j], n = sb[2 * H + j], hn = sb[3 * H + j];
        const float dn = d * (1.f - z) * (1.f - n * n);
        const float dr = dn * hn * r * (1.f - r);
        const float dz = d * (ep[b * H + j] - n) * z * (1.f - z);
        gib[j] = dr; gib[H + j] = dz; gib[2 * H + j] = dn;
        ghb[j] = dr; ghb[H + j] = dz; ghb[2 * H + j] = dn * r;
        dir[b * H + j] = d * z;
      }
    }
    at::mm_out(back, d_gh[t], w_hh);
    const float* kp = keep.data_ptr<float>() + t * B;
    const float* bp = back.data_ptr<float>();
    for (int64_t b = 0; b < B; ++b)
      for (int64_t j = 0; j < H; ++j) dp[b * H + j] = (dir[b * H + j] + bp[b * H + j]) * kp[b];
  }
  return {d_gi, d_gh, dh};
}
"""

EXTENSION = InlineExtension("pomdp_bench_gru_cpp", _SOURCE, ["gru_forward", "gru_backward"])


def load() -> Any:
    """The built extension, or ``None`` where it cannot be built (:func:`why_not` says
    why). Builds once per process; torch caches the build across processes."""
    return EXTENSION.load()


def why_not() -> str | None:
    """Why :func:`load` could not build the extension; ``None`` if it could (or has not tried)."""
    return EXTENSION.why_not


def warn_fallback(where: str) -> None:
    """The one warning of a gru whose ``kernel: cpp`` cannot run here."""
    EXTENSION.warn_fallback(where, "fused", "its usual path")


class GRUSequence(torch.autograd.Function):
    """One GRU layer over ``x [T, B, D]`` from ``h0 [B, H]``, its state times ``keep [T, B]``
    before each step; torch's ``nn.GRU`` weights. Returns ``(y [T, B, H], h_T [B, H])``."""

    @staticmethod
    def forward(
        ctx: Any, x: Tensor, h0: Tensor, keep: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor, b_hh: Tensor
    ):
        steps, batch, _ = x.shape
        gi = torch.addmm(b_ih, x.reshape(steps * batch, -1), w_ih.t()).view(steps, batch, -1)  # [T, B, 3H]
        out, last, entering, gates = EXTENSION.module.gru_forward(gi, h0, keep, w_hh.contiguous(), b_hh)
        ctx.save_for_backward(x, keep, w_ih, w_hh, entering, gates)
        return out, last

    @staticmethod
    def backward(ctx: Any, d_out: Tensor, d_last: Tensor):
        x, keep, w_ih, w_hh, entering, gates = ctx.saved_tensors
        steps, batch, _ = x.shape
        d_gi, d_gh, d_h0 = EXTENSION.module.gru_backward(
            d_out.contiguous(), d_last, keep, w_hh.contiguous(), entering, gates
        )
        flat_gi, flat_gh = d_gi.view(steps * batch, -1), d_gh.view(steps * batch, -1)  # [T B, 3H]
        return (
            (flat_gi @ w_ih).view_as(x),
            d_h0,
            None,
            flat_gi.t() @ x.reshape(steps * batch, -1),
            flat_gh.t() @ entering.reshape(steps * batch, -1),
            flat_gi.sum(0),
            flat_gh.sum(0),
        )


def gru_layers(x: Tensor, hx: Tensor, starts: Tensor, weights: list[list[Tensor]]) -> tuple[Tensor, Tensor]:
    """A stacked GRU over ``x [T, B, D]`` from ``hx [B, L, H]``, every layer's state zeroed
    before step ``t`` of copy ``b`` where ``starts[t, b]``; ``weights``: each layer's
    ``[w_ih, w_hh, b_ih, b_hh]``. Returns ``(y [T, B, H], state [B, L, H])``. Call
    :func:`load` first; float32 on a CPU only."""
    keep = (~starts).to(x.dtype).contiguous()  # [T, B]
    finals = []
    for layer, params in enumerate(weights):
        x, last = GRUSequence.apply(x, hx[:, layer].contiguous(), keep, *params)
        finals.append(last)
    return x, torch.stack(finals, dim=1)
