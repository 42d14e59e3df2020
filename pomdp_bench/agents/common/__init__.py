"""What every agent shares: the shell (:class:`Agent`), the settings base
(:class:`AgentSettings`), the network pieces several agents build on (a memory trunk,
observation features), the sequence replay buffer of the off-policy agents, spaces,
schedules, seeding, evaluation, normalisation and the flat optimiser.

Nothing here imports an agent package (``ppo``, ``sac``, ``dqn``, ``sb3``;
``tests/test_import_graph.py``). Names load on first use, as in
:mod:`pomdp_bench.agents`, so a light module here (``seeding``, ``spaces``,
``schedules``, ``search_space``) imports no torch.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

_LAZY = {
    "Agent": "base",
    "AgentSettings": "settings",
    "ConstantSchedule": "schedules",
    "FlatAdam": "flat_parameters",
    "FlatParameters": "flat_parameters",
    "LinearSchedule": "schedules",
    "MemoryState": "networks",
    "Normalizer": "normalization",
    "Schedule": "schedules",
    "SequenceBatch": "sequence_buffer",
    "SequenceReplayBuffer": "sequence_buffer",
    "Trunk": "networks",
    "activation_class": "networks",
    "check_action_space": "spaces",
    "check_observation_space": "spaces",
    "check_seed": "seeding",
    "env_seeds": "seeding",
    "evaluate_episodes": "evaluation",
    "observation_features": "networks",
}

if TYPE_CHECKING:
    from pomdp_bench.agents.common.base import Agent
    from pomdp_bench.agents.common.evaluation import evaluate_episodes
    from pomdp_bench.agents.common.flat_parameters import FlatAdam, FlatParameters
    from pomdp_bench.agents.common.networks import MemoryState, Trunk, activation_class, observation_features
    from pomdp_bench.agents.common.normalization import Normalizer
    from pomdp_bench.agents.common.schedules import ConstantSchedule, LinearSchedule, Schedule
    from pomdp_bench.agents.common.seeding import check_seed, env_seeds
    from pomdp_bench.agents.common.sequence_buffer import SequenceBatch, SequenceReplayBuffer
    from pomdp_bench.agents.common.settings import AgentSettings
    from pomdp_bench.agents.common.spaces import check_action_space, check_observation_space

__all__ = [
    "Agent",
    "AgentSettings",
    "ConstantSchedule",
    "FlatAdam",
    "FlatParameters",
    "LinearSchedule",
    "MemoryState",
    "Normalizer",
    "Schedule",
    "SequenceBatch",
    "SequenceReplayBuffer",
    "Trunk",
    "activation_class",
    "check_action_space",
    "check_observation_space",
    "check_seed",
    "env_seeds",
    "evaluate_episodes",
    "observation_features",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(import_module(f"{__name__}.{_LAZY[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
