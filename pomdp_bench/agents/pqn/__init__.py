"""Our PQN (Gallici et al. 2024): Q(lambda) on vectorised rollouts, no replay and no
target network. The agent (``agent.py``), its settings (``settings.py``) and its tuning
search space (``search_space.py``)."""

from pomdp_bench.agents.pqn.agent import PQN
from pomdp_bench.agents.pqn.settings import PQNSettings

__all__ = ["PQN", "PQNSettings"]
