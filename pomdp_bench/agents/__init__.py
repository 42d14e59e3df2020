"""Agents: recurrent PPO, SAC, DQN and PQN on one shared shell, their settings, buffers and networks.

``from pomdp_bench.agents import PPO, SAC, DQN, PPOSettings, SACSettings, DQNSettings``. The shell
(:mod:`~pomdp_bench.agents.base`) holds what every agent shares; the sb3-contrib
adapter (:mod:`pomdp_bench.agents.sb3`) needs the ``[sb3]`` extra and is imported
on its own. The agent registry (:mod:`~pomdp_bench.agents.registry`) says which agents
the harness knows. Names load on first use, so importing the registry imports no torch.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

_LAZY = {
    "Agent": "pomdp_bench.agents.base",
    "PPO": "pomdp_bench.agents.ppo",
    "SAC": "pomdp_bench.agents.sac",
    "DQN": "pomdp_bench.agents.dqn",
    "DQNSettings": "pomdp_bench.agents.dqn_settings",
    "PQN": "pomdp_bench.agents.pqn",
    "PQNSettings": "pomdp_bench.agents.pqn_settings",
    "LinearSchedule": "pomdp_bench.agents.schedules",
    "PPOSettings": "pomdp_bench.agents.settings",
    "SACSettings": "pomdp_bench.agents.settings",
}

if TYPE_CHECKING:
    from pomdp_bench.agents.base import Agent
    from pomdp_bench.agents.dqn import DQN
    from pomdp_bench.agents.dqn_settings import DQNSettings
    from pomdp_bench.agents.ppo import PPO
    from pomdp_bench.agents.pqn import PQN
    from pomdp_bench.agents.pqn_settings import PQNSettings
    from pomdp_bench.agents.sac import SAC
    from pomdp_bench.agents.schedules import LinearSchedule
    from pomdp_bench.agents.settings import PPOSettings, SACSettings

__all__ = [
    "DQN",
    "PPO",
    "PQN",
    "SAC",
    "Agent",
    "DQNSettings",
    "LinearSchedule",
    "PPOSettings",
    "PQNSettings",
    "SACSettings",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'pomdp_bench.agents' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
