"""Independent env streams per run: reset seeds split from a run's seed.

Gymnasium's convention ``vec.reset(seed=s)`` seeds copy ``i`` with ``s + i``, so
handing seed ``s`` to run ``s`` makes copy ``i + 1`` of run 0 replay copy ``i`` of
run 1: adjacent runs would share most of their episodes. Our agents never pass a
bare seed to a reset. They hand the vector env one reset seed per copy, drawn from
``numpy.random.SeedSequence(seed, spawn_key=(purpose,))``, a splitter built for
exactly this (distinct ``(seed, purpose)`` give statistically independent streams).
Training and evaluation are different purposes, so they never share an episode
either.
"""

from __future__ import annotations

import numpy as np

# The purposes a run draws env episodes for; the value is the SeedSequence spawn key
# (a check's key also holds its index, see check_seed).
PURPOSES: dict[str, int] = {"train": 0, "evaluate": 1, "check": 2}


def env_seeds(seed: int, purpose: str, num_envs: int) -> list[int]:
    """Reset seeds for the ``num_envs`` copies of one run's vector env.

    Args:
        seed: the run's (agent's) seed, a non-negative int.
        purpose: ``"train"`` or ``"evaluate"``.
        num_envs: how many copies.

    Returns:
        ``num_envs`` ints in ``[0, 2**63)`` (they fit numpy's int64), for
        ``vec.reset(seed=[...])``.
    """
    if purpose not in ("train", "evaluate"):
        raise ValueError(f"purpose must be 'train' or 'evaluate', got {purpose!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    state = np.random.SeedSequence(int(seed), spawn_key=(PURPOSES[purpose],)).generate_state(
        num_envs, np.uint64
    )
    return [int(s) for s in state >> np.uint64(1)]


def check_seed(seed: int, index: int) -> int:
    """The root seed of a run's ``index``-th evaluation during training (a check of an
    early-stopping rule), for ``evaluate(seed=...)``: split from the run's seed, so each
    check draws fresh episodes, shared with no other check, the final evaluation or
    training."""
    if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or index < 0:
        raise ValueError(f"index must be a non-negative int, got {index!r}")
    state = np.random.SeedSequence(int(seed), spawn_key=(PURPOSES["check"], int(index))).generate_state(
        1, np.uint64
    )
    return int(state[0] >> np.uint64(1))
