"""Our recurrent PPO: the agent (``agent.py``), its settings (``settings.py``), its
rollout buffer (``rollout_buffer.py``), its networks (``networks.py``: the heads and
the actor-critic) and its tuning search space (``search_space.py``)."""

from pomdp_bench.agents.ppo.agent import PPO
from pomdp_bench.agents.ppo.settings import CLIP_RISES, PPOSettings

__all__ = ["CLIP_RISES", "PPO", "PPOSettings"]
