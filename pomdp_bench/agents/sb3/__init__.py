"""The sb3-contrib adapter (``agent.py``): sb3-contrib's ``RecurrentPPO`` behind our
PPO's interface. Needs the ``[sb3]`` extra; importing this package without it raises
``ImportError`` saying so."""

from pomdp_bench.agents.sb3.agent import SB3RecurrentPPO

__all__ = ["SB3RecurrentPPO"]
