"""Tuned settings as data: ``agents/<agent>.yaml``, read by one small module.

Each file holds, per env id, an agent's constructor settings (rl-zoo3's
``hyperparams/`` in spirit), with optional horizon bands. This module reads them and
imports no agent, so both the agents (``PPO.from_tuned``) and the harness use it.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import yaml

from pomdp_bench.data import data_dir
from pomdp_bench.envs.cards import get_card

__all__ = ["EPISODE_SETTINGS", "count_episodes", "hyperparameter_file", "tuned_hyperparameters"]


@functools.cache
def hyperparameter_file(agent: str) -> dict[str, Any]:
    """The parsed ``agents/<agent>.yaml`` (empty when there is no such file)."""
    path = data_dir("agents") / f"{agent}.yaml"
    return (yaml.safe_load(path.read_text()) or {}) if path.is_file() else {}


def tuned_hyperparameters(
    agent: str, env_id: str, env_kwargs: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The tuned settings of ``agent`` (``"ppo"``, ``"sac"``) for ``env_id`` from
    ``agents/<agent>.yaml``: the env id's entry, else its ``default`` entry, else none.

    An entry may hold ``horizons: {H: {...}, ...}``: settings for memory horizons up to
    ``H`` (the env card's horizon for ``env_kwargs``), laid over the rest of the entry.
    The smallest band that covers the horizon applies; beyond the largest, the largest.
    In a band, ``n_steps`` and ``bptt_length`` may count whole episodes, ``"4T"`` or
    ``"T"``, for envs whose card gives a fixed episode length (:func:`count_episodes`).
    """
    table = hyperparameter_file(agent)
    entry = dict(table.get(env_id, table.get("default", {})) or {})
    bands = entry.pop("horizons", None)
    if not bands:
        return entry
    card, kwargs = get_card(env_id), dict(env_kwargs or {})
    horizon = card.horizon_for(kwargs)
    bounds = sorted(int(bound) for bound in bands)
    chosen = next((bound for bound in bounds if horizon <= bound), bounds[-1])
    band = count_episodes(dict(bands[chosen] or {}), card.episode_length_for(kwargs), env_id)
    return {**entry, **band}


# Settings a horizon band may give in episodes ("4T": four episodes' steps).
EPISODE_SETTINGS = ("n_steps", "bptt_length", "sequence_length")


def count_episodes(band: dict[str, Any], episode_length: int | None, env_id: str = "") -> dict[str, Any]:
    """``band`` with each ``"kT"`` value of :data:`EPISODE_SETTINGS` turned into ``k *
    episode_length`` steps (``"T"``: one episode), so that a rollout holds whole episodes
    and a piece is one, at every horizon of the band.

    Raises:
        ValueError: an episode count where the env has no fixed episode length, or a
            value that is neither a number nor ``"kT"``.
    """
    out = dict(band)
    for name in EPISODE_SETTINGS:
        value = out.get(name)
        if not isinstance(value, str):
            continue
        count = value[:-1] if value.endswith("T") else None
        if count is None or not (count == "" or count.isdigit()):
            raise ValueError(f"{name}={value!r}: give a number of steps or of episodes ('T', '4T')")
        if episode_length is None:
            raise ValueError(
                f"{name}={value!r} counts episodes, but {env_id or 'the env'}'s card gives no "
                "episode_length_formula (its episodes vary in length); give a number of steps"
            )
        out[name] = int(count or 1) * episode_length
    return out
