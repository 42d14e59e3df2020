"""Partially observable environments, each with a natively vectorized twin.

Importing :mod:`pomdp_bench` registers every id listed in the env cards, so
``gym.make("MaskedCartPole-v0")`` and
``gym.make_vec("TMaze-v0", num_envs=8, vectorization_mode="vector_entry_point")``
work, as does ``gym.make("pomdp_bench:TMaze-v0")`` without the import.
"""

from __future__ import annotations

import gymnasium as gym

from pomdp_bench.cards import load_cards


def register_envs() -> None:
    """Register every carded env id with Gymnasium (idempotent)."""
    for card in load_cards().values():
        if card.id in gym.registry:
            continue
        gym.register(
            id=card.id,
            entry_point=card.entry_point,
            vector_entry_point=card.vector_entry_point,
            max_episode_steps=card.max_episode_steps,
            kwargs=dict(card.kwargs),
        )


__all__ = ["register_envs"]
