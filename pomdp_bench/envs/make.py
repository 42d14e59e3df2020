"""Build the vector envs the agents train on.

The agents need the final observation of every episode (to bootstrap through a
truncation), so they run vector envs in Gymnasium's ``SAME_STEP`` autoreset
mode: ``info["final_obs"][i]`` holds copy ``i``'s last observation, masked by
``info["_final_obs"]``, and the returned observation is already the next
episode's first.
"""

from __future__ import annotations

import copy
import functools
import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
from gymnasium.vector import AutoresetMode, VectorEnv

import pomdp_bench.envs  # noqa: F401  (registers the ids)
from pomdp_bench.envs.wrappers import WrapperSpec, apply_wrappers, wrapper_class
from pomdp_bench.validation import check_int, check_module_name


def import_env_module(env_id: str) -> str:
    """The bare id of ``"module:Id"``, after importing ``module`` (which registers it), as
    ``gym.make`` reads such ids; any other id as it is.

    Importing ``module`` runs its code (as ``pip install`` does): an id from a suite or a
    save is a trust decision. ``module`` must be dotted identifiers; nothing else in the id
    is evaluated.

    Raises:
        ValueError: ``module`` is not a dotted module name, or does not import (the
            message suggests installing it).
    """
    if ":" not in env_id:
        return env_id
    module, bare = env_id.split(":", 1)
    check_module_name(module, what=f"env id {env_id!r}: the module before ':'")
    try:
        importlib.import_module(module)
    except ImportError as err:
        raise ValueError(
            f"env id {env_id!r}: cannot import {module!r}, the module that registers {bare!r} "
            f"({err}); install it (e.g. pip install {module.split('.')[0]})"
        ) from err
    return bare


def make_vector_env(
    env_id: str, num_envs: int, *, wrappers: Sequence[WrapperSpec] = (), **env_kwargs: Any
) -> VectorEnv:
    """``num_envs`` copies of ``env_id`` in ``SAME_STEP`` autoreset mode.

    Uses the env's natively vectorized twin when it has one and every wrapper has a
    vector twin (a ``vector_wrapper`` attribute, as
    :class:`~pomdp_bench.envs.wrappers.PreviousReward` has; the twin wraps the whole
    vector env), else Gymnasium's ``SyncVectorEnv`` of copies each wrapped by
    ``wrappers`` (:mod:`pomdp_bench.envs.wrappers`). ``env_id`` may be ``"module:Id"``, as in
    ``gym.make``: the module is imported first (it registers the id).
    """
    env_id = import_env_module(env_id)
    spec = gym.spec(env_id)
    vec = None
    if spec.vector_entry_point is not None and all(_vector_twin(w) for w in wrappers):
        try:
            vec = gym.make_vec(
                env_id,
                num_envs=num_envs,
                vectorization_mode="vector_entry_point",
                autoreset_mode=AutoresetMode.SAME_STEP,
                **env_kwargs,
            )
        except TypeError as err:  # a twin with no SAME_STEP mode (Gymnasium's CartPole): copies
            if "autoreset_mode" not in str(err):
                raise
    if vec is not None:
        for wrapper in wrappers:  # each one's vector twin: the same observations, copy for copy
            vec = _vector_twin(wrapper)(vec, **wrapper["kwargs"])
        return vec
    return gym.make_vec(
        env_id,
        num_envs=num_envs,
        vectorization_mode="sync",
        vector_kwargs={"autoreset_mode": AutoresetMode.SAME_STEP},
        wrappers=[functools.partial(apply_wrappers, wrappers=wrappers)] if wrappers else None,
        **env_kwargs,
    )


def _vector_twin(wrapper: WrapperSpec) -> Any:
    """The ``VectorWrapper`` twin of a named wrapper (its ``vector_wrapper``), or None."""
    return getattr(wrapper_class(wrapper["path"]), "vector_wrapper", None)


def check_same_step(env: VectorEnv) -> None:
    """Refuse a vector env that does not autoreset in ``SAME_STEP`` mode, giving the call
    that builds one that does."""
    mode = env.metadata.get("autoreset_mode", AutoresetMode.NEXT_STEP)
    if mode != AutoresetMode.SAME_STEP:
        spec = getattr(env, "spec", None)
        env_id = spec.id if spec is not None else "<env id>"
        raise ValueError(
            f"the agents need a vector env with autoreset_mode=SAME_STEP (final observations "
            f"in info['final_obs']), got {mode}. Pass the id instead ({env_id!r}, with n_envs=), "
            f"or build it with gym.make_vec({env_id!r}, num_envs={env.num_envs}, "
            f"vectorization_mode='sync', vector_kwargs={{'autoreset_mode': "
            f"gym.vector.AutoresetMode.SAME_STEP}}) or "
            f"pomdp_bench.envs.make.make_vector_env({env_id!r}, {env.num_envs})"
        )


# Keys of a vector env's spec.kwargs that configure the vectorisation, not the env.
_VECTOR_SPEC_KEYS = {"num_envs", "vectorization_mode", "vector_kwargs", "wrappers", "autoreset_mode"}


@dataclass(frozen=True)
class TrainingEnv:
    """The vector env an agent trains on, with what rebuilds it: the id and kwargs, or,
    for an env given as an instance or a factory, ``factory`` (which keeps the user's
    wrappers)."""

    env: VectorEnv
    env_id: str | None  # None for a vector env built without a registered id
    env_kwargs: dict[str, Any]
    n_envs: int
    factory: Callable[[], gym.Env] | None = None
    wrappers: tuple[WrapperSpec, ...] = ()  # named wrappers of an env given as an id

    def copies(self, n: int) -> VectorEnv | None:
        """``n`` fresh copies in ``SAME_STEP`` mode from ``factory`` (None without one)."""
        if self.factory is None:
            return None
        return gym.vector.SyncVectorEnv([self.factory] * n, autoreset_mode=AutoresetMode.SAME_STEP)


def training_env(
    env: str | gym.Env | VectorEnv | Callable[[], gym.Env],
    env_kwargs: dict[str, Any] | None,
    n_envs: int | None,
    default_n_envs: int,
    wrappers: Sequence[WrapperSpec] = (),
) -> TrainingEnv:
    """Resolve an agent's ``env`` argument: an id (built here with ``n_envs`` copies,
    ``default_n_envs`` when None); a single ``gym.Env`` (one copy, as SB3 takes it, and
    deep copies of it for evaluation, wrappers included); a factory (a callable
    returning a ``gym.Env``: ``n_envs`` copies, and more for evaluation); or a
    ``SAME_STEP`` vector env (taken as it is). ``wrappers`` (named, from
    :func:`pomdp_bench.envs.wrappers.check_wrappers`) wrap each copy of an env given
    as an id; other envs bring their own.

    Raises:
        TypeError: ``env`` is none of these.
        ValueError: ``n_envs`` or ``env_kwargs`` contradict a given env, a vector env does
            not autoreset in ``SAME_STEP`` mode (the message gives the call that builds
            one that does), or ``n_envs < 1``.
    """
    if isinstance(env, str):
        n = default_n_envs if n_envs is None else check_int("n_envs", n_envs, minimum=1)
        kwargs = dict(env_kwargs or {})
        vec = make_vector_env(env, n, wrappers=wrappers, **kwargs)
        return TrainingEnv(vec, env, kwargs, n, wrappers=tuple(wrappers))
    if wrappers:
        raise ValueError(
            "env_wrappers only applies when env is an id; wrap the env (or the factory's env) yourself"
        )
    if env_kwargs is not None and (isinstance(env, (gym.Env, VectorEnv)) or callable(env)):
        raise ValueError("env_kwargs only applies when env is an id, not an env, a vector env or a factory")
    if isinstance(env, gym.Env):  # one env, as SB3 takes it: a vector env of one copy
        if n_envs not in (None, 1):
            raise ValueError(
                f"n_envs={n_envs} but a single gym.Env gives one copy; pass its id or a factory "
                f"(a function returning the env) for {n_envs} copies"
            )
        single = env
        vec = gym.vector.SyncVectorEnv([lambda: single], autoreset_mode=AutoresetMode.SAME_STEP)
        return _with_factory(vec, single, lambda: copy.deepcopy(single), 1)
    if isinstance(env, VectorEnv):
        check_same_step(env)
        if n_envs is not None and n_envs != env.num_envs:
            raise ValueError(f"n_envs={n_envs} but the vector env has num_envs={env.num_envs}")
        spec = getattr(env, "spec", None)
        kwargs = {k: v for k, v in (spec.kwargs if spec else {}).items() if k not in _VECTOR_SPEC_KEYS}
        return TrainingEnv(env, spec.id if spec is not None else None, kwargs, env.num_envs)
    if callable(env):
        n = default_n_envs if n_envs is None else check_int("n_envs", n_envs, minimum=1)
        first = env()
        if not isinstance(first, gym.Env):
            raise TypeError(f"an env factory must return a gym.Env, got {type(first).__name__}")
        pending = [first]  # the probe becomes copy 0

        def make_copy() -> gym.Env:
            return pending.pop() if pending else env()

        vec = gym.vector.SyncVectorEnv([make_copy] * n, autoreset_mode=AutoresetMode.SAME_STEP)
        return _with_factory(vec, first, env, n)
    hint = ""
    if all(hasattr(env, name) for name in ("num_envs", "step_async", "step_wait")):  # an SB3 VecEnv
        hint = (
            ". It looks like a Stable-Baselines3 VecEnv: pass the env id (with n_envs=) or a "
            "function that returns one gym.Env, and the agent builds its own copies"
        )
    raise TypeError(
        f"env must be an env id, a gym.Env, a function returning one, or a Gymnasium VectorEnv; "
        f"got {type(env).__name__}{hint}"
    )


def _with_factory(vec: VectorEnv, sample: gym.Env, factory: Callable[[], gym.Env], n: int) -> TrainingEnv:
    """A training env built from an instance or a factory: its id and kwargs from the
    registration (for the record), its copies from the factory (the wrappers with them)."""
    spec = sample.spec
    kwargs = {k: v for k, v in (spec.kwargs if spec else {}).items() if k != "render_mode"}
    return TrainingEnv(vec, spec.id if spec is not None else None, kwargs, n, factory)
