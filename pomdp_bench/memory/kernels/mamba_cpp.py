"""A fast path of ``mamba`` on a CPU (``kernel: cpp``): the selective scan in C++.

:func:`~pomdp_bench.memory.kernels.mamba_scan.selective_scan_sequential` says what is
computed; the default path, :func:`~pomdp_bench.memory.kernels.mamba_scan.selective_scan`,
runs it as a chunked scan of whole-tensor operators, a few dozen per step of the chunk
loop. Here the scan is one C++ loop over steps, with per step:

- the decays ``exp(Δ[t] A)`` of the step as one torch operator (vectorised, under the
  kernel setting);
- the state update, the output and, backwards, the adjoint and every gradient, as plain
  C++ loops in float32.

The forward pass keeps every step's state for the backward pass (``T * B * N * E``
floats; 64 MB at ``T = 1000``, 8 pieces, ``N = 16``, ``E = 128``). The C++ is built on
first use with torch's ``cpp_extension``, as gru's C++ path is (:mod:`gru_cpp`); where it
cannot be built, mamba warns once and runs its chunked scan. The loops are compiled
without ``-march``: they take the same path on any x86-64 CPU.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from pomdp_bench.memory.kernels.cpp_build import InlineExtension

_SOURCE = r"""
#include <torch/extension.h>
#include <vector>
using torch::Tensor;

// delta, u [T, B, E]; a_t [N, E] (A transposed, negative); b, c [T, B, N]; keep [T, B];
// h0 [B, N, E]. Returns y [T, B, E], the last state [B, N, E] and, when keep_states, the
// state after every step [T, B, N, E].
std::vector<Tensor> scan_forward(Tensor delta, Tensor a_t, Tensor b, Tensor c, Tensor u, Tensor keep,
                                 Tensor h0, bool keep_states) {
  const int64_t T = delta.size(0), B = delta.size(1), E = delta.size(2), N = a_t.size(0);
  auto y = torch::zeros({T, B, E}, delta.options());
  Tensor h = h0.contiguous().clone();
  auto states = keep_states ? torch::empty({T, B, N, E}, delta.options()) : torch::empty({0}, delta.options());
  auto decay = torch::empty({B, N, E}, delta.options());
  float* hp = h.data_ptr<float>();
  for (int64_t t = 0; t < T; ++t) {
    at::mul_out(decay, delta[t].unsqueeze(1), a_t.unsqueeze(0));
    decay.exp_();  // torch's vectorised exp, under the kernel setting
    const float* dec = decay.data_ptr<float>();
    const float* dp = delta.data_ptr<float>() + t * B * E;
    const float* up = u.data_ptr<float>() + t * B * E;
    const float* bp = b.data_ptr<float>() + t * B * N;
    const float* cp = c.data_ptr<float>() + t * B * N;
    const float* kp = keep.data_ptr<float>() + t * B;
    float* yp = y.data_ptr<float>() + t * B * E;
    for (int64_t i = 0; i < B; ++i) {
      for (int64_t n = 0; n < N; ++n) {
        const float bn = bp[i * N + n], cn = cp[i * N + n];
        float* hr = hp + (i * N + n) * E;
        const float* dr = dec + (i * N + n) * E;
        for (int64_t e = 0; e < E; ++e) {
          const float du = dp[i * E + e] * up[i * E + e];
          hr[e] = dr[e] * kp[i] * hr[e] + bn * du;
          yp[i * E + e] += cn * hr[e];
        }
      }
    }
    if (keep_states) states[t].copy_(h);
  }
  return {y, h, states};
}

// The gradients of scan_forward's delta, A^T, b, c, u and h0 from dy [T, B, E] and the
// last state's gradient [B, N, E].
std::vector<Tensor> scan_backward(Tensor dy, Tensor d_last, Tensor delta, Tensor a_t, Tensor b, Tensor c,
                                  Tensor u, Tensor keep, Tensor h0, Tensor states) {
  const int64_t T = delta.size(0), B = delta.size(1), E = delta.size(2), N = a_t.size(0);
  auto d_delta = torch::zeros({T, B, E}, delta.options());
  auto d_du = torch::zeros({T, B, E}, delta.options());
  auto d_b = torch::zeros({T, B, N}, delta.options());
  auto d_c = torch::zeros({T, B, N}, delta.options());
  auto d_a_t = torch::zeros({N, E}, delta.options());
  Tensor g = d_last.contiguous().clone();  // dL/dh[t] from the steps after t
  auto decay = torch::empty({B, N, E}, delta.options());
  float* gp = g.data_ptr<float>();
  float* dat = d_a_t.data_ptr<float>();
  const float* atp = a_t.data_ptr<float>();
  for (int64_t t = T - 1; t >= 0; --t) {
    at::mul_out(decay, delta[t].unsqueeze(1), a_t.unsqueeze(0));
    decay.exp_();
    const float* dec = decay.data_ptr<float>();
    const float* ht = states.data_ptr<float>() + t * B * N * E;
    const float* hprev = t > 0 ? states.data_ptr<float>() + (t - 1) * B * N * E : h0.data_ptr<float>();
    const float* dyp = dy.data_ptr<float>() + t * B * E;
    const float* dp = delta.data_ptr<float>() + t * B * E;
    const float* up = u.data_ptr<float>() + t * B * E;
    const float* bp = b.data_ptr<float>() + t * B * N;
    const float* cp = c.data_ptr<float>() + t * B * N;
    const float* kp = keep.data_ptr<float>() + t * B;
    float* ddp = d_delta.data_ptr<float>() + t * B * E;
    float* ddu = d_du.data_ptr<float>() + t * B * E;
    float* dbp = d_b.data_ptr<float>() + t * B * N;
    float* dcp = d_c.data_ptr<float>() + t * B * N;
    for (int64_t i = 0; i < B; ++i) {
      for (int64_t n = 0; n < N; ++n) {
        const int64_t row = (i * N + n) * E;
        const float bn = bp[i * N + n], cn = cp[i * N + n];
        float db = 0.f, dc = 0.f;
        for (int64_t e = 0; e < E; ++e) {
          const float dyv = dyp[i * E + e];
          const float G = gp[row + e] + cn * dyv;  // dL/dh[t]
          const float d = dp[i * E + e];
          const float a = dec[row + e] * kp[i];  // the step's decay, 0 at a start
          const float ddec = G * hprev[row + e];
          dc += ht[row + e] * dyv;
          db += G * (d * up[i * E + e]);
          ddu[i * E + e] += G * bn;
          ddp[i * E + e] += ddec * a * atp[n * E + e];  // d exp(d A) / dd = exp(d A) A
          dat[n * E + e] += ddec * a * d;  // d exp(d A) / dA = exp(d A) d
          gp[row + e] = G * a;
        }
        dbp[i * N + n] += db;
        dcp[i * N + n] += dc;
      }
    }
  }
  return {d_delta, d_a_t, d_b, d_c, d_du, g};
}
"""

EXTENSION = InlineExtension("pomdp_bench_mamba_cpp", _SOURCE, ["scan_forward", "scan_backward"])


def load() -> Any:
    """The built extension, or ``None`` where it cannot be built (:func:`why_not` says
    why). Builds once per process; torch caches the build across processes."""
    return EXTENSION.load()


def why_not() -> str | None:
    """Why :func:`load` could not build the extension; ``None`` if it could (or has not tried)."""
    return EXTENSION.why_not


def warn_fallback(where: str) -> None:
    """The one warning of a mamba whose ``kernel: cpp`` cannot run here."""
    EXTENSION.warn_fallback(where, "chunked", "its chunked scan")


class SelectiveScanCpp(torch.autograd.Function):
    """:func:`~pomdp_bench.memory.kernels.mamba_scan.selective_scan` in C++; the same
    arguments and results. Call :func:`load` first; float32 on a CPU only."""

    @staticmethod
    def forward(  # type: ignore[override]
        ctx: Any, delta: Tensor, a: Tensor, b: Tensor, c: Tensor, u: Tensor, keep: Tensor, h0: Tensor
    ) -> tuple[Tensor, Tensor]:
        a_t = a.t().contiguous()  # [N, E]
        args = [x.contiguous() for x in (delta, a_t, b, c, u, keep, h0)]
        keep_states = any(ctx.needs_input_grad)
        y, last, states = EXTENSION.module.scan_forward(*args, keep_states)
        if keep_states:
            ctx.save_for_backward(*args, states)
        return y, last

    @staticmethod
    def backward(ctx: Any, d_y: Tensor, d_last: Tensor) -> tuple[Tensor | None, ...]:  # type: ignore[override]
        delta, a_t, b, c, u, keep, h0, states = ctx.saved_tensors
        d_delta, d_a_t, d_b, d_c, d_du, d_h0 = EXTENSION.module.scan_backward(
            d_y.contiguous(), d_last.contiguous(), delta, a_t, b, c, u, keep, h0, states
        )
        return d_delta + d_du * u, d_a_t.t(), d_b, d_c, d_du * delta, None, d_h0


def selective_scan_cpp(
    delta: Tensor, a: Tensor, b: Tensor, c: Tensor, u: Tensor, keep: Tensor, h0: Tensor
) -> tuple[Tensor, Tensor]:
    """The selective scan through the C++ loop (:class:`SelectiveScanCpp`): ``y [T, B, E]``
    and the last state ``[B, N, E]``. Call :func:`load` first."""
    return SelectiveScanCpp.apply(delta, a, b, c, u, keep, h0)
