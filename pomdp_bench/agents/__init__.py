"""Agents: recurrent PPO (``PPO``), its buffer and networks, and the sb3-contrib adapter.

``from pomdp_bench.agents import PPO``; the sb3-contrib adapter
(:mod:`pomdp_bench.agents.sb3`) needs the ``[sb3]`` extra and is imported on its own.
"""

from __future__ import annotations

from pomdp_bench.agents.ppo import PPO
from pomdp_bench.agents.schedules import LinearSchedule

__all__ = ["PPO", "LinearSchedule"]
