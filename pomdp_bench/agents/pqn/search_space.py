"""PQN's tuning search space (Gallici et al.'s PQN-RNN settings as the centre); the agent
registry names it for ``python -m pomdp_bench.tune``."""

from __future__ import annotations

from typing import Any

from pomdp_bench.agents.common.search_space import HIDDEN_SIZES

# Sampled per trial: (name, choices) for categorical settings; the rest are drawn below.
PQN_CHOICES: dict[str, list[Any]] = {
    "n_envs": [16, 32, 64, 128],
    "n_epochs": [1, 2, 4],
    "num_minibatches": [1, 2, 4, 8],
    "gamma": [0.95, 0.98, 0.99, 0.995],
    "q_lambda": [0.5, 0.65, 0.8, 0.9, 0.95],
    "exploration_fraction": [0.05, 0.1, 0.2, 0.5],
    "epsilon_end": [0.001, 0.01, 0.05],
    "loss": ["huber", "mse"],
    "max_grad_norm": [0.5, 1.0, 10.0],
}

PQN_NET_ARCHS: dict[str, dict[str, list[int]]] = {
    "small": {"encoder": [32], "q": [32]},
    "medium": {"encoder": [64], "q": [64]},
    "large": {"encoder": [128], "q": [128, 128]},
}


def pqn_search_space(trial: Any, horizon: int) -> tuple[dict[str, Any], int]:
    """PQN: :data:`PQN_CHOICES`, the widths, a log-uniform learning rate in [1e-4, 3e-3]
    (constant or decaying to 0), and rollouts of ``max(32, horizon + 1)`` steps or twice
    that, so that a piece spans the horizon; returns the settings and the memory's
    hidden size."""
    hp = {name: trial.suggest_categorical(name, values) for name, values in PQN_CHOICES.items()}
    hp["net_arch"] = PQN_NET_ARCHS[trial.suggest_categorical("net_arch", list(PQN_NET_ARCHS))]
    lr = trial.suggest_float("learning_rate", 1e-4, 3e-3, log=True)
    hp["learning_rate"] = f"lin_{lr}" if trial.suggest_categorical("lr_decay", [False, True]) else lr
    hp["n_steps"] = max(32, horizon + 1) * trial.suggest_categorical("rollout_pieces", [1, 2])
    return hp, int(trial.suggest_categorical("hidden_size", HIDDEN_SIZES))
