"""Learning tests: PQN with a GRU or an LSTM solves the passive T-Maze at corridor 5;
without memory it stays at the feedforward ceiling (0.5, the card's).

Settings: 16 copies, rollouts of one episode (T = 6 steps), 2 epochs of 2 minibatches,
Q(0.9) targets, epsilon from 1 to 0.05 over the first 20% of the budget. Training stops
once a 64-episode check (about every 2000 steps) reaches 0.95
(``learning_tasks.StopWhenSolved``); the verdict is a fresh 200-episode evaluation.
Measured crossings (seeds 0-2, native kernels, this machine): gru 10k-14k, lstm 14k-18k
env steps (docs/notes/pqn-tmaze.md); budgets are at least twice the slowest.
"""

from __future__ import annotations

import pytest
import torch

from pomdp_bench.agents.pqn import PQN

from learning_tasks import Outcome, StopWhenSolved

pytestmark = [pytest.mark.slow, pytest.mark.trajectory]

CORRIDOR = 5
SETTINGS = dict(
    n_envs=16, n_steps=CORRIDOR + 1, num_minibatches=2, n_epochs=2, learning_rate=1e-3, q_lambda=0.9,
    epsilon_end=0.05, exploration_fraction=0.2, net_arch={"encoder": [32], "q": [32]}, device="cpu",
)  # fmt: skip
MEMORY_BUDGET, NONE_BUDGET = 40_000, 20_000
SOLVED, CEILING_MARGIN = 0.9, 0.65


def train_pqn(memory: dict | None, seed: int, budget: int) -> tuple[Outcome, list[float]]:
    """PQN on TMaze-v1 (corridor 5) until a 64-episode check about every 2000 steps
    reaches 0.95; ``final`` is 200 fresh episodes."""
    torch.set_num_threads(1)
    agent = PQN("TMaze-v1", memory, env_kwargs={"corridor_length": CORRIDOR}, seed=seed, **SETTINGS)
    rollouts_per_check = max(2000 // agent.settings.rollout_size, 1)
    stop = StopWhenSolved(
        due=lambda m: m.n_updates % rollouts_per_check == 0 and m.num_timesteps > 2000,
        check=lambda m, k: float(m.evaluate(64, seed=1).mean()),
    )
    agent.learn(budget, callback=stop)
    return Outcome(stop.solved_at, float(agent.evaluate(200, seed=2).mean()), budget), stop.scores


@pytest.mark.parametrize("kind", ["gru", "lstm"])
def test_pqn_with_memory_solves_tmaze_corridor_5(kind) -> None:
    outcome, checks = train_pqn({"kind": kind, "hidden_size": 32}, seed=0, budget=MEMORY_BUDGET)
    assert outcome.final >= SOLVED, (outcome, checks)


def test_pqn_without_memory_stays_at_the_tmaze_ceiling() -> None:
    # A memoryless policy enters the goal arm at most half the time (card: ceiling 0.5);
    # 0.65 leaves room for the sampling noise of 200 evaluation episodes (3 sd = 0.11).
    outcome, checks = train_pqn(None, seed=0, budget=NONE_BUDGET)
    assert outcome.solved_at is None and outcome.final <= CEILING_MARGIN, (outcome, checks)
