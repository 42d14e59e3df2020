"""Study (issue 20): which torch kernels gru and lstm run on a CPU, and why gru is slower; results in docs/throughput.md and docs/notes/throughput.md.

Why gru trains slower than lstm on a CPU: which kernels torch runs for each.

For sequences of T = 32 steps, widths D = 2 (TMaze's observation) and H = 64, and
batches of 16, 64 and 256 copies, times one forward and backward pass of
``nn.GRU`` and ``nn.LSTM`` (``torch.utils.benchmark``, one thread), and lists the
ATen operators each runs (``torch.profiler``): how many calls, and the share of the
time in the top one. Prints a Markdown table, then tries torch's oneDNN RNN layer
(``torch.mkldnn_rnn_layer``, what ``nn.LSTM`` runs on a CPU) with the GRU mode.

    python studies/rnn_kernels.py

Run it alone on the machine: it measures speed.
"""

from __future__ import annotations

import torch
import torch.utils.benchmark as benchmark
from torch import nn
from torch.profiler import ProfilerActivity, profile

STEPS, WIDTH, HIDDEN = 32, 2, 64


def _pass(rnn: nn.Module, x: torch.Tensor) -> None:
    y, _ = rnn(x)
    y.sum().backward()


def _profile(rnn: nn.Module, x: torch.Tensor) -> tuple[int, str, float]:
    """(ATen calls in one pass, the top operator by self time, its share of the time)."""
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        _pass(rnn, x)
    events = [e for e in prof.key_averages() if e.key.startswith("aten::") or "mkldnn" in e.key]
    calls = sum(e.count for e in events)
    total = sum(e.self_cpu_time_total for e in events) or 1.0
    top = max(events, key=lambda e: e.self_cpu_time_total)
    return calls, top.key, top.self_cpu_time_total / total


def main() -> None:
    torch.set_num_threads(1)
    torch.manual_seed(0)
    print(f"torch {torch.__version__}, mkldnn available: {torch.backends.mkldnn.is_available()}\n")
    print("| copies | kind | ms per forward+backward | ATen calls | top operator (share of time) |")
    print("|---|---|---|---|---|")
    for batch in (16, 64, 256):
        x = torch.randn(STEPS, batch, WIDTH)
        for name, cls in (("gru", nn.GRU), ("lstm", nn.LSTM)):
            rnn = cls(WIDTH, HIDDEN)
            timer = benchmark.Timer(stmt="f(rnn, x)", globals={"f": _pass, "rnn": rnn, "x": x})
            ms = timer.blocked_autorange(min_run_time=1.0).median * 1e3
            calls, top, share = _profile(rnn, x)
            print(f"| {batch} | {name} | {ms:.2f} | {calls} | `{top}` ({share:.0%}) |")
    gru, x = nn.GRU(WIDTH, HIDDEN), torch.randn(STEPS, 16, WIDTH)
    h0 = torch.zeros(16, HIDDEN)
    weights = (gru.weight_ih_l0, gru.weight_hh_l0, gru.bias_ih_l0, gru.bias_hh_l0)
    gru_mode = 3  # cuDNN's numbering, which ATen's RNN modes follow: RNN_RELU, RNN_TANH, LSTM, GRU
    try:
        torch.mkldnn_rnn_layer(x, *weights, h0, h0, False, [], gru_mode, HIDDEN, 1, True, False, False, True)
        print("\ntorch.mkldnn_rnn_layer runs a GRU")
    except RuntimeError as err:
        print(f"\ntorch.mkldnn_rnn_layer with the GRU mode: {str(err).splitlines()[0]}")


if __name__ == "__main__":
    main()
