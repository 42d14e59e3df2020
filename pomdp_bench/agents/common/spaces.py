"""Which observation and action spaces the agents take, and how they read observations.

One rule for observations, the same in PPO and SAC (and for the sb3-contrib adapter,
which flattens as Gymnasium does before handing the env to sb3-contrib):

=====================  ==========================================================
observation space      what the networks read
=====================  ==========================================================
``Box``                the values, flattened to ``[D]``, ``D = prod(shape)``
``Discrete(n)``        a one-hot of width ``n``
``MultiDiscrete``      one one-hot per dimension, concatenated (``sum(nvec)``)
``MultiBinary(n)``     the bits as floats, flattened
``Tuple``/``Dict``     their parts by the rules above, concatenated in the
                       space's order (``Dict``: its key order)
=====================  ==========================================================

``Box`` and ``Discrete`` keep their fast paths inside the networks (a reshape, a
one-hot of the index). Every other space is flattened by Gymnasium itself
(:func:`gymnasium.spaces.flatten`, copy by copy, in :class:`FlatObservations`), whose
encoding is the table's, so the agents see a ``Box`` of
``gymnasium.spaces.flatdim(space)`` floats.

Text and the other spaces without a fixed width (``Graph``, ``Sequence``,
``OneOf``) are refused with a message naming the part and a wrapper that removes it.

Actions: ``Discrete`` and a 1-d ``Box`` for both agents; ``MultiDiscrete`` for PPO (a
factorised categorical: one logit group per dimension, log-probabilities and
entropies summed over dimensions); SAC refuses it, naming what works.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector import VectorEnv, VectorWrapper
from gymnasium.vector.utils import batch_space, iterate

#: observation spaces the agents read (and ``Tuple``/``Dict`` of them, nested)
OBSERVATION_SPACES = ("Box", "Discrete", "MultiDiscrete", "MultiBinary", "Tuple", "Dict")
#: action spaces per agent
ACTION_SPACES = {
    "PPO": ("Discrete", "Box (1-d)", "MultiDiscrete (1-d nvec)"),
    "SAC": ("Discrete", "Box (1-d, bounded)"),
}

_TEXT_HINT = (
    "remove it with a wrapper before the agent sees it, e.g. MiniGrid's "
    "minigrid.wrappers.ImgObsWrapper (keeps the image) or "
    "gymnasium.wrappers.FilterObservation (keeps the keys you name)"
)


def check_observation_space(space: spaces.Space, where: str = "observation space") -> None:
    """Refuse a space the agents cannot read, naming the part that fails.

    Raises:
        TypeError: a ``Text`` part (with the wrappers that remove it), or any space
            other than those in :data:`OBSERVATION_SPACES`.
    """
    if isinstance(space, (spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)):
        return
    if isinstance(space, spaces.Tuple):
        for i, part in enumerate(space.spaces):
            check_observation_space(part, f"{where}[{i}]")
        return
    if isinstance(space, spaces.Dict):
        for key, part in space.spaces.items():
            check_observation_space(part, f"{where}[{key!r}]")
        return
    if isinstance(space, spaces.Text):
        raise TypeError(f"{where} is {space}, a text part, which no network here reads: {_TEXT_HINT}")
    raise TypeError(
        f"{where} is {space}, which is not supported: use {', '.join(OBSERVATION_SPACES[:-2])}, "
        f"or a Tuple or Dict of them"
    )


def needs_flattening(space: spaces.Space) -> bool:
    """Whether observations of ``space`` go through Gymnasium's flattening (every
    supported space but ``Box`` and a ``Discrete`` starting at 0, which the networks
    read directly)."""
    if isinstance(space, spaces.Discrete):
        return int(space.start) != 0
    return not isinstance(space, spaces.Box)


def flat_vector_env(env: VectorEnv) -> VectorEnv:
    """``env`` with its observations as the agents read them: checked, and flattened by
    Gymnasium where the space is neither ``Box`` nor ``Discrete`` (the env itself when
    nothing needs doing).

    Raises:
        TypeError: an observation space the agents cannot read (see
            :func:`check_observation_space`).
    """
    space = env.single_observation_space
    check_observation_space(space)
    return FlatObservations(env) if needs_flattening(space) else env


class FlatObservations(VectorWrapper):
    """A vector env's observations flattened by :func:`gymnasium.spaces.flatten`, copy by
    copy, ``info["final_obs"]`` included.

    Gymnasium's own ``gymnasium.wrappers.vector.FlattenObservation`` refuses the
    ``SAME_STEP`` autoreset the agents step in (its base class takes ``NEXT_STEP`` or
    ``DISABLED`` only), so this is that wrapper for ``SAME_STEP``; the encoding is
    Gymnasium's all the same.
    """

    def __init__(self, env: VectorEnv) -> None:
        super().__init__(env)
        self._space = env.single_observation_space
        self.single_observation_space = spaces.flatten_space(self._space)
        self.observation_space = batch_space(self.single_observation_space, env.num_envs)

    def _flatten(self, observations: Any) -> np.ndarray:
        """``[N, D]`` float32 from the env's batched observations."""
        rows = [spaces.flatten(self._space, one) for one in iterate(self.env.observation_space, observations)]
        return np.stack(rows).astype(np.float32)

    def reset(self, **kwargs: Any) -> tuple[np.ndarray, dict[str, Any]]:
        observations, info = self.env.reset(**kwargs)
        return self._flatten(observations), info

    def step(self, actions: Any) -> tuple[np.ndarray, Any, Any, Any, dict[str, Any]]:
        observations, rewards, terminations, truncations, info = self.env.step(actions)
        if "final_obs" in info:  # SAME_STEP: the last observation of each episode that ended
            final = np.array(info["final_obs"], dtype=object)
            for i in np.flatnonzero(info["_final_obs"]):
                final[i] = spaces.flatten(self._space, final[i]).astype(np.float32)
            info = {**info, "final_obs": final}
        return self._flatten(observations), rewards, terminations, truncations, info


def flatten_observations(space: spaces.Space, observation: Any) -> tuple[np.ndarray, bool]:
    """Observations of a space that needs flattening, as the agents read them.

    Args:
        space: the env's (single) observation space.
        observation: one observation of ``space``, or a batch of ``B`` in Gymnasium's
            batched form (:func:`gymnasium.vector.utils.batch_space`: a ``Dict`` of
            ``[B, ...]`` arrays, a tuple of them, ``[B, ...]`` arrays).

    Returns:
        ``(obs [B, D] float32, single)``: ``single`` when one observation was given
        (``B = 1``).

    Raises:
        ValueError: ``observation`` is neither one observation nor a batch of ``space``.
    """
    if space.contains(observation):
        return spaces.flatten(space, observation)[None].astype(np.float32), True
    try:
        n = _batch_size(space, observation)
        rows = [spaces.flatten(space, one) for one in iterate(batch_space(space, n), observation)]
    except (KeyError, IndexError, TypeError, ValueError) as error:
        raise ValueError(
            f"observation is neither one observation of {space} nor a batch of them ({error})"
        ) from None
    if not rows:
        return np.zeros((0, spaces.flatdim(space)), np.float32), False
    return np.stack(rows).astype(np.float32), False


def _batch_size(space: spaces.Space, observation: Any) -> int:
    """``B`` of a batch in Gymnasium's batched form: the length of its first leaf."""
    if isinstance(space, spaces.Dict):
        key = next(iter(space.spaces))
        return _batch_size(space.spaces[key], observation[key])
    if isinstance(space, spaces.Tuple):
        return _batch_size(space.spaces[0], observation[0])
    return len(np.asarray(observation))


def check_action_space(space: spaces.Space, agent: str) -> None:
    """Refuse an action space ``agent`` ("PPO" or "SAC") cannot act in, listing those it can.

    PPO: ``Discrete``, a 1-d ``Box``, ``MultiDiscrete`` with a 1-d ``nvec`` (any
    ``start``). SAC: ``Discrete`` starting at 0, a bounded 1-d ``Box``.

    Raises:
        TypeError: naming the space and the supported ones.
    """
    box = isinstance(space, spaces.Box) and len(space.shape) == 1
    if agent == "PPO":
        ok = box or isinstance(space, spaces.Discrete)
        ok = ok or (isinstance(space, spaces.MultiDiscrete) and len(space.nvec.shape) == 1)
        hint = ""
    else:
        ok = (box and bool(space.is_bounded("both"))) or (
            isinstance(space, spaces.Discrete) and int(space.start) == 0
        )
        hint = (
            " (SAC-Discrete takes one Discrete action starting at 0, and a Box must be bounded; "
            "PPO takes MultiDiscrete)"
        )
    if not ok:
        raise TypeError(
            f"action space {space} is not supported by {agent}: use one of "
            f"{', '.join(ACTION_SPACES[agent])}{hint}"
        )
