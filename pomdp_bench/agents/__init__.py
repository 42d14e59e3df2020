"""Agents: recurrent PPO, SAC, DQN and PQN on one shared shell, their settings, buffers and networks.

``from pomdp_bench.agents import PPO, SAC, DQN, PPOSettings, SACSettings, DQNSettings``. Each
agent is a package (``ppo``, ``sac``, ``dqn``); :mod:`~pomdp_bench.agents.common` holds
what they share (the shell, :class:`~pomdp_bench.agents.common.base.Agent`). The
sb3-contrib adapter (:mod:`pomdp_bench.agents.sb3`) needs the ``[sb3]`` extra and is
imported on its own. The agent registry (:mod:`~pomdp_bench.agents.registry`) says which agents
the harness knows. Names load on first use, so importing the registry imports no torch.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

_LAZY = {
    "Agent": "pomdp_bench.agents.common.base",
    "PPO": "pomdp_bench.agents.ppo.agent",
    "SAC": "pomdp_bench.agents.sac.agent",
    "DQN": "pomdp_bench.agents.dqn.agent",
    "DQNSettings": "pomdp_bench.agents.dqn.settings",
    "PQN": "pomdp_bench.agents.pqn.agent",
    "PQNSettings": "pomdp_bench.agents.pqn.settings",
    "LinearSchedule": "pomdp_bench.agents.common.schedules",
    "PPOSettings": "pomdp_bench.agents.ppo.settings",
    "SACSettings": "pomdp_bench.agents.sac.settings",
}

if TYPE_CHECKING:
    from pomdp_bench.agents.common.base import Agent
    from pomdp_bench.agents.common.schedules import LinearSchedule
    from pomdp_bench.agents.dqn.agent import DQN
    from pomdp_bench.agents.dqn.settings import DQNSettings
    from pomdp_bench.agents.ppo.agent import PPO
    from pomdp_bench.agents.ppo.settings import PPOSettings
    from pomdp_bench.agents.pqn.agent import PQN
    from pomdp_bench.agents.pqn.settings import PQNSettings
    from pomdp_bench.agents.sac.agent import SAC
    from pomdp_bench.agents.sac.settings import SACSettings

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
