"""PPO's tuning search space, in rl-zoo3's style; the agent registry names it for
``python -m pomdp_bench.tune`` (the shared choices: :mod:`pomdp_bench.agents.common.search_space`)."""

from __future__ import annotations

from typing import Any

from pomdp_bench.agents.common.search_space import HIDDEN_SIZES, _categorical

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
