"""gru's C++ path (``kernel: cpp``, memory/kernels/gru_cpp.py) against the plain masked loop
(memory/kernels/rnn_reference.py): values and gradients within float32 rounding, resets
inside the sequence, one and two layers; and its fallback where it cannot be built."""

from __future__ import annotations

import pytest
import torch

from pomdp_bench.memory import MemoryConfig, build_memory
from pomdp_bench.memory.contract import check_memory
from pomdp_bench.memory.kernels import gru_cpp
from pomdp_bench.memory.kernels.rnn_reference import masked_loop

D, H = 5, 16

pytestmark = pytest.mark.skipif(
    gru_cpp.load() is None, reason=f"gru's C++ path cannot be built: {gru_cpp.why_not()}"
)


def _memory(layers: int = 1):
    torch.manual_seed(0)
    return build_memory(MemoryConfig("gru", hidden_size=H, num_layers=layers, kernel="cpp"), input_size=D)


@pytest.mark.trajectory
@pytest.mark.parametrize("layers", [1, 2])
def test_the_cpp_path_equals_the_masked_loop_in_values_and_gradients(layers: int) -> None:
    memory = _memory(layers)
    steps, batch = 17, 5
    gen = torch.Generator().manual_seed(7)
    x = torch.randn(steps, batch, D, generator=gen)
    starts = torch.rand(steps, batch, generator=gen) < 0.2
    starts[3, 1] = starts[0, 2] = True
    state = (torch.randn(batch, layers, H, generator=gen),)

    def run(forward):
        xs = x.clone().requires_grad_()
        hs = tuple(s.clone().requires_grad_() for s in state)
        memory.zero_grad()
        y, final = forward(xs, hs)
        (y.pow(2).sum() + sum(f.pow(2).sum() for f in final)).backward()
        grads = [xs.grad, *(h.grad for h in hs), *(p.grad.clone() for p in memory.parameters())]
        return y.detach(), tuple(f.detach() for f in final), grads

    fast = run(lambda xs, hs: memory(xs, hs, starts))
    plain = run(lambda xs, hs: masked_loop(memory.rnn, xs, hs, starts))
    torch.testing.assert_close(fast[0], plain[0], atol=1e-5, rtol=0)
    torch.testing.assert_close(fast[1][0], plain[1][0], atol=1e-5, rtol=0)
    for got, want in zip(fast[2], plain[2], strict=True):
        torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)


def test_the_cpp_path_passes_the_memory_contract() -> None:
    check_memory(_memory(2))


def test_the_setting_is_in_the_key_and_lstm_refuses_it() -> None:
    assert "kernel" not in MemoryConfig("gru").to_dict()  # stored keys of the usual path hold
    assert MemoryConfig("gru", kernel="cpp").to_dict()["kernel"] == "cpp"
    with pytest.raises(ValueError, match=r"path of gru only; lstm's kernels: \['fused'\]"):
        MemoryConfig("lstm", kernel="cpp")
    with pytest.raises(ValueError, match=r"kernel must be one of \['fused', 'cpp'\], got 'avx'"):
        MemoryConfig("gru", kernel="avx")


def test_where_it_cannot_be_built_gru_warns_once_and_runs_its_usual_path(monkeypatch) -> None:
    monkeypatch.setattr(gru_cpp, "_EXTENSION", None)
    monkeypatch.setattr(gru_cpp, "_WHY_NOT", "RuntimeError: no C++ compiler")
    with pytest.warns(
        RuntimeWarning, match=r"kernel 'cpp' cannot run here \(RuntimeError: no C\+\+ compiler\)"
    ):
        memory = _memory()
    assert not memory._cpp
    x, starts = torch.randn(4, 2, D), torch.zeros(4, 2, dtype=torch.bool)
    y, _ = memory(x, memory.initial_state(2), starts)
    assert y.shape == (4, 2, H)
