"""Agents: recurrent PPO and SAC on one shared shell, their settings, buffers and networks.

``from pomdp_bench.agents import PPO, SAC, PPOSettings, SACSettings``. The shell
(:mod:`~pomdp_bench.agents.base`) holds what every agent shares; the sb3-contrib
adapter (:mod:`pomdp_bench.agents.sb3`) needs the ``[sb3]`` extra and is imported
on its own.
"""

from __future__ import annotations

from pomdp_bench.agents.base import Agent
from pomdp_bench.agents.ppo import PPO
from pomdp_bench.agents.sac import SAC
from pomdp_bench.agents.schedules import LinearSchedule
from pomdp_bench.agents.settings import PPOSettings, SACSettings

__all__ = ["PPO", "SAC", "Agent", "LinearSchedule", "PPOSettings", "SACSettings"]
