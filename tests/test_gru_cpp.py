"""gru's C++ path (``kernel: cpp``, memory/kernels/gru_cpp.py): its contract, its setting, and
its fallback where it cannot be built. Its values and gradients against the plain masked
loop are in tests/test_memory.py (test_fused_rnn_equals_the_plain_masked_loop)."""

from __future__ import annotations

import pytest
import torch

from pomdp_bench.memory import MemoryConfig, build_memory
from pomdp_bench.memory.contract import check_memory
from pomdp_bench.memory.kernels import gru_cpp

D, H = 5, 16

pytestmark = pytest.mark.skipif(
    gru_cpp.load() is None, reason=f"gru's C++ path cannot be built: {gru_cpp.why_not()}"
)


def _memory(layers: int = 1):
    torch.manual_seed(0)
    return build_memory(MemoryConfig("gru", hidden_size=H, num_layers=layers, kernel="cpp"), input_size=D)


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
    monkeypatch.setattr(gru_cpp.EXTENSION, "module", None)
    monkeypatch.setattr(gru_cpp.EXTENSION, "why_not", "RuntimeError: no C++ compiler")
    with pytest.warns(
        RuntimeWarning, match=r"kernel 'cpp' cannot run here \(RuntimeError: no C\+\+ compiler\)"
    ):
        memory = _memory()
    assert not memory._cpp
    x, starts = torch.randn(4, 2, D), torch.zeros(4, 2, dtype=torch.bool)
    y, _ = memory(x, memory.initial_state(2), starts)
    assert y.shape == (4, 2, H)
