"""The memory contract as checks anyone can run on a memory block, as Gymnasium's
``check_env`` is for envs.

Every memory kind, shipped or added (:func:`~pomdp_bench.memory.register_memory`),
must pass :func:`check_memory`: ``tests/test_memory.py`` runs each check on every
shipped kind, and ``examples/new_memory_kind.py`` on a new one. What the checks hold
(see docs/DESIGN.md, "Memory kinds"):

- :func:`check_shapes`: ``[T, B, D] -> [T, B, output_size]``; the state is a tuple
  of batch-first tensors ``[B, ...]``, zero at the start, of the same shapes after a
  call, and a buffer may index and concatenate it without knowing the kind.
- :func:`check_refuses_mismatched_shapes`: wrong input, start or state shapes raise
  ``ValueError``.
- :func:`check_step_equals_sequence`: one step at a time, uneven pieces carrying the
  state, and the whole sequence agree (outputs and final state), with episode starts
  inside the sequence and at step 0. This is what lets acting and training run the
  same code.
- :func:`check_reset_isolation`: nothing before an episode start changes anything at
  or after it, in that copy or any other.
- :func:`check_zero_state_is_a_fresh_episode`: the zero state behaves as a start.
- :func:`check_finite_gradients`: every parameter gets a finite gradient over a long
  sequence with starts.
- :func:`check_save_and_load`: its ``state_dict`` loaded into a freshly built memory
  of the same config gives identical outputs and states.

Each raises ``AssertionError`` saying what broke.
"""

from __future__ import annotations

import itertools

import torch
from torch import Tensor

from pomdp_bench.memory.base import Memory, State


def random_starts(steps: int, batch: int, prob: float, seed: int) -> Tensor:
    """``[steps, batch]`` bool episode starts, each true with probability ``prob``."""
    return torch.rand(steps, batch, generator=torch.Generator().manual_seed(seed)) < prob


def lived_in_state(memory: Memory, batch: int, seed: int) -> State:
    """A mid-episode state: the memory after 7 steps of random inputs, without gradient."""
    x = torch.randn(7, batch, memory.input_size, generator=torch.Generator().manual_seed(seed))
    with torch.no_grad():
        _, state = memory(x, memory.initial_state(batch), torch.zeros(7, batch, dtype=torch.bool))
    return state


def assert_states_close(a: State, b: State, atol: float = 1e-5) -> None:
    """Two states agree: float parts within ``atol``, integer parts (positions) exactly."""
    assert len(a) == len(b), f"states have {len(a)} and {len(b)} tensors"
    for i, (s, t) in enumerate(zip(a, b, strict=True)):
        if s.is_floating_point():
            torch.testing.assert_close(s, t, atol=atol, rtol=0, msg=lambda m, i=i: f"state[{i}]: {m}")
        else:
            assert torch.equal(s, t), f"state[{i}] differs"


def check_shapes(memory: Memory, batch: int = 4) -> None:
    """Output and state shapes, and a state that buffers can index and concatenate."""
    d, out = memory.input_size, memory.output_size
    state = memory.initial_state(batch)
    assert isinstance(state, tuple), f"initial_state must be a tuple, got {type(state).__name__}"
    for i, s in enumerate(state):
        assert s.shape[0] == batch, f"state[{i}] must be batch-first [B, ...], got {tuple(s.shape)}"
        assert not s.any(), f"state[{i}] must start at zero"
    y, new_state = memory(torch.randn(6, batch, d), state, torch.zeros(6, batch))  # 0/1 floats work too
    assert y.shape == (6, batch, out), f"output must be [6, {batch}, {out}], got {tuple(y.shape)}"
    assert [s.shape for s in new_state] == [s.shape for s in state], "the state changed shape in a call"
    idx = torch.tensor([2, 0])
    joined = tuple(torch.cat([s[idx], s[idx]]) for s in new_state)
    y2, _ = memory(torch.randn(1, 4, d), joined, torch.zeros(1, 4, dtype=torch.bool))
    assert y2.shape == (1, 4, out), "a state indexed and concatenated along B must work"


def check_refuses_mismatched_shapes(memory: Memory) -> None:
    """Wrong input width, start shape or state raise ``ValueError``."""
    d = memory.input_size
    state = memory.initial_state(3)
    starts = torch.zeros(4, 3, dtype=torch.bool)
    cases = [
        ("an input of the wrong width", torch.randn(4, 3, d + 1), state, starts),
        ("starts of the wrong shape", torch.randn(4, 3, d), state, starts[:, :2]),
    ]
    if state:
        cases.append(("a state missing a tensor", torch.randn(4, 3, d), state[:-1], starts))
        cases.append(
            ("a state of the wrong batch", torch.randn(4, 3, d), tuple(s[:2] for s in state), starts)
        )
    for what, x, s, st in cases:
        try:
            memory(x, s, st)
        except ValueError:
            continue
        raise AssertionError(f"{what} must raise ValueError")


def check_step_equals_sequence(memory: Memory, seed: int = 0, steps: int = 23, batch: int = 4) -> None:
    """Step by step, uneven pieces and the whole sequence agree, starts inside included."""
    x = torch.randn(steps, batch, memory.input_size, generator=torch.Generator().manual_seed(seed))
    starts = random_starts(steps, batch, 0.15, seed)
    starts[5, 1] = True
    starts[0, 2] = True  # a start at step 0 discards the incoming state
    state0 = lived_in_state(memory, batch, seed + 10)
    cut = (0, steps // 2 - 2, steps // 2 - 1, steps)  # pieces start mid-episode from the carried state
    with torch.no_grad():
        y_all, state_all = memory(x, state0, starts)
        for name, bounds in (("one step at a time", range(steps + 1)), ("uneven pieces", cut)):
            state, ys = state0, []
            for a, b in itertools.pairwise(bounds):
                y, state = memory(x[a:b], state, starts[a:b])
                ys.append(y)
            torch.testing.assert_close(
                torch.cat(ys), y_all, atol=1e-5, rtol=0, msg=lambda m, n=name: f"{n} vs the sequence: {m}"
            )
            assert_states_close(state, state_all)


def check_reset_isolation(memory: Memory, seed: int = 3) -> None:
    """Changing anything before an episode start changes nothing at or after it."""
    steps, batch, start = 20, 3, 11
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(steps, batch, memory.input_size, generator=gen)
    starts = torch.zeros(steps, batch, dtype=torch.bool)
    starts[start, 1] = True
    starts[0, 2] = True
    state = lived_in_state(memory, batch, seed)
    with torch.no_grad():
        y, final = memory(x, state, starts)
        x2 = x.clone()
        x2[:start, 1] += 10 * torch.randn(start, memory.input_size, generator=gen)  # copy 1, before its start
        state2 = tuple(s.clone() for s in state)
        for s in state2:  # copies 1 and 2: the incoming state
            s[1:] = (
                s[1:] + 3 if not s.is_floating_point() else s[1:] + torch.randn(s[1:].shape, generator=gen)
            )
        y2, final2 = memory(x2, state2, starts)
    torch.testing.assert_close(y2[start:, 1], y[start:, 1], atol=1e-6, rtol=0, msg="copy 1 after its start")
    torch.testing.assert_close(y2[:, 2], y[:, 2], atol=1e-6, rtol=0, msg="copy 2, started at step 0")
    torch.testing.assert_close(y2[:, 0], y[:, 0], atol=0, rtol=0, msg="copy 0, untouched")
    assert_states_close(final2, final, atol=1e-6)


def check_zero_state_is_a_fresh_episode(memory: Memory, seed: int = 4) -> None:
    """Starting from the zero state equals starting an episode at step 0."""
    x = torch.randn(9, 3, memory.input_size, generator=torch.Generator().manual_seed(seed))
    starts = random_starts(9, 3, 0.2, seed)
    with torch.no_grad():
        y_zero, s_zero = memory(x, memory.initial_state(3), starts)
        starts[0] = True
        y_start, s_start = memory(x, lived_in_state(memory, 3, seed + 1), starts)
    torch.testing.assert_close(y_zero, y_start, atol=1e-6, rtol=0, msg="zero state vs a start at step 0")
    assert_states_close(s_zero, s_start, atol=1e-6)


def check_finite_gradients(memory: Memory, steps: int = 1024, batch: int = 2, seed: int = 6) -> None:
    """Over ``steps`` steps with episode starts, the output is finite, and the input and
    every parameter get a finite, non-zero gradient (through the output and the final
    state)."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(steps, batch, memory.input_size, generator=gen).requires_grad_()
    starts = random_starts(steps, batch, 0.01, seed)
    memory.zero_grad()
    y, state = memory(x, memory.initial_state(batch), starts)
    assert bool(torch.isfinite(y).all()), f"a non-finite output over {steps} steps"
    loss = y.square().mean() + sum(s.float().square().mean() for s in state if s.is_floating_point())
    loss.backward()
    assert x.grad is not None and bool(torch.isfinite(x.grad).all()), "the input's gradient is not finite"
    assert bool(x.grad.abs().sum() > 0), "no gradient reaches the input"
    for name, param in memory.named_parameters():
        assert param.grad is not None, f"{name} gets no gradient"
        assert bool(torch.isfinite(param.grad).all()), f"{name} has a non-finite gradient"
        assert bool(param.grad.abs().sum() > 0), f"{name}'s gradient is zero"


def check_save_and_load(memory: Memory, seed: int = 7) -> None:
    """``memory.state_dict()`` loaded into a memory freshly built (with other random
    weights) from the same config gives bit-identical outputs and states, from a
    lived-in state with starts inside: everything a forward reads is saved."""
    with torch.random.fork_rng():
        torch.manual_seed(seed + 1000)
        fresh = type(memory)(memory.config, memory.input_size)
    fresh.load_state_dict(memory.state_dict())
    x = torch.randn(11, 3, memory.input_size, generator=torch.Generator().manual_seed(seed))
    starts = random_starts(11, 3, 0.2, seed)
    state = lived_in_state(memory, 3, seed)
    with torch.no_grad():
        y, final = memory(x, state, starts)
        y2, final2 = fresh(x, state, starts)
    torch.testing.assert_close(y2, y, atol=0, rtol=0, msg=lambda m: f"loaded vs saved memory: {m}")
    assert_states_close(final2, final, atol=0)


def check_memory(memory: Memory, seed: int = 0) -> None:
    """Every check of the contract on ``memory`` (see the module docstring).

    Raises:
        AssertionError: the first check that fails, saying what broke.
    """
    check_shapes(memory)
    check_refuses_mismatched_shapes(memory)
    check_step_equals_sequence(memory, seed)
    check_reset_isolation(memory)
    check_zero_state_is_a_fresh_episode(memory)
    check_finite_gradients(memory)
    check_save_and_load(memory)
