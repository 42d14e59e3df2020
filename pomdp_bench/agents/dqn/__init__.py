"""Our DQN with sequence replay: the agent (``agent.py``), its settings
(``settings.py``), its replay buffer (``buffer.py``, on the shared sequence replay), its
Q network (``networks.py``) and its tuning search space (``search_space.py``)."""

from pomdp_bench.agents.dqn.agent import DQN
from pomdp_bench.agents.dqn.settings import DQNSettings

__all__ = ["DQN", "DQNSettings"]
