"""Fast learning checks for CI (each well under 60 s on 2 CPU cores).

PPO with a GRU solves T-Maze (corridor_length 5) and cue recall (delay 5): its
deterministic evaluation return reaches 0.9, while feedforward PPO stays at the
feedforward ceiling (0.5 and 0.25) with the same settings and budget. The heavier
runs (MaskedCartPole, 100k-200k steps) are scripts: ``scripts/parity_sb3.py`` and
``scripts/ppo_masked_cartpole.py``.

Training stops once a periodic evaluation reaches 0.95; a final, separate
evaluation then has to reach 0.9 (tests/learning_tasks.py). The budgets hold a
margin over where seeds cross under other CPU kernels (below), so a different
floating-point path changes when a seed solves, not whether.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from learning_tasks import LONG_RECALL_BUDGET, PPO_TASKS, majority, train_long_recall, train_ppo

torch.set_num_threads(1)

pytestmark = [pytest.mark.slow, pytest.mark.trajectory]

# Env steps at which seeds 0-4 first evaluated at >= 0.95 (scripts/measure_test_margins.py),
# native AVX-512 / AVX512_CORE / AVX2 / SSE4.1-default kernels; budgets in learning_tasks.PPO_TASKS:
#   TMaze-v1      8k-12k on every seed and setting (seed 0: 12k); budget 30k (2.4x the slowest)
#   CueRecall-v0  10k-16k (seed 0: 14k); budget 40k (2.4x)


@pytest.mark.parametrize("env_id", sorted(PPO_TASKS))
def test_gru_solves(env_id: str) -> None:
    outcome, evals = train_ppo(env_id, {"kind": "gru", "hidden_size": 32}, seed=0)
    assert outcome.final >= 0.9, (outcome, evals)


# Feedforward, seeds 0-5 (native and SSE4.1 kernels alike): no seed solves either task; the
# last three evaluations average within 0.2 of the ceiling on 5 of 6 seeds on TMaze (seed 2
# settles on walking into the junction's wall, 0.0) and 6 of 6 on CueRecall.
FEEDFORWARD_SEEDS = range(5)


@pytest.mark.parametrize("env_id", sorted(PPO_TASKS))
def test_feedforward_does_not(env_id: str) -> None:
    ceiling = PPO_TASKS[env_id][3]
    at_ceiling = []
    for seed in FEEDFORWARD_SEEDS:
        outcome, evals = train_ppo(env_id, None, seed=seed)
        assert outcome.solved_at is None and outcome.final < 0.9, (seed, outcome, evals)
        at_ceiling.append(abs(np.mean(evals[-3:]) - ceiling) < 0.2)
    assert majority(at_ceiling), at_ceiling  # it does learn what a memoryless policy can


# The long-horizon recipe (agents/ppo.yaml's delay-21 band, an LSTM with init="forget_bias"),
# CueRecall delay 20, budget 150k: final returns of seeds 0-4, native and SSE4.1 kernels alike,
# 0.82, 0.82, 1.0, 1.0, 1.0 (seeds 2-4 reach the 0.95 check at 28k-79k steps; 0 and 1 settle
# on recalling 3 of the 4 cues); AVX2: 0.82, 1.0, 1.0, 1.0, 1.0 (seed 1 at 124k). The ceiling is 0.25; with torch's default init the LSTM stayed
# near it at 500k steps (3 seeds, docs/notes/time-to-an-answer.md).
def test_lstm_with_an_open_forget_gate_recalls_across_20_steps() -> None:
    finals = []
    for seed in range(3):
        outcome, _ = train_long_recall(seed)
        assert outcome.budget == LONG_RECALL_BUDGET
        finals.append(outcome.final)
    assert all(final >= 0.6 for final in finals), finals
