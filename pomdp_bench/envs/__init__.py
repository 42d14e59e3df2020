"""Partially observable environments, each with a natively vectorized twin.

Importing :mod:`pomdp_bench` registers every id listed in the env cards, so
``gym.make("MaskedCartPole-v0")`` and
``gym.make_vec("TMaze-v1", num_envs=8, vectorization_mode="vector_entry_point")``
work, as does ``gym.make("pomdp_bench:TMaze-v1")`` without the import.
:func:`register_card` adds an env of your own, with its card, so the agents and the
harness treat it as one of ours (``examples/new_env.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import gymnasium as gym

from pomdp_bench.envs.cards import EnvCard, add_card, load_cards, read_card


def _register(card: EnvCard) -> None:
    gym.register(
        id=card.id,
        entry_point=card.entry_point,
        vector_entry_point=card.vector_entry_point,
        max_episode_steps=card.max_episode_steps,
        kwargs=dict(card.kwargs),
    )


def register_envs() -> None:
    """Register every carded env id with Gymnasium (idempotent)."""
    for card in load_cards().values():
        if card.id not in gym.registry:
            _register(card)


def register_card(card: str | Path | Mapping[str, Any] | EnvCard) -> EnvCard:
    """Add an env of your own: its card (a YAML path, a dict or an :class:`EnvCard`)
    becomes known to :func:`pomdp_bench.envs.cards.get_card` (so the harness reads its
    ceiling, horizon and budget) and its id is registered with Gymnasium (replacing an
    earlier registration of the same id).

    The card's ``entry_point`` is ``"module:Class"`` (``"__main__:MyEnv"`` for a class
    in the running script); ``vector_entry_point`` may be ``None``, and the agents then
    step copies with Gymnasium's ``SyncVectorEnv``.

    Returns:
        the card.

    Raises:
        ValueError: the card is malformed (the message lists the keys) or its id is one
            of the shipped envs.
    """
    card = card if isinstance(card, EnvCard) else read_card(card)
    add_card(card)
    gym.registry.pop(card.id, None)
    _register(card)
    return card


__all__ = ["register_card", "register_envs"]
