"""SAC's tuning search space, in rl-zoo3's style; the agent registry names it for
``python -m pomdp_bench.tune`` (the shared choices: :mod:`pomdp_bench.agents.common.search_space`)."""

from __future__ import annotations

from typing import Any

from pomdp_bench.agents.common.search_space import HIDDEN_SIZES, _categorical

# Sampled per trial: (name, choices) for categorical settings; the rest are drawn below.
SAC_CHOICES: dict[str, list[Any]] = {
    "n_envs": [1, 4, 8],
    "batch_size": [16, 32, 64, 128],
    "gradient_steps": [1, 2, 4],
    "gamma": [0.9, 0.95, 0.98, 0.99, 0.995],
    "tau": [0.005, 0.01, 0.02, 0.05],
}


def sac_search_space(trial: Any, horizon: int) -> tuple[dict[str, Any], int]:
    """SAC: :data:`SAC_CHOICES`, the head widths, a log-uniform learning rate in
    [1e-4, 3e-3], a sequence length, and a burn-in of 0 or the horizon."""
    hp = _categorical(trial, SAC_CHOICES)
    hp["learning_rate"] = trial.suggest_float("learning_rate", 1e-4, 3e-3, log=True)
    hp["sequence_length"] = trial.suggest_categorical("sequence_length", [8, 16, 32, 64])
    hp["burn_in"] = trial.suggest_categorical("burn_in", [0, horizon])
    hp["learning_starts"] = max(1000, (hp["burn_in"] + hp["sequence_length"] + 2) * hp["n_envs"])
    return hp, int(trial.suggest_categorical("hidden_size", HIDDEN_SIZES))
