"""mamba's C++ scan (``kernel: cpp``, memory/kernels/mamba_cpp.py): values and gradients
against the plain one-step loop, its contract, its setting, and its fallback where it
cannot be built."""

from __future__ import annotations

import pytest
import torch

from pomdp_bench.memory import MemoryConfig, build_memory
from pomdp_bench.memory.contract import check_memory
from pomdp_bench.memory.kernels import mamba_cpp
from pomdp_bench.memory.kernels.mamba_scan import selective_scan_sequential

pytestmark = [
    pytest.mark.skipif(
        mamba_cpp.load() is None, reason=f"mamba's C++ scan cannot be built: {mamba_cpp.why_not()}"
    ),
    pytest.mark.trajectory,
]


def _inputs(T: int, B: int, E: int, N: int, seed: int = 0) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    delta = torch.nn.functional.softplus(torch.randn(T, B, E, generator=g))
    a = -torch.rand(E, N, generator=g) * 3 - 0.1
    b, c = torch.randn(T, B, N, generator=g), torch.randn(T, B, N, generator=g)
    u = torch.randn(T, B, E, generator=g)
    keep = (torch.rand(T, B, generator=g) > 0.2).float()  # episode starts inside
    h0 = torch.randn(B, N, E, generator=g)
    return [delta, a, b, c, u, keep, h0]


@pytest.mark.parametrize(("T", "B", "E", "N"), [(1, 3, 8, 4), (13, 5, 8, 4), (40, 2, 16, 16)])
def test_the_cpp_scan_equals_the_plain_loop_in_values_and_gradients(T, B, E, N) -> None:
    """Tolerance: float32 rounding of sums in another order (the state's gradient sums
    over steps and copies)."""
    inputs = _inputs(T, B, E, N)
    d_y, d_last = torch.randn(T, B, E), torch.randn(B, N, E)
    results = []
    for scan in (selective_scan_sequential, mamba_cpp.selective_scan_cpp):
        xs = [x.clone().requires_grad_(i != 5) for i, x in enumerate(inputs)]  # keep: no gradient
        y, last = scan(*xs)
        ((y * d_y).sum() + (last * d_last).sum()).backward()
        results.append([y, last] + [x.grad for i, x in enumerate(xs) if i != 5])
    for got, want in zip(results[1], results[0], strict=True):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def _memory(kernel: str = "cpp"):
    torch.manual_seed(0)
    return build_memory(MemoryConfig("mamba", hidden_size=8, num_layers=2, kernel=kernel), input_size=3)


def test_the_cpp_path_passes_the_memory_contract_and_trains_as_the_chunked_one() -> None:
    check_memory(_memory())
    x, starts = torch.randn(11, 4, 3), torch.zeros(11, 4, dtype=torch.bool)
    starts[5, 2] = True
    outs = []
    for kernel in ("chunked", "cpp"):
        memory = _memory(kernel)
        y, _ = memory(x, memory.initial_state(4), starts)
        y.square().sum().backward()
        outs.append([y] + [p.grad for p in memory.parameters()])
    for got, want in zip(outs[1], outs[0], strict=True):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)


def test_the_setting_is_in_the_key_only_when_set_and_a_wrong_one_is_refused() -> None:
    assert "kernel" not in MemoryConfig("mamba").to_dict()  # stored keys of the usual path hold
    assert MemoryConfig("mamba", kernel="cpp").to_dict()["kernel"] == "cpp"
    with pytest.raises(ValueError, match=r"kernel must be one of \['chunked', 'cpp'\], got 'avx'"):
        MemoryConfig("mamba", kernel="avx")


def test_where_it_cannot_be_built_mamba_warns_once_and_runs_its_chunked_scan(monkeypatch) -> None:
    monkeypatch.setattr(mamba_cpp.EXTENSION, "module", None)
    monkeypatch.setattr(mamba_cpp.EXTENSION, "why_not", "RuntimeError: no C++ compiler")
    with pytest.warns(
        RuntimeWarning, match=r"kernel 'cpp' cannot run here \(RuntimeError: no C\+\+ compiler\)"
    ):
        memory = _memory()
    assert not any(mixer.cpp for mixer in memory.mixers)
    y, _ = memory(torch.randn(4, 2, 3), memory.initial_state(2), torch.zeros(4, 2, dtype=torch.bool))
    assert y.shape == (4, 2, 8)
