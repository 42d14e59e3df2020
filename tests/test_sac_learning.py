"""CI learning tests: SAC with a GRU solves the short memory tasks.

SAC-Discrete with a GRU memory must reach a deterministic evaluation return of at
least 0.9 (the memoryless ceiling is 0.5 on TMaze-v0 and 0.25 on CueRecall-v0) on
TMaze-v0 at corridor_length 5 and CueRecall-v0 at delay 5, and memory=None, trained
the same way, must stay near the 0.5 ceiling on TMaze-v0. Settings are
``agents/sac.yaml``'s for the env id, with the replayed windows sized to these
shorter episodes (tests/learning_tasks.py). Training stops once a periodic check
solves the task; the verdict is a fresh evaluation on other episodes. Their speed is
measured by benchmarks/, not asserted.
"""

from __future__ import annotations

import pytest

from learning_tasks import train_sac

pytestmark = [pytest.mark.slow, pytest.mark.trajectory]

SOLVED = 0.9
# Env steps at which seeds 0-4 first checked at >= 0.95 (scripts/measure_test_margins.py),
# native AVX-512 / AVX512_CORE / AVX2 / SSE4.1-default kernels; budgets in learning_tasks.SAC_TASKS:
#   tmaze       7k on every seed and setting (checked every 1k); budget 20k (2.9x the slowest)
#   cue_recall  4k-5k; budget 12k (2.4x)


def test_sac_gru_solves_tmaze_corridor_5() -> None:
    outcome, checks = train_sac("tmaze", seed=0)
    assert outcome.final >= SOLVED, (outcome, checks)


def test_sac_gru_solves_cue_recall_delay_5() -> None:
    outcome, checks = train_sac("cue_recall", seed=0)
    assert outcome.final >= SOLVED, (outcome, checks)


def test_sac_without_memory_stays_at_the_tmaze_ceiling() -> None:
    # A memoryless policy enters the goal arm at most half the time (card: ceiling 0.5);
    # 0.65 leaves room for the sampling noise of 200 evaluation episodes (3 sd = 0.11).
    # Seeds 0-4 scored 0.505, 0.0, 0.505, 0.495, 0.505; none solved a check.
    outcome, checks = train_sac("tmaze_none", seed=0)
    assert outcome.solved_at is None and outcome.final <= 0.65, (outcome, checks)
