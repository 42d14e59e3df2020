"""PPO's settings (:class:`PPOSettings`); what every agent's settings share is
:class:`~pomdp_bench.agents.common.settings.AgentSettings`."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar

from pomdp_bench.agents.common.pieces import check_bptt_length
from pomdp_bench.agents.common.schedules import ScheduleLike
from pomdp_bench.agents.common.settings import AgentSettings
from pomdp_bench.agents.ppo.networks import NetArch
from pomdp_bench.memory import MemoryConfig
from pomdp_bench.validation import check_bool, check_choice, check_float, check_int

# PPOSettings.clip_rise: what bounds a rise of an action's probability in one update.
CLIP_RISES = ("ratio", "probability")


@dataclasses.dataclass(frozen=True)
class PPOSettings(AgentSettings):
    """Settings of :class:`~pomdp_bench.agents.ppo.PPO` (the defaults are SB3's, except
    where a field says otherwise)."""

    agent: ClassVar[str] = "PPO"
    copy_dependent: ClassVar[tuple[str, ...]] = ("bptt_length",)
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
    loss (:func:`~pomdp_bench.agents.ppo.networks.uniform_kl`), a log barrier that pulls
    every action's probability up with a force of ``coef / n``. 0 (default) is plain PPO."""
    clip_rise: str = "ratio"
    """Experimental. What bounds an action's rise in one update: ``"ratio"`` (default,
    PPO's clip: by the factor ``1 + clip_range``) or ``"probability"`` (discrete actions
    only: ``pi <= pi_old + clip_range``). Falls keep PPO's ratio clip either way."""
    seed: int | None = 0
    """Seeds the networks, the env resets, the action sampling and the shuffles; the
    same seed gives the same learning curve on one CPU. ``None``: drawn from numpy's global generator when the agent is built (so
    ``np.random.seed`` or SB3's ``set_random_seed`` decides, as in SB3), and kept
    as ``model.seed`` and ``model.settings.seed`` so the run can be repeated."""

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
