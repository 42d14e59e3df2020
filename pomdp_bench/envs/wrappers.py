"""Wrappers named by import path, so a suite, a save and a Ray task can carry them.

An outside env often needs a wrapper before an agent can read it: MiniGrid's
``MiniGrid-MemoryS7-v0`` observes a Dict with a text ``mission``, which
``minigrid.wrappers:ImgObsWrapper`` removes. A wrapper is named as plain data::

    "minigrid.wrappers:ImgObsWrapper"                                  # no kwargs
    {"path": "gymnasium.wrappers:TimeLimit", "kwargs": {"max_episode_steps": 200}}

:func:`check_wrappers` turns either form into ``{"path", "kwargs"}`` dicts (what a
:class:`~pomdp_bench.harness.spec.RunSpec` and an agent's save hold), and
:func:`apply_wrappers` wraps one env copy with them, first to last.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np

#: One wrapper as plain data: its import path and kwargs.
WrapperSpec = dict[str, Any]


def check_wrappers(wrappers: Sequence[str | Mapping[str, Any]] | None) -> list[WrapperSpec]:
    """Wrappers as ``[{"path": "module:Name", "kwargs": {...}}]``, checked for form.

    Raises:
        TypeError: ``wrappers`` is not a list, or an entry is neither a string nor a dict.
        ValueError: an entry has unknown keys or a path without ``module:Name``.
    """
    if wrappers is None:
        return []
    if isinstance(wrappers, (str, Mapping)) or not isinstance(wrappers, Sequence):
        raise TypeError(
            f"wrappers must be a list of 'module:Name' strings or {{path, kwargs}} dicts, got {wrappers!r}"
        )
    checked = []
    for entry in wrappers:
        if isinstance(entry, str):
            entry = {"path": entry, "kwargs": {}}
        if not isinstance(entry, Mapping):
            raise TypeError(f"a wrapper is a 'module:Name' string or a {{path, kwargs}} dict, got {entry!r}")
        unknown = set(entry) - {"path", "kwargs"}
        if unknown:
            raise ValueError(
                f"wrapper {entry!r}: unknown keys {sorted(unknown)}; valid keys: ['kwargs', 'path']"
            )
        path, kwargs = entry.get("path"), entry.get("kwargs") or {}
        if not isinstance(path, str) or path.count(":") != 1 or not all(path.split(":")):
            raise ValueError(
                f"wrapper path must be 'module:Name' (e.g. 'minigrid.wrappers:ImgObsWrapper'), got {path!r}"
            )
        if not isinstance(kwargs, Mapping):
            raise TypeError(f"wrapper {path}: kwargs must be a dict, got {kwargs!r}")
        checked.append({"path": path, "kwargs": dict(kwargs)})
    return checked


def wrapper_class(path: str) -> Any:
    """The wrapper (a class or a function of an env) at ``"module:Name"``.

    Raises:
        ValueError: the module does not import or has no such name.
    """
    module_name, name = path.split(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise ValueError(f"wrapper {path}: cannot import {module_name!r} ({err})") from err
    if not hasattr(module, name):
        raise ValueError(f"wrapper {path}: module {module_name!r} has no {name!r}")
    return getattr(module, name)


def apply_wrappers(env: gym.Env, wrappers: Sequence[WrapperSpec]) -> gym.Env:
    """``env`` wrapped by each of ``wrappers`` (from :func:`check_wrappers`), first to last."""
    for wrapper in wrappers:
        env = wrapper_class(wrapper["path"])(env, **wrapper["kwargs"])
    return env


class Seed32(gym.Wrapper):
    """Reset seeds folded into 32 bits, for envs that seed numpy's legacy global generator
    (``np.random.seed`` takes ``0 .. 2**32 - 1``, as POPGym's Labyrinths do), while the
    agents split 64-bit seeds (:mod:`pomdp_bench.agents.seeding`). The fold is
    ``SeedSequence(seed)``'s first 32-bit word: distinct seeds stay distinct but for
    chance collisions (about one in 4e9 per pair).

    In a suite: ``wrappers: [pomdp_bench.envs.wrappers:Seed32]``.
    """

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        if seed is not None:
            seed = int(np.random.SeedSequence(int(seed)).generate_state(1, np.uint32)[0])
        return self.env.reset(seed=seed, options=options)
