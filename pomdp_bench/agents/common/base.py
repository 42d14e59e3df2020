"""The shell every agent shares, as SB3's ``BaseAlgorithm``: the env, the settings, the
seeding, the episode statistics, the NaN guard, ``predict``, ``evaluate``, ``save``
and ``load``.

An agent (:class:`~pomdp_bench.agents.ppo.PPO`, :class:`~pomdp_bench.agents.sac.SAC`)
fills these hooks:

- :meth:`Agent._setup_model`: the networks, optimisers and buffers, built once the
  shell has resolved the env and the settings (SB3's ``_setup_model``);
- :meth:`Agent._start_episodes` and :meth:`Agent._iterate`: the training loop, which
  :meth:`Agent.learn` drives (the progress bar, the callback);
- :meth:`Agent._initial_actor_state` and :meth:`Agent._act`: the policy's memory and
  one step of it, which ``predict``, ``evaluate`` and training all use;
- :meth:`Agent._state_dicts` and :meth:`Agent._load_state_dicts`: what ``save``
  writes beside the settings, and how ``load`` puts it back.

Random streams. Everything random in a run derives from ``settings.seed``: env resets
through :func:`~pomdp_bench.agents.common.seeding.env_seeds` (training and evaluation draw
disjoint episodes), torch generators through :meth:`Agent._stream` (``seed + offset``,
each agent naming its offsets), and the networks from ``torch.manual_seed(seed)``
inside a forked RNG, so building an agent leaves the global RNG untouched.
"""

from __future__ import annotations

import abc
import collections
import io
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

import gymnasium as gym
import numpy as np
import torch
from gymnasium.vector import VectorEnv
from torch import Tensor
from tqdm.auto import tqdm

from pomdp_bench.agents.common.evaluation import evaluate_episodes
from pomdp_bench.agents.common.networks import MemoryState, state_from_numpy, state_to_numpy
from pomdp_bench.agents.common.sb3_habits import from_policy_kwargs, log_line, refuse_policy_string
from pomdp_bench.agents.common.seeding import env_seeds
from pomdp_bench.agents.common.settings import AgentSettings
from pomdp_bench.agents.common.spaces import flat_vector_env, flatten_observations, needs_flattening
from pomdp_bench.envs.make import make_vector_env, training_env
from pomdp_bench.envs.wrappers import check_wrappers
from pomdp_bench.memory import MemoryConfig
from pomdp_bench.validation import check_int

SettingsT = TypeVar("SettingsT", bound=AgentSettings)
AgentT = TypeVar("AgentT", bound="Agent")

# The offset of evaluate()'s action-sampling stream; the same in every agent.
EVALUATION_STREAM = 10_001


def resolve_device(device: str | torch.device) -> torch.device:
    """``"auto"``: CUDA when available, else the CPU; anything else as torch reads it."""
    if str(device) == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


class Agent(abc.ABC, Generic[SettingsT]):
    """What every agent has: see the module docstring.

    Args:
        env: an env id (built with :func:`pomdp_bench.envs.make.make_vector_env` from
            ``env_kwargs``); a ``gym.Env`` (one copy; ``evaluate`` runs deep copies of
            it, wrappers included); a function returning a ``gym.Env`` (``n_envs``
            copies, and more for ``evaluate``); or a Gymnasium vector env in ``SAME_STEP``
            autoreset mode.
        memory: the memory block, the setting ``memory``: a kind name, a dict or a
            :class:`~pomdp_bench.memory.MemoryConfig` (``None``: the settings', which
            default to none, the feedforward baseline).
        env_kwargs: keyword arguments of the env, when ``env`` is an id.
        env_wrappers: wrappers of each copy of an env given as an id, named by import
            path (``"minigrid.wrappers:ImgObsWrapper"`` or ``{"path": ..., "kwargs":
            {...}}``: :mod:`pomdp_bench.envs.wrappers`); training, ``evaluate``,
            ``save`` and ``load`` all use them.
        settings: the agent's settings to start from (default: the library's defaults,
            not the tuned ones: :meth:`from_tuned` reads ``agents/<agent>.yaml``).
        device: ``"auto"`` (CUDA when available), ``"cpu"``, ``"cuda"``, ...
        verbose: 0 quiet; 1 prints a line of statistics per log entry of ``history``
            (return, losses, speed), as SB3's ``verbose=1``.
        policy_kwargs: SB3's ``policy_kwargs`` where they have an equivalent here
            (``net_arch``, ``activation_fn``, ``lstm_hidden_size``, ``n_lstm_layers``,
            ``enable_critic_lstm``, ``shared_lstm``, ``ortho_init``, ``log_std_init``);
            any other key is refused by name.
        **changes: fields of the settings, overriding ``settings``.

    Raises:
        TypeError: an unknown setting (the message lists the valid ones) or a wrong type.
        ValueError: settings that cannot work, saying what would.

    Attributes:
        env: the training vector env (``SAME_STEP`` autoreset).
        env_id, env_kwargs, env_wrappers: what built it (``env_id`` is ``None`` for a
            vector env given without a spec).
        n_envs: copies stepped together (``N``).
        settings: the resolved settings (an :class:`~pomdp_bench.agents.common.settings.AgentSettings`).
        num_timesteps: env steps taken in training, over all copies.
        n_updates: PPO: rollouts trained on; SAC: gradient steps taken.
        history: one dict of statistics per log entry (see the agent's ``learn``).
        episode_log: ``(timesteps, return, length)`` per finished training episode.
    """

    settings_class: ClassVar[type[AgentSettings]]
    #: the format ``save`` writes; ``load`` reads it and the older ones in ``_upgrade``
    save_format: ClassVar[int]
    #: the older format ``load`` still reads (one flat ``config`` dict), if any
    legacy_format: ClassVar[int | None] = None
    #: copies ``evaluate`` runs at most (``None``: the number of training copies)
    evaluation_copies: ClassVar[int | None] = None
    #: the offset of predict()'s action-sampling stream
    predict_stream: ClassVar[int]
    #: copies stepped together when ``env`` is an id and ``n_envs`` is not set
    default_n_envs: ClassVar[int]

    def __init__(
        self,
        env: str | gym.Env | VectorEnv | Callable[[], gym.Env],
        memory: MemoryConfig | Mapping[str, Any] | str | None = None,
        *,
        env_kwargs: dict[str, Any] | None = None,
        env_wrappers: Sequence[str | Mapping[str, Any]] | None = None,
        settings: SettingsT | None = None,
        device: str | torch.device = "auto",
        verbose: int = 0,
        policy_kwargs: Mapping[str, Any] | None = None,
        **changes: Any,
    ) -> None:
        refuse_policy_string(type(self).__name__, env, memory)
        self.verbose = check_int("verbose", verbose, minimum=0)
        if policy_kwargs:
            memory, changes = from_policy_kwargs(policy_kwargs, memory, changes)
        if memory is not None:
            changes = {"memory": memory, **changes}
        made: SettingsT = self.settings_class.make(settings, **changes)  # type: ignore[assignment]
        self.env_wrappers = check_wrappers(env_wrappers)
        resolved = training_env(env, env_kwargs, made.n_envs, self.default_n_envs, self.env_wrappers)
        self.env, self.env_id, self.env_kwargs = resolved.env, resolved.env_id, resolved.env_kwargs
        self._training_env = resolved  # evaluate() builds copies from it (a factory keeps wrappers)
        self._env_from_id = isinstance(env, str)
        self.n_envs = resolved.n_envs
        #: the env's own observation space; ``observation_space`` is what the networks
        #: read (the same, or Gymnasium's flattened ``Box`` of it: :mod:`.spaces`)
        self.raw_observation_space = self.env.single_observation_space
        self.action_space = self.env.single_action_space
        try:
            self.env = flat_vector_env(self.env)
            self.observation_space = self.env.single_observation_space
            self.settings: SettingsT = made.resolve(self.n_envs)  # type: ignore[attr-defined]
            self.seed = self.settings.seed
            self.memory_config = self.settings.memory
            self.device = resolve_device(device)
            self._predict_generator = self._stream(self.predict_stream)

            self.num_timesteps = 0
            self.n_updates = 0
            self.history: list[dict[str, float]] = []
            self.episode_log: list[tuple[int, float, int]] = []
            self._recent_returns: collections.deque[float] = collections.deque(maxlen=100)
            self._setup_model()
        except BaseException:
            if not isinstance(env, (gym.Env, VectorEnv)):  # we built the copies: close them
                self.env.close()
            raise

    @classmethod
    def from_tuned(
        cls: type[AgentT],
        env_id: str,
        memory: MemoryConfig | Mapping[str, Any] | str | None = None,
        **kwargs: Any,
    ) -> AgentT:
        """The agent with the settings tuned for ``env_id`` (``agents/<agent>.yaml``; for
        ``env_kwargs``, the band of their memory horizon where the entry has one), e.g.
        ``PPO.from_tuned("TMaze-v1", "gru", env_kwargs={"corridor_length": 5})``; other
        keywords as the constructor's, settings among them overriding the tuned ones.
        (``PPO(env_id, memory)`` uses the library's defaults, not the tuned settings.)

        Raises:
            ValueError: no tuned entry for ``env_id`` (the message lists the ids that have one).
        """
        settings = kwargs.pop("settings", None) or cls.settings_class.tuned(env_id, kwargs.get("env_kwargs"))
        return cls(env_id, memory, settings=settings, **kwargs)

    @abc.abstractmethod
    def _setup_model(self) -> None:
        """Check the spaces; build the networks, optimisers, buffers and generators."""

    # ------------------------------------------------------------------------
    # Training
    # ------------------------------------------------------------------------
    def learn(
        self: AgentT,
        total_timesteps: int,
        progress_bar: bool = False,
        callback: Callable[[AgentT], bool | None] | None = None,
    ) -> AgentT:
        """Train for ``total_timesteps`` env steps (rounded up to whole iterations of the
        agent's loop: PPO's rollouts, SAC's vector steps), continuing where the last
        call stopped.

        Args:
            total_timesteps: env steps, over all copies.
            progress_bar: show a tqdm bar.
            callback: called with the agent after every iteration; returning ``False``
                stops training.

        ``self.history`` gains statistics as the agent's ``_iterate`` says;
        ``self.episode_log`` a ``(timesteps, return, length)`` per finished episode.

        Raises:
            FloatingPointError: a NaN or inf in a loss, gradient or parameter, naming
                the update.
        """
        total_timesteps = check_int("total_timesteps", total_timesteps, minimum=0)
        if self._obs is None:
            self._start_episodes()
        bar = tqdm(total=total_timesteps, disable=not progress_bar, unit="step")
        try:
            logged = len(self.history)
            for steps in self._iterate(total_timesteps):
                bar.update(steps)
                if len(self.history) > logged:  # a new log entry (SAC logs every log_interval steps)
                    logged = len(self.history)
                    bar.set_postfix(mean_return=f"{self.history[-1]['mean_return']:.3g}", refresh=False)
                    if self.verbose:
                        bar.write(log_line(self.history[-1]))
                if callback is not None and callback(self) is False:
                    break
        finally:
            bar.close()
        return self

    @abc.abstractmethod
    def _start_episodes(self) -> None:
        """Reset the training envs and the policy's memory for a first ``learn``."""

    @abc.abstractmethod
    def _iterate(self, total_timesteps: int) -> Iterator[int]:
        """The agent's training loop over ``total_timesteps`` env steps; yields the env
        steps each iteration took."""

    # ------------------------------------------------------------------------
    # Seeding, episode statistics, the NaN guard
    # ------------------------------------------------------------------------
    def _stream(self, offset: int) -> torch.Generator:
        """A torch generator on the agent's device seeded ``seed + offset``."""
        return torch.Generator(device=self.device).manual_seed(self.seed + offset)

    def _reset_training_envs(self) -> np.ndarray:
        """Reset every training copy from its own training seed; zero the episode counters.

        Returns:
            the first observations, ``[N, *obs_shape]``.
        """
        obs, _ = self.env.reset(seed=env_seeds(self.seed, "train", self.n_envs))
        self._episode_return = np.zeros(self.n_envs)
        self._episode_length = np.zeros(self.n_envs, dtype=np.int64)
        return obs

    def _track_episodes(self, reward: np.ndarray, done: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Add one vector step's raw rewards ``[N]`` to the running episodes and log those
        that ended (``done [N]``).

        Returns:
            ``(ended copies, their episode lengths)``.
        """
        self._episode_return += reward
        self._episode_length += 1
        ended = np.flatnonzero(done)
        lengths = self._episode_length[ended].copy()
        if ended.size:  # no Python loop over copies: fixed-length episodes end in all at once
            returns = self._episode_return[ended].tolist()
            self.episode_log.extend(
                zip([self.num_timesteps] * ended.size, returns, lengths.tolist(), strict=True)
            )
            self._recent_returns.extend(returns)
        self._episode_return[done] = 0.0
        self._episode_length[done] = 0
        return ended, lengths

    def _mean_recent_return(self) -> float:
        """Mean undiscounted return of the last 100 finished episodes (NaN before the first),
        SB3's ``rollout/ep_rew_mean``."""
        return float(np.mean(self._recent_returns)) if self._recent_returns else math.nan

    def _check_finite(self, value: Tensor, what: str, where: str = "", **parts: Tensor) -> None:
        """Raise ``FloatingPointError`` naming the update (and ``where`` in it) when
        ``value``, a scalar, is NaN or infinite; the message lists ``parts`` too."""
        number = float(value.detach())
        if not math.isfinite(number):
            place = f"{where}, " if where else ""
            detail = ", ".join(f"{name} {float(part.detach())}" for name, part in parts.items())
            raise FloatingPointError(
                f"{type(self).__name__} update {self.n_updates + 1} ({place}timesteps "
                f"{self.num_timesteps}): {what} is {number}" + (f" ({detail})" if detail else "")
            )

    # ------------------------------------------------------------------------
    # Acting
    # ------------------------------------------------------------------------
    @abc.abstractmethod
    def _initial_actor_state(self, n: int) -> MemoryState:
        """The policy's memory at an episode start for ``n`` copies."""

    @abc.abstractmethod
    def _act(
        self,
        obs: np.ndarray,
        state: MemoryState,
        starts: Tensor,
        deterministic: bool,
        generator: torch.Generator,
    ) -> tuple[np.ndarray, MemoryState]:
        """One policy step on raw observations ``[B, *obs_shape]`` with episode starts
        ``[B]`` (the memory resets there), without gradient.

        Returns:
            ``(actions [B, ...] in the env's units, the memory after the step)``.
        """

    def predict(
        self,
        observation: np.ndarray,
        state: tuple[np.ndarray, ...] | None = None,
        episode_start: np.ndarray | None = None,
        deterministic: bool = False,
    ) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
        """The policy's action for raw observations, carrying the actor's memory.

        As sb3-contrib's ``RecurrentPPO.predict``: pass the returned state back in with
        the next observation, and ``episode_start`` true where a new episode begins
        (the memory resets there). It draws from its own random stream, so calling it
        between ``learn`` calls leaves training as it would have been.

        Args:
            observation: ``[B, *obs_shape]``, or one observation ``[*obs_shape]``.
            state: the actor memory from the previous call (``None``: fresh).
            episode_start: ``[B]`` bool (``None``: all false).
            deterministic: the most likely action (the mean for ``Box``) instead of a
                sample.

        Returns:
            ``(action [B, ...] or [...], state)``: actions in the env's units, ``state``
            a tuple of numpy arrays, batch first: a GRU's is ``([B, layers, H],)``, an
            LSTM's ``(h, c)`` of that shape (sb3-contrib's is ``(layers, B, H)``), and
            ``()`` without memory.

        Raises:
            ValueError: an observation of the wrong shape, or an ``episode_start`` that
                does not match the batch, saying which shapes would do.
        """
        if needs_flattening(self.raw_observation_space):
            obs, single = flatten_observations(self.raw_observation_space, observation)
        else:
            obs, single = self._check_observation_batch(np.asarray(observation))
        n = obs.shape[0]
        mem = self._initial_actor_state(n) if state is None else state_from_numpy(state, self.device)
        if episode_start is not None and np.size(episode_start) != n:
            raise ValueError(
                f"episode_start must hold one bool per observation ({n}), got {np.shape(episode_start)}"
            )
        starts = (
            torch.zeros(n, dtype=torch.bool, device=self.device)
            if episode_start is None
            else torch.as_tensor(np.asarray(episode_start, bool).reshape(n), device=self.device)
        )
        action, mem = self._act(obs, mem, starts, deterministic, self._predict_generator)
        return (action[0] if single else action), state_to_numpy(mem)

    def _check_observation_batch(self, obs: np.ndarray) -> tuple[np.ndarray, bool]:
        """``(obs [B, *obs_shape], single)`` from one observation or a batch of them.

        Raises:
            ValueError: neither shape, saying which would do.
        """
        shape = self.observation_space.shape
        single = obs.shape == shape
        if single:
            obs = obs[None]
        elif obs.ndim != len(shape) + 1 or obs.shape[1:] != shape:
            raise ValueError(
                f"observation must be {list(shape)} (one) or [B, {', '.join(map(str, shape))}] "
                f"(a batch), got {list(obs.shape)}".replace("[B, ]", "[B]")
            )
        return obs, single

    def evaluate(
        self,
        n_episodes: int = 20,
        deterministic: bool = True,
        env: VectorEnv | None = None,
        seed: int | None = None,
    ) -> np.ndarray:
        """Undiscounted returns of ``n_episodes`` episodes, each starting from zero memory.

        Runs its own copies of the env (at most ``evaluation_copies``, each running its
        share of the episodes, as SB3's ``evaluate_policy`` does, so short episodes are
        not over-represented), with any normalisation frozen.

        Args:
            n_episodes: how many episodes.
            deterministic: act with the most likely (``Box``: the mean) action.
            env: a ``SAME_STEP`` vector env to evaluate on (default: new copies of the
                training env: from its id and kwargs, or of the env or factory given,
                wrappers included).
            seed: root of the evaluation episodes (default: the agent's seed); each
                copy resets from its own stream split from it, never shared with
                training (:mod:`pomdp_bench.agents.common.seeding`).

        Returns:
            ``[n_episodes]`` float64 returns, in order of completion per copy.
        """
        n_episodes = check_int("n_episodes", n_episodes, minimum=1)
        generator = self._stream(EVALUATION_STREAM)
        mem: MemoryState | None = None

        def act(obs: np.ndarray, starts: np.ndarray) -> np.ndarray:
            nonlocal mem
            if mem is None:
                mem = self._initial_actor_state(len(obs))
            action, mem = self._act(
                obs, mem, torch.as_tensor(starts, device=self.device), deterministic, generator
            )
            return action

        max_copies = self.n_envs if self.evaluation_copies is None else self.evaluation_copies
        built = None
        if env is None:  # copies of the user's own env (its wrappers too) when it was one
            env = built = self._training_env.copies(min(n_episodes, max_copies))
        if env is None and self.env_id is not None:
            env = built = make_vector_env(
                self.env_id, min(n_episodes, max_copies), wrappers=self.env_wrappers, **self.env_kwargs
            )
        if env is not None:
            env = flat_vector_env(env)  # read as in training (a no-op for Box and Discrete)
        try:
            return evaluate_episodes(
                act,
                n_episodes,
                seed=self.seed if seed is None else seed,
                env=env,
                env_id=self.env_id,
                env_kwargs=self.env_kwargs,
                max_copies=max_copies,
            )
        finally:
            if built is not None:
                built.close()

    # ------------------------------------------------------------------------
    # Persistence
    # ------------------------------------------------------------------------
    def _networks(self) -> Sequence[torch.nn.Module]:
        """The trained networks (actor, critic, memory; no target copies), for
        :attr:`num_parameters`. Empty: the agent does not say."""
        return ()

    @property
    def num_parameters(self) -> int | None:
        """Trained weights, actor, critic and memory together (target copies and
        scalars such as SAC's entropy coefficient excluded); a weight shared by two
        networks counts once. None where the agent does not list its networks."""
        networks = self._networks()
        if not networks:
            return None
        unique = {id(p): p for net in networks for p in net.parameters()}
        return sum(p.numel() for p in unique.values())

    @abc.abstractmethod
    def _state_dicts(self) -> dict[str, Any]:
        """The learned state ``save`` writes: weights, optimisers, statistics."""

    @abc.abstractmethod
    def _load_state_dicts(self, data: Mapping[str, Any]) -> None:
        """Put back what :meth:`_state_dicts` wrote."""

    @classmethod
    def _upgrade(cls, data: dict[str, Any], path: str | Path) -> dict[str, Any]:
        """A save of the legacy format (one flat ``config`` dict holding the env id, its
        kwargs and every setting) in the current one; any other format is refused."""
        if cls.legacy_format is not None and data["format"] == cls.legacy_format and "config" in data:
            settings = dict(data.pop("config"))
            env, env_kwargs = settings.pop("env"), settings.pop("env_kwargs")
            return {**data, "env": env, "env_kwargs": env_kwargs, "settings": settings}
        raise ValueError(
            f"{path} is a save of format {data['format']!r}, which {cls.__name__}.load cannot read "
            f"(it reads {cls.__name__} saves of formats {cls.save_format} and {cls.legacy_format})"
        )

    def save(self, path: str | Path | io.BufferedIOBase, optimizers: bool = True) -> Path | io.BufferedIOBase:
        """Write the env id and kwargs, the settings, the learned state and the step
        counters to ``path`` (``torch.save``, a zip archive; not a replay buffer).

        As SB3: a name without a suffix gets ``.zip`` (``save("model")`` writes
        ``model.zip``), and missing parent folders are created. A binary file object
        (``io.BytesIO()``) is written as it is.

        Args:
            path: where to write.
            optimizers: keep the optimisers' states (default). False writes about a third
                of the size: the agent acts and evaluates as saved, and trains on from
                fresh optimisers (the harness stores each run's weights so).

        Returns:
            the path written (or the file object).
        """
        if not isinstance(path, io.IOBase):
            path = Path(path)
            if not path.suffix:
                path = path.with_suffix(".zip")
            path.parent.mkdir(parents=True, exist_ok=True)
        torch.save(
            {
                "agent": type(self).__name__,
                "format": self.save_format,
                "env": self.env_id,
                "env_kwargs": self.env_kwargs,
                "env_wrappers": self.env_wrappers,
                "env_from_id": self._env_from_id,
                "settings": self.settings.to_dict(),
                **{k: v for k, v in self._state_dicts().items() if optimizers or not k.endswith("optimizer")},
                "num_timesteps": self.num_timesteps,
                "n_updates": self.n_updates,
            },
            path,
        )
        return path

    @classmethod
    def load(
        cls: type[AgentT],
        path: str | Path | io.BufferedIOBase,
        env: str | gym.Env | VectorEnv | Callable[[], gym.Env] | None = None,
        device: str | torch.device = "auto",
    ) -> AgentT:
        """Rebuild a saved agent from ``path`` (``"model"`` finds ``model.zip``; or a
        binary file object, such as a run's stored weights in ``io.BytesIO``); ``env``
        (any form the constructor takes) overrides the saved env id, and is required when
        the agent was trained on an env given as an instance, a factory or a vector env.

        .. warning::
            A save names modules to import, and importing a module runs its code: the
            module of a ``"module:Id"`` env id and of each ``env_wrappers`` path (and the
            module of the env's registered entry point, when Gymnasium makes it). The
            tensors are read with ``weights_only=True``, so no pickled object runs, but
            those imports do: load only files you trust, as with SB3's ``load``. Passing
            ``env=`` builds the env you give, and the save's env id and wrappers are
            then not imported.

        Raises:
            ValueError: ``path`` is not a save of this agent, or of a format this
                version cannot read (the message names it), or a module path in it is
                not dotted identifiers.
            TypeError: a wrapper path in it names something other than a
                ``gymnasium.Wrapper`` subclass.
        """
        if not isinstance(path, io.IOBase):
            path = Path(path)
            if not path.exists() and not path.suffix and path.with_suffix(".zip").exists():
                path = path.with_suffix(".zip")  # save("model") wrote model.zip
        data = torch.load(path, map_location="cpu", weights_only=True)
        if not isinstance(data, dict) or "format" not in data:
            raise ValueError(f"{path} is not a pomdp_bench agent save")
        if data.get("agent", cls.__name__) != cls.__name__:
            raise ValueError(f"{path} holds a {data['agent']} agent; load it with {data['agent']}.load")
        if data["format"] != cls.save_format:
            data = cls._upgrade(dict(data), path)
        settings = cls.settings_class.from_dict(data["settings"])
        env_kwargs: dict[str, Any] | None = data["env_kwargs"]
        wrappers = data.get("env_wrappers") or None  # saves before 0.3 had none
        if env is None:
            env = data["env"]
            if env is None or not data.get("env_from_id", True):
                raise ValueError(
                    f"{path} was trained on an env given as an instance, a factory or a vector env"
                    f"{'' if env is None else f' (of {env!r})'}, which a save cannot rebuild with "
                    f"its wrappers: pass env= (the same kind of env) to load it"
                )
        elif not isinstance(env, str):  # an env brings its own kwargs and wrappers
            env_kwargs = wrappers = None
            if isinstance(env, (gym.Env, VectorEnv)):  # and its copies; a factory keeps n_envs
                settings = settings.make(settings, n_envs=None)
        model = cls(env, settings=settings, env_kwargs=env_kwargs, env_wrappers=wrappers, device=device)
        # A save without optimisers (save(optimizers=False)) trains on from fresh ones.
        fresh = {k: v for k, v in model._state_dicts().items() if k.endswith("optimizer") and k not in data}
        model._load_state_dicts({**data, **fresh})
        model.num_timesteps = int(data["num_timesteps"])
        model.n_updates = int(data["n_updates"])
        return model
