"""DQN's tuning search space, in rl-zoo3's style (its ``sample_dqn_params``), with the
sequence replay's settings; the agent registry names it for ``python -m pomdp_bench.tune``."""

from __future__ import annotations

from typing import Any

from pomdp_bench.agents.common.search_space import HIDDEN_SIZES, NET_ARCHS

# Sampled per trial: (name, choices) for categorical settings; the rest are drawn below.
DQN_CHOICES: dict[str, list[Any]] = {
    "n_envs": [1, 4, 8, 16],
    "batch_size": [16, 32, 64, 128],
    "gamma": [0.9, 0.95, 0.98, 0.99, 0.995],
    "train_freq": [1, 4, 8, 16],
    "n_steps": [1, 3, 5],
    "double_q": [False, True],
    "loss": ["huber", "mse"],
    "exploration_fraction": [0.05, 0.1, 0.2],
    "exploration_final_eps": [0.01, 0.02, 0.05, 0.1],
    "tau": [0.005, 0.01, 0.05, 1.0],
    "target_update_interval": [1, 100, 1000],
}


def dqn_search_space(trial: Any, horizon: int) -> tuple[dict[str, Any], int]:
    """DQN: :data:`DQN_CHOICES`, the head widths, a log-uniform learning rate in
    [1e-4, 3e-3], a sequence length, a burn-in of 0 or the horizon (shorter than the
    sequence), one gradient step per ``train_freq * n_envs / 4`` env steps or per env
    step, and ``learning_starts`` enough for one sequence per copy."""
    hp = {name: trial.suggest_categorical(name, values) for name, values in DQN_CHOICES.items()}
    hp["net_arch"] = NET_ARCHS[trial.suggest_categorical("net_arch", list(NET_ARCHS))]
    hp["learning_rate"] = trial.suggest_float("learning_rate", 1e-4, 3e-3, log=True)
    hp["sequence_length"] = trial.suggest_categorical("sequence_length", [8, 16, 32, 64])
    burn_in = trial.suggest_categorical("burn_in", [0, horizon])
    hp["burn_in"] = min(burn_in, hp["sequence_length"] - 1)
    per_step = trial.suggest_categorical("updates_per_step", [0.25, 1.0])
    hp["gradient_steps"] = max(1, round(per_step * hp["train_freq"] * hp["n_envs"]))
    window = hp["burn_in"] + hp["sequence_length"] + hp["n_steps"]
    hp["learning_starts"] = max(1000, (window + 1) * hp["n_envs"])
    hp["buffer_size"] = max(100_000, hp["batch_size"] * window)
    return hp, int(trial.suggest_categorical("hidden_size", HIDDEN_SIZES))
