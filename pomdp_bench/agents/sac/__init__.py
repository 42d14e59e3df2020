"""Our SAC with sequence replay: the agent (``agent.py``), its settings
(``settings.py``), its actor and critics (``networks.py``) and its tuning search space
(``search_space.py``). Its replay buffer is shared with DQN
(:mod:`pomdp_bench.agents.common.sequence_buffer`)."""

from pomdp_bench.agents.sac.agent import SAC
from pomdp_bench.agents.sac.settings import SACSettings, parse_ent_coef

__all__ = ["SAC", "SACSettings", "parse_ent_coef"]
