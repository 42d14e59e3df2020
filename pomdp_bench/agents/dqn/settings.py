"""Settings of :class:`~pomdp_bench.agents.dqn.DQN`: one frozen dataclass, field by field.

The defaults are SB3's ``DQN`` where SB3 has the setting, and SAC's sequence replay
(:class:`~pomdp_bench.agents.sac.settings.SACSettings`) where it has not. Memory-RL's
T-Maze settings (Ni et al. 2023; ``docs/notes/dqn-reference.md``) are in
``agents/dqn.yaml``; each field says where they differ from the defaults.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar

from pomdp_bench.agents.common.q_learning import LOSSES, DQNNetArch
from pomdp_bench.agents.common.schedules import ScheduleLike
from pomdp_bench.agents.common.settings import AgentSettings
from pomdp_bench.memory import MEMORY_KINDS, MemoryConfig
from pomdp_bench.validation import check_bool, check_choice, check_float, check_int


#: ``DQNSettings.loss``: the TD error's penalty.
@dataclasses.dataclass(frozen=True)
class DQNSettings(AgentSettings):
    """Settings of :class:`~pomdp_bench.agents.dqn.DQN` (the defaults are SB3's ``DQN``,
    except the sequence replay's, which SB3 does not have)."""

    agent: ClassVar[str] = "DQN"
    _schedules: ClassVar[tuple[str, ...]] = ("learning_rate",)

    memory: MemoryConfig | Mapping[str, Any] | str | None = None
    """The Q network's memory block: ``None`` (feedforward), a kind name, a dict or a
    :class:`~pomdp_bench.memory.MemoryConfig`."""
    burn_in: int = 8
    """Steps at the start of each sampled sequence that warm the memory up from zero,
    without gradient and without loss (R2D2's burn-in; ``>= 0``, shorter than
    ``sequence_length``). Unused with ``stored_state`` or without a memory."""
    sequence_length: int = 16
    """Steps of each sampled sequence that carry the loss (``>= 1``). With
    ``align_to_episodes`` and at least the episode length, each sequence is a whole
    episode (Memory-RL). ``burn_in=0, sequence_length=1`` without a memory is SB3's
    transition replay."""
    align_to_episodes: bool = False
    """Sample only sequences whose first learned step begins an episode (needs
    ``burn_in=0``; the memory then starts from zero, as it did when acting)."""
    stored_state: bool = False
    """Store the Q network's memory at every step and start the learned steps of the
    online and target networks from it (R2D2's stored state) instead of a burn-in;
    needs a memory. The stored state was computed by older weights: it goes stale as
    training moves on (``docs/notes/dqn-reference.md`` gives a measurement)."""
    n_steps: int = 1
    """Steps of reward in each TD target before it bootstraps (``>= 1``; a termination
    or a truncation inside cuts it short). Memory-RL: 1."""
    double_q: bool = False
    """Double Q-learning: the online network picks the bootstrap action, the target
    network scores it. SB3: off; Memory-RL: on."""
    loss: str = "huber"
    """The TD error's penalty: ``"huber"`` (SB3's ``smooth_l1_loss``, beta 1) or
    ``"mse"`` (Memory-RL). Averaged over the learned steps of the batch."""
    buffer_size: int = 1_000_000
    """Replay capacity in steps over all copies (``buffer_size // n_envs`` rows per
    copy; a truncated episode takes one more row for its final observation); at least
    one batch, ``batch_size * (burn_in + sequence_length + n_steps)``."""
    batch_size: int = 32
    """Sequences per gradient step (each gives ``sequence_length`` loss terms; with
    ``sequence_length=1`` this is SB3's transitions per batch). Memory-RL: 64 episodes."""
    learning_starts: int = 100
    """Env steps (over all copies) of uniformly random actions before the first
    update; ``learning_starts // n_envs`` must exceed ``burn_in + sequence_length +
    n_steps`` so that every copy holds a whole sequence."""
    train_freq: int = 4
    """Vector-env steps between updates (SB3's ``train_freq`` in steps)."""
    gradient_steps: int = 1
    """Gradient steps per update; ``-1``: as many as env steps were collected since the
    last update (``train_freq * n_envs``). Memory-RL's 0.25 updates per env step:
    ``train_freq * n_envs / gradient_steps = 4``."""
    learning_rate: ScheduleLike = 1e-4
    """Adam's step size; a number or a schedule (``"lin_1e-3"``). Memory-RL: 3e-4."""
    tau: float = 1.0
    """Polyak coefficient of the target update (1: a hard copy, SB3's default;
    Memory-RL: 0.005)."""
    target_update_interval: int = 10_000
    """Env steps (over all copies, SB3's count) between target updates; they happen
    while collecting, every ``max(target_update_interval // n_envs, 1)`` vector steps."""
    gamma: float = 0.99
    """Discount factor."""
    exploration_fraction: float = 0.1
    """Fraction of ``learn``'s ``total_timesteps`` over which epsilon falls linearly from
    ``exploration_initial_eps`` to ``exploration_final_eps`` (SB3 and Memory-RL: 0.1)."""
    exploration_initial_eps: float = 1.0
    """Epsilon at the start of ``learn``, in ``[0, 1]``."""
    exploration_final_eps: float = 0.05
    """Epsilon after ``exploration_fraction`` of training, in ``[0, 1]`` (SB3: 0.05;
    Memory-RL: ``1 / T``, T the episode length)."""
    max_grad_norm: float | None = 10.0
    """Clip the gradient to this global norm (SB3: 10; ``None``: no clipping, Memory-RL)."""
    n_envs: int | None = None
    """Env copies stepped together; ``None``: 1 for an env id, the vector env's
    ``num_envs`` otherwise."""
    net_arch: list[int] | dict[str, list[int]] | None = None
    """Hidden widths: a list after the memory, or a dict with ``q`` (after the memory)
    and ``encoder`` (before it); ``None`` gives SB3's ``[64, 64]`` and no encoder.
    Kept as the dict."""
    activation: str = "relu"
    """Activation of the MLPs (``"relu"``, SB3's DQN default)."""
    seed: int | None = 0
    """Seeds the network, the env resets, the exploration and the replay draws; the
    same seed gives the same learning curve on one CPU. ``None``: drawn from numpy's global generator when the agent is built (so
    ``np.random.seed`` or SB3's ``set_random_seed`` decides, as in SB3), and kept
    as ``model.seed`` and ``model.settings.seed`` so the run can be repeated."""

    def __post_init__(self) -> None:
        self._check_common()
        check_int("burn_in", self.burn_in, minimum=0)
        check_int("sequence_length", self.sequence_length, minimum=1)
        if self.burn_in >= self.sequence_length:
            raise ValueError(
                f"burn_in={self.burn_in} must be shorter than sequence_length={self.sequence_length} "
                f"(the steps that carry the loss): use burn_in <= {self.sequence_length - 1}, or a "
                "longer sequence_length"
            )
        check_bool("align_to_episodes", self.align_to_episodes)
        if self.align_to_episodes and self.burn_in:
            raise ValueError(
                f"align_to_episodes=True starts every sequence at an episode start, where the memory "
                f"resets: a burn_in ({self.burn_in}) before it is thrown away. Use burn_in=0"
            )
        check_bool("stored_state", self.stored_state)
        check_bool("double_q", self.double_q)
        # a kind name on purpose: "none" is the stateless memory, with no state to store
        if self.stored_state and self.memory.kind == "none":  # type: ignore[union-attr]
            raise ValueError(
                f"stored_state=True needs a memory to store: pass memory= (one of {list(MEMORY_KINDS[1:])}) "
                "or use stored_state=False"
            )
        check_int("n_steps", self.n_steps, minimum=1)
        check_choice("loss", self.loss, LOSSES)
        check_int("buffer_size", self.buffer_size, minimum=1)
        check_int("batch_size", self.batch_size, minimum=1)
        check_int("learning_starts", self.learning_starts, minimum=0)
        check_int("train_freq", self.train_freq, minimum=1)
        check_int("gradient_steps", self.gradient_steps, minimum=-1)
        if self.gradient_steps == 0:
            raise ValueError("gradient_steps must be >= 1, or -1 for as many as env steps collected; got 0")
        check_float("tau", self.tau, minimum=0.0, maximum=1.0, strict_minimum=True)
        check_int("target_update_interval", self.target_update_interval, minimum=1)
        check_float("gamma", self.gamma, minimum=0.0, maximum=1.0)
        check_float("exploration_fraction", self.exploration_fraction, minimum=0.0, maximum=1.0)
        for name in ("exploration_initial_eps", "exploration_final_eps"):
            check_float(name, getattr(self, name), minimum=0.0, maximum=1.0)
        if self.max_grad_norm is not None:
            check_float("max_grad_norm", self.max_grad_norm, minimum=0.0, strict_minimum=True)
        self._set("net_arch", DQNNetArch.parse(self.net_arch)._asdict())
        batch_rows = self.batch_size * self.window
        if self.buffer_size < batch_rows:
            raise ValueError(
                f"buffer_size={self.buffer_size} holds less than one batch of batch_size={self.batch_size} "
                f"sequences of burn_in + sequence_length + n_steps = {self.window} steps: use "
                f"buffer_size >= {batch_rows}, or a smaller batch_size"
            )

    @property
    def window(self) -> int:
        """Rows of one sampled sequence: ``burn_in + sequence_length + n_steps`` (the last
        ``n_steps`` rows give the bootstrap values)."""
        return self.burn_in + self.sequence_length + self.n_steps

    def resolve(self, n_envs: int) -> DQNSettings:
        """These settings for ``n_envs`` copies.

        Raises:
            ValueError: the buffer or the random steps before learning cannot hold a
                sequence per copy, saying what would.
        """
        window = self.window
        if self.buffer_size // n_envs < window:
            raise ValueError(
                f"buffer_size={self.buffer_size} keeps {self.buffer_size // n_envs} steps per copy "
                f"(n_envs={n_envs}), fewer than one sequence of burn_in + sequence_length + n_steps = "
                f"{window}; raise buffer_size to at least {window} * n_envs = {window * n_envs}"
            )
        if self.learning_starts // n_envs <= window:
            raise ValueError(
                f"learning_starts={self.learning_starts} leaves each of the n_envs={n_envs} copies "
                f"{self.learning_starts // n_envs} steps before the first update, but one sampled "
                f"sequence needs burn_in + sequence_length + n_steps = {window}: learning_starts // n_envs "
                f"must exceed {window}, so use learning_starts >= {(window + 1) * n_envs}, or a "
                f"shorter burn_in or sequence_length"
            )
        return dataclasses.replace(self, n_envs=n_envs)

    def exploration_rate(self, progress: float) -> float:
        """Epsilon after ``progress`` (0 to 1) of ``learn``'s budget: linear from
        ``exploration_initial_eps`` to ``exploration_final_eps`` over
        ``exploration_fraction``, then constant."""
        if progress >= self.exploration_fraction:
            return self.exploration_final_eps
        start, end = self.exploration_initial_eps, self.exploration_final_eps
        return start + (end - start) * progress / self.exploration_fraction


__all__ = ["LOSSES", "DQNNetArch", "DQNSettings"]
