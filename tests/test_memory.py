"""The memory contract, tested for every kind: pomdp_bench.memory."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from pomdp_bench.memory import MEMORY_KINDS, Memory, MemoryConfig, build_memory, contract
from pomdp_bench.memory.contract import assert_states_close, lived_in_state, random_starts
from pomdp_bench.memory.kernels import gru_cpp
from pomdp_bench.memory.kernels.delta_rule import delta_rule_chunkwise, delta_rule_sequential
from pomdp_bench.memory.kernels.episodes import positions_in_episode
from pomdp_bench.memory.kernels.linear_scan import linear_scan, linear_scan_sequential
from pomdp_bench.memory.kernels.mamba_scan import selective_scan, selective_scan_sequential
from pomdp_bench.memory.kernels.mlstm_scan import mlstm_chunkwise, mlstm_sequential
from pomdp_bench.memory.kernels.rnn_reference import masked_loop
from pomdp_bench.memory.kinds import rwkv7
from pomdp_bench.memory.kinds.transformer import windowed_attention

from learning_tasks import PROOF_SYMBOLS, cue_batch, majority, train_recall

# Verdicts here depend on torch's floating-point path: scripts/kernel_settings.sh reruns them
# under other CPU kernel settings.
pytestmark = pytest.mark.trajectory


torch.set_num_threads(1)

# Small settings so every test runs in well under a second per kind.
SMALL: dict[str, dict] = {
    "none": {"kind": "none"},
    "framestack": {"kind": "framestack", "window": 5},
    "gru": {"kind": "gru", "hidden_size": 12, "num_layers": 2},
    "lstm": {"kind": "lstm", "hidden_size": 12, "num_layers": 2},
    "transformer": {"kind": "transformer", "hidden_size": 12, "num_layers": 2, "num_heads": 3, "window": 6},
    "mamba": {"kind": "mamba", "hidden_size": 12, "num_layers": 2, "d_state": 4, "d_conv": 3},
    "lru": {"kind": "lru", "hidden_size": 12, "num_layers": 2, "d_state": 4},
    "s5": {"kind": "s5", "hidden_size": 12, "num_layers": 2, "d_state": 4},
    "ffm": {"kind": "ffm", "hidden_size": 12, "num_layers": 2, "d_state": 4, "context_size": 2},
    "linear_attention": {"kind": "linear_attention", "hidden_size": 12, "num_layers": 2, "num_heads": 3},
    "gtrxl": {"kind": "gtrxl", "hidden_size": 12, "num_layers": 2, "num_heads": 3, "window": 6},
    "mingru": {"kind": "mingru", "hidden_size": 12, "num_layers": 2},
    "minlstm": {"kind": "minlstm", "hidden_size": 12, "num_layers": 2},
    # chunk_size 5: the 23-step contract sequences cross chunk boundaries, with starts inside chunks
    "mlstm": {"kind": "mlstm", "hidden_size": 12, "num_layers": 2, "num_heads": 3, "chunk_size": 5},
    "slstm": {"kind": "slstm", "hidden_size": 12, "num_layers": 2, "num_heads": 3},
    # chunk_size 5 for the chunkwise kinds too: starts inside chunks, chunks that do not divide T
    "mamba2": {
        "kind": "mamba2",
        "hidden_size": 12,
        "num_layers": 2,
        "d_state": 4,
        "d_conv": 3,
        "head_size": 6,
        "chunk_size": 5,
    },
    "gated_deltanet": {
        "kind": "gated_deltanet",
        "hidden_size": 12,
        "num_layers": 2,
        "num_heads": 3,
        "mlp_factor": 1.0,
        "chunk_size": 5,
    },
    "rwkv7": {
        "kind": "rwkv7",
        "hidden_size": 12,
        "num_layers": 2,
        "head_size": 4,
        "lora_rank": 4,
        "chunk_size": 5,
    },
}
SMALL["transformer-nope"] = {**SMALL["transformer"], "position_encoding": "none"}
SMALL["transformer-relative"] = {**SMALL["transformer"], "position_encoding": "relative"}
SMALL["minlstm-expand"] = {**SMALL["minlstm"], "expand": 2}
SMALL["mlstm-default-chunks"] = {**SMALL["mlstm"], "chunk_size": 64, "conv_kernel": 1}
SMALL["deltanet"] = {**SMALL["gated_deltanet"], "gate": False, "mlp_factor": 0.0}
# The contract tests cover every kind and the variants that change the forward.
VARIANTS = (
    *MEMORY_KINDS,
    "transformer-nope",
    "transformer-relative",
    "minlstm-expand",
    "mlstm-default-chunks",
    "deltanet",
)
WITH_PARAMS = (
    "gru",
    "lstm",
    "transformer",
    "mamba",
    "lru",
    "s5",
    "ffm",
    "linear_attention",
    "gtrxl",
    "mingru",
    "minlstm",
    "mlstm",
    "slstm",
    "mamba2",
    "gated_deltanet",
    "rwkv7",
)
# The kinds whose recurrence is linear_scan, and the modules that call it.
SCAN_KINDS = {
    "lru": "ssm",
    "s5": "ssm",
    "ffm": "ffm",
    "linear_attention": "linear_attention",
    "mingru": "minrnn",
    "minlstm": "minrnn",
}  # in kinds/
D = 5


def make(kind: str, seed: int = 0, **overrides) -> Memory:
    torch.manual_seed(seed)
    memory = build_memory({**SMALL[kind], **overrides}, input_size=D)
    for name, param in memory.named_parameters():
        if name.endswith("lag_bias"):  # zero at first, which would hide a wrong lag
            with torch.no_grad():
                param.normal_()
    return memory


# ----------------------------------------------------------------------------- configuration
def test_config_from_any_accepts_none_str_dict_and_config():
    assert MemoryConfig.from_any(None) == MemoryConfig("none")
    assert MemoryConfig.from_any("gru") == MemoryConfig("gru")
    cfg = MemoryConfig.from_any({"kind": "lstm", "hidden_size": 32})
    assert (cfg.kind, cfg.hidden_size, cfg.num_layers) == ("lstm", 32, 1)
    assert MemoryConfig.from_any(cfg) is cfg
    assert MemoryConfig.from_any(cfg.to_dict()) == cfg
    assert MEMORY_KINDS[:6] == ("none", "framestack", "gru", "lstm", "transformer", "mamba")
    assert MEMORY_KINDS[6:11] == ("lru", "s5", "ffm", "linear_attention", "gtrxl")
    assert MEMORY_KINDS[11:15] == ("mingru", "minlstm", "mlstm", "slstm")
    assert MEMORY_KINDS[15:] == ("mamba2", "gated_deltanet", "rwkv7")


@pytest.mark.parametrize(
    ("value", "match"),
    [
        ("rnn", "kind must be one of"),
        ({"kind": "gru", "hidden": 3}, r"unknown memory setting\(s\) \['hidden'\]; valid keys"),
        ({"hidden_size": 3}, "needs a 'kind'"),
        ({"kind": "transformer", "hidden_size": 10, "num_heads": 4}, r"valid num_heads: \[1, 2, 5, 10\]"),
        (
            {"kind": "gru", "init": "gpt2"},
            r"valid for 'gru': \[None, 'orthogonal', 'forget_bias', 'chrono'\]",
        ),
        ({"kind": "lstm", "init": "chrono"}, "init='chrono' needs timescale"),
        ({"kind": "lstm", "init": "chrono", "timescale": 1}, "timescale must be >= 2"),
        ({"kind": "gru", "timescale": 50}, "applies only to init='chrono'"),
        ({"kind": "mamba", "init": "xavier"}, "init must be None or one of"),
        ({"kind": "gru", "hidden_size": 0}, "hidden_size must be >= 1"),
        ({"kind": "framestack", "window": 0}, "window must be >= 1"),
        ({"kind": "transformer", "position_encoding": "rope"}, "position_encoding must be one of"),
        ({"kind": "gru", "position_encoding": "none"}, r"applies only to kind in \['transformer', 'gtrxl'\]"),
        ({"kind": "lru", "context_size": 8}, "applies only to kind='ffm'"),
        ({"kind": "ffm", "context_size": 0}, "context_size must be >= 1"),
        (
            {"kind": "linear_attention", "hidden_size": 10, "num_heads": 4},
            r"valid num_heads: \[1, 2, 5, 10\]",
        ),
        ({"kind": "gtrxl", "hidden_size": 10, "num_heads": 3}, "gtrxl: num_heads=3 must divide"),
        (
            {"kind": "gru", "timescales": [2, 100]},
            r"applies only to kind in \['lru', 's5', 'linear_attention'\]",
        ),
        ({"kind": "lru", "timescales": [1, 100]}, r"timescales\[0\] must be > 1.0"),
        ({"kind": "s5", "timescales": [50, 10]}, r"timescales\[1\] must be >= 50.0"),
        ({"kind": "lru", "timescales": [2, 10, 100]}, r"a pair \(shortest, longest\), got 3 values"),
        ({"kind": "transformer", "gate_bias": 0.0}, r"applies only to kind in \['gru', 'lstm', 'gtrxl'\]"),
        ({"kind": "lstm", "init": "chrono", "timescale": 10, "gate_bias": 4.0}, "init='forget_bias'"),
        ({"kind": "gru", "gate_bias": 4.0}, "init='forget_bias'"),
        ({"kind": "mingru", "expand": 0}, "expand must be >= 1"),
        (
            {"kind": "mlstm", "hidden_size": 10, "num_heads": 3},
            r"mlstm: num_heads=3 must divide .* 20; valid",
        ),
        ({"kind": "mlstm", "hidden_size": 10, "proj_factor": 1.25}, "must be a whole number"),
        ({"kind": "mlstm", "proj_factor": 0.5}, "proj_factor must be >= 1.0"),
        ({"kind": "mlstm", "chunk_size": 0}, "chunk_size must be >= 1"),
        ({"kind": "mlstm", "conv_kernel": 0}, "conv_kernel must be >= 1"),
        ({"kind": "slstm", "hidden_size": 10, "num_heads": 4}, r"valid num_heads: \[1, 2, 5, 10\]"),
        ({"kind": "slstm", "ff_factor": 0}, "ff_factor must be > 0"),
        (
            {"kind": "slstm", "chunk_size": 8},
            r"applies only to kind in \['mlstm', 'mamba2', 'gated_deltanet', 'rwkv7'\]",
        ),
        (
            {"kind": "mamba2", "hidden_size": 10, "head_size": 8},
            r"mamba2: head_size=8 must divide .* 20; valid",
        ),
        ({"kind": "mamba2", "d_state": 0}, "d_state must be >= 1"),
        ({"kind": "mamba2", "chunk_size": 0}, "chunk_size must be >= 1"),
        ({"kind": "gated_deltanet", "hidden_size": 10, "num_heads": 4}, r"valid num_heads: \[1, 2, 5, 10\]"),
        (
            {"kind": "gated_deltanet", "hidden_size": 10, "num_heads": 2, "expand_v": 0.3},
            "must be a whole number",
        ),
        ({"kind": "gated_deltanet", "expand_v": 0}, "expand_v must be > 0"),
        ({"kind": "gated_deltanet", "mlp_factor": -1}, "mlp_factor must be >= 0"),
        ({"kind": "rwkv7", "hidden_size": 12, "head_size": 8}, r"valid head_size: \[1, 2, 3, 4, 6, 12\]"),
        ({"kind": "rwkv7", "chunk_size": 65}, "chunk_size must be <= 64"),
        ({"kind": "rwkv7", "lora_rank": 0}, "lora_rank must be >= 1"),
        ({"kind": "rwkv7", "gate": False}, "applies only to kind='gated_deltanet'"),
    ],
)
def test_config_refuses_bad_values_naming_what_is_valid(value, match):
    with pytest.raises(ValueError, match=match):
        MemoryConfig.from_any(value)


@pytest.mark.parametrize(
    "value",
    [
        {"kind": "gru", "hidden_size": "64"},
        {"kind": "gru", "hidden_size": 64.0},
        {"kind": "gru", "gradient_checkpoint": 1},
        {"kind": "gru", "init": 3},
        {"kind": 3},
        {"kind": "lru", "timescales": 10},
        {"kind": "lru", "timescales": "2,100"},
        {"kind": "gtrxl", "gate_bias": "0"},
        {"kind": "minlstm", "expand": 2.0},
        {"kind": "mlstm", "proj_factor": "2"},
        {"kind": "slstm", "num_heads": "4"},
        {"kind": "mamba2", "head_size": 8.0},
        {"kind": "gated_deltanet", "gate": "false"},
        {"kind": "rwkv7", "lora_rank": "32"},
        3.5,
    ],
)
def test_config_refuses_wrong_types(value):
    with pytest.raises(TypeError):
        MemoryConfig.from_any(value)


def test_build_memory_checks_input_size():
    with pytest.raises(ValueError, match="input_size must be >= 1"):
        build_memory("gru", input_size=0)
    with pytest.raises(TypeError):
        build_memory("gru", input_size=2.0)


# ---------------------------------------------------------------------------------- contract
@pytest.mark.parametrize("kind", MEMORY_KINDS)
def test_shapes_sizes_and_batch_first_state(kind):
    memory = make(kind)
    expected_out = {"none": D, "framestack": 5 * D}.get(kind, 12)
    assert (memory.kind, memory.input_size, memory.output_size) == (kind, D, expected_out)
    assert memory.trains_through_time == (kind in WITH_PARAMS)
    assert (memory.initial_state(4) == ()) == (kind == "none")
    contract.check_shapes(memory)


@pytest.mark.parametrize("kind", MEMORY_KINDS)
def test_forward_refuses_mismatched_shapes(kind):
    memory = make(kind)
    state = memory.initial_state(3)
    starts = torch.zeros(4, 3, dtype=torch.bool)
    with pytest.raises(ValueError, match=r"x must be \[T, B, 5\]"):
        memory(torch.randn(4, 3, D + 1), state, starts)
    with pytest.raises(ValueError, match="episode_starts must be"):
        memory(torch.randn(4, 3, D), state, starts[:, :2])
    if state:
        with pytest.raises(ValueError, match="state"):
            memory(torch.randn(4, 3, D), state[:-1], starts)
        with pytest.raises(ValueError, match=r"state\[0\] must be"):
            memory(torch.randn(4, 3, D), tuple(s[:2] for s in state), starts)
    contract.check_refuses_mismatched_shapes(memory)


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("kind", VARIANTS)
def test_step_equals_sequence_with_episode_starts(kind, seed):
    """Stepping one step at a time, running in uneven pieces and running the whole
    sequence agree, outputs and final state, with starts inside the sequence."""
    contract.check_step_equals_sequence(make(kind, seed), seed)


@pytest.mark.parametrize("kind", VARIANTS)
def test_reset_isolation(kind):
    """Changing anything before an episode start changes nothing at or after it."""
    contract.check_reset_isolation(make(kind))


@pytest.mark.parametrize("kind", VARIANTS)
def test_zero_state_is_a_fresh_episode(kind):
    contract.check_zero_state_is_a_fresh_episode(make(kind))


@pytest.mark.parametrize("kind", VARIANTS)
def test_the_contract_checks_catch_a_memory_that_breaks_it(kind):
    """The checks can fail: a memory whose sequence call ignores episode starts after
    step 0 (while its single steps honour them) breaks step-equals-sequence and reset
    isolation."""
    if kind == "none":
        pytest.skip("no memory, nothing to reset")
    memory = make(kind)
    honest = memory.forward

    def ignores_inner_starts(x, state, starts):
        starts = torch.as_tensor(starts, dtype=torch.bool).clone()
        if starts.shape[0] > 1:
            starts[1:] = False
        return honest(x, state, starts)

    memory.forward = ignores_inner_starts
    with pytest.raises(AssertionError):
        contract.check_step_equals_sequence(memory)
    with pytest.raises(AssertionError):
        contract.check_reset_isolation(memory)


def test_framestack_concatenates_the_window_with_zero_padding():
    memory = build_memory({"kind": "framestack", "window": 3}, input_size=1)
    x = torch.arange(1.0, 7.0).view(6, 1, 1)  # inputs 1..6
    starts = torch.tensor([True, False, False, True, False, False]).view(6, 1)
    y, (history,) = memory(x, memory.initial_state(1), starts)
    expected = [[0, 0, 1], [0, 1, 2], [1, 2, 3], [0, 0, 4], [0, 4, 5], [4, 5, 6]]
    assert y[:, 0].tolist() == expected
    assert history[0, :, 0].tolist() == [5, 6]


def test_settings_added_later_leave_stored_keys_alone():
    """A setting added after runs were stored is left out of ``to_dict`` (the run
    key's input) while it holds the default those runs had."""
    old = MemoryConfig("transformer", window=4)
    assert "position_encoding" not in old.to_dict()
    assert old.to_dict() == {  # the five LegacyKeys too, as every shipped kind's run key has them
        "kind": "transformer",
        "hidden_size": 64,
        "num_layers": 1,
        "gradient_checkpoint": False,
        "window": 4,
        "num_heads": 4,
        "d_state": 16,
        "d_conv": 4,
        "expand": 2,
        "init": None,
    }
    nope = MemoryConfig("transformer", window=4, position_encoding="none")
    assert nope.to_dict()["position_encoding"] == "none"
    assert MemoryConfig.from_any(old.to_dict()) == old
    assert MemoryConfig.from_any(nope.to_dict()) == nope


def test_transformer_without_position_encoding_sees_no_position():
    """With position_encoding="none" the same inputs give the same outputs at any
    position of an episode once the window is full; with "sinusoidal" they do not."""
    for encoding, same in (("none", True), ("relative", True), ("sinusoidal", False)):
        memory = make("transformer", position_encoding=encoding)
        x = torch.randn(6, 1, D).expand(6, 2, D)
        state = memory.initial_state(2)
        state = (state[0], torch.tensor([10, 300]))  # two positions, both past the window
        with torch.no_grad():
            y, _ = memory(x, state, torch.zeros(6, 2, dtype=torch.bool))
        assert torch.allclose(y[:, 0], y[:, 1], atol=1e-6) is same


def test_relative_position_encoding_tells_the_earlier_steps_of_the_window_apart():
    """One layer, window 4: the last step's output depends on the order of the three
    steps before it with learned lag biases, and not without them."""
    x = torch.randn(4, 1, D)
    swapped = x[[2, 0, 1, 3]]  # same steps, earlier ones reordered
    starts = torch.zeros(4, 1, dtype=torch.bool)
    starts[0] = True
    for encoding, order_matters in (("none", False), ("relative", True)):
        memory = make("transformer", num_layers=1, window=4, position_encoding=encoding)
        with torch.no_grad():
            y, _ = memory(x, memory.initial_state(1), starts)
            y_swapped, _ = memory(swapped, memory.initial_state(1), starts)
        assert torch.allclose(y[3], y_swapped[3], atol=1e-6) is not order_matters


def test_transformer_counts_positions_within_the_episode():
    memory = make("transformer")
    starts = torch.zeros(6, 2, dtype=torch.bool)
    starts[2, 0] = True
    state = memory.initial_state(2)
    state = (state[0], torch.tensor([0, 40]))  # copy 1 is 40 steps into its episode
    _, (_, position) = memory(torch.zeros(6, 2, D), state, starts)
    assert position.tolist() == [4, 46]
    assert positions_in_episode(starts, torch.tensor([0, 40]))[:, 0].tolist() == [0, 1, 0, 1, 2, 3]


def test_lstm_holds_a_plain_nn_lstm_that_takes_foreign_weights():
    memory = build_memory({"kind": "lstm", "hidden_size": 8, "num_layers": 2}, input_size=3)
    assert type(memory.rnn) is nn.LSTM
    other = nn.LSTM(3, 8, num_layers=2)  # what sb3-contrib holds
    memory.rnn.load_state_dict(other.state_dict())
    x = torch.randn(5, 2, 3)
    y, (h, c) = memory(x, memory.initial_state(2), torch.zeros(5, 2, dtype=torch.bool))
    y_ref, (h_ref, c_ref) = other(x)
    torch.testing.assert_close(y, y_ref)
    torch.testing.assert_close(h, h_ref.transpose(0, 1))
    torch.testing.assert_close(c, c_ref.transpose(0, 1))


@pytest.mark.parametrize("kind", ["gru", "lstm"])
def test_rnn_reuses_its_reset_layout_only_for_the_same_unchanged_starts(kind):
    """The layout of the resets, the first layer's input and the starting state are
    kept while the same tensors come back (PPO scores one minibatch every epoch), and
    must be rebuilt when the starts, the inputs or the state change in place."""
    torch.manual_seed(0)
    memory = build_memory({"kind": kind, "hidden_size": 8, "num_layers": 2}, input_size=3)
    x, state = torch.randn(12, 4, 3), memory.initial_state(4)
    starts = torch.zeros(12, 4, dtype=torch.bool)
    starts[[3, 7], [0, 2]] = True
    first, _ = memory(x, state, starts)
    again, _ = memory(x, state, starts)
    torch.testing.assert_close(again, first, rtol=0, atol=0)
    starts[5, 1] = True  # in place: the cached layout no longer holds
    changed, _ = memory(x, state, starts)
    fresh = build_memory({"kind": kind, "hidden_size": 8, "num_layers": 2}, input_size=3)
    fresh.load_state_dict(memory.state_dict())
    expected, _ = fresh(x, state, starts.clone())
    torch.testing.assert_close(changed, expected, rtol=0, atol=0)
    assert not torch.equal(changed, first)
    x[2, 3] += 1.0  # in place: the kept first-layer input no longer holds either
    moved, _ = memory(x, state, starts)
    expected, _ = fresh(x.clone(), state, starts.clone())
    torch.testing.assert_close(moved, expected, rtol=0, atol=0)
    state[0][1] += 0.5  # in place: the kept start-of-sequence state no longer holds
    starts[0, 3] = True  # nor does its reset at step 0
    shifted, _ = memory(x, state, starts)
    expected, _ = fresh(x.clone(), tuple(s.clone() for s in state), starts.clone())
    torch.testing.assert_close(shifted, expected, rtol=0, atol=0)
    assert not torch.equal(shifted, moved)
    x.requires_grad_(True)  # what was kept for x without a gradient must not cut it off now
    h0 = state[0].clone().requires_grad_(True)  # nor for a state that now needs one
    y, _ = memory(x, (h0, *state[1:]), starts)
    y.sum().backward()
    assert x.grad is not None and x.grad.abs().sum() > 0
    assert h0.grad is not None and h0.grad[:3].abs().sum() > 0
    assert h0.grad[3].abs().sum() == 0  # copy 3 starts an episode at step 0


@pytest.mark.parametrize("kind", ["gru", "lstm"])
def test_rnn_keeps_nothing_from_inference_mode_for_a_later_backward(kind):
    """A batch first scored under inference mode (acting) and then trained on must
    still backpropagate: nothing derived under inference mode is kept."""
    memory = build_memory({"kind": kind, "hidden_size": 8}, input_size=3)
    x, state = torch.randn(6, 2, 3), memory.initial_state(2)
    starts = torch.zeros(6, 2, dtype=torch.bool)
    starts[3, 1] = True
    with torch.inference_mode():
        memory(x, state, starts)
    y, _ = memory(x, state, starts)
    y.sum().backward()
    assert all(p.grad is not None for p in memory.parameters())


# ------------------------------------------------------------------- seeding, init, gradients
@pytest.mark.parametrize(
    ("kind", "init"),
    [
        ("gru", None),
        ("gru", "orthogonal"),
        ("lstm", "orthogonal"),
        ("lstm", "forget_bias"),
        ("lstm", "chrono"),
        ("transformer", None),
        ("transformer", "gpt2"),
        ("mamba", None),
        ("mamba", "mamba"),
        ("lru", None),
        ("s5", None),
        ("ffm", None),
        ("linear_attention", None),
        ("gtrxl", None),
        ("gtrxl", "gpt2"),
        ("mamba2", None),
        ("gated_deltanet", None),
        ("rwkv7", None),
    ],
)
def test_same_seed_gives_bit_identical_parameters(kind, init):
    extra = {"timescale": 20} if init == "chrono" else {}
    a, b, c = (
        make(kind, 7, init=init, **extra),
        make(kind, 7, init=init, **extra),
        make(kind, 8, init=init, **extra),
    )
    pa, pb, pc = a.state_dict(), b.state_dict(), c.state_dict()
    assert all(torch.equal(pa[k], pb[k]) for k in pa)
    assert not all(torch.equal(pa[k], pc[k]) for k in pa)


def test_inits_do_what_they_say():
    rnn = make("lstm", init="orthogonal").rnn
    for name, p in rnn.named_parameters():
        if name.startswith("bias"):
            assert not p.any()
        else:  # [4H, in] with 4H >= in: orthonormal columns
            torch.testing.assert_close(p.t() @ p, torch.eye(p.shape[1]), atol=1e-5, rtol=0)
    for kind in ("gru", "lstm"):  # the second gate (LSTM's forget, GRU's update) biased open
        memory = build_memory(
            {"kind": kind, "hidden_size": 8, "num_layers": 2, "init": "forget_bias"}, input_size=D
        )
        for name, p in memory.rnn.named_parameters():
            if name.startswith("bias_hh"):
                assert not p.any()
            elif name.startswith("bias_ih"):
                expected = torch.zeros_like(p)
                expected[8:16] = 2.0
                assert torch.equal(p, expected), name
    for kind in ("gru", "lstm"):  # chrono: keep-gate biases log(U(1, T - 1)), LSTM input gate their negative
        memory = build_memory(
            {"kind": kind, "hidden_size": 256, "init": "chrono", "timescale": 100}, input_size=D
        )
        params = dict(memory.rnn.named_parameters())
        assert not params["bias_hh_l0"].any()
        keep = params["bias_ih_l0"][256:512]
        assert keep.min().item() >= 0.0 and keep.max().item() <= math.log(99) + 1e-6
        assert keep.exp().mean().item() == pytest.approx(50.0, rel=0.15)  # U(1, 99) has mean 50
        first = params["bias_ih_l0"][:256]
        torch.testing.assert_close(first, -keep if kind == "lstm" else torch.zeros_like(first))
        assert not params["bias_ih_l0"][512:].any()
    assert "timescale" not in MemoryConfig("gru").to_dict()  # stored run keys stay valid
    transformer = build_memory({"kind": "transformer", "hidden_size": 64, "init": "gpt2"}, input_size=D)
    kernels = torch.cat([m.weight.flatten() for m in transformer.modules() if isinstance(m, nn.Linear)])
    assert abs(kernels.std().item() - 0.02) < 0.001
    assert not any(m.bias.any() for m in transformer.modules() if isinstance(m, nn.Linear))
    mamba = build_memory({"kind": "mamba", "hidden_size": 64, "init": "mamba"}, input_size=D)
    dt = F.softplus(mamba.mixers[0].dt_proj.bias)
    assert dt.min().item() >= 1e-3 * 0.999 and dt.max().item() <= 1e-1 * 1.001


@pytest.mark.parametrize("kind", MEMORY_KINDS)
def test_every_parameter_gets_a_finite_gradient_over_1024_steps(kind):
    contract.check_finite_gradients(make(kind))


@pytest.mark.parametrize("kind", VARIANTS)
def test_save_and_load_give_the_same_outputs(kind):
    contract.check_save_and_load(make(kind))


def test_the_save_and_load_check_catches_weights_left_out_of_the_state_dict():
    """A memory that reads a random tensor it does not save fails the check."""

    class Unsaved(type(make("mingru"))):
        def __init__(self, config, input_size):
            super().__init__(config, input_size)
            self.register_buffer("offset", torch.randn(input_size), persistent=False)

        def _forward(self, x, state, starts):
            return super()._forward(x + self.offset, state, starts)

    memory = Unsaved(MemoryConfig(**SMALL["mingru"]), D)
    with pytest.raises(AssertionError, match="loaded vs saved"):
        contract.check_save_and_load(memory)


@pytest.mark.parametrize("kind", WITH_PARAMS)
def test_gradient_checkpoint_gives_the_same_gradients(kind):
    x = torch.randn(17, 3, D)
    starts = random_starts(17, 3, 0.15, 2)
    grads = []
    for checkpointing in (False, True):
        memory = make(kind, 3, gradient_checkpoint=checkpointing)
        state = tuple(
            s.requires_grad_() if s.is_floating_point() else s for s in lived_in_state(memory, 3, 1)
        )
        y, final = memory(x, state, starts)
        loss = y.square().sum() + sum(s.square().sum() for s in final if s.is_floating_point())
        params = [p for _, p in sorted(memory.named_parameters())]
        inputs = params + [s for s in state if s.is_floating_point()]
        grads.append(torch.autograd.grad(loss, inputs))
    for g, h in zip(*grads, strict=True):
        torch.testing.assert_close(g, h, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("kind", WITH_PARAMS)
def test_gradient_checkpoint_keeps_fewer_activations(kind):
    """With checkpointing the forward pass saves far less for the backward pass."""
    x = torch.randn(64, 4, D)
    starts = random_starts(64, 4, 0.05, 2)
    saved = []
    for checkpointing in (False, True):
        memory = make(kind, gradient_checkpoint=checkpointing)
        count = [0]

        def pack(t, count=count):
            count[0] += t.numel()
            return t

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            y, _ = memory(x, memory.initial_state(4), starts)
        y.sum().backward()
        saved.append(count[0])
    assert saved[1] < saved[0] / 2, saved


# ------------------------------------------------------------------------------------- scan
@pytest.mark.parametrize("steps", [1, 2, 3, 10, 17])
def test_selective_scan_matches_the_loop_and_its_gradient_is_exact(steps):
    gen = torch.Generator().manual_seed(steps)
    batch, inner, state = 2, 3, 2

    def rand(*shape):
        return torch.randn(*shape, generator=gen, dtype=torch.float64)

    delta = (rand(steps, batch, inner).abs() + 0.1).requires_grad_()
    a = (-rand(inner, state).abs() - 0.5).requires_grad_()
    b, c, u = (rand(steps, batch, n).requires_grad_() for n in (state, state, inner))
    keep = torch.ones(steps, batch, dtype=torch.float64)
    keep[steps // 2, 0] = 0  # an episode start
    h0 = rand(batch, state, inner).requires_grad_()
    args = (delta, a, b, c, u, keep, h0)
    for got, want in zip(selective_scan(*args), selective_scan_sequential(*args), strict=True):
        torch.testing.assert_close(got, want)
    assert torch.autograd.gradcheck(selective_scan, args)


@pytest.mark.parametrize("steps", [1, 2, 3, 10, 17])
@pytest.mark.parametrize(
    "case", ["real", "complex", "real decay, complex input", "one decay per head (broadcast)"]
)
def test_linear_scan_matches_the_loop_and_its_gradient_is_exact(steps, case):
    """The chunked scan equals the loop, with a zero decay (an episode start) inside,
    and gradcheck (float64) confirms its hand-written backward in a, b and h0."""
    gen = torch.Generator().manual_seed(steps)
    batch = 2
    shape = (batch, 3, 2) if case.startswith("one decay") else (batch, 3)
    complex_a, complex_b = {"real": (False, False), "complex": (True, True)}.get(case, (False, True))

    def rand(*size, complex_=False, scale=1.0):
        x = torch.randn(*size, generator=gen, dtype=torch.float64)
        if complex_:
            x = torch.complex(x, torch.randn(*size, generator=gen, dtype=torch.float64))
        return scale * x

    a_shape = (steps, batch, 3, 1) if case.startswith("one decay") else (steps, *shape)
    a = rand(*a_shape, complex_=complex_a, scale=0.5)
    a[steps // 2, 0] = 0  # an episode start
    a.requires_grad_()
    b = rand(steps, *shape, complex_=complex_b).requires_grad_()
    h0 = rand(*shape, complex_=complex_b).requires_grad_()
    torch.testing.assert_close(linear_scan(a, b, h0), linear_scan_sequential(a, b, h0))
    assert torch.autograd.gradcheck(linear_scan, (a, b, h0))


def test_linear_scan_over_1024_steps_equals_the_loop_in_float32():
    """Values and gradients of the chunked scan and the loop agree at a long length in
    float32, with complex decays near the unit circle and starts inside."""
    gen = torch.Generator().manual_seed(0)
    steps, batch, size = 1024, 3, 8
    radius = 1 - 0.01 * torch.rand(steps, batch, size, generator=gen)
    angle = torch.rand(steps, batch, size, generator=gen)
    keep = (torch.rand(steps, batch, 1, generator=gen) > 0.01).float()
    grads = []
    for scan in (linear_scan, linear_scan_sequential):
        a = torch.polar(radius, angle).requires_grad_()
        b = torch.randn(steps, batch, size, generator=torch.Generator().manual_seed(1), dtype=torch.cfloat)
        b.requires_grad_()
        h0 = torch.zeros(batch, size, dtype=torch.cfloat, requires_grad=True)
        h = scan(a * keep, b, h0)
        h.abs().square().mean().backward()
        grads.append((h.detach(), a.grad, b.grad, h0.grad))
    for got, want in zip(*grads, strict=True):
        torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)


def _mlstm_inputs(steps: int, dtype: torch.dtype, gate_scale: float = 1.0, seed: int = 0):
    """Random mLSTM cell inputs (3 copies, 2 heads of width 4), starts inside, a lived-in state."""
    gen = torch.Generator().manual_seed(seed)
    batch, heads, d = 3, 2, 4

    def rand(*shape):
        return torch.randn(*shape, generator=gen, dtype=dtype)

    q, k, v = rand(steps, batch, heads, d), rand(steps, batch, heads, d) / 2, rand(steps, batch, heads, d)
    i_pre = gate_scale * rand(steps, batch, heads)
    log_f = F.logsigmoid(2 + gate_scale * rand(steps, batch, heads))
    starts = random_starts(steps, batch, 0.1, seed)
    starts[0, 1] = True
    state = (rand(batch, heads, d, d), rand(batch, heads, d), rand(batch, heads))
    return (q, k, v, i_pre, log_f), starts, state


@pytest.mark.parametrize("chunk_size", [1, 3, 7, 64])
def test_mlstm_chunkwise_equals_the_stabilised_loop_in_values_and_gradients(chunk_size):
    """The chunkwise form gives the loop's outputs, final state (the stabiliser ``m``
    included) and gradients, in float64, with starts inside chunks and at chunk edges."""
    inputs, starts, state = _mlstm_inputs(17, torch.float64)
    results = []
    for run in (lambda *a: mlstm_chunkwise(*a, chunk_size), mlstm_sequential):
        leaves = [t.clone().requires_grad_() for t in (*inputs, *state)]
        h, final = run(*leaves[:5], starts, tuple(leaves[5:]))
        (h.square().sum() + final[0].square().sum() + final[1].square().sum()).backward()
        results.append((h.detach(), [f.detach() for f in final], [t.grad for t in leaves]))
    (h1, s1, g1), (h2, s2, g2) = results
    torch.testing.assert_close(h1, h2, atol=1e-10, rtol=1e-10)
    for a, b in zip((*s1, *g1), (*s2, *g2), strict=True):
        torch.testing.assert_close(a, b, atol=1e-9, rtol=1e-9)


def test_mlstm_stabiliser_keeps_exponential_gates_finite_in_float32():
    """Input gates past 100 (``exp`` overflows float32 at 89): the stabilised float32
    chunkwise form equals the unstabilised formula ``C q / max(|nᵀq|, 1)`` in float64."""
    inputs, starts, _ = _mlstm_inputs(200, torch.float64, gate_scale=40.0, seed=1)
    q, k, v, i_pre, log_f = inputs
    zero = (torch.zeros(3, 2, 4, 4), torch.zeros(3, 2, 4), torch.zeros(3, 2))
    h32, _ = mlstm_chunkwise(*(t.float() for t in inputs), starts, zero, 64)
    c, n, expected = zero[0].double(), zero[1].double(), []
    for t in range(200):
        keep = (~starts[t]).double()[:, None]
        f, i = log_f[t].exp(), i_pre[t].exp()
        c = (
            keep[..., None, None] * f[..., None, None] * c
            + i[..., None, None] * v[t, ..., None] * k[t, ..., None, :]
        )
        n = keep[..., None] * f[..., None] * n + i[..., None] * k[t]
        den = (n * q[t]).sum(-1).abs().clamp(min=1.0)
        expected.append((c @ q[t, ..., None]).squeeze(-1) / den[..., None])
    assert i_pre.max() > 100 and bool(torch.isfinite(h32).all())
    torch.testing.assert_close(h32.double(), torch.stack(expected), atol=1e-3, rtol=1e-3)


def test_mlstm_kind_equals_its_loop_reference(monkeypatch):
    """The mlstm memory gives the same outputs, state and gradients with its cell swapped
    for the plain stabilised loop."""
    from pomdp_bench.memory.kinds import mlstm

    assert_same_with_cell_swapped(
        monkeypatch,
        mlstm,
        "mlstm_chunkwise",
        "mlstm",
        (mlstm_chunkwise, lambda *a: mlstm_sequential(*a[:-1])),
    )


def assert_same_with_cell_swapped(monkeypatch, module, name: str, kind: str, cells) -> None:
    """``kind`` gives the same outputs, final state and parameter gradients (float32, atol
    1e-5) with ``module.name`` set to each of ``cells`` in turn: 40 steps, starts inside."""
    x = torch.randn(40, 3, D, generator=torch.Generator().manual_seed(5))
    starts = random_starts(40, 3, 0.1, 5)
    results = []
    for cell in cells:
        monkeypatch.setattr(module, name, cell)
        memory = make(kind, 2)
        y, final = memory(x, lived_in_state(memory, 3, 1), starts)
        (y.square().mean() + final[1].square().mean()).backward()
        grads = [p.grad for _, p in sorted(memory.named_parameters())]
        results.append((y.detach(), [s.detach() for s in final], grads))
    (y1, s1, g1), (y2, s2, g2) = results
    torch.testing.assert_close(y1, y2, atol=1e-5, rtol=1e-5)
    for a, b in zip((*s1, *g1), (*s2, *g2), strict=True):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4)


def test_slstm_equals_the_unstabilised_recurrence():
    """The stabilised sLSTM layer equals exponential gating written plainly in float64
    (``c = f c + e^ĩ z``, ``n = f n + e^ĩ``, ``h = o c / n``), resets included, and its
    normaliser stays >= 1."""
    from pomdp_bench.memory.kinds.slstm import SLSTMLayer

    torch.manual_seed(0)
    layer = SLSTMLayer(8, 2)
    steps, batch = 30, 3
    u = torch.randn(steps, batch, 8)
    starts = random_starts(steps, batch, 0.1, 0)
    zero = tuple(torch.zeros(2, batch, 4) for _ in range(4))
    with torch.no_grad():
        h, (_, _, n, _) = layer(u, zero, (~starts).float())
        w, r = layer.w.double(), layer.r.double()
        pre = w(u.double()).view(steps, batch, 2, 4, 4)  # [T, B, N, gate, d]
        y, c, n_ref, out = torch.zeros(batch, 2, 4, dtype=torch.float64), 0, 0, []
        for t in range(steps):
            keep = (~starts[t]).double()[:, None, None]
            y, c, n_ref = y * keep, c * keep, n_ref * keep
            raw = pre[t] + torch.einsum("bnd,nde->bne", y, r).view(batch, 2, 4, 4)
            i, f, z, o = raw.unbind(2)
            c = torch.sigmoid(f) * c + i.exp() * torch.tanh(z)
            n_ref = torch.sigmoid(f) * n_ref + i.exp()
            y = torch.sigmoid(o) * c / n_ref
            out.append(y.reshape(batch, 8))
    torch.testing.assert_close(h.double(), torch.stack(out), atol=1e-5, rtol=1e-5)
    assert n.min() >= 1 - 1e-6


def test_xlstm_gates_start_as_the_reference_code_does():
    """mlstm: gate weights zero, forget biases 3..6 over the heads; slstm: forget biases
    3..6 over the units, the other gate biases zero."""
    from pomdp_bench.memory.kinds import mlstm, slstm

    block = build_memory({"kind": "mlstm", "num_heads": 4}, input_size=D).blocks[0]
    assert not block.gates.weight.any()
    torch.testing.assert_close(block.gates.bias[4:], torch.linspace(*mlstm.FORGET_BIAS_RANGE, 4))
    assert block.gates.bias[:4].abs().max() < 0.5
    cell = build_memory({"kind": "slstm", "hidden_size": 8, "num_heads": 2}, input_size=D).cells[0]
    bias = cell.w.bias.view(2, 4, 4)  # [N, gate (ĩ, f̃, z̃, õ), d]
    torch.testing.assert_close(bias[:, 1].flatten(), torch.linspace(*slstm.FORGET_BIAS_RANGE, 8))
    assert not bias[:, [0, 2, 3]].any()


def _delta_rule_inputs(case: str, steps: int, dtype: torch.dtype, seed: int = 0):
    """Random inputs of the delta-rule kernel as each kind builds them (3 copies, 2 heads,
    keys of 4, values of 5), starts inside, a lived-in state: ``ssd`` (Mamba-2: a scalar
    decay, no rank-one term), ``gated_delta`` (α S (I - β k kᵀ) + β v kᵀ) and ``rwkv7``
    (a vector decay, ``a = -κ̂``, ``b = κ̂ ⊙ ā``)."""
    gen = torch.Generator().manual_seed(seed)
    batch, heads, dk, dv = 3, 2, 4, 5

    def rand(*shape):
        return torch.randn(*shape, generator=gen, dtype=dtype)

    q, k, v = (
        rand(steps, batch, heads, dk),
        F.normalize(rand(steps, batch, heads, dk), dim=-1),
        rand(steps, batch, heads, dv),
    )
    a = b = None
    if case == "rwkv7":
        log_w = -math.exp(-0.5) * torch.sigmoid(2 * rand(steps, batch, heads, dk))
        kk = F.normalize(rand(steps, batch, heads, dk), dim=-1)
        a, b = -kk, kk * torch.sigmoid(rand(steps, batch, heads, dk))
    else:
        log_w = F.logsigmoid(2 + rand(steps, batch, heads, 1))
        if case == "gated_delta":
            beta = torch.sigmoid(rand(steps, batch, heads, 1))
            a, b, v = k, -log_w.exp() * beta * k, v * beta
    starts = random_starts(steps, batch, 0.15, seed)
    starts[0, 1] = True
    return (q, k, v, log_w, a, b), starts, rand(batch, heads, dv, dk)


@pytest.mark.parametrize("case", ["ssd", "gated_delta", "rwkv7"])
@pytest.mark.parametrize("chunk_size", [1, 3, 7, 64])
def test_delta_rule_chunkwise_equals_the_loop_in_values_states_and_gradients(case, chunk_size):
    """The chunkwise form gives the loop's outputs, final state and gradients (every
    input and the incoming state) in float64, with chunks that do and do not divide the
    17 steps and starts inside chunks and at their edges."""
    inputs, starts, state = _delta_rule_inputs(case, 17, torch.float64)
    results = []
    for run in (lambda *a: delta_rule_chunkwise(*a, chunk_size), delta_rule_sequential):
        leaves = [None if t is None else t.clone().requires_grad_() for t in (*inputs, state)]
        o, final = run(*leaves[:6], starts, leaves[6])
        (o.square().sum() + final.square().sum()).backward()
        results.append((o.detach(), final.detach(), [t.grad for t in leaves if t is not None]))
    (o1, s1, g1), (o2, s2, g2) = results
    torch.testing.assert_close(o1, o2, atol=1e-10, rtol=1e-10)
    torch.testing.assert_close(s1, s2, atol=1e-10, rtol=1e-10)
    for x, y in zip(g1, g2, strict=True):
        torch.testing.assert_close(x, y, atol=1e-9, rtol=1e-9)


def test_delta_rule_vector_decay_stays_exact_in_float32_at_the_largest_chunk():
    """RWKV-7's strongest decay (``-log w = e^(-1/2)`` every step) over chunks of 64, the
    largest rwkv7 allows: the float32 chunkwise form equals the float64 loop."""
    inputs, starts, state = _delta_rule_inputs("rwkv7", 200, torch.float64, seed=1)
    q, k, v, _, a, b = inputs
    log_w = torch.full_like(q, -math.exp(-0.5))
    want, want_s = delta_rule_sequential(q, k, v, log_w, a, b, starts, state)
    got, got_s = delta_rule_chunkwise(
        *(t.float() for t in (q, k, v, log_w, a, b)), starts, state.float(), rwkv7.MAX_CHUNK
    )
    assert bool(torch.isfinite(got).all())
    torch.testing.assert_close(got.double(), want, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(got_s.double(), want_s, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("kind", ["mamba2", "gated_deltanet", "deltanet", "rwkv7"])
def test_delta_rule_kinds_equal_their_loop_reference(kind, monkeypatch):
    """Each kind on the delta-rule kernel gives the same outputs, state and parameter
    gradients with its chunkwise form swapped for the plain loop (float32, 40 steps over
    chunks of 5 with starts inside)."""
    import importlib

    module = importlib.import_module(f"pomdp_bench.memory.kinds.{SMALL[kind]['kind']}")
    assert_same_with_cell_swapped(
        monkeypatch,
        module,
        "delta_rule_chunkwise",
        kind,
        (delta_rule_chunkwise, lambda *a: delta_rule_sequential(*a[:-1])),
    )


def test_deltanet_without_the_gate_keeps_every_gradient_finite():
    """``gate: false`` (plain DeltaNet, no decay): finite, non-zero gradients over 1024
    steps, as every kind's (test_every_parameter_gets_a_finite_gradient_over_1024_steps)."""
    memory = make("deltanet")
    assert not any("A_log" in name or "alpha" in name for name, _ in memory.named_parameters())
    contract.check_finite_gradients(memory)


def test_linear_attention_line_inits_follow_the_references():
    """mamba2 and gated_deltanet: -A in [1, 16], Δ in [0.001, 0.1]; rwkv7: decays from
    about exp(-e^-7) to exp(-e^-2) a step over the channels, ``k_k = 0.85``, ``k_a = 1``."""
    mixer = build_memory({"kind": "mamba2", "head_size": 8}, input_size=D).mixers[0]
    for layer in (mixer, build_memory({"kind": "gated_deltanet"}, input_size=D).blocks[0]):
        a = layer.A_log.exp()
        assert a.min() >= 1 - 1e-6 and a.max() <= 16 + 1e-5
        dt = F.softplus(layer.dt_bias)
        assert dt.min() >= 1e-3 * 0.999 and dt.max() <= 0.1 * 1.001
    tmix = build_memory({"kind": "rwkv7", "hidden_size": 64}, input_size=D).blocks[0].tmix
    log_w = -math.exp(-0.5) * torch.sigmoid(tmix.w0)
    torch.testing.assert_close((-log_w[[0, -1]]).log().neg(), torch.tensor([7.0, 2.0]), atol=0.25, rtol=0)
    assert (tmix.k_k == 0.85).all() and (tmix.k_a == 1).all()


@pytest.mark.parametrize("kind", SCAN_KINDS)
def test_scan_kinds_equal_their_sequential_reference_in_values_and_gradients(kind, monkeypatch):
    """Each kind built on linear_scan gives the same outputs, final state and parameter
    gradients when its scan is swapped for the plain loop."""
    import importlib

    module = importlib.import_module(f"pomdp_bench.memory.kinds.{SCAN_KINDS[kind]}")
    x = torch.randn(40, 3, D, generator=torch.Generator().manual_seed(5))
    starts = random_starts(40, 3, 0.1, 5)
    results = []
    for scan in (linear_scan, linear_scan_sequential):
        monkeypatch.setattr(module, "linear_scan", scan)
        memory = make(kind, 2)
        state = lived_in_state(memory, 3, 1)
        y, final = memory(x, state, starts)
        (y.square().mean() + final[0].square().mean()).backward()
        results.append(
            (y.detach(), final[0].detach(), [p.grad for _, p in sorted(memory.named_parameters())])
        )
    (y1, s1, g1), (y2, s2, g2) = results
    torch.testing.assert_close(y1, y2, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(s1, s2, atol=1e-5, rtol=1e-5)
    for a, b in zip(g1, g2, strict=True):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4)


def test_linear_recurrence_inits_do_what_they_say():
    """LRU: |λ| on its ring, small phases, γ = sqrt(1 - |λ|²); S5: Λ at HiPPO-N's
    eigenvalues (real part -1/2), steps in [0.001, 0.1]; FFM: decays from 1/2 a step to
    1% after 1024 steps; linear attention: retention timescales 4..1024 over the heads;
    GTrXL: every gate starts mostly closed, passing its input through."""
    from pomdp_bench.memory.kinds import ffm, linear_attention
    from pomdp_bench.memory.kinds import lru as lru_kind
    from pomdp_bench.memory.kinds import s5 as s5_kind

    lru = build_memory({"kind": "lru", "d_state": 256}, input_size=D).layers[0]
    lam, _ = lru.discretised()
    assert lam.abs().min() >= lru_kind.LRU_R_MIN - 1e-6 and lam.abs().max() <= lru_kind.LRU_R_MAX + 1e-6
    assert lam.angle().min() >= 0 and lam.angle().max() <= lru_kind.LRU_MAX_PHASE + 1e-6
    torch.testing.assert_close(lru.gamma_log.exp(), (1 - lam.abs().square()).sqrt(), atol=1e-5, rtol=1e-4)
    s5 = build_memory({"kind": "s5", "d_state": 8}, input_size=D).layers[0]
    torch.testing.assert_close(-s5.lambda_re_log.exp(), torch.full((8,), -0.5))
    assert bool((s5.lambda_im > 0).all()) and bool((s5.lambda_im.diff() > 0).all())
    dt = s5.log_dt.exp()
    assert dt.min() >= s5_kind.S5_DT_MIN * 0.999 and dt.max() <= s5_kind.S5_DT_MAX * 1.001
    cell = build_memory({"kind": "ffm", "d_state": 8, "context_size": 3}, input_size=D).layers[0]
    gamma = cell.decay()
    assert gamma.shape == (8, 3)
    torch.testing.assert_close(gamma.abs()[[0, -1], 0], torch.tensor([0.5, 0.01 ** (1 / ffm.FFM_MAX_PERIOD)]))
    heads = build_memory({"kind": "linear_attention", "num_heads": 4}, input_size=D).blocks[0]
    tau = 1 / (1 - torch.sigmoid(heads.decay_logit))
    torch.testing.assert_close(tau[[0, -1]], torch.tensor([4.0, 1024.0]), rtol=1e-3, atol=0)
    assert linear_attention.initial_decay_logits(1).shape == (1,)
    gtrxl = build_memory({"kind": "gtrxl", "hidden_size": 16, "num_heads": 2}, input_size=D)
    gate = gtrxl.blocks[0].attn_gate
    x, y = torch.randn(50, 16), torch.zeros(50, 16)
    with torch.no_grad():  # z = σ(W_z y + U_z x - 2): about 0.12 on average
        z = torch.sigmoid(gate.from_y(y).chunk(3, -1)[1] + gate.from_x(x).chunk(2, -1)[1] - gate.bias)
    assert 0.05 < z.mean().item() < 0.25


def test_timescales_and_gate_bias_set_the_initial_decays_and_gates():
    """``timescales=(2, 100)``: lru's |λ| on [1/2, 0.99], s5's |λ| = exp(-Δ/2) on the same
    range, linear attention's heads at τ 2..100; ``gate_bias`` sets every GTrXL gate.
    The defaults are the papers' ranges, so stored runs keep their weights."""
    from pomdp_bench.memory.kinds import linear_attention
    from pomdp_bench.memory.kinds import s5 as s5_kind

    def lam(kind: str, **settings) -> torch.Tensor:
        torch.manual_seed(0)
        return (
            build_memory({"kind": kind, "d_state": 256, **settings}, input_size=D).layers[0].discretised()[0]
        )

    for kind in ("lru", "s5"):
        short = lam(kind, timescales=[2, 100]).abs()
        assert short.min() >= 0.5 - 1e-5 and short.max() <= 0.99 + 1e-5
        assert short.min() < 0.55 and short.max() > 0.98  # 256 draws cover the range
    # The defaults are the timescales that map back to the papers' ranges.
    torch.testing.assert_close(lam("lru"), lam("lru", timescales=[10, 1000]))
    s5_default = [
        1 / -math.expm1(-dt / 2) for dt in (s5_kind.S5_DT_MAX, s5_kind.S5_DT_MIN)
    ]  # about 20.5, 2000
    torch.testing.assert_close(lam("s5"), lam("s5", timescales=s5_default))
    heads = build_memory({"kind": "linear_attention", "timescales": (2, 100)}, input_size=D).blocks[0]
    tau = 1 / (1 - torch.sigmoid(heads.decay_logit))
    torch.testing.assert_close(tau, torch.tensor([2.0, 7.368, 27.144, 100.0]), rtol=1e-3, atol=0)
    default = build_memory({"kind": "linear_attention"}, input_size=D).blocks[0].decay_logit
    torch.testing.assert_close(default, linear_attention.initial_decay_logits(4, (4, 1024)))
    cfg = MemoryConfig("lru", timescales=[2, 100])
    assert cfg.timescales == (2.0, 100.0) and cfg.to_dict()["timescales"] == [2.0, 100.0]
    assert MemoryConfig.from_any(cfg.to_dict()) == cfg
    for bias in (0.0, 2.0):
        gtrxl = build_memory(
            {"kind": "gtrxl", "hidden_size": 16, "num_heads": 2, "gate_bias": bias}, input_size=D
        )
        for block in gtrxl.blocks:
            assert (block.attn_gate.bias == bias).all() and (block.mlp_gate.bias == bias).all()
    # gru and lstm with init="forget_bias": the keep gate's bias (LSTM: f of i, f, g, o;
    # GRU: z of r, z, n), every other bias zero; the default 2 drops out of to_dict.
    for kind in ("gru", "lstm"):
        for bias in (2.0, 4.0):
            cfg = MemoryConfig(kind, hidden_size=8, init="forget_bias", gate_bias=bias)
            rnn = build_memory(cfg, input_size=D).rnn
            assert (rnn.bias_ih_l0[8:16] == bias).all() and not rnn.bias_ih_l0[:8].any()
            assert not rnn.bias_ih_l0[16:].any() and not rnn.bias_hh_l0.any()
            assert ("gate_bias" in cfg.to_dict()) == (bias != 2.0)


# ----------------------------------------------------------------------------- memory proof
# Held-out Adam steps at which seeds 0-4 first reached 98% (scripts/measure_test_margins.py,
# max over native AVX-512, AVX512_CORE, AVX2 and SSE4.1/default kernels): framestack 20, gru 60,
# lstm 330 (seed 0; 130 under AVX2 and 160 under SSE4.1: oneDNN's RNN kernels move it most),
# transformer 50, mamba 250; lru 60, s5 60, ffm 50, linear_attention 80, gtrxl 70 (native, AVX2
# and SSE4.1/default kernels gave the same crossings for these five, +-10); mingru 40, minlstm 40,
# mlstm 100 (seed 0 under SSE4.1/default; 70 native and AVX2), slstm 30 (native, AVX2 and
# SSE4.1/default on an AVX2 machine, seeds 0-4); mamba2 170 (seed 0 under SSE4.1/default; 140
# native and AVX2), gated_deltanet 30, rwkv7 50 (native, AVX2 and SSE4.1/default on an AVX2
# machine, seeds 0-4, under load). Each budget in learning_tasks.PROOF is at least
# 2.4 times the slowest, and two of three seeds must solve it.
PROOF_SEEDS = (0, 1, 2)


@pytest.mark.parametrize("kind", MEMORY_KINDS)
def test_memory_proof_recall_the_cue_from_eight_steps_before(kind):
    if kind == "none":  # it cannot remember: chance, whatever the budget
        outcome = train_recall(kind, seed=0)
        chance = 1 / PROOF_SYMBOLS
        asked = cue_batch(torch.Generator().manual_seed(2000), batch=256)[3].sum().item()
        assert outcome.solved_at is None
        assert abs(outcome.final - chance) < 4 * math.sqrt(chance * (1 - chance) / asked) + 0.02
        return
    outcomes = [train_recall(kind, seed) for seed in PROOF_SEEDS]
    solved = [o.solved_at is not None and o.final > 0.95 for o in outcomes]
    assert majority(solved), outcomes


def test_lag_bias_applies_to_the_step_that_many_steps_back():
    """Equal content scores and a large bias at lag 1: every step past its
    episode's first attends to the step before it, at any chunking."""
    steps, batch, hidden, window = 7, 2, 4, 4
    q = torch.zeros(steps, batch, hidden)
    k = torch.zeros(window - 1 + steps, batch, hidden)
    v = torch.arange(window - 1 + steps, dtype=torch.float32)[:, None, None].expand(-1, batch, hidden)
    positions = torch.tensor([[t, t + 5] for t in range(steps)])  # copy 1: mid-episode
    bias = torch.tensor([[0.0, 100.0, 0.0, 0.0]])  # one head
    out = windowed_attention(q, k, v, positions, window, num_heads=1, lag_bias=bias)
    previous = v[window - 2 : window - 2 + steps, :, 0]  # the value one step back
    assert torch.equal(out[1:, 0, 0], previous[1:, 0])
    assert out[0, 0, 0] == v[window - 1, 0, 0]  # an episode's first step sees only itself
    assert torch.equal(out[:, 1, 0], previous[:, 1])


def test_transformer_state_is_inputs_so_new_weights_never_read_old_keys():
    """The state keeps inputs, not keys: after the weights change, continuing from a
    state gives what the new weights compute over the whole history (a key/value cache
    would mix in keys of the old weights)."""
    memory = make("transformer")  # 2 layers, window 6: the state keeps 2 * 5 inputs
    steps, batch = 20, 3
    x = torch.randn(steps, batch, D, generator=torch.Generator().manual_seed(4))
    starts = random_starts(steps, batch, 0.1, 4)
    starts[0] = True
    with torch.no_grad():
        _, state = memory(x[:12], memory.initial_state(batch), starts[:12])
        assert state[0].shape == (batch, 10, D)
        for p in memory.parameters():  # an "update"
            p.add_(0.1 * torch.randn(p.shape, generator=torch.Generator().manual_seed(5)))
        continued, _ = memory(x[12:], state, starts[12:])
        y_all, _ = memory(x, memory.initial_state(batch), starts)
    torch.testing.assert_close(continued, y_all[12:], atol=1e-5, rtol=0)
    # The context's keys and values carry no gradient into the weights.
    y, _ = memory(x[12:], state, starts[12:])
    keys, _ = memory.context_cache(*state)
    assert not keys[0].requires_grad and y.requires_grad


@pytest.mark.parametrize("layers", [1, 2])
@pytest.mark.parametrize(("kind", "kernel"), [("gru", "fused"), ("lstm", "fused"), ("gru", "cpp")])
def test_fused_rnn_equals_the_plain_masked_loop(kind: str, kernel: str, layers: int):
    """rnn.py's fused paths (rnn_fused.py's with starts inside), gru's C++ path (gru_cpp.py)
    and rnn_reference.masked_loop agree: outputs, final state and the gradients of inputs,
    incoming state and weights, with starts inside the sequence."""
    if kernel == "cpp" and gru_cpp.load() is None:
        pytest.skip(f"gru's C++ path cannot be built here: {gru_cpp.why_not()}")
    memory = make(kind, num_layers=layers, kernel=kernel)
    steps, batch = 17, 5
    gen = torch.Generator().manual_seed(7)
    x = torch.randn(steps, batch, D, generator=gen)
    starts = random_starts(steps, batch, 0.2, 7)
    starts[3, 1] = starts[0, 2] = True
    state = tuple(s.detach() for s in lived_in_state(memory, batch, 8))

    def run(forward):
        xs = x.clone().requires_grad_()
        hs = tuple(s.clone().requires_grad_() for s in state)
        memory.zero_grad()
        y, final = forward(xs, hs)
        (y.pow(2).sum() + sum(f.pow(2).sum() for f in final)).backward()
        grads = [xs.grad, *(h.grad for h in hs), *(p.grad.clone() for p in memory.parameters())]
        return y.detach(), tuple(f.detach() for f in final), grads

    fused = run(lambda xs, hs: memory(xs, hs, starts))
    plain = run(lambda xs, hs: masked_loop(memory.rnn, xs, hs, starts))
    torch.testing.assert_close(fused[0], plain[0], atol=1e-5, rtol=0)
    assert_states_close(fused[1], plain[1])
    for got, want in zip(fused[2], plain[2], strict=True):
        torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)
