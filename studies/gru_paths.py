"""Study (issue 65): two ways to a faster gru on a CPU, against nn.GRU and nn.LSTM; results in docs/notes/throughput.md.

For T = 32 steps, B = 4 sequences (a minibatch of PPO's update at 16 copies), D = 70
and H = 64, times one forward and backward pass (median of ``--rounds``, one thread) of:

- ``manual``: the masked GRU loop (episode starts zero the state) as one
  ``torch.autograd.Function`` with a hand-written backward: the whole input
  projection and both weight gradients as single matrix products, per step one
  ``addmm`` and the gate arithmetic;
- ``compiled``: the same loop under autograd, through ``torch.compile`` (Inductor's C++),
  with its compile time (``--compile``; minutes);
- ``nn.GRU`` and ``nn.LSTM`` over the whole sequence (no resets), what gru and lstm run now.

It checks ``manual`` and ``compiled`` against the loop run eagerly, in values and gradients.

    python studies/gru_paths.py [--compile]

Run it alone on the machine: it measures speed.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from torch import Tensor, nn

STEPS, BATCH, WIDTH, HIDDEN = 32, 4, 70, 64


def masked_gru(x: Tensor, h0: Tensor, keep: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor, b_hh: Tensor):
    """``[T, B, D] -> ([T, B, H], [B, H])``: nn.GRU's equations, the state times ``keep [T, B, 1]``
    (0 where an episode starts) before each step."""
    size = h0.shape[-1]
    gi = nn.functional.linear(x, w_ih, b_ih)  # [T, B, 3H]
    h, outs = h0, []
    for t in range(x.shape[0]):
        h = h * keep[t]
        gh = nn.functional.linear(h, w_hh, b_hh)
        rz = torch.sigmoid(gi[t, :, : 2 * size] + gh[:, : 2 * size])
        r, z = rz[:, :size], rz[:, size:]
        n = torch.tanh(gi[t, :, 2 * size :] + r * gh[:, 2 * size :])
        h = n + z * (h - n)
        outs.append(h)
    return torch.stack(outs), h


class ManualGRU(torch.autograd.Function):
    """:func:`masked_gru` with a hand-written backward."""

    @staticmethod
    def forward(ctx, x, h0, keep, w_ih, w_hh, b_ih, b_hh):
        steps, batch, _ = x.shape
        size = h0.shape[-1]
        gi = torch.addmm(b_ih, x.reshape(steps * batch, -1), w_ih.t()).view(steps, batch, 3 * size)
        entering = x.new_empty(steps, batch, size)  # the state entering each step, after the reset
        rz_all, n_all, ghn_all, out = (x.new_empty(steps, batch, k * size) for k in (2, 1, 1, 1))
        h = h0
        for t in range(steps):
            h = h * keep[t]
            entering[t] = h
            gh = torch.addmm(b_hh, h, w_hh.t())
            rz = torch.sigmoid(gi[t, :, : 2 * size] + gh[:, : 2 * size])
            n = torch.tanh(torch.addcmul(gi[t, :, 2 * size :], rz[:, :size], gh[:, 2 * size :]))
            h = n + rz[:, size:] * (h - n)
            rz_all[t], n_all[t], ghn_all[t], out[t] = rz, n, gh[:, 2 * size :], h
        ctx.save_for_backward(x, keep, w_ih, w_hh, entering, rz_all, n_all, ghn_all)
        return out, h

    @staticmethod
    def backward(ctx, d_out, d_last):
        x, keep, w_ih, w_hh, entering, rz_all, n_all, ghn_all = ctx.saved_tensors
        steps, batch, _ = x.shape
        size = entering.shape[-1]
        d_gi = x.new_empty(steps, batch, 3 * size)
        d_gh = x.new_empty(steps, batch, 3 * size)
        dh = d_last.clone()
        for t in range(steps - 1, -1, -1):
            dh = dh + d_out[t]
            rz, n = rz_all[t], n_all[t]
            r, z = rz[:, :size], rz[:, size:]
            dn_pre = dh * (1 - z) * (1 - n * n)
            drz = torch.cat([dn_pre * ghn_all[t], dh * (entering[t] - n)], 1) * rz * (1 - rz)
            d_gi[t, :, : 2 * size], d_gi[t, :, 2 * size :] = drz, dn_pre
            d_gh[t, :, : 2 * size], d_gh[t, :, 2 * size :] = drz, dn_pre * r
            dh = (dh * z + d_gh[t] @ w_hh) * keep[t]
        flat_gi, flat_gh = d_gi.view(steps * batch, -1), d_gh.view(steps * batch, -1)
        return (
            (flat_gi @ w_ih).view_as(x),
            dh,
            None,
            flat_gi.t() @ x.reshape(steps * batch, -1),
            flat_gh.t() @ entering.reshape(steps * batch, size),
            flat_gi.sum(0),
            flat_gh.sum(0),
        )


def _median_ms(fn, rounds: int) -> float:
    fn()
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--rounds", type=int, default=50, help="timed passes per path; the median is kept")
    parser.add_argument("--compile", action="store_true", help="also time torch.compile's path (minutes)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    gru, lstm = nn.GRU(WIDTH, HIDDEN), nn.LSTM(WIDTH, HIDDEN)
    x = torch.randn(STEPS, BATCH, WIDTH, requires_grad=True)
    h0 = torch.randn(BATCH, HIDDEN, requires_grad=True)
    keep = (torch.rand(STEPS, BATCH, 1) > 0.1).float()
    weights = (gru.weight_ih_l0, gru.weight_hh_l0, gru.bias_ih_l0, gru.bias_hh_l0)
    inputs = [x, h0, *weights]

    def check(path) -> float:
        out, last = path(x, h0, keep, *weights)
        ref_out, ref_last = masked_gru(x, h0, keep, *weights)
        grads = torch.autograd.grad(out.sum() + last.sum(), inputs)
        ref = torch.autograd.grad(ref_out.sum() + ref_last.sum(), inputs)
        return max((a - b).abs().max().item() for a, b in zip(grads, ref, strict=True))

    def run(path):
        def one() -> None:
            out, last = path(x, h0, keep, *weights)
            (out.sum() + last.sum()).backward()

        return one

    rows = [("manual", _median_ms(run(ManualGRU.apply), args.rounds), check(ManualGRU.apply), "")]
    if args.compile:
        start = time.perf_counter()
        compiled = torch.compile(masked_gru, dynamic=False)
        run(compiled)()
        rows.append(
            (
                "compiled",
                _median_ms(run(compiled), args.rounds),
                check(compiled),
                f"{time.perf_counter() - start:.0f} s",
            )
        )
    rows.append(("eager loop", _median_ms(run(masked_gru), args.rounds), 0.0, ""))
    rows.append(
        ("nn.GRU", _median_ms(lambda: gru(x, h0[None])[0].sum().backward(), args.rounds), float("nan"), "")
    )
    rows.append(("nn.LSTM", _median_ms(lambda: lstm(x)[0].sum().backward(), args.rounds), float("nan"), ""))
    print("| path | ms per forward and backward | largest gradient difference | compile |")
    print("|---|---|---|---|")
    for name, ms, err, compile_time in rows:
        print(f"| {name} | {ms:.2f} | {err:.1e} | {compile_time} |")


if __name__ == "__main__":
    main()
