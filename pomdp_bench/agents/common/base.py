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
inside a forked RNG, so building an agent leaves the global RNG untouched. ``seed=None``
draws the seed from numpy's global generator once, at construction (SB3's
``set_random_seed`` decides it), and keeps it as ``seed``.

SB3's habits (:mod:`~pomdp_bench.agents.common.sb3_habits`): ``learn`` takes SB3's
callbacks (``EvalCallback``, ``CheckpointCallback``, ...) and logs to TensorBoard through
SB3's ``Logger`` under SB3's keys (``tensorboard_log=``); ``get_parameters``,
``set_parameters``, ``get_env`` and ``set_env`` are SB3's. These need the ``[sb3]``
extra (and ``[tensorboard]`` for the event files), imported only when used.
"""

from __future__ import annotations

import abc
import collections
import io
import math
import os
import time
import warnings
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
from pomdp_bench.agents.common.sb3_habits import (
    TENSORBOARD_EXCLUDED,
    CallbackDriver,
    StepHook,
    check_logging_extras,
    from_policy_kwargs,
    log_line,
    make_logger,
    refuse_policy_string,
    refuse_sb3_keywords,
    sb3_records,
    split_callback,
    walk_callbacks,
)
from pomdp_bench.agents.common.seeding import env_seeds
from pomdp_bench.agents.common.sequence_buffer import SequenceReplayBuffer
from pomdp_bench.agents.common.settings import AgentSettings
from pomdp_bench.agents.common.spaces import flat_vector_env, flatten_observations, needs_flattening
from pomdp_bench.envs.make import make_vector_env, training_env
from pomdp_bench.envs.wrappers import check_wrappers
from pomdp_bench.imports import import_modules
from pomdp_bench.memory import MEMORY_KINDS, MemoryConfig, memory_class
from pomdp_bench.validation import check_bool, check_int

SettingsT = TypeVar("SettingsT", bound=AgentSettings)
AgentT = TypeVar("AgentT", bound="Agent")

# The offset of evaluate()'s action-sampling stream; the same in every agent.
EVALUATION_STREAM = 10_001


def available_devices() -> list[str]:
    """The devices an agent can take on this machine: ``"auto"``, ``"cpu"``, and
    ``"cuda"``/``"cuda:<i>"`` or ``"mps"`` where torch finds them."""
    devices = ["auto", "cpu"]
    if torch.cuda.is_available():
        devices += ["cuda", *(f"cuda:{i}" for i in range(torch.cuda.device_count()))]
    if torch.backends.mps.is_available():
        devices.append("mps")
    return devices


def resolve_device(device: str | torch.device) -> torch.device:
    """``"auto"``: CUDA when available, else the CPU; anything else as torch reads it.

    Raises:
        ValueError: a device torch does not know, or one this machine lacks (CUDA on a
            torch without CUDA or without a GPU), listing the devices it has.
    """
    if str(device) == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        resolved = torch.device(device)
    except (RuntimeError, TypeError):
        raise ValueError(
            f"device={device!r} is not a device torch knows; valid devices here: {available_devices()}"
        ) from None
    if resolved.type == "cuda":
        if not torch.cuda.is_available():
            why = "this torch has no CUDA build" if torch.version.cuda is None else "torch finds no GPU"
            raise ValueError(
                f"device={device!r} but CUDA is not available ({why}; torch {torch.__version__}); "
                f"valid devices here: {available_devices()}"
            )
        if resolved.index is not None and resolved.index >= torch.cuda.device_count():
            raise ValueError(
                f"device={device!r} but torch finds {torch.cuda.device_count()} GPU(s); "
                f"valid devices here: {available_devices()}"
            )
    elif resolved.type == "mps" and not torch.backends.mps.is_available():
        raise ValueError(
            f"device={device!r} but MPS is not available; valid devices here: {available_devices()}"
        )
    return resolved


def _memory_module(config: Any) -> str | None:
    """The module that registered ``config``'s memory kind, for a kind not shipped with
    pomdp_bench (a save records it so that ``load`` can import it); None for a shipped
    kind, or one defined in a script (``__main__``), which no other process can import."""
    kind = getattr(config, "kind", None)
    if kind is None or kind in MEMORY_KINDS:
        return None
    module = memory_class(kind).__module__
    return None if module == "__main__" else module


def _copies(n: int) -> str:
    return f"{n} cop{'y' if n == 1 else 'ies'}"


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
        tensorboard_log: a folder for TensorBoard event files, as SB3's: each ``learn``
            writes a run ``<tb_log_name>_<n>`` in it through SB3's ``Logger``, under
            SB3's keys (``rollout/ep_rew_mean``, ``train/value_loss``, ...). Needs the
            ``[sb3]`` and ``[tensorboard]`` extras.
        policy_kwargs: SB3's ``policy_kwargs`` where they have an equivalent here
            (``net_arch``, ``activation_fn``, ``lstm_hidden_size``, ``n_lstm_layers``,
            ``enable_critic_lstm``, ``shared_lstm``, ``ortho_init``, ``log_std_init``);
            any other key is refused by name.
        **changes: fields of the settings, overriding ``settings``.

    Raises:
        TypeError: an unknown setting (the message lists the valid ones) or a wrong type;
            an SB3 keyword with no meaning here (the message names what plays its part).
        ValueError: settings that cannot work, saying what would; a device this
            machine lacks.
        ImportError: ``tensorboard_log`` without SB3 or tensorboard (the message names
            the extras to install).

    Attributes:
        env: the training vector env (``SAME_STEP`` autoreset).
        env_id, env_kwargs, env_wrappers: what built it (``env_id`` is ``None`` for a
            vector env given without a spec).
        n_envs: copies stepped together (``N``).
        settings: the resolved settings (an :class:`~pomdp_bench.agents.common.settings.AgentSettings`).
        seed: the seed in use (drawn at construction where ``seed=None``).
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
        tensorboard_log: str | os.PathLike[str] | None = None,
        **changes: Any,
    ) -> None:
        refuse_policy_string(type(self).__name__, env, memory)
        refuse_sb3_keywords(type(self).__name__, changes, self.settings_class.field_names())
        self.verbose = check_int("verbose", verbose, minimum=0)
        if tensorboard_log is not None:
            check_logging_extras("tensorboard_log")
        self.tensorboard_log = None if tensorboard_log is None else os.fspath(tensorboard_log)
        self._logger: Any = None
        self._custom_logger = False
        if policy_kwargs:
            memory, changes = from_policy_kwargs(policy_kwargs, memory, changes)
        if memory is not None:
            changes = {"memory": memory, **changes}
        made: SettingsT = self.settings_class.make(settings, **changes)  # type: ignore[assignment]
        if made.seed is None:  # as SB3: the global generators decide (set_random_seed, np.random.seed)
            made = made.make(made, seed=int(np.random.randint(2**31 - 1)))  # noqa: NPY002
        self.device = resolve_device(device)
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
            self.seed: int = self.settings.seed  # type: ignore[assignment]
            self.memory_config = self.settings.memory
            self._apply_num_threads()
            self._predict_generator = self._stream(self.predict_stream)

            self.num_timesteps = 0
            self.n_updates = 0
            self.history: list[dict[str, float]] = []
            self.episode_log: list[tuple[int, float, int]] = []
            self._recent_returns: collections.deque[float] = collections.deque(maxlen=100)
            self._recent_lengths: collections.deque[int] = collections.deque(maxlen=100)
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
        callback: Any = None,
        log_interval: int = 1,
        tb_log_name: str | None = None,
        reset_num_timesteps: bool = True,
    ) -> AgentT:
        """Train for ``total_timesteps`` env steps (rounded up to whole iterations of the
        agent's loop: PPO's and PQN's rollouts, SAC's and DQN's vector steps). The
        weights, optimisers and the episodes in flight carry on from the last call.

        Args:
            total_timesteps: env steps, over all copies.
            progress_bar: show a tqdm bar.
            callback: a function called with the agent after every iteration (returning
                ``False`` stops training); an SB3 ``BaseCallback`` (``EvalCallback``,
                ``CheckpointCallback``, ``CallbackList``, ...); or a list of either.
                SB3 calls ``on_step`` once per vector env step, and so does this: with
                ``num_timesteps`` counting that step, once the agent is done with it. A
                ``False`` from it stops training at the end of the iteration (PPO and
                PQN finish the rollout and its update; SAC and DQN stop at once).
            log_interval: ``history`` entries between two dumps to the logger (PPO, PQN:
                rollouts, as SB3's on-policy ``log_interval``).
            tb_log_name: the TensorBoard run's name (default: the agent's class name).
            reset_num_timesteps: as SB3's: ``True`` restarts ``num_timesteps`` (and the
                window of recent episodes) at 0 and starts a new TensorBoard run;
                ``False`` counts on and writes to the last run. Unlike SB3, neither
                resets the envs: episodes in flight go on.

        ``self.history`` gains statistics as the agent's ``_iterate`` says;
        ``self.episode_log`` a ``(timesteps, return, length)`` per finished episode.

        Raises:
            FloatingPointError: a NaN or inf in a loss, gradient or parameter, naming
                the update.
            TypeError: a ``callback`` that is none of the above.
            ValueError: an SB3 callback that cannot work here (the message gives ours).
        """
        total_timesteps = check_int("total_timesteps", total_timesteps, minimum=0)
        log_interval = check_int("log_interval", log_interval, minimum=1)
        reset_num_timesteps = check_bool("reset_num_timesteps", reset_num_timesteps)
        tb_log_name = type(self).__name__ if tb_log_name is None else str(tb_log_name)
        functions, sb3_callback = split_callback(callback)
        self._apply_num_threads()
        if reset_num_timesteps:
            self.num_timesteps = 0
            self._recent_returns.clear()
            self._recent_lengths.clear()
        if self._obs is None:
            self._start_episodes()
        if not self._custom_logger and (self.tensorboard_log is not None or sb3_callback is not None):
            if self._logger is not None:
                self._logger.close()
            self._logger = make_logger(self.tensorboard_log, tb_log_name, reset_num_timesteps)
        self._learn_start = time.perf_counter()
        driver = None
        if sb3_callback is not None:
            driver = self._start_sb3_callback(
                sb3_callback,
                {
                    "self": self,
                    "total_timesteps": self.num_timesteps + total_timesteps,
                    "callback": sb3_callback,
                    "log_interval": log_interval,
                    "tb_log_name": tb_log_name,
                    "reset_num_timesteps": reset_num_timesteps,
                    "progress_bar": progress_bar,
                },
            )
        bar = tqdm(total=total_timesteps, disable=not progress_bar, unit="step")
        try:
            logged = len(self.history)
            entries = 0
            for steps in self._iterate(total_timesteps):
                if len(self.history) > logged:  # a new log entry (SAC logs every log_interval steps)
                    entries += len(self.history) - logged
                    logged = len(self.history)
                    bar.set_postfix(mean_return=f"{self.history[-1]['mean_return']:.3g}", refresh=False)
                    if self.verbose:
                        bar.write(log_line(self.history[-1]))
                    if self._logger is not None and entries % log_interval == 0:
                        self.dump_logs()
                if bar.n + steps < total_timesteps:
                    bar.update(steps)
                else:  # the last iteration: close() draws the final line, so update() must not
                    bar.n = total_timesteps
                stop = False
                if driver is not None:
                    driver.end_iteration()
                    stop = driver.stop
                for function in functions:
                    stop = function(self) is False or stop
                if stop:
                    break
        finally:
            bar.close()
            if driver is not None:
                self.env = self.env.hooked_env
        if driver is not None:
            sb3_callback.on_training_end()
        return self

    def _start_sb3_callback(self, callback: Any, locals_: dict[str, Any]) -> CallbackDriver:
        """Check an SB3 callback, initialise it as SB3's ``learn`` does, and hook the
        training env's ``step`` to it for the coming ``learn``."""
        for item in walk_callbacks(callback):
            if getattr(item, "save_replay_buffer", False) and self._has_replay_buffer():
                raise ValueError(
                    f"{type(item).__name__}(save_replay_buffer=True): {type(self).__name__}.save writes "
                    "no replay buffer (a loaded agent refills it); pass save_replay_buffer=False"
                )
        with warnings.catch_warnings():
            # EvalCallback warns when the training env (a Gymnasium vector env here) and
            # the eval env (an SB3 VecEnv) differ in type, a check for VecNormalize
            # wrappers; the normalisation here lives in the agent, which predict applies.
            warnings.filterwarnings("ignore", message="Training and eval env are not of the same type")
            callback.init_callback(self)
        callback.on_training_start(locals_, globals())
        driver = CallbackDriver(callback, self.n_envs)
        self.env = StepHook(self.env, driver)  # type: ignore[assignment]
        return driver

    def _has_replay_buffer(self) -> bool:
        return any(isinstance(value, SequenceReplayBuffer) for value in vars(self).values())

    @abc.abstractmethod
    def _start_episodes(self) -> None:
        """Reset the training envs and the policy's memory for a first ``learn``."""

    @abc.abstractmethod
    def _iterate(self, total_timesteps: int) -> Iterator[int]:
        """The agent's training loop over ``total_timesteps`` env steps; yields the env
        steps each iteration took."""

    # ------------------------------------------------------------------------
    # SB3's logger, environment and parameter accessors
    # ------------------------------------------------------------------------
    @property
    def logger(self) -> Any:
        """SB3's ``Logger`` that ``learn`` writes to and SB3's callbacks record into
        (TensorBoard files with ``tensorboard_log``, else one that writes nothing; or
        the one given to :meth:`set_logger`). Needs the ``[sb3]`` extra.
        """
        if self._logger is None:
            self._logger = make_logger(None, type(self).__name__, True)
        return self._logger

    def set_logger(self, logger: Any) -> None:
        """Use SB3's ``logger`` (e.g. ``stable_baselines3.common.logger.configure(folder,
        ["stdout", "csv", "tensorboard"])``) in every later ``learn``, as SB3's
        ``set_logger``; ``tensorboard_log`` is then not read."""
        self._logger, self._custom_logger = logger, True

    def dump_logs(self) -> None:
        """Record the last ``history`` entry in :attr:`logger` under SB3's keys
        (``rollout/ep_rew_mean``, ``rollout/ep_len_mean``, ``time/fps``,
        ``train/value_loss``, ...) and write them at step ``num_timesteps``, as SB3's
        ``dump_logs``."""
        logger = self.logger
        for key, value in sb3_records(self.history[-1] if self.history else {}).items():
            logger.record(key, value, exclude="tensorboard" if key in TENSORBOARD_EXCLUDED else None)
        if self._recent_lengths:
            logger.record("rollout/ep_len_mean", float(np.mean(self._recent_lengths)))
        start = getattr(self, "_learn_start", time.perf_counter())
        logger.record("time/time_elapsed", int(time.perf_counter() - start), exclude="tensorboard")
        logger.record("time/total_timesteps", self.num_timesteps, exclude="tensorboard")
        logger.dump(step=self.num_timesteps)

    @property
    def ep_info_buffer(self) -> collections.deque[dict[str, float]]:
        """The last 100 finished training episodes as SB3's ``ep_info_buffer`` holds
        them: ``{"r": return, "l": length}`` each (a copy; no ``"t"``)."""
        return collections.deque(
            ({"r": r, "l": n} for r, n in zip(self._recent_returns, self._recent_lengths, strict=True)),
            maxlen=100,
        )

    def get_vec_normalize_env(self) -> None:
        """None, always: observation and reward normalisation live in the agent
        (``normalize_observations``, ``normalize_rewards``); ``save`` keeps their
        statistics and ``predict`` applies them. SB3's callbacks ask for this."""
        return None

    def get_env(self) -> VectorEnv:
        """The Gymnasium vector env the agent trains on (SB3's ``get_env`` returns its
        ``VecEnv``)."""
        env = self.env
        return env.hooked_env if isinstance(env, StepHook) else env

    def set_env(
        self,
        env: str | gym.Env | VectorEnv | Callable[[], gym.Env],
        force_reset: bool = True,
    ) -> None:
        """Train on ``env`` from the next ``learn`` on, as SB3's ``set_env``: an id (with
        this agent's ``env_kwargs`` and wrappers when it is the same id), a ``gym.Env``,
        a factory or a ``SAME_STEP`` vector env, with the agent's spaces and number of
        copies. The next ``learn`` starts fresh episodes on it; the memories and
        replay rows of the old episodes stay as they were.

        Raises:
            ValueError: other spaces or another number of copies, saying what is valid
                (to change the number of copies, ``save`` and ``load(path, env=...)``);
                ``force_reset=False``.
        """
        name = type(self).__name__
        if not check_bool("force_reset", force_reset):
            raise ValueError(
                f"force_reset=False would step the new env on from the old env's last observations; "
                f"{name}.set_env always starts fresh episodes (leave force_reset=True)"
            )
        copies = (
            1 if isinstance(env, gym.Env) else env.num_envs if isinstance(env, VectorEnv) else self.n_envs
        )
        if copies != self.n_envs:
            raise ValueError(
                f"set_env needs {self.n_envs} copies of the env, as the agent has (n_envs={self.n_envs}); "
                f"got {copies}. For another number of copies: {name}.save(path), then "
                f"{name}.load(path, env=...)"
            )
        same_id = isinstance(env, str) and env == self.env_id
        resolved = training_env(
            env,
            self.env_kwargs if same_id else None,
            None if isinstance(env, (gym.Env, VectorEnv)) else self.n_envs,
            self.default_n_envs,
            self.env_wrappers if same_id else (),
        )
        spaces = (resolved.env.single_observation_space, resolved.env.single_action_space)
        if spaces != (self.raw_observation_space, self.action_space):
            if not isinstance(env, (gym.Env, VectorEnv)):  # we built the copies: close them
                resolved.env.close()
            raise ValueError(
                f"set_env needs the agent's observation space {self.raw_observation_space} and action "
                f"space {self.action_space}; the env has {spaces[0]} and {spaces[1]}"
            )
        self.env, self.env_id, self.env_kwargs = (
            flat_vector_env(resolved.env),
            resolved.env_id,
            resolved.env_kwargs,
        )
        self._training_env = resolved
        self._env_from_id = isinstance(env, str)
        self.env_wrappers = resolved.wrappers if isinstance(env, str) else ()
        self._obs = None  # the next learn resets the new env

    def get_parameters(self) -> dict[str, Any]:
        """The learned state by name, as SB3's ``get_parameters``: the state dict of each
        network and optimiser (and the few scalars an agent keeps, e.g. DQN's
        ``exploration_rate``); the arrays are the agent's own, not copies. What ``save``
        writes beside the settings."""
        return dict(self._state_dicts())

    def set_parameters(
        self,
        load_path_or_dict: str | Path | io.BufferedIOBase | Mapping[str, Any],
        exact_match: bool = True,
        device: str | torch.device = "auto",
    ) -> None:
        """Load learned state by name, as SB3's ``set_parameters``: a dict from
        :meth:`get_parameters`, or a save of this agent (a path or a binary file).

        Args:
            load_path_or_dict: the parameters, or where to read them.
            exact_match: every name of :meth:`get_parameters` must be given; ``False``
                loads the names given and keeps the rest.
            device: where to read a save's tensors before they go to the agent's
                device (``"auto"``: the CPU).

        Raises:
            ValueError: a name the agent does not have, or (``exact_match``) a missing
                one, listing the agent's names.
        """
        own = self._state_dicts()
        if isinstance(load_path_or_dict, Mapping):
            given = dict(load_path_or_dict)
        else:
            data = self._read_save(load_path_or_dict, "cpu" if str(device) == "auto" else device)
            given = {k: data[k] for k in own if k in data}
        unknown = sorted(set(given) - set(own))
        missing = sorted(set(own) - set(given))
        if unknown or (exact_match and missing):
            raise ValueError(
                f"set_parameters: {type(self).__name__}'s parameters are {sorted(own)}; got unknown "
                f"{unknown} and missing {missing}"
                + (" (exact_match=False loads only those given)" if missing and not unknown else "")
            )
        self._load_state_dicts({**own, **given})

    # ------------------------------------------------------------------------
    # Seeding, threads, episode statistics, the NaN guard
    # ------------------------------------------------------------------------
    def _apply_num_threads(self) -> None:
        """``torch.set_num_threads(settings.num_threads)`` (process-wide), unless None."""
        threads = getattr(self.settings, "num_threads", None)
        if threads is not None and torch.get_num_threads() != threads:
            torch.set_num_threads(threads)

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
            self._recent_lengths.extend(lengths.tolist())
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
                # Only for a kind of a user's own, so saves of shipped kinds keep their bytes.
                **({"memory_module": module} if (module := _memory_module(self.memory_config)) else {}),
                **{k: v for k, v in self._state_dicts().items() if optimizers or not k.endswith("optimizer")},
                "num_timesteps": self.num_timesteps,
                "n_updates": self.n_updates,
            },
            path,
        )
        return path

    @classmethod
    def _read_save(
        cls, path: str | Path | io.BufferedIOBase, map_location: str | torch.device = "cpu"
    ) -> dict[str, Any]:
        """A save of this agent as a dict of the current format (tensors read with
        ``weights_only=True``).

        Raises:
            ValueError: not a save of this agent, or of a format this version cannot read.
        """
        if not isinstance(path, io.IOBase):
            path = Path(path)
            if not path.exists() and not path.suffix and path.with_suffix(".zip").exists():
                path = path.with_suffix(".zip")  # save("model") wrote model.zip
        data = torch.load(path, map_location=map_location, weights_only=True)
        if not isinstance(data, dict) or "format" not in data:
            raise ValueError(f"{path} is not a pomdp_bench agent save")
        if data.get("agent", cls.__name__) != cls.__name__:
            raise ValueError(f"{path} holds a {data['agent']} agent; load it with {data['agent']}.load")
        if data["format"] != cls.save_format:
            data = cls._upgrade(dict(data), path)
        return data

    @classmethod
    def _fit_copies(cls, settings: SettingsT, copies: int, saved_copies: int | None, path: Any) -> SettingsT:
        """The saved ``settings`` for an env of ``copies`` copies given to ``load``: the
        fields whose valid values depend on the copies (``copy_dependent``: PPO's and
        PQN's ``bptt_length``) go back to their defaults where the saved values do not
        fit, with a warning; they shape further training only.

        Raises:
            ValueError: the settings cannot fit ``copies`` copies, saying how to load.
        """
        try:
            settings.resolve(copies)  # type: ignore[attr-defined]
            return settings
        except ValueError as error:
            first_error = error
        changed = [name for name in settings.copy_dependent if getattr(settings, name) is not None]
        fitted = settings.make(settings, **dict.fromkeys(changed))
        try:
            resolved = fitted.resolve(copies)  # type: ignore[attr-defined]
        except ValueError:
            resolved = None
        if resolved is None or not changed:
            name = cls.__name__
            raise ValueError(
                f"{path} was trained on {saved_copies} copies of its env, and its settings do not fit "
                f"the {_copies(copies)} of the env given ({first_error}). Load it with a factory (a "
                f"function returning the env) for {saved_copies} copies, e.g. "
                f"{name}.load(path, env=lambda: gym.make(...)), or with a vector env of "
                f"{saved_copies} copies"
            ) from None
        was = ", ".join(f"{n}={getattr(settings, n)}" for n in changed)
        now = ", ".join(f"{n}={getattr(resolved, n)}" for n in changed)
        warnings.warn(
            f"{path}: {was} does not fit the {_copies(copies)} of the env given; loaded with {now}, "
            f"the default for them. predict and evaluate are unchanged; "
            f"further training uses {now}",
            UserWarning,
            stacklevel=3,
        )
        return fitted

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
            module that registered a memory kind not shipped with pomdp_bench
            (``memory_module``), the
            module of a ``"module:Id"`` env id and of each ``env_wrappers`` path (and the
            module of the env's registered entry point, when Gymnasium makes it). The
            tensors are read with ``weights_only=True``, so no pickled object runs, but
            those imports do: load only files you trust, as with SB3's ``load``. Passing
            ``env=`` builds the env you give, and the save's env id and wrappers are
            then not imported.

        A ``gym.Env`` or a vector env given as ``env`` brings its own number of copies.
        Where the saved piece length (PPO's and PQN's ``bptt_length``) does not fit
        them, it goes back to its default for them, with a warning: it shapes further
        training only, not ``predict`` or ``evaluate``.

        Raises:
            ValueError: ``path`` is not a save of this agent, or of a format this
                version cannot read (the message names it), or a module path in it is
                not dotted identifiers; settings that cannot fit the copies of the
                ``env`` given (the message says how to load).
            TypeError: a wrapper path in it names something other than a
                ``gymnasium.Wrapper`` subclass.
        """
        data = cls._read_save(path)
        if data.get("memory_module"):  # the module that registers a memory kind of a user's own
            import_modules([data["memory_module"]], what=f"{path}: memory_module")
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
                saved_copies = settings.n_envs
                settings = settings.make(settings, n_envs=None)
                copies = 1 if isinstance(env, gym.Env) else env.num_envs
                settings = cls._fit_copies(settings, copies, saved_copies, path)
        model = cls(env, settings=settings, env_kwargs=env_kwargs, env_wrappers=wrappers, device=device)
        # A save without optimisers (save(optimizers=False)) trains on from fresh ones.
        fresh = {k: v for k, v in model._state_dicts().items() if k.endswith("optimizer") and k not in data}
        model._load_state_dicts({**data, **fresh})
        model.num_timesteps = int(data["num_timesteps"])
        model.n_updates = int(data["n_updates"])
        return model
