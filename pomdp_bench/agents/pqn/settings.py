"""Settings of :class:`~pomdp_bench.agents.pqn.PQN`: one frozen dataclass, field by field.

The defaults are Gallici et al.'s PQN-RNN (purejaxql's ``pqn_rnn`` configs: LayerNorm,
lambda 0.95, epsilon from 1 to 0.01 over the first 10% of training, 4 epochs, gradient
norm 10, no replay and no target network) where they have the setting, and PPO's rollout
shape (:class:`~pomdp_bench.agents.settings.PPOSettings`) where they have not. The
T-Maze settings are in ``agents/pqn.yaml`` (``docs/notes/pqn-tmaze.md`` says how they
were found).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from pomdp_bench.agents.common.pieces import check_bptt_length
from pomdp_bench.agents.common.q_learning import LOSSES, DQNNetArch
from pomdp_bench.agents.common.schedules import ScheduleLike
from pomdp_bench.agents.common.settings import AgentSettings
from pomdp_bench.memory import MemoryConfig
from pomdp_bench.validation import check_bool, check_choice, check_float, check_int


@dataclasses.dataclass(frozen=True)
class PQNSettings(AgentSettings):
    """Settings of :class:`~pomdp_bench.agents.pqn.PQN` (Gallici et al.'s PQN-RNN
    defaults; the rollout's shape as PPO's)."""

    agent: ClassVar[str] = "PQN"
    copy_dependent: ClassVar[tuple[str, ...]] = ("bptt_length",)
    _schedules: ClassVar[tuple[str, ...]] = ("learning_rate",)

    memory: MemoryConfig | Mapping[str, Any] | str | None = None
    """The Q network's memory block: ``None`` (feedforward), a kind name, a dict or a
    :class:`~pomdp_bench.memory.MemoryConfig`."""
    n_envs: int | None = None
    """Env copies stepped together; ``None``: 32 for an env id (PQN-RNN's), the vector
    env's ``num_envs`` otherwise."""
    n_steps: int = 128
    """Steps per copy in a rollout (``T``; PQN-RNN: 128)."""
    num_minibatches: int = 4
    """Minibatches of whole pieces per epoch; with ``n_envs`` and ``n_steps`` it sets the
    default ``bptt_length`` as PPO's does."""
    n_epochs: int = 4
    """Passes over each rollout (PQN-RNN: 4)."""
    bptt_length: int | None = None
    """Steps per piece (``L``). ``None``: the longest pieces that cut every rollout into
    equal parts and split exactly into the minibatches (PPO's rule). An explicit value
    must divide that default."""
    gamma: float = 0.99
    """Discount factor."""
    q_lambda: float = 0.95
    """The lambda of the Q(lambda) targets, in ``[0, 1]``: 0 gives one-step Q-learning
    targets, 1 Monte-Carlo returns (PQN-RNN: 0.95)."""
    learning_rate: ScheduleLike = 1e-3
    """Adam's step size: a number or a schedule (``"lin_1e-3"`` decays linearly to 0
    over ``learn``'s ``total_timesteps``). PQN-RNN: 1e-3."""
    max_grad_norm: float = 10.0
    """Gradients are clipped to this global norm (PQN-RNN: 10)."""
    loss: str = "mse"
    """The TD error's penalty: ``"mse"`` (PQN's, half the squared error) or ``"huber"``."""
    epsilon_start: float = 1.0
    """Epsilon at the start of ``learn``, in ``[0, 1]``."""
    epsilon_end: float = 0.01
    """Epsilon after ``exploration_fraction`` of training, in ``[0, 1]`` (PQN-RNN 0.01;
    Memory-RL's T-Maze ``1 / T``, T the episode length)."""
    exploration_fraction: float = 0.1
    """Fraction of ``learn``'s ``total_timesteps`` over which epsilon falls linearly from
    ``epsilon_start`` to ``epsilon_end``, in ``[0, 1]`` (PQN-RNN: 0.1)."""
    epsilon_end_max: float | None = None
    """Per-copy epsilons. ``None`` (the default): every copy follows the one schedule.
    A number in ``[epsilon_end, 1]``: copy ``i`` of ``n_envs`` falls to its own end value,
    log-spaced from ``epsilon_end`` (copy 0) to ``epsilon_end_max`` (the last copy), as
    Ape-X spreads exploration over its actors: a few copies keep trying both turns while
    the rest act almost greedily. The logged ``exploration_rate`` is copy 0's."""
    previous_action: bool = False
    """The network also reads the previous action, one-hot (zeros at an episode's first
    step), beside the observation, as Memory-RL's and PQN-RNN's recurrent Q networks do.
    Off by default: the other agents read observations only."""
    layer_norm: bool = True
    """LayerNorm after every hidden linear layer (before the activation), PQN's only
    stabiliser in place of a target network."""
    net_arch: list[int] | dict[str, list[int]] | None = None
    """Hidden widths: a list after the memory, or a dict with ``q`` (after the memory)
    and ``encoder`` (before it); ``None``: ``encoder=[64]``, ``q=[64]``. Kept as the dict."""
    activation: str = "relu"
    """Activation of the MLPs."""
    seed: int | None = 0
    """Seeds the network, the env resets, the exploration and the minibatch shuffles.
    ``None``: drawn from numpy's global generator when the agent is built (so
    ``np.random.seed`` or SB3's ``set_random_seed`` decides, as in SB3), and kept
    as ``model.seed`` and ``model.settings.seed`` so the run can be repeated."""

    def __post_init__(self) -> None:
        self._check_common()
        check_int("n_steps", self.n_steps, minimum=1)
        check_int("num_minibatches", self.num_minibatches, minimum=1)
        check_int("n_epochs", self.n_epochs, minimum=1)
        if self.bptt_length is not None:
            check_int("bptt_length", self.bptt_length, minimum=1)
        check_float("gamma", self.gamma, minimum=0.0, maximum=1.0)
        check_float("q_lambda", self.q_lambda, minimum=0.0, maximum=1.0)
        check_float("max_grad_norm", self.max_grad_norm, minimum=0.0, strict_minimum=True)
        check_choice("loss", self.loss, LOSSES)
        for name in ("epsilon_start", "epsilon_end", "exploration_fraction"):
            check_float(name, getattr(self, name), minimum=0.0, maximum=1.0)
        if self.epsilon_end_max is not None:
            check_float("epsilon_end_max", self.epsilon_end_max, minimum=self.epsilon_end, maximum=1.0)
        check_bool("layer_norm", self.layer_norm)
        check_bool("previous_action", self.previous_action)
        arch = {"encoder": [64], "q": [64]} if self.net_arch is None else self.net_arch
        self._set("net_arch", DQNNetArch.parse(arch)._asdict())

    def resolve(self, n_envs: int) -> PQNSettings:
        """These settings for ``n_envs`` copies, ``bptt_length`` filled in.

        Raises:
            ValueError: the minibatches or the pieces do not divide the rollout, listing
                the valid values.
        """
        rollout_size = n_envs * self.n_steps
        if self.num_minibatches > rollout_size:
            raise ValueError(f"num_minibatches must be in [1, {rollout_size}], got {self.num_minibatches}")
        bptt_length = check_bptt_length(self.bptt_length, n_envs, self.n_steps, self.num_minibatches)
        return dataclasses.replace(self, n_envs=n_envs, bptt_length=bptt_length)

    @property
    def rollout_size(self) -> int:
        """Steps per rollout over all copies, ``n_envs * n_steps`` (resolved settings)."""
        assert self.n_envs is not None, "resolve() the settings first"
        return self.n_envs * self.n_steps

    def exploration_rate(self, progress: float) -> float:
        """Epsilon after ``progress`` (0 to 1) of ``learn``'s budget: linear from
        ``epsilon_start`` to ``epsilon_end`` over ``exploration_fraction``, then constant."""
        if progress >= self.exploration_fraction:
            return self.epsilon_end
        return (
            self.epsilon_start
            + (self.epsilon_end - self.epsilon_start) * progress / self.exploration_fraction
        )

    def copy_exploration_rates(self, progress: float, n: int) -> np.ndarray | None:
        """Each of ``n`` copies' epsilon after ``progress`` (0 to 1) of ``learn``'s budget,
        ``[n]``: :meth:`exploration_rate`'s schedule, each copy ending at its own value
        (``epsilon_end_max``); ``None`` without per-copy epsilons."""
        if self.epsilon_end_max is None:
            return None
        low, high = max(self.epsilon_end, 1e-12), self.epsilon_end_max
        ends = low * (high / low) ** (np.arange(n) / max(n - 1, 1))  # [n], log-spaced
        ends[0] = self.epsilon_end
        if progress >= self.exploration_fraction:
            return ends
        return self.epsilon_start + (ends - self.epsilon_start) * progress / self.exploration_fraction


__all__ = ["PQNSettings"]
