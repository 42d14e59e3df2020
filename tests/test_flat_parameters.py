"""FlatParameters and FlatAdam: one flat buffer, and torch's fused Adam on it."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

from pomdp_bench.agents.common.flat_parameters import FlatAdam, FlatParameters

# Verdicts here depend on torch's floating-point path: scripts/kernel_settings.sh reruns them
# under other CPU kernel settings.
pytestmark = pytest.mark.trajectory


def _net(seed: int) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 2))


def _train(net: nn.Module, flat: FlatParameters, optimizer: torch.optim.Optimizer, steps: int) -> None:
    torch.manual_seed(1)
    for i in range(steps):
        optimizer.param_groups[0]["lr"] = 1e-2 / (i + 1)  # as a schedule sets it
        flat.zero_grad()
        net(torch.randn(16, 3)).pow(2).mean().backward()
        flat.clip_grad_norm_(0.5)
        optimizer.step()


def test_flat_adam_steps_as_torch_fused_adam_bit_for_bit():
    ours_net, torch_net = _net(0), _net(0)
    ours_flat, torch_flat = FlatParameters(ours_net), FlatParameters(torch_net)
    ours = FlatAdam(ours_flat.param, lr=1e-2, eps=1e-5)
    reference = torch.optim.Adam([torch_flat.param], lr=1e-2, eps=1e-5, fused=True)
    _train(ours_net, ours_flat, ours, 6)
    _train(torch_net, torch_flat, reference, 6)
    assert torch.equal(ours_flat.param, torch_flat.param)
    state, ref_state = ours.state[ours_flat.param], reference.state[torch_flat.param]
    for key in ("step", "exp_avg", "exp_avg_sq"):
        assert torch.equal(state[key], ref_state[key]), key


def test_flat_adam_state_dict_is_torch_adams():
    net = _net(0)
    flat = FlatParameters(net)
    ours = FlatAdam(flat.param, lr=1e-2, eps=1e-5)
    _train(net, flat, ours, 3)
    other_net = _net(0)
    other_flat = FlatParameters(other_net)
    other_flat.param.data.copy_(flat.param.data)
    reference = torch.optim.Adam([other_flat.param], lr=1e-2, eps=1e-5, fused=True)
    # A copy: torch's load_state_dict keeps the very tensors it is given on CPU.
    reference.load_state_dict(copy.deepcopy(ours.state_dict()))  # and it continues the same way
    _train(net, flat, ours, 2)
    _train(other_net, other_flat, reference, 2)
    assert torch.equal(flat.param, other_flat.param)


def test_flat_adam_runs_step_hooks_through_torchs_path():
    net = _net(0)
    flat = FlatParameters(net)
    optimizer = FlatAdam(flat.param, lr=1e-2)
    calls: list[str] = []
    optimizer.register_step_pre_hook(lambda *args: calls.append("pre"))
    optimizer.register_step_post_hook(lambda *args: calls.append("post"))
    _train(net, flat, optimizer, 3)
    assert calls == ["pre", "post"] * 3


def test_flat_parameters_refuse_mixed_dtypes():
    net = _net(0)
    net[2].double()
    with pytest.raises(ValueError, match="share one device and dtype"):
        FlatParameters(net)


@pytest.mark.parametrize("lean", [True, False])
def test_lean_and_torch_steps_give_the_same_numbers(lean: bool):
    """The lean step and torch's own (the fallback where a torch lacks the private
    calls) both follow torch's fused Adam bit for bit."""
    ours_net, torch_net = _net(2), _net(2)
    ours_flat, torch_flat = FlatParameters(ours_net), FlatParameters(torch_net)
    ours = FlatAdam(ours_flat.param, lr=1e-2, eps=1e-5, lean=lean)
    reference = torch.optim.Adam([torch_flat.param], lr=1e-2, eps=1e-5, fused=True)
    _train(ours_net, ours_flat, ours, 6)
    _train(torch_net, torch_flat, reference, 6)
    assert ours.lean is lean
    assert torch.equal(ours_flat.param, torch_flat.param)


def test_the_lean_step_is_used_only_where_it_works(monkeypatch: pytest.MonkeyPatch):
    from pomdp_bench.agents.common import flat_parameters

    assert flat_parameters.lean_step_works()  # on this torch: the private calls exist and agree
    monkeypatch.setattr(flat_parameters, "_LEAN_STEP_WORKS", None)
    monkeypatch.delattr(torch, "_fused_adam_")  # a torch without the private kernel
    assert not flat_parameters.lean_step_works()
    assert not FlatAdam(nn.Parameter(torch.zeros(3)), lr=1e-2).lean
