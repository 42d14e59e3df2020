"""What the Q-learning agents (DQN, PQN) share: their losses and the Q network's layout."""

from __future__ import annotations

from typing import Any, NamedTuple

from gymnasium import spaces

__all__ = ["LOSSES", "DQNNetArch", "discrete_actions"]

LOSSES = ("huber", "mse")


class DQNNetArch(NamedTuple):
    """Hidden widths: ``encoder`` before the memory, ``q`` after it (then one linear
    layer with a Q value per action)."""

    encoder: list[int]
    q: list[int]

    @classmethod
    def parse(cls, net_arch: list[int] | dict[str, list[int]] | None) -> DQNNetArch:
        """Read SB3's DQN forms: ``None`` (``q=[64, 64]``, SB3's default), a list (``q``),
        or a dict with keys ``q`` and optionally ``encoder``."""
        if net_arch is None:
            return cls([], [64, 64])
        if isinstance(net_arch, (list, tuple)):
            return cls([], [int(w) for w in net_arch])
        if isinstance(net_arch, dict):
            unknown = set(net_arch) - {"encoder", "q"}
            if unknown:
                raise ValueError(f"net_arch has unknown keys {sorted(unknown)}; valid: encoder, q")
            return cls(*([int(w) for w in net_arch.get(k, [])] for k in ("encoder", "q")))
        raise TypeError(f"net_arch must be None, a list of ints or a dict, got {net_arch!r}")


def discrete_actions(agent: str, space: Any) -> tuple[int, int]:
    """``(n, start)`` of a ``Discrete`` action space, the only kind a Q-learning agent takes.

    Raises:
        ValueError: another space; the message names the agents that take it.
    """
    if not isinstance(space, spaces.Discrete):
        raise ValueError(
            f"{agent} takes Discrete actions only, got {space}: use PPO (Discrete, Box, MultiDiscrete) "
            "or SAC (Discrete, bounded Box)"
        )
    return int(space.n), int(space.start)
