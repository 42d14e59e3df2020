"""pomdp-bench: a benchmark suite for memory in reinforcement learning.

Importing the package registers its environments with Gymnasium::

    import gymnasium as gym
    import pomdp_bench  # noqa: F401  (registers the ids)

    env = gym.make("MaskedCartPole-v0")

The agents and memories are at the top level too, imported on first use (so that
``import pomdp_bench`` for the envs alone does not import torch)::

    from pomdp_bench import PPO, SAC, DQN, PQN, MemoryConfig, build_memory
    from pomdp_bench import PPOSettings, SACSettings  # each agent's settings, field by field
"""

from __future__ import annotations

from importlib import import_module
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

from pomdp_bench.envs import register_envs

try:
    __version__ = version("pomdp-bench")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"

register_envs()

# Public name -> the module that defines it; loaded by __getattr__ on first access.
_LAZY = {
    "PPO": "pomdp_bench.agents.ppo.agent",
    "SAC": "pomdp_bench.agents.sac.agent",
    "DQN": "pomdp_bench.agents.dqn.agent",
    "DQNSettings": "pomdp_bench.agents.dqn.settings",
    "PPOSettings": "pomdp_bench.agents.ppo.settings",
    "SACSettings": "pomdp_bench.agents.sac.settings",
    "PQN": "pomdp_bench.agents.pqn.agent",
    "PQNSettings": "pomdp_bench.agents.pqn.settings",
    "MemoryConfig": "pomdp_bench.memory.config",
    "build_memory": "pomdp_bench.memory.build",
}

if TYPE_CHECKING:
    from pomdp_bench.agents.dqn.agent import DQN
    from pomdp_bench.agents.dqn.settings import DQNSettings
    from pomdp_bench.agents.ppo.agent import PPO
    from pomdp_bench.agents.ppo.settings import PPOSettings
    from pomdp_bench.agents.pqn.agent import PQN
    from pomdp_bench.agents.pqn.settings import PQNSettings
    from pomdp_bench.agents.sac.agent import SAC
    from pomdp_bench.agents.sac.settings import SACSettings
    from pomdp_bench.memory.build import build_memory
    from pomdp_bench.memory.config import MemoryConfig


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(import_module(_LAZY[name]), name)
        globals()[name] = value  # later lookups skip __getattr__
        return value
    raise AttributeError(f"module 'pomdp_bench' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])


__all__ = [
    "DQN",
    "PPO",
    "PQN",
    "SAC",
    "DQNSettings",
    "MemoryConfig",
    "PPOSettings",
    "PQNSettings",
    "SACSettings",
    "__version__",
    "build_memory",
    "register_envs",
]
