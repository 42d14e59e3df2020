"""One implementation per environment, run as a single env or as its vectorized twin.

Each environment family writes its dynamics once, as a :class:`Batch`: the state
of ``N`` copies held in numpy arrays and advanced with array operations, never a
Python loop over copies. :class:`BatchedEnv` runs a batch of one copy behind the
single-env API, and :class:`BatchedVectorEnv` runs a batch of ``N`` copies behind
Gymnasium's vector API with its autoreset semantics. Because both run the same
code and draw from the same counter-based streams
(:mod:`pomdp_bench.envs.random_streams`), copy ``i`` of a twin reset with
``seed=s`` follows exactly the trajectory of a single env reset with ``seed=s+i``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from pomdp_bench.envs.random_streams import RandomStreams
from pomdp_bench.validation import ArgumentTypeError

_SEED_HIGH = 2**63 - 1


class Batch(ABC):
    """The state of ``num_envs`` copies of one environment.

    Subclasses set ``single_observation_space`` and ``single_action_space`` and
    implement :meth:`reset_copies`, :meth:`step` and :meth:`observe`.
    """

    single_observation_space: spaces.Space
    single_action_space: spaces.Space

    def __init__(self, num_envs: int) -> None:
        self.num_envs = num_envs
        self.streams = RandomStreams(num_envs)

    @abstractmethod
    def reset_copies(self, idx: np.ndarray) -> None:
        """Begin a new episode in copies ``idx [K]``; draw from ``self.streams`` with tag 0."""

    @abstractmethod
    def step(self, action: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Advance every copy by one step.

        Args:
            action: ``[N, ...]`` a checked batch of actions.

        Returns:
            ``(reward [N] float32, terminated [N] bool, truncated [N] bool)``
        """

    @abstractmethod
    def observe(self) -> np.ndarray:
        """``[N, *obs_shape]`` the current observation of every copy."""

    def render_copy(self, i: int, mode: str) -> Any:
        """A frame of copy ``i``: a string for ``"ansi"``, ``[H, W, 3] uint8`` for ``"rgb_array"``."""
        raise NotImplementedError(f"{type(self).__name__} does not render {mode!r}")

    # Action checks: a clear ValueError naming the value and the valid range.
    def check_action(self, action: Any) -> np.ndarray:
        """Return ``action`` as a ``[N, ...]`` array, or raise ``ValueError``.

        A ``Discrete`` space takes integers only, as Gymnasium's batched space
        (``MultiDiscrete.contains``) does: an array of an integer (or bool) dtype. A float,
        even ``1.0``, is refused with an :class:`~pomdp_bench.validation.ArgumentTypeError`
        (a ``TypeError`` and a ``ValueError``).
        """
        space = self.single_action_space
        a = np.asarray(action)
        if isinstance(space, spaces.Discrete):
            low, high = space.start, space.start + space.n - 1
            if a.dtype.kind not in "iub":
                raise ArgumentTypeError(
                    f"action {action!r} is invalid: a Discrete action is an integer (int or a "
                    f"numpy integer), got dtype {a.dtype}; valid actions are integers in [{low}, {high}]"
                )
            if a.shape != (self.num_envs,):
                raise ValueError(
                    f"action {action!r} is invalid: expected {self.num_envs} integer(s) in [{low}, {high}]"
                )
            a = a.astype(np.int64) if a.dtype.kind == "b" else a
            if a.min() < low or a.max() > high:
                bad = a[(a < low) | (a > high)][0]
                raise ValueError(
                    f"action {bad} is out of range: valid actions are integers in [{low}, {high}]"
                )
            return a
        if isinstance(space, spaces.Box):
            shape = (self.num_envs, *space.shape)
            if a.shape != shape:
                if a.size == int(np.prod(shape)) and a.dtype.kind in "fiu":
                    a = a.reshape(shape)
                else:
                    raise ValueError(f"action {action!r} is invalid: expected shape {shape}")
            if not np.all(np.isfinite(a)):
                raise ValueError(f"action {action!r} is invalid: it holds NaN or inf")
            if np.any(a < space.low) or np.any(a > space.high):
                bad = a[(a < space.low) | (a > space.high)][0]
                raise ValueError(
                    f"action {bad} is out of range: valid actions lie in "
                    f"[{space.low.min()}, {space.high.max()}]"
                )
            return a.astype(space.dtype, copy=False)
        raise TypeError(f"unsupported action space {space}")


def _discrete_action(action: Any, space: spaces.Discrete) -> Any:
    """``action`` if it is an integer as :meth:`gymnasium.spaces.Discrete.contains` reads
    one (``int``, a bool included, or a numpy integer scalar or 0-d array), else raise."""
    if isinstance(action, int) or (
        isinstance(action, (np.generic, np.ndarray))
        and np.issubdtype(action.dtype, np.integer)
        and action.shape == ()
    ):
        value, low, high = int(action), space.start, space.start + space.n - 1
        if not low <= value <= high:
            raise ValueError(f"action {value} is out of range: valid actions are integers in [{low}, {high}]")
        return value
    raise ArgumentTypeError(
        f"action {action!r} ({type(action).__name__}) is invalid: a Discrete action is an int "
        f"or a numpy integer, in [{space.start}, {space.start + space.n - 1}]; floats such as "
        "1.0 are refused, as gymnasium.spaces.Discrete.contains refuses them"
    )


def _new_keys(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.integers(0, _SEED_HIGH, size=n, dtype=np.int64).astype(np.uint64)


class BatchedEnv(gym.Env):
    """A single Gymnasium env driven by a :class:`Batch` of one copy.

    Subclasses call :meth:`_init_batch` in ``__init__``.
    """

    _batch: Batch

    def _init_batch(self, batch: Batch, render_mode: str | None) -> None:
        if batch.num_envs != 1:
            raise ValueError(f"a single env needs a batch of 1 copy, got {batch.num_envs}")
        modes = self.metadata.get("render_modes", [])
        if render_mode is not None and render_mode not in modes:
            raise ValueError(f"render_mode must be one of {[None, *modes]}, got {render_mode!r}")
        self._batch = batch
        self.observation_space = batch.single_observation_space
        self.action_space = batch.single_action_space
        self.render_mode = render_mode

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        streams = self._batch.streams
        if seed is not None:
            streams.seed(np.array([seed]))
        elif not streams.seeded:
            streams.seed(_new_keys(self.np_random, 1))
        else:
            streams.episodes += np.uint64(1)
        self._batch.reset_copies(np.zeros(1, dtype=np.int64))
        self._moved()
        return self._batch.observe()[0], {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """One step. A ``Discrete`` action is an integer as ``Discrete.contains`` reads it:
        a Python ``int`` or a numpy integer (scalar or 0-d array); a float such as ``1.0``,
        or a numpy bool, raises an :class:`~pomdp_bench.validation.ArgumentTypeError`
        naming it."""
        if isinstance(self.action_space, spaces.Discrete):
            action = _discrete_action(action, self.action_space)
        a = self._batch.check_action(np.asarray(action)[None, ...])
        reward, terminated, truncated = self._batch.step(a)
        self._moved()
        return (
            self._batch.observe()[0],
            float(reward[0]),
            bool(terminated[0]),
            bool(truncated[0]),
            {},
        )

    def _moved(self) -> None:
        """After every reset and step: sync a parent renderer's state, draw in ``human`` mode."""
        self._sync_render_state()
        if self.render_mode == "human":
            self.render()

    def _sync_render_state(self) -> None:
        """Copy the batch's state to where an inherited renderer reads it (none by default)."""

    def render(self) -> Any:
        if self.render_mode is None:
            gym.logger.warn("render() called without a render_mode; pass render_mode to gym.make")
            return None
        return self._batch.render_copy(0, self.render_mode)


class BatchedVectorEnv(VectorEnv):
    """A natively vectorized Gymnasium env driven by a :class:`Batch` of ``num_envs`` copies.

    ``autoreset_mode`` is Gymnasium's: ``NEXT_STEP`` (the default, as in
    Gymnasium's own vector envs) or ``SAME_STEP`` (the final observation in
    ``info["final_obs"]``, masked by ``info["_final_obs"]``; what the agents use).
    """

    def _init_batch(
        self,
        batch: Batch,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        render_mode: str | None = None,
    ) -> None:
        try:
            mode = AutoresetMode(autoreset_mode)
        except ValueError:
            raise ValueError(
                f"autoreset_mode must be one of {[m.value for m in (AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP)]}, got {autoreset_mode!r}"
            ) from None
        if mode not in (AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP):
            raise ValueError(f"autoreset_mode {mode.value!r} is not supported: use next-step or same-step")
        modes = self.metadata.get("render_modes", [])
        if render_mode is not None and render_mode not in modes:
            raise ValueError(f"render_mode must be one of {[None, *modes]}, got {render_mode!r}")
        self.metadata = {**self.metadata, "autoreset_mode": mode}
        self.autoreset_mode = mode
        self.render_mode = render_mode
        self._batch = batch
        self.num_envs = batch.num_envs
        self.single_observation_space = batch.single_observation_space
        self.single_action_space = batch.single_action_space
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._prev_done = np.zeros(self.num_envs, dtype=np.bool_)

    def reset(
        self, *, seed: int | list[int] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        streams = self._batch.streams
        if isinstance(seed, (list, tuple, np.ndarray)):
            seeds = np.asarray(seed, dtype=np.int64)
            if seeds.shape != (self.num_envs,):
                raise ValueError(f"seed must be an int or {self.num_envs} ints, got {seed!r}")
            super().reset(seed=int(seeds[0]))
            streams.seed(seeds)
        elif seed is not None:
            super().reset(seed=seed)
            streams.seed(seed + np.arange(self.num_envs, dtype=np.int64))
        else:
            super().reset()
            if streams.seeded:
                streams.episodes += np.uint64(1)
            else:
                streams.seed(_new_keys(self.np_random, self.num_envs))
        self._batch.reset_copies(np.arange(self.num_envs))
        self._prev_done[:] = False
        return self._batch.observe(), {}

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        batch = self._batch
        reward, terminated, truncated = batch.step(batch.check_action(actions))
        infos: dict[str, Any] = {}
        if self.autoreset_mode is AutoresetMode.NEXT_STEP:
            # Copies that ended last step begin a new episode now; their action is ignored.
            if self._prev_done.any():
                idx = np.flatnonzero(self._prev_done)
                batch.streams.episodes[idx] += np.uint64(1)
                batch.reset_copies(idx)
                reward[idx] = 0.0
                terminated[idx] = False
                truncated[idx] = False
            self._prev_done = terminated | truncated
            return batch.observe(), reward, terminated, truncated, infos
        obs = batch.observe()
        done = terminated | truncated
        if done.any():
            idx = np.flatnonzero(done)
            final_obs = np.full(self.num_envs, None, dtype=object)
            final_obs[idx] = list(obs[idx])
            infos = {"final_obs": final_obs, "_final_obs": done, "final_info": {}, "_final_info": done}
            batch.streams.episodes[idx] += np.uint64(1)
            batch.reset_copies(idx)
            obs = batch.observe()
        return obs, reward, terminated, truncated, infos

    def render(self) -> tuple[Any, ...] | None:
        if self.render_mode is None:
            gym.logger.warn("render() called without a render_mode; pass render_mode to gym.make_vec")
            return None
        return tuple(self._batch.render_copy(i, self.render_mode) for i in range(self.num_envs))
