"""Wrappers named by import path, so a suite, a save and a Ray task can carry them.

An outside env often needs a wrapper before an agent can read it: MiniGrid's
``MiniGrid-MemoryS7-v0`` observes a Dict with a text ``mission``, which
``minigrid.wrappers:ImgObsWrapper`` removes. A wrapper is named as plain data::

    "minigrid.wrappers:ImgObsWrapper"                                  # no kwargs
    {"path": "gymnasium.wrappers:TimeLimit", "kwargs": {"max_episode_steps": 200}}

:func:`check_wrappers` turns either form into ``{"path", "kwargs"}`` dicts (what a
:class:`~pomdp_bench.harness.spec.RunSpec` and an agent's save hold), and
:func:`apply_wrappers` wraps one env copy with them, first to last.

A path names code to import, so it is checked as data first: ``module:Name``, dotted
identifiers only (:func:`pomdp_bench.validation.check_import_path`), and what it names
must be a :class:`gymnasium.Wrapper` subclass (its vector twin, a ``vector_wrapper``
attribute, a :class:`gymnasium.vector.VectorWrapper` subclass); any other callable is refused. Importing the module still runs its code, as
``pip install`` does: name only modules you trust.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from pomdp_bench.validation import ArgumentTypeError, check_float, check_import_path

#: One wrapper as plain data: its import path and kwargs.
WrapperSpec = dict[str, Any]


def check_wrappers(wrappers: Sequence[str | Mapping[str, Any]] | None) -> list[WrapperSpec]:
    """Wrappers as ``[{"path": "module:Name", "kwargs": {...}}]``, checked for form.

    Raises:
        TypeError: ``wrappers`` is not a list, or an entry is neither a string nor a dict.
        ValueError: an entry has unknown keys or a path that is not ``module:Name``
            (dotted identifiers, then one identifier).
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
        check_import_path(path, what="wrapper path", attribute=True)
        if not isinstance(kwargs, Mapping):
            raise TypeError(f"wrapper {path}: kwargs must be a dict, got {kwargs!r}")
        checked.append({"path": path, "kwargs": dict(kwargs)})
    return checked


def wrapper_class(path: str) -> type[gym.Wrapper]:
    """The wrapper class at ``"module:Name"``, a :class:`gymnasium.Wrapper` subclass (it
    wraps each env copy). Importing ``module`` runs its code.

    A ``vector_wrapper`` attribute on the class (its vector twin, as
    :class:`PreviousReward` has) must be a :class:`gymnasium.vector.VectorWrapper`
    subclass. A ``VectorWrapper`` is not named directly: it wraps a vector env, not a copy.

    Raises:
        ValueError: ``path`` is not ``module:Name``, or the module does not import or has
            no such name.
        ArgumentTypeError: (a ``TypeError`` and a ``ValueError``) the name is not a
            wrapper class (a function or any other object is refused).
    """
    module_name, name = check_import_path(path, what="wrapper path", attribute=True).split(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise ValueError(f"wrapper {path}: cannot import {module_name!r} ({err})") from err
    if not hasattr(module, name):
        raise ValueError(f"wrapper {path}: module {module_name!r} has no {name!r}")
    found = getattr(module, name)
    if not (isinstance(found, type) and issubclass(found, gym.Wrapper)):
        raise ArgumentTypeError(
            f"wrapper {path} is {_describe(found)}; a wrapper path must name a "
            "gymnasium.Wrapper subclass (a vector twin, a gymnasium.vector.VectorWrapper "
            "subclass, goes in its vector_wrapper attribute)"
        )
    twin = getattr(found, "vector_wrapper", None)
    if twin is not None and not (isinstance(twin, type) and issubclass(twin, gym.vector.VectorWrapper)):
        raise ArgumentTypeError(
            f"wrapper {path}: its vector_wrapper is {_describe(twin)}; it must be a "
            "gymnasium.vector.VectorWrapper subclass"
        )
    return found


def _describe(value: Any) -> str:
    """What ``value`` is, without calling its ``repr`` (which is the named module's code)."""
    if isinstance(value, type):
        return f"the class {value.__module__}.{value.__qualname__}"
    return f"a {type(value).__name__} object"


def apply_wrappers(env: gym.Env, wrappers: Sequence[WrapperSpec]) -> gym.Env:
    """``env`` wrapped by each of ``wrappers`` (from :func:`check_wrappers`), first to last."""
    for wrapper in wrappers:
        env = wrapper_class(wrapper["path"])(env, **wrapper["kwargs"])
    return env


class Seed32(gym.Wrapper):
    """Reset seeds folded into 32 bits, for envs that seed numpy's legacy global generator
    (``np.random.seed`` takes ``0 .. 2**32 - 1``, as POPGym's Labyrinths do), while the
    agents split 64-bit seeds (:mod:`pomdp_bench.agents.common.seeding`). The fold is
    ``SeedSequence(seed)``'s first 32-bit word: distinct seeds stay distinct but for
    chance collisions (about one in 4e9 per pair).

    In a suite: ``wrappers: [pomdp_bench.envs.wrappers:Seed32]``.
    """

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        if seed is not None:
            seed = int(np.random.SeedSequence(int(seed)).generate_state(1, np.uint32)[0])
        return self.env.reset(seed=seed, options=options)


class PreviousReward(gym.ObservationWrapper):
    """The previous step's reward, times ``scale``, appended to a 1-d ``Box`` observation
    (0 at an episode's first step), as recurrent agents commonly take it (Ni et al.
    2022 and 2023 feed ``(o_t, a_{t-1}, r_{t-1})`` to their memories; RL^2 likewise).

    It lets a critic tell from its inputs what the observations hide. On T-Maze the
    corridor looks the same on and behind schedule, so a critic that sees observations
    alone expects the average of the two and charges the penalties that follow one wrong
    step to the "right" steps after it; with the reward in sight (``-1/L`` a step behind
    schedule, 0 on it) it knows at once. It adds no memory: a memoryless policy that sees
    it still cannot know the cue. Do not use it where the reward says what the memory
    should (MaskedPendulum's reward depends on the hidden angular velocity).

    =====================  ===============================================
    observation            ``[*obs, scale * r_{t-1}]``, ``float32``, ``[D + 1]``
    action, reward, ends   the wrapped env's
    =====================  ===============================================

    Args:
        env: an env with a 1-d ``Box`` observation space.
        scale: the factor on the reward, so that a small reward (T-Maze's ``-1/L``) reaches
            the network at a usable size: on T-Maze, ``L`` makes a penalty step ``-1``.

    In a suite: ``wrappers: [{path: "pomdp_bench.envs.wrappers:PreviousReward", kwargs: {scale: 100}}]``.
    A native vector twin (:class:`PreviousRewardVector`) keeps an env's fast vector path.
    """

    def __init__(self, env: gym.Env, scale: float = 1.0) -> None:
        super().__init__(env)
        self.scale = _check_scale(scale)
        self.observation_space = _with_reward_slot(env.observation_space)
        self._reward = 0.0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        self._reward = 0.0
        return super().reset(seed=seed, options=options)

    def step(self, action: Any) -> Any:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._reward = float(reward)
        return self.observation(obs), reward, terminated, truncated, info

    def observation(self, observation: Any) -> np.ndarray:
        tail = np.array([self.scale * self._reward], dtype=np.float32)
        return np.concatenate([np.asarray(observation, dtype=np.float32), tail])


class PreviousRewardVector(gym.vector.VectorWrapper):
    """:class:`PreviousReward` over a whole vector env at once, for natively vectorized
    envs (one numpy op a step instead of a Python wrapper per copy). The same observations
    copy for copy, in either autoreset mode: a copy's first step after an autoreset sees
    0, and ``info["final_obs"]`` (``SAME_STEP``) carries the final step's reward."""

    def __init__(self, env: gym.vector.VectorEnv, scale: float = 1.0) -> None:
        super().__init__(env)
        self.scale = _check_scale(scale)
        self.single_observation_space = _with_reward_slot(env.single_observation_space)
        self.observation_space = gym.vector.utils.batch_space(self.single_observation_space, env.num_envs)
        self._restart = np.zeros(env.num_envs, dtype=np.bool_)  # NEXT_STEP: this step is a reset

    def reset(self, *, seed: Any = None, options: dict[str, Any] | None = None) -> Any:
        obs, info = self.env.reset(seed=seed, options=options)
        self._restart[:] = False
        return self._append(obs, np.zeros(self.num_envs, dtype=np.float32)), info

    def step(self, actions: Any) -> Any:
        obs, reward, terminated, truncated, info = self.env.step(actions)
        done = np.logical_or(terminated, truncated)
        seen = np.where(self._restart, 0.0, reward).astype(np.float32)  # [B]
        mode = self.env.metadata.get("autoreset_mode")
        if mode == gym.vector.AutoresetMode.SAME_STEP:
            if "final_obs" in info:
                info = dict(info)
                final = np.full(self.num_envs, None, dtype=object)
                for i in np.flatnonzero(done):
                    final[i] = self._append_one(info["final_obs"][i], seen[i])
                info["final_obs"] = final
            seen = np.where(done, 0.0, seen).astype(np.float32)  # the new episode's first step
        else:
            self._restart = done
        return self._append(obs, seen), reward, terminated, truncated, info

    def _append(self, obs: np.ndarray, reward: np.ndarray) -> np.ndarray:
        tail = (self.scale * reward).astype(np.float32)[:, None]  # [B, 1]
        return np.concatenate([np.asarray(obs, dtype=np.float32), tail], axis=1)

    def _append_one(self, obs: np.ndarray, reward: float) -> np.ndarray:
        return np.concatenate([np.asarray(obs, dtype=np.float32), [np.float32(self.scale * reward)]])


PreviousReward.vector_wrapper = PreviousRewardVector


class PreviousAction(gym.Wrapper):
    """The previous action and a first-step flag beside each observation, as POPGym's
    baselines feed their memory models (``popgym.wrappers.PreviousAction`` then
    ``Antialias``; those wrap only a bare POPGym env, this one any env).

    =====================  =====================================================
    observation            ``Tuple(obs, action, Discrete(2))``: the env's observation,
                           the previous action (the null action at an episode's first
                           step) and 1 at the first step, else 0
    action, reward, ends   the wrapped env's
    =====================  =====================================================

    The agents flatten the tuple (:mod:`pomdp_bench.agents.common.spaces`): a
    ``Discrete`` action becomes a one-hot, so the first step's null action (0, as
    POPGym's) is told apart from a real 0 by the flag. Like POPGym's, it adds no memory.

    Args:
        env: any env whose observation and action spaces the agents read (``Box``,
            ``Discrete``, ``MultiDiscrete``, ``MultiBinary`` or tuples of them).
        first_flag: append the first-step flag (POPGym's ``Antialias``); default ``True``.

    In a suite: ``wrappers: [pomdp_bench.envs.wrappers:PreviousAction]``.
    """

    def __init__(self, env: gym.Env, first_flag: bool = True) -> None:
        super().__init__(env)
        if not isinstance(first_flag, bool):
            raise TypeError(f"first_flag must be a bool, got {first_flag!r}")
        space = env.action_space
        if not isinstance(
            space, (gym.spaces.Discrete, gym.spaces.MultiDiscrete, gym.spaces.MultiBinary, gym.spaces.Box)
        ):
            raise TypeError(
                f"PreviousAction takes Discrete, MultiDiscrete, MultiBinary or Box actions, got {space}"
            )
        self.first_flag = first_flag
        parts = (env.observation_space, space) + ((gym.spaces.Discrete(2),) if first_flag else ())
        self.observation_space = gym.spaces.Tuple(parts)
        self.null_action = _null_action(space)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        obs, info = self.env.reset(seed=seed, options=options)
        return self._observe(obs, self.null_action, first=True), info

    def step(self, action: Any) -> Any:
        obs, reward, terminated, truncated, info = self.env.step(action)
        return self._observe(obs, action, first=False), reward, terminated, truncated, info

    def _observe(self, obs: Any, action: Any, first: bool) -> tuple:
        if isinstance(self.env.action_space, gym.spaces.Discrete):
            action = np.int64(action)
        else:
            action = np.asarray(action, dtype=self.env.action_space.dtype)
        return (obs, action, np.int64(first)) if self.first_flag else (obs, action)


def _null_action(space: gym.Space) -> Any:
    """POPGym's null action: 0 where the space holds it, else its lowest action."""
    if isinstance(space, gym.spaces.Discrete):
        return np.int64(space.start)
    if isinstance(space, gym.spaces.MultiDiscrete):
        return np.asarray(space.start, dtype=space.dtype)
    if isinstance(space, gym.spaces.MultiBinary):
        return np.zeros(space.shape, dtype=space.dtype)
    zero = np.zeros(space.shape, dtype=space.dtype)
    return zero if space.contains(zero) else np.asarray(space.low, dtype=space.dtype)


def _check_scale(scale: Any) -> float:
    scale = check_float("scale", scale)  # a number (TypeError), finite (ValueError)
    if scale == 0:
        raise ValueError("scale must be non-zero (0 would hide the reward), got 0.0")
    return scale


def _with_reward_slot(space: gym.Space) -> gym.spaces.Box:
    """``space`` (a 1-d ``Box``) with one more, unbounded ``float32`` entry."""
    if not isinstance(space, gym.spaces.Box) or len(space.shape) != 1:
        raise TypeError(f"PreviousReward needs a 1-d Box observation space, got {space}")
    low = np.append(space.low.astype(np.float32), -np.inf).astype(np.float32)
    high = np.append(space.high.astype(np.float32), np.inf).astype(np.float32)
    return gym.spaces.Box(low, high, dtype=np.float32)
