"""Fast learning checks for CI (each well under 60 s on 2 CPU cores).

PPO with a GRU solves T-Maze (corridor_length 5) and cue recall (delay 5):
its deterministic evaluation return reaches 0.9 within the budget, while
feedforward PPO stays at the feedforward ceiling (0.5 and 0.25) with the same
settings and budget. The heavier runs (MaskedCartPole, 100k-200k steps) are
scripts: ``scripts/parity_sb3.py`` and ``scripts/ppo_masked_cartpole.py``.

Training stops early once a periodic evaluation reaches 0.95; a final, separate
evaluation then has to reach 0.9. (PPO can briefly undo a solved deterministic
task: once every return is the same, the per-minibatch normalised advantages
are mostly noise. The linear learning-rate decay damps this by the end.)
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from pomdp_bench.agents import PPO

torch.set_num_threads(1)

pytestmark = pytest.mark.slow

SETTINGS = dict(
    n_envs=16,
    n_steps=32,
    num_minibatches=4,
    n_epochs=4,
    ent_coef=0.01,
    gamma=0.99,
    gae_lambda=0.95,
    net_arch=[32],
    seed=0,
    device="cpu",
)
TASKS = {
    # env id: (env kwargs, learning rate, budget in env steps, feedforward ceiling)
    "TMaze-v0": ({"corridor_length": 5}, "lin_0.002", 30_000, 0.5),
    "CueRecall-v0": ({"delay": 5}, "lin_0.003", 40_000, 0.25),
}


def _train(env_id: str, memory: dict | None) -> tuple[PPO, list[float]]:
    kwargs, lr, budget, _ = TASKS[env_id]
    model = PPO(env_id, memory, env_kwargs=kwargs, learning_rate=lr, **SETTINGS)
    evals: list[float] = []

    def evaluate_now(m: PPO) -> bool:
        if len(m.history) % 4:
            return True
        evals.append(float(m.evaluate(50, seed=len(evals)).mean()))
        return evals[-1] < 0.95

    model.learn(budget, callback=evaluate_now)
    return model, evals


@pytest.mark.parametrize("env_id", sorted(TASKS))
def test_gru_solves(env_id: str) -> None:
    model, evals = _train(env_id, {"kind": "gru", "hidden_size": 32})
    final = model.evaluate(100, seed=12345)
    assert final.mean() >= 0.9, (final.mean(), evals)


@pytest.mark.parametrize("env_id", sorted(TASKS))
def test_feedforward_does_not(env_id: str) -> None:
    model, evals = _train(env_id, None)
    ceiling = TASKS[env_id][3]
    final = model.evaluate(100, seed=12345)
    assert max(evals) < 0.9 and final.mean() < 0.9, (final.mean(), evals)
    assert abs(np.mean(evals[-3:]) - ceiling) < 0.2  # it does learn what a memoryless policy can
