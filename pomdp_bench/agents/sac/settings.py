"""SAC's settings (:class:`SACSettings`) and :func:`parse_ent_coef`; what every agent's
settings share is :class:`~pomdp_bench.agents.common.settings.AgentSettings`."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any, ClassVar

from pomdp_bench.agents.common.schedules import ScheduleLike
from pomdp_bench.agents.common.settings import AgentSettings
from pomdp_bench.agents.sac.networks import SACNetArch
from pomdp_bench.memory import MEMORY_KINDS, MemoryConfig
from pomdp_bench.validation import check_bool, check_float, check_int

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
    seed: int | None = 0
    """Seeds the networks, the env resets, the exploration, the replay draws and the
    policy noise; the same seed gives the same learning curve on one CPU. ``None``: drawn from numpy's global generator when the agent is built (so
    ``np.random.seed`` or SB3's ``set_random_seed`` decides, as in SB3), and kept
    as ``model.seed`` and ``model.settings.seed`` so the run can be repeated."""

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
