"""Speed of the memory kinds (pytest-benchmark, not part of the default test run).

    pytest benchmarks/test_bench_memory.py --benchmark-only

Groups:

* ``train T,B,H``: one forward + backward of every kind over a ``[T, B, H]`` batch
  (input width ``H``, no episode starts), as a PPO or SAC update runs it; T = 1024
  shows how each kind's cost grows with the sequence length.
* ``act B=8``: one acting step (``T = 1``, no gradient) of every kind.
* ``rnn resets T,B,H``: gru and lstm forward + backward with about 5% episode starts,
  against the same fused ``nn.GRU`` / ``nn.LSTM`` over the whole sequence without
  resets; the target is at most 2x.
* ``gru paths T,B,H``: gru's two training paths, ``kernel: fused`` (``nn.GRU`` with
  resets) and ``kernel: cpp`` (memory/kernels/gru_cpp.py), beside lstm's fused layer,
  forward + backward with about 5% episode starts; the target: gru cpp no slower
  than lstm.
* ``mamba scan``: the selective scan's chunked parallel form and its C++ loop
  (``kernel: cpp``, memory/kernels/mamba_cpp.py) against its own one-step-at-a-time loop,
  forward + backward at T=512, B=8, E=128, N=16; ``mamba scan T=11`` the same at the
  memory suite's length, B=16.
* ``linear scan``: the chunked parallel scan shared by lru, s5, ffm,
  linear_attention, mingru and minlstm against its loop, forward + backward at
  T=1024, B=8, 64 complex states.
* ``mlstm cell``: mlstm's chunkwise form (chunks of 64) against its stabilised loop,
  forward + backward at T=1024, B=8, 4 heads of width 32.
* ``delta rule``: the chunkwise kernel of mamba2 (SSD, chunks of 256), gated_deltanet
  (chunks of 64) and rwkv7 (vector decays, chunks of 16) against its loop, forward +
  backward at T=1024, B=8, 4 heads with keys of 16 and values of 32.

Every kind of ``MEMORY_KINDS`` is in ``train`` and ``act``: divide a ``train`` time
by ``T * B`` for the forward and backward cost per step.

Everything runs on one thread, as the sweep's workers do.
"""

from __future__ import annotations

import pytest
import torch

from pomdp_bench.memory import MEMORY_KINDS, build_memory
from pomdp_bench.memory.kernels.delta_rule import delta_rule_chunkwise, delta_rule_sequential
from pomdp_bench.memory.kernels.linear_scan import linear_scan, linear_scan_sequential
from pomdp_bench.memory.kernels.mamba_scan import selective_scan, selective_scan_sequential
from pomdp_bench.memory.kernels.mlstm_scan import mlstm_chunkwise, mlstm_sequential

torch.set_num_threads(1)

SHAPES = [(32, 8, 64), (128, 16, 64), (512, 8, 64), (1024, 8, 64)]


def _batch(steps: int, batch: int, width: int, start_prob: float = 0.0):
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(steps, batch, width, generator=gen, requires_grad=True)
    starts = torch.rand(steps, batch, generator=gen) < start_prob
    return x, starts


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "T{},B{},H{}".format(*s))
@pytest.mark.parametrize("kind", MEMORY_KINDS)
def test_train_forward_backward(benchmark, kind, shape):
    steps, batch, hidden = shape
    benchmark.group = "train T={},B={},H={}".format(*shape)
    torch.manual_seed(0)
    memory = build_memory({"kind": kind, "hidden_size": hidden}, input_size=hidden)
    x, starts = _batch(steps, batch, hidden)
    state = memory.initial_state(batch)

    def update() -> None:
        y, _ = memory(x, state, starts)
        y.square().mean().backward()

    benchmark(update)


@pytest.mark.parametrize("kind", MEMORY_KINDS)
def test_act_one_step(benchmark, kind):
    benchmark.group = "act B=8"
    torch.manual_seed(0)
    memory = build_memory({"kind": kind, "hidden_size": 64}, input_size=64)
    x, starts = _batch(1, 8, 64)
    with torch.no_grad():  # act from a mid-episode state
        state = memory(torch.randn(5, 8, 64), memory.initial_state(8), torch.zeros(5, 8))[1]

    @torch.no_grad()
    def act() -> None:
        memory(x, state, starts)

    benchmark(act)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "T{},B{},H{}".format(*s))
@pytest.mark.parametrize("variant", ["nn whole sequence, no resets", "memory, 5% starts"])
@pytest.mark.parametrize("kind", ["gru", "lstm"])
def test_rnn_resets_against_whole_sequence(benchmark, kind, variant, shape):
    steps, batch, hidden = shape
    benchmark.group = "rnn resets T={},B={},H={}".format(*shape)
    torch.manual_seed(0)
    memory = build_memory({"kind": kind, "hidden_size": hidden}, input_size=hidden)
    x, starts = _batch(steps, batch, hidden, start_prob=0.05)
    state = memory.initial_state(batch)

    def whole() -> None:
        memory.rnn(x)[0].square().mean().backward()

    def with_resets() -> None:
        memory(x, state, starts)[0].square().mean().backward()

    benchmark.extra_info["starts"] = int(starts[1:].sum())
    benchmark(whole if variant.startswith("nn") else with_resets)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "T{},B{},H{}".format(*s))
@pytest.mark.parametrize(
    "config",
    [{"kind": "gru"}, {"kind": "gru", "kernel": "cpp"}, {"kind": "lstm"}],
    ids=["gru fused", "gru cpp", "lstm fused"],
)
def test_gru_paths_against_lstm(benchmark, config, shape):
    steps, batch, hidden = shape
    benchmark.group = "gru paths T={},B={},H={}".format(*shape)
    torch.manual_seed(0)
    memory = build_memory({**config, "hidden_size": hidden}, input_size=hidden)
    x, starts = _batch(steps, batch, hidden, start_prob=0.05)
    state = memory.initial_state(batch)

    def update() -> None:
        memory(x, state, starts)[0].square().mean().backward()

    benchmark(update)


def _cpp_scan(*args):
    from pomdp_bench.memory.kernels import mamba_cpp

    if mamba_cpp.load() is None:
        pytest.skip(f"mamba's C++ scan cannot be built: {mamba_cpp.why_not()}")
    return mamba_cpp.selective_scan_cpp(*args)


@pytest.mark.parametrize("steps,batch", [(512, 8), (11, 16)], ids=["T=512", "T=11"])
@pytest.mark.parametrize(
    "scan", [selective_scan, _cpp_scan, selective_scan_sequential], ids=["parallel", "cpp", "sequential"]
)
def test_mamba_scan_parallel_against_sequential(benchmark, scan, steps, batch):
    benchmark.group = f"mamba scan T={steps},B={batch},E=128,N=16"
    inner, state = 128, 16
    gen = torch.Generator().manual_seed(0)
    delta = (0.1 * torch.rand(steps, batch, inner, generator=gen)).requires_grad_()
    a = (-torch.rand(inner, state, generator=gen) - 0.5).requires_grad_()
    b = torch.randn(steps, batch, state, generator=gen, requires_grad=True)
    c = torch.randn(steps, batch, state, generator=gen, requires_grad=True)
    u = torch.randn(steps, batch, inner, generator=gen, requires_grad=True)
    keep = (torch.rand(steps, batch, generator=gen) > 0.05).float()
    h0 = torch.zeros(batch, state, inner, requires_grad=True)

    def run() -> None:
        y, h = scan(delta, a, b, c, u, keep, h0)
        (y.square().mean() + h.sum()).backward()

    benchmark.pedantic(run, rounds=5, warmup_rounds=1)


@pytest.mark.parametrize("scan", [linear_scan, linear_scan_sequential], ids=["parallel", "sequential"])
def test_linear_scan_parallel_against_sequential(benchmark, scan):
    benchmark.group = "linear scan T=1024,B=8,N=64 complex"
    steps, batch, size = 1024, 8, 64
    gen = torch.Generator().manual_seed(0)
    radius = 1 - 0.1 * torch.rand(steps, batch, size, generator=gen)
    keep = (torch.rand(steps, batch, 1, generator=gen) > 0.05).float()
    a = (torch.polar(radius, torch.rand(steps, batch, size, generator=gen)) * keep).requires_grad_()
    b = torch.randn(steps, batch, size, generator=gen, dtype=torch.cfloat, requires_grad=True)
    h0 = torch.zeros(batch, size, dtype=torch.cfloat, requires_grad=True)

    def run() -> None:
        scan(a, b, h0).abs().square().mean().backward()

    benchmark.pedantic(run, rounds=5, warmup_rounds=1)


@pytest.mark.parametrize(
    "cell",
    [lambda *a: mlstm_chunkwise(*a, 64), mlstm_sequential],
    ids=["chunkwise", "sequential"],
)
def test_mlstm_cell_chunkwise_against_sequential(benchmark, cell):
    benchmark.group = "mlstm cell T=1024,B=8,N=4,d=32"
    steps, batch, heads, d = 1024, 8, 4, 32
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(steps, batch, heads, d, generator=gen, requires_grad=True) for _ in range(3))
    i_pre = torch.randn(steps, batch, heads, generator=gen, requires_grad=True)
    log_f = torch.nn.functional.logsigmoid(
        4 + torch.randn(steps, batch, heads, generator=gen)
    ).requires_grad_()
    starts = torch.rand(steps, batch, generator=gen) < 0.05
    state = (torch.zeros(batch, heads, d, d), torch.zeros(batch, heads, d), torch.zeros(batch, heads))

    def run() -> None:
        h, _ = cell(q, k, v, i_pre, log_f, starts, state)
        h.square().mean().backward()

    benchmark.pedantic(run, rounds=5, warmup_rounds=1)


@pytest.mark.parametrize("case", [("ssd", 256), ("gated_delta", 64), ("rwkv7", 16)], ids=lambda c: c[0])
@pytest.mark.parametrize("form", ["chunkwise", "sequential"])
def test_delta_rule_chunkwise_against_sequential(benchmark, case, form):
    name, chunk = case
    benchmark.group = f"delta rule {name} T=1024,B=8,N=4,dk=16,dv=32"
    steps, batch, heads, dk, dv = 1024, 8, 4, 16, 32
    gen = torch.Generator().manual_seed(0)

    def rand(*shape, fn=lambda t: t):
        return fn(torch.randn(*shape, generator=gen)).requires_grad_()

    normalize = torch.nn.functional.normalize
    q, v = rand(steps, batch, heads, dk), rand(steps, batch, heads, dv)
    k = rand(steps, batch, heads, dk, fn=lambda t: normalize(t, dim=-1))
    width = dk if name == "rwkv7" else 1
    log_w = rand(steps, batch, heads, width, fn=lambda t: -0.6 * torch.sigmoid(t))
    a = b = None
    if name != "ssd":
        a = rand(steps, batch, heads, dk, fn=lambda t: normalize(t, dim=-1))
        b = rand(steps, batch, heads, dk, fn=lambda t: -0.5 * normalize(t, dim=-1))
    starts = torch.rand(steps, batch, generator=gen) < 0.05
    state = torch.zeros(batch, heads, dv, dk)

    def run() -> None:
        args = (q, k, v, log_w, a, b, starts, state)
        o, _ = delta_rule_chunkwise(*args, chunk) if form == "chunkwise" else delta_rule_sequential(*args)
        o.square().mean().backward()

    benchmark.pedantic(run, rounds=3, warmup_rounds=1)
