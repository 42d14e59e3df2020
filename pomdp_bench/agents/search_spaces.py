"""The tuning search spaces of the shipped agents, in rl-zoo3's style.

Each function takes an Optuna trial and the task's memory horizon and returns the
trial's settings (fields of the agent's settings class) and the memory's hidden size.
The agent registry names them (:class:`~pomdp_bench.agents.registry.AgentEntry.search_space`);
``python -m pomdp_bench.tune`` calls them. Invalid combinations (minibatches that do not
divide a rollout) are refused by the settings, and the trial is pruned.
"""

from __future__ import annotations

from typing import Any

# Sampled per trial: (name, choices) for categorical settings; the rest are drawn below.
PPO_CHOICES: dict[str, list[Any]] = {
    "n_envs": [8, 16, 32, 64, 128],
    "n_steps": [16, 32, 64, 128, 256],
    "num_minibatches": [1, 2, 4, 8],
    "n_epochs": [2, 4, 8, 10],
    "gamma": [0.9, 0.95, 0.98, 0.99, 0.995, 0.999],
    "gae_lambda": [0.8, 0.9, 0.95, 0.98, 1.0],
    "clip_range": [0.1, 0.2, 0.3],
}
SAC_CHOICES: dict[str, list[Any]] = {
    "n_envs": [1, 4, 8],
    "batch_size": [16, 32, 64, 128],
    "gradient_steps": [1, 2, 4],
    "gamma": [0.9, 0.95, 0.98, 0.99, 0.995],
    "tau": [0.005, 0.01, 0.02, 0.05],
}
HIDDEN_SIZES = [32, 64, 128]
NET_ARCHS = {"small": [32], "medium": [64], "large": [64, 64]}


def _categorical(trial: Any, choices: dict[str, list[Any]]) -> dict[str, Any]:
    hp = {name: trial.suggest_categorical(name, values) for name, values in choices.items()}
    hp["net_arch"] = NET_ARCHS[trial.suggest_categorical("net_arch", list(NET_ARCHS))]
    return hp


def ppo_search_space(trial: Any, horizon: int) -> tuple[dict[str, Any], int]:
    """PPO: :data:`PPO_CHOICES`, the head widths, a log-uniform learning rate in
    [1e-4, 1e-2] (constant or decaying linearly to 0), a log-uniform entropy bonus in
    [1e-4, 0.05], and one memory for actor and critic or one each."""
    hp = _categorical(trial, PPO_CHOICES)
    rate = trial.suggest_float("learning_rate", 1e-4, 1e-2, log=True)
    hp["learning_rate"] = f"lin_{rate:.3g}" if trial.suggest_categorical("lr_decay", [True, False]) else rate
    hp["ent_coef"] = trial.suggest_float("ent_coef", 1e-4, 0.05, log=True)
    hp["shared_memory"] = trial.suggest_categorical("shared_memory", [False, True])
    return hp, int(trial.suggest_categorical("hidden_size", HIDDEN_SIZES))


def sac_search_space(trial: Any, horizon: int) -> tuple[dict[str, Any], int]:
    """SAC: :data:`SAC_CHOICES`, the head widths, a log-uniform learning rate in
    [1e-4, 3e-3], a sequence length, and a burn-in of 0 or the horizon."""
    hp = _categorical(trial, SAC_CHOICES)
    hp["learning_rate"] = trial.suggest_float("learning_rate", 1e-4, 3e-3, log=True)
    hp["sequence_length"] = trial.suggest_categorical("sequence_length", [8, 16, 32, 64])
    hp["burn_in"] = trial.suggest_categorical("burn_in", [0, horizon])
    hp["learning_starts"] = max(1000, (hp["burn_in"] + hp["sequence_length"] + 2) * hp["n_envs"])
    return hp, int(trial.suggest_categorical("hidden_size", HIDDEN_SIZES))
