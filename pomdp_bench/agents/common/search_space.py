"""What the shipped agents' tuning search spaces share, in rl-zoo3's style.

Each agent's search space (``ppo/search_space.py``, ``sac/search_space.py``,
``dqn/search_space.py``) is a function that takes an Optuna trial and the task's
memory horizon and returns the trial's settings (fields of the agent's settings class)
and the memory's hidden size. The agent registry names them
(:class:`~pomdp_bench.agents.registry.AgentEntry.search_space`); ``python -m
pomdp_bench.tune`` calls them. Invalid combinations (minibatches that do not divide a
rollout) are refused by the settings, and the trial is pruned.
"""

from __future__ import annotations

from typing import Any

HIDDEN_SIZES = [32, 64, 128]
NET_ARCHS = {"small": [32], "medium": [64], "large": [64, 64]}


def _categorical(trial: Any, choices: dict[str, list[Any]]) -> dict[str, Any]:
    """``choices`` drawn per trial as categoricals, and ``net_arch`` from :data:`NET_ARCHS`
    (shared by the PPO and SAC search spaces)."""
    hp = {name: trial.suggest_categorical(name, values) for name, values in choices.items()}
    hp["net_arch"] = NET_ARCHS[trial.suggest_categorical("net_arch", list(NET_ARCHS))]
    return hp
