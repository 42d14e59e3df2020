"""Each agent's settings: one dataclass per agent, documented field by field.

A settings object is the single statement of what an agent can be told:

- It validates itself when made: a bad value raises ``ValueError`` (or
  ``TypeError`` for a wrong type), naming the field, the value and what is valid;
  an unknown name raises ``TypeError`` listing the valid ones (:meth:`make`).
- :meth:`resolve` runs the checks that need the number of env copies (a rollout
  the minibatches divide, a replay buffer that holds a sequence, ...) and fills the
  defaults that depend on it; an agent keeps the resolved settings as ``.settings``.
- ``save`` writes :meth:`to_dict` (plain data) and ``load`` reads it back with
  :meth:`from_dict`.
- The harness fills them from ``agents/*.yaml`` (whose keys are these fields) plus
  the run's memory, BPTT length and seed, and checks a suite's entries when it
  loads the suite.

The env (an id or a vector env), its kwargs and the device are not settings: they
say where the agent runs, not what it is.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any, ClassVar, TypeVar

from pomdp_bench.agents.networks import NetArch, activation_class
from pomdp_bench.agents.rollout_buffer import check_bptt_length
from pomdp_bench.agents.sac_networks import SACNetArch
from pomdp_bench.agents.schedules import Schedule, ScheduleLike, as_schedule, schedule_to_data
from pomdp_bench.memory import MEMORY_KINDS, MemoryConfig
from pomdp_bench.tuned import count_episodes, hyperparameter_file, tuned_hyperparameters
from pomdp_bench.validation import check_bool, check_choice, check_float, check_int

S = TypeVar("S", bound="AgentSettings")


# PPOSettings.clip_rise: what bounds a rise of an action's probability in one update.
CLIP_RISES = ("ratio", "probability")


class AgentSettings:
    """What PPO's and SAC's settings share: the memory, the seed, the env copies,
    construction from keywords and the plain-data round trip."""

    #: the agent the settings belong to, for messages
    agent: ClassVar[str]

    memory: MemoryConfig
    n_envs: int | None
    seed: int

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))  # type: ignore[arg-type]

    @classmethod
    def make(cls: type[S], base: S | None = None, **changes: Any) -> S:
        """``base`` (default: the defaults) with ``changes``; an unknown name raises
        ``TypeError`` naming it and listing the valid ones."""
        unknown = sorted(set(changes) - set(cls.field_names()))
        if unknown:
            raise TypeError(
                f"{cls.agent} has no setting{'s' if len(unknown) > 1 else ''} {unknown}; "
                f"valid settings: {list(cls.field_names())}"
            )
        if base is None:
            return cls(**changes)
        return dataclasses.replace(base, **changes)  # type: ignore[type-var]

    @classmethod
    def tuned(cls: type[S], env_id: str, env_kwargs: Mapping[str, Any] | None = None, **changes: Any) -> S:
        """The settings tuned for ``env_id`` (its entry in ``agents/<agent>.yaml``; for
        ``env_kwargs``, the band of their memory horizon where the entry has
        ``horizons``), with ``changes``. The plain constructor uses the library's
        defaults instead.

        Raises:
            ValueError: the file has no entry for ``env_id``; the message lists those it has.
        """
        table = hyperparameter_file(cls.agent.lower())
        if env_id not in table:
            known = sorted(k for k in table if k != "default")
            raise ValueError(
                f"agents/{cls.agent.lower()}.yaml has no tuned {cls.agent} settings for {env_id!r}; "
                f"it has {known}. Use {cls.__name__}() for the library defaults."
            )
        return cls.make(**{**tuned_hyperparameters(cls.agent.lower(), env_id, env_kwargs), **changes})

    @classmethod
    def from_dict(cls: type[S], data: Mapping[str, Any]) -> S:
        """Read what :meth:`to_dict` wrote (or an ``agents/*.yaml`` entry)."""
        return cls.make(**dict(data))

    def to_dict(self) -> dict[str, Any]:
        """Plain data (numbers, strings, lists, dicts) that :meth:`from_dict` reads back."""
        data: dict[str, Any] = {}
        for name in self.field_names():
            value = getattr(self, name)
            if isinstance(value, MemoryConfig):
                value = value.to_dict()
            elif name in self._schedules:
                value = None if value is None else schedule_to_data(value)
            data[name] = value
        return data

    _schedules: ClassVar[tuple[str, ...]] = ()

    def _set(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)  # normalising a frozen dataclass's field

    def _check_common(self) -> None:
        self._set("memory", MemoryConfig.from_any(self.memory))
        if self.n_envs is not None:
            self._set("n_envs", check_int("n_envs", self.n_envs, minimum=1))
        self._set("seed", check_int("seed", self.seed))
        for name in self._schedules:
            value = getattr(self, name)
            if value is not None:
                self._set(name, as_schedule(name, value))
        if hasattr(self, "activation"):  # agents with networks name their activation
            activation_class(self.activation)


@dataclasses.dataclass(frozen=True)
class PPOSettings(AgentSettings):
    """Settings of :class:`~pomdp_bench.agents.ppo.PPO` (the defaults are SB3's, except
    where a field says otherwise)."""

    agent: ClassVar[str] = "PPO"
    _schedules: ClassVar[tuple[str, ...]] = ("clip_range", "clip_range_vf", "learning_rate")

    memory: MemoryConfig | Mapping[str, Any] | str | None = None
    """The memory block: ``None`` (feedforward), a kind name, a dict or a
    :class:`~pomdp_bench.memory.MemoryConfig` (kept as a ``MemoryConfig``)."""
    n_envs: int | None = None
    """Env copies stepped together; ``None``: 8 for an env id, the vector env's
    ``num_envs`` otherwise."""
    n_steps: int = 128
    """Steps per copy in a rollout (``T``)."""
    num_minibatches: int | None = None
    """Minibatches per epoch. Give this or ``batch_size``; 4 when neither is given.
    Resolved, it is always set and ``batch_size`` is ``None``."""
    batch_size: int | None = None
    """Steps per minibatch (SB3's meaning); must divide ``n_envs * n_steps``."""
    n_epochs: int = 10
    """Passes over each rollout."""
    gamma: float = 0.99
    """Discount factor."""
    gae_lambda: float = 0.95
    """GAE's lambda."""
    clip_range: ScheduleLike = 0.2
    """PPO's ratio clip: a number or a schedule (``"lin_0.2"``)."""
    clip_range_vf: ScheduleLike | None = None
    """Clip of the value change around the collected value (``None``: no clipping);
    depends on the reward scale."""
    ent_coef: float = 0.0
    """Weight of the entropy bonus."""
    vf_coef: float = 0.5
    """Weight of the value loss."""
    max_grad_norm: float = 0.5
    """Gradients are clipped to this global norm."""
    learning_rate: ScheduleLike = 3e-4
    """Adam's step size: a number or a schedule (``"lin_1e-3"`` decays linearly to 0
    over ``learn``'s ``total_timesteps``)."""
    normalize_observations: bool = False
    """Standardise observations by running statistics (SB3's ``VecNormalize``),
    clipped to ±10; needs a ``Box`` observation space."""
    normalize_rewards: bool = False
    """Scale rewards by the running standard deviation of the discounted return
    (SB3's ``VecNormalize``), clipped to ±10."""
    bptt_length: int | None = None
    """Steps per piece (``L``). ``None``: the longest pieces that cut every rollout
    into equal parts and split exactly into the minibatches (whole rollouts when
    ``n_envs % num_minibatches == 0``). An explicit value must divide that default."""
    shared_memory: bool = False
    """One encoder and memory for actor and critic (both losses train it) instead of
    one each."""
    net_arch: list[int] | dict[str, list[int]] | None = None
    """Hidden widths: a list for both heads, or a dict with ``pi``, ``vf`` (after the
    memory) and ``encoder`` (before it); ``None`` gives ``pi=vf=[64, 64]`` and no
    encoder. Kept as the dict."""
    activation: str = "tanh"
    """Activation of the MLPs (``"tanh"``, ``"relu"``, ...)."""
    ortho_init: bool = True
    """SB3's orthogonal initialisation of the MLPs and heads."""
    log_std_init: float = 0.0
    """Initial log standard deviation of ``Box`` actions."""
    # Experimental: research knobs, off by default; no published suite cell depends on
    # them except obs_skip. What each was built to test, and what it measured:
    # docs/notes/ppo-research-knobs.md.
    obs_skip: bool = False
    """Experimental. The heads read the encoded observation beside the memory's output,
    ``[memory(x_t), x_t]``, so the memory need not pass the present on. Default off."""
    epsilon_soft: float = 0.0
    """Experimental; discrete actions only. The policy samples from ``(1 - epsilon_soft)
    * pi + epsilon_soft / n``; log-probs, ratios and entropy are the mixture's, and
    deterministic evaluation is unchanged. In ``[0, 1)``; 0 (default) is plain PPO."""
    uniform_kl_coef: float = 0.0
    """Experimental; discrete actions only. The weight of ``KL(uniform || pi)`` in the
    loss (:func:`~pomdp_bench.agents.networks.uniform_kl`), a log barrier that pulls
    every action's probability up with a force of ``coef / n``. 0 (default) is plain PPO."""
    clip_rise: str = "ratio"
    """Experimental. What bounds an action's rise in one update: ``"ratio"`` (default,
    PPO's clip: by the factor ``1 + clip_range``) or ``"probability"`` (discrete actions
    only: ``pi <= pi_old + clip_range``). Falls keep PPO's ratio clip either way."""
    seed: int = 0
    """Seeds the networks, the env resets, the action sampling and the shuffles; the
    same seed gives the same learning curve on one CPU."""

    def __post_init__(self) -> None:
        self._check_common()
        check_choice("clip_rise", self.clip_rise, CLIP_RISES)
        check_int("n_steps", self.n_steps, minimum=1)
        check_int("n_epochs", self.n_epochs, minimum=1)
        check_float("gamma", self.gamma, minimum=0.0, maximum=1.0)
        check_float("gae_lambda", self.gae_lambda, minimum=0.0, maximum=1.0)
        check_float("ent_coef", self.ent_coef)
        check_float("vf_coef", self.vf_coef, minimum=0.0)
        check_float("max_grad_norm", self.max_grad_norm, minimum=0.0, strict_minimum=True)
        check_float("log_std_init", self.log_std_init)
        check_float("epsilon_soft", self.epsilon_soft, minimum=0.0, maximum=1.0)
        check_float("uniform_kl_coef", self.uniform_kl_coef, minimum=0.0)
        if self.epsilon_soft == 1.0:
            raise ValueError(
                "epsilon_soft must be below 1 (1 is a uniform policy that cannot learn), got 1.0"
            )
        for name in (
            "normalize_observations",
            "normalize_rewards",
            "shared_memory",
            "obs_skip",
            "ortho_init",
        ):
            check_bool(name, getattr(self, name))
        if self.batch_size is not None:
            check_int("batch_size", self.batch_size, minimum=1)
        if self.num_minibatches is not None:
            check_int("num_minibatches", self.num_minibatches, minimum=1)
        if self.num_minibatches is not None and self.batch_size is not None:
            raise ValueError("give num_minibatches or batch_size, not both")
        self._set("net_arch", NetArch.parse(self.net_arch)._asdict())

    def resolve(self, n_envs: int) -> PPOSettings:
        """These settings for ``n_envs`` copies: ``num_minibatches`` and ``bptt_length``
        filled in, ``batch_size`` folded into ``num_minibatches``.

        Raises:
            ValueError: the minibatches or the pieces do not divide the rollout,
                listing the valid values.
        """
        rollout_size = n_envs * self.n_steps
        num_minibatches = self.num_minibatches
        if self.batch_size is not None:
            if rollout_size % self.batch_size:
                valid = [d for d in range(1, rollout_size + 1) if rollout_size % d == 0]
                raise ValueError(
                    f"batch_size={self.batch_size} must divide the rollout, n_envs * n_steps = "
                    f"{rollout_size}; valid batch sizes: {valid}"
                )
            num_minibatches = rollout_size // self.batch_size
        num_minibatches = 4 if num_minibatches is None else num_minibatches
        if num_minibatches > rollout_size:
            raise ValueError(f"num_minibatches must be in [1, {rollout_size}], got {num_minibatches}")
        bptt_length = check_bptt_length(self.bptt_length, n_envs, self.n_steps, num_minibatches)
        return dataclasses.replace(
            self, n_envs=n_envs, num_minibatches=num_minibatches, batch_size=None, bptt_length=bptt_length
        )

    @property
    def rollout_size(self) -> int:
        """Steps per rollout over all copies, ``n_envs * n_steps`` (resolved settings)."""
        assert self.n_envs is not None, "resolve() the settings first"
        return self.n_envs * self.n_steps


# SAC-Discrete's default target entropy, as a fraction of the uniform policy's log(n).
# Christodoulou 2019 used 0.98 and CleanRL's sac_atari 0.89, which keep the behaviour
# close to uniform; 0.5 lets it commit enough to reach the end of a T-Maze corridor
# often (tests/test_sac_learning.py).
DISCRETE_TARGET_ENTROPY_SCALE = 0.5


@dataclasses.dataclass(frozen=True)
class SACSettings(AgentSettings):
    """Settings of :class:`~pomdp_bench.agents.sac.SAC` (the defaults are SB3's, except
    the sequence replay's, which SB3 does not have)."""

    agent: ClassVar[str] = "SAC"
    _schedules: ClassVar[tuple[str, ...]] = ("learning_rate",)

    memory: MemoryConfig | Mapping[str, Any] | str | None = None
    """The memory block of the actor and of the critic (each gets its own): ``None``
    (feedforward), a kind name, a dict or a :class:`~pomdp_bench.memory.MemoryConfig`."""
    burn_in: int = 8
    """Steps at the start of each sampled sequence that warm the memories up, without
    gradient and without loss (``>= 0``)."""
    sequence_length: int = 16
    """Steps of each sampled sequence that the losses use (``>= 1``)."""
    stored_state: bool = False
    """Store the actor's memory at every step and start the actor's learned steps from
    it (R2D2's stored state); needs a memory. Each stored step then also holds the
    actor's state (gru: ``num_layers * H`` floats; transformer and mamba: thousands),
    so size ``buffer_size`` to match."""
    buffer_size: int = 1_000_000
    """Replay capacity in steps over all copies (``buffer_size // n_envs`` rows per
    copy; a truncated episode takes one more row for its final observation)."""
    batch_size: int = 32
    """Sequences per gradient step (each gives ``sequence_length`` loss terms; with
    ``sequence_length=1`` this is SB3's transitions per batch)."""
    learning_starts: int = 1_000
    """Env steps (over all copies) of uniformly random actions before the first
    update; ``learning_starts // n_envs`` must exceed ``burn_in + sequence_length + 1``
    so that every copy holds a whole sequence."""
    train_freq: int = 1
    """Vector-env steps between updates."""
    gradient_steps: int = 1
    """Gradient steps per update; ``-1``: as many as env steps were collected since the
    last update (``train_freq * n_envs``)."""
    learning_rate: ScheduleLike = 3e-4
    """Adam's step size for the actor, the critic and the entropy coefficient; a number
    or a schedule (``"lin_1e-3"``)."""
    tau: float = 0.005
    """Polyak coefficient of the target critic (1: hard copy)."""
    gamma: float = 0.99
    """Discount factor."""
    ent_coef: str | float = "auto"
    """The entropy coefficient alpha: ``"auto"`` learns it from 1.0, ``"auto_0.1"`` from
    0.1, a number fixes it."""
    target_entropy: str | float = "auto"
    """The entropy the learned alpha aims at, in nats: ``"auto"`` is ``-dim(A)`` for
    ``Box`` (SB3) and ``0.5 * log(n)`` for ``Discrete``; a number sets it."""
    target_update_interval: int = 1
    """Gradient steps between target-critic updates."""
    max_grad_norm: float | None = None
    """Clip each network's gradient to this global norm (``None``: no clipping, as SB3)."""
    n_envs: int | None = None
    """Env copies stepped together; ``None``: 1 for an env id, the vector env's
    ``num_envs`` otherwise."""
    net_arch: list[int] | dict[str, list[int]] | None = None
    """Hidden widths: a list for the policy and the Q heads, or a dict with ``pi``,
    ``qf`` (after the memory) and ``encoder`` (before it); ``None`` gives SB3's
    ``pi=qf=[256, 256]`` and no encoder. Kept as the dict."""
    activation: str = "relu"
    """Activation of the MLPs (``"relu"``, SB3's SAC default)."""
    seed: int = 0
    """Seeds the networks, the env resets, the exploration, the replay draws and the
    policy noise; the same seed gives the same learning curve on one CPU."""

    def __post_init__(self) -> None:
        self._check_common()
        check_int("burn_in", self.burn_in, minimum=0)
        check_int("sequence_length", self.sequence_length, minimum=1)
        check_bool("stored_state", self.stored_state)
        # a kind name on purpose: "none" is the stateless memory, with no state to store
        if self.stored_state and self.memory.kind == "none":  # type: ignore[union-attr]
            raise ValueError(
                f"stored_state=True needs a memory to store: pass memory= (one of {list(MEMORY_KINDS[1:])}) "
                "or use stored_state=False"
            )
        check_int("buffer_size", self.buffer_size, minimum=1)
        check_int("batch_size", self.batch_size, minimum=1)
        check_int("learning_starts", self.learning_starts, minimum=0)
        check_int("train_freq", self.train_freq, minimum=1)
        check_int("gradient_steps", self.gradient_steps, minimum=-1)
        if self.gradient_steps == 0:
            raise ValueError("gradient_steps must be >= 1, or -1 for as many as env steps collected; got 0")
        check_float("tau", self.tau, minimum=0.0, maximum=1.0, strict_minimum=True)
        check_float("gamma", self.gamma, minimum=0.0, maximum=1.0)
        check_int("target_update_interval", self.target_update_interval, minimum=1)
        if self.max_grad_norm is not None:
            check_float("max_grad_norm", self.max_grad_norm, minimum=0.0, strict_minimum=True)
        parse_ent_coef(self.ent_coef)
        if self.target_entropy != "auto":
            check_float("target_entropy", self.target_entropy)
        self._set("net_arch", SACNetArch.parse(self.net_arch)._asdict())

    @property
    def window(self) -> int:
        """Rows of one sampled sequence: ``burn_in + sequence_length + 1``."""
        return self.burn_in + self.sequence_length + 1

    def resolve(self, n_envs: int) -> SACSettings:
        """These settings for ``n_envs`` copies.

        Raises:
            ValueError: the buffer or the random steps before learning cannot hold a
                sequence per copy, saying what would.
        """
        window = self.window
        if self.buffer_size // n_envs < window:
            raise ValueError(
                f"buffer_size={self.buffer_size} keeps {self.buffer_size // n_envs} steps per copy "
                f"(n_envs={n_envs}), fewer than one sequence of burn_in + sequence_length + 1 = "
                f"{window}; raise buffer_size to at least {window} * n_envs = {window * n_envs}"
            )
        if self.learning_starts // n_envs <= window:
            raise ValueError(
                f"learning_starts={self.learning_starts} leaves each of the n_envs={n_envs} copies "
                f"{self.learning_starts // n_envs} steps before the first update, but one sampled "
                f"sequence needs burn_in + sequence_length + 1 = {window}: learning_starts // n_envs "
                f"must exceed {window}, so use learning_starts >= {(window + 1) * n_envs}, or a "
                f"shorter burn_in or sequence_length"
            )
        return dataclasses.replace(self, n_envs=n_envs)

    def target_entropy_for(self, discrete_actions: int | None, action_dim: int) -> float:
        """The target entropy in nats: ``target_entropy``, or for ``"auto"`` ``0.5 *
        log(n)`` with ``n`` discrete actions (``discrete_actions``) and ``-action_dim``
        for ``Box`` actions."""
        if self.target_entropy != "auto":
            return float(self.target_entropy)
        if discrete_actions is not None:
            return DISCRETE_TARGET_ENTROPY_SCALE * math.log(discrete_actions)
        return -float(action_dim)


def parse_ent_coef(ent_coef: str | float) -> tuple[bool, float]:
    """``(learned, initial value)`` from SB3's forms ``"auto"``, ``"auto_<init>"`` or a number."""
    if isinstance(ent_coef, str) and (ent_coef == "auto" or ent_coef.startswith("auto_")):
        try:
            init = 1.0 if ent_coef == "auto" else float(ent_coef[len("auto_") :])
        except ValueError:
            init = -1.0
        if init > 0:
            return True, init
    elif not isinstance(ent_coef, (str, bool)) and isinstance(ent_coef, (int, float)) and ent_coef >= 0:
        return False, max(float(ent_coef), 1e-30)  # stored as a log
    raise ValueError(
        f"ent_coef={ent_coef!r} is not valid: use 'auto' (learned from 1.0), 'auto_<init>' with "
        f"init > 0 (learned from init), or a fixed number >= 0"
    )


__all__ = [
    "PPOSettings",
    "SACSettings",
    "Schedule",
    "count_episodes",
    "parse_ent_coef",
    "tuned_hyperparameters",
]
