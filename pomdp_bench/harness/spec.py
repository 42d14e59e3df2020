"""What one run is (:class:`RunSpec`) and what it produced (:class:`RunResult`).

A spec is plain data, so it travels to a worker process or a Ray task, and its
:meth:`RunSpec.key` (a hash of everything that can change the outcome) keys the
results store: rerunning the same spec finds its finished row and skips it.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from pomdp_bench.agents.registry import get_agent
from pomdp_bench.harness.kernels import check_setting

if TYPE_CHECKING:
    from pomdp_bench.envs.cards import EnvCard

# Fields added after runs were first stored, with the defaults that reproduce those runs;
# left out of the hash while they hold them.
_ADDED_FIELDS: dict[str, Any] = {
    "stop": None,
    "device": "cpu",
    "env_import": None,
    "env_wrappers": [],
    "card": None,
    "kernels": "native",
    "imports": [],
}


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


@dataclass(frozen=True)
class RunSpec:
    """One training run: an env, an agent with its settings, a memory, a seed and a budget.

    Attributes:
        env_id: a registered env id.
        env_kwargs: kwargs of the env (on top of the registration's).
        agent: a registered agent's name (:mod:`pomdp_bench.agents.registry`: ``"ppo"``,
            ``"sac"``, ``"sb3_ppo"``, ...), or ``"module:name"`` for one that ``module``
            registers when imported.
        memory: the memory config as a plain dict (``MemoryConfig.to_dict()``).
        bptt_length: PPO's ``bptt_length`` / SAC's ``sequence_length``; ``None``
            for kinds not trained through time (and PPO's default).
        seed: the run's seed index within its cell (0, 1, ...); the agent gets
            :meth:`agent_seed`, split from it and the cell.
        total_timesteps: training budget in env steps.
        hyperparams: the agent's other constructor kwargs.
        eval_episodes: deterministic episodes of the final evaluation.
        eval_points: evaluations spread over training, for the learning curve.
        horizon: the memory horizon of this env variant, in steps.
        version: pomdp_bench's version (a new version reruns everything).
        stop: the early-stopping rule (:class:`~pomdp_bench.harness.stopping.StopRule`
            as a dict), or ``None``: train the whole budget, evaluating at
            ``eval_points`` evenly spaced points.
        device: where the agent trains (``"cpu"``, ``"cuda"``, ``"cuda:1"``).
        env_import: the module that registers ``env_id`` (an outside env, e.g.
            ``"popgym"``), imported before the env is made; ``None`` for ours.
        env_wrappers: wrappers of each env copy, by import path
            (:mod:`pomdp_bench.envs.wrappers`).
        card: the env card as plain data, for an env whose card is not shipped (an
            outside env's implicit or inline card, or one added at run time), so a
            worker or a Ray task needs nothing but the spec; ``None``: the shipped card.
        cell_seeds: how many seeds the run's cell has in the sweep that made it (a
            suite's ``seeds``, an env entry's own, or ``--seeds``), so the leaderboard
            lists a cell once all of them have run; ``None`` for runs stored before it
            was recorded. Never part of :meth:`key` or :meth:`agent_seed`: a run is the
            same run whatever its cell's seed count.
        kernels: the CPU kernel setting the run trains under
            (:mod:`~pomdp_bench.harness.kernels`: ``"native"``, ``"avx2"``, ``"sse41"``);
            its workers take it before torch starts.
        imports: modules the worker imports before it builds anything: those that
            register a memory kind of the user's own (a suite's ``import:``, ``--import``,
            a ``module:kind`` name). Empty for runs of the shipped kinds.

    ``stop``, ``device``, ``env_import``, ``env_wrappers``, ``card``, ``kernels`` and ``imports`` count in
    :meth:`key` and :meth:`agent_seed` only when set away from their defaults, so the
    keys of runs stored before they existed hold.
    """

    env_id: str
    env_kwargs: dict[str, Any]
    agent: str
    memory: dict[str, Any]
    bptt_length: int | None
    seed: int
    total_timesteps: int
    hyperparams: dict[str, Any] = field(default_factory=dict)
    eval_episodes: int = 20
    eval_points: int = 10
    horizon: int = 1
    version: str = ""
    stop: dict[str, Any] | None = None
    device: str = "cpu"
    env_import: str | None = None
    env_wrappers: list[dict[str, Any]] = field(default_factory=list)
    card: dict[str, Any] | None = None
    cell_seeds: int | None = None
    kernels: str = "native"
    imports: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        check_setting(self.kernels)
        get_agent(self.agent)  # refuses an unknown agent, listing the registered ones
        if self.total_timesteps < 1:
            raise ValueError(f"total_timesteps must be >= 1, got {self.total_timesteps}")

    @property
    def memory_kind(self) -> str:
        return str(self.memory.get("kind", "none"))  # no memory given: the memoryless baseline

    @property
    def make_id(self) -> str:
        """The id to build the env from: ``"module:Id"`` where the spec names a module."""
        return self.env_id if self.env_import is None else f"{self.env_import}:{self.env_id}"

    def env_card(self) -> EnvCard:
        """The :class:`~pomdp_bench.envs.cards.EnvCard` of this run's env: the one it carries,
        else the shipped card."""
        from pomdp_bench.envs.cards import card_of

        return card_of(self.env_id, self.card)

    def _identity(self) -> dict[str, Any]:
        """The spec as hashed: every field, less those added later while at their defaults,
        and less ``cell_seeds``."""
        data = asdict(self)
        del data["cell_seeds"]
        for name, default in _ADDED_FIELDS.items():
            if data[name] == default:
                del data[name]
        return data

    def key(self) -> str:
        """A stable hash of the full spec (the store's primary key)."""
        return hashlib.sha256(_canonical(self._identity()).encode()).hexdigest()[:24]

    def agent_seed(self) -> int:
        """The seed handed to the agent: split by ``numpy.random.SeedSequence`` from
        :attr:`seed` and a hash of the cell (everything but the seed and the version).

        So no two runs of a suite share an env episode, a network initialisation or an
        action sample (seed ``s`` of the gru cell and of the lstm cell are independent
        runs), while the same spec always gets the same seed. A 31-bit int.
        """
        cell = {k: v for k, v in self._identity().items() if k not in ("seed", "version")}
        cell_hash = int(hashlib.sha256(_canonical(cell).encode()).hexdigest()[:15], 16)
        state = np.random.SeedSequence([int(self.seed), cell_hash]).generate_state(1, np.uint32)
        return int(state[0] >> np.uint32(1))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunSpec:
        return cls(**data)

    def label(self) -> str:
        """A short human-readable name, for progress lines."""
        kwargs = ",".join(f"{k}={v}" for k, v in sorted(self.env_kwargs.items()))
        env = f"{self.env_id}({kwargs})" if kwargs else self.env_id
        bptt = "" if self.bptt_length is None else f" bptt={self.bptt_length}"
        return f"{env} {self.agent} {self.memory_kind}{bptt} seed={self.seed}"


@dataclass
class RunResult:
    """What a finished (or failed) run produced.

    Attributes:
        status: ``"ok"`` or ``"failed"``.
        final_return: mean undiscounted return of the final deterministic
            evaluation (NaN when failed).
        final_returns: ``[eval_episodes]`` the per-episode returns behind it.
        curve: ``[(timesteps, mean evaluation return)]`` over training.
        steps_per_second: env steps per second of training (evaluation excluded).
        wall_seconds: the whole run, evaluation included.
        error: the traceback of a failed run.
        agent_seed: the seed the agent was built with (:meth:`RunSpec.agent_seed`).
        gradient_reach: PPO's ``gradient_reach`` histogram (``[bptt_length]``: training
            episodes by how far back the gradient from their last step reaches); None
            for other agents.
        stop_reason: with a stop rule, ``"solved"``, ``"plateaued"`` or ``"cap"``; empty
            without one.
        solved_steps: env steps at the first evaluation of the streak that solved the
            task (None if it did not).
        solved_seconds: training wall seconds (evaluations excluded) at that point.
        timesteps: env steps trained (less than the budget when the run stopped early).
        parameters: trained weights of the agent (actor, critic and memory together;
            target copies excluded), counted when it trained; None where the agent
            does not count them.
        weights: the agent's save (``Agent.save``'s zip archive) after training; the
            store keeps it beside the row (not in the result's JSON). None for a
            failed run or an agent without ``save``.
        train_curve: ``[(env steps, mean return of the training episodes)]``, one point per
            POPGym iteration of 65,536 steps (:func:`~pomdp_bench.harness.train_curve.iteration_means`):
            what the ``mmer`` column takes the maximum of. Empty for runs stored before it.
    """

    status: str
    final_return: float = math.nan
    final_returns: list[float] = field(default_factory=list)
    curve: list[tuple[int, float]] = field(default_factory=list)
    steps_per_second: float = math.nan
    wall_seconds: float = math.nan
    error: str = ""
    agent_seed: int | None = None
    gradient_reach: list[int] | None = None
    stop_reason: str = ""
    solved_steps: int | None = None
    solved_seconds: float | None = None
    timesteps: int | None = None
    parameters: int | None = None
    weights: bytes | None = field(default=None, repr=False)
    train_curve: list[tuple[int, float]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
