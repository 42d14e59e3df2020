"""The trainings behind the learning tests, shared by the tests and by
``scripts/measure_test_margins.py``, which measures where each seed crosses its
threshold under several kernel settings.

Each function trains one seed until a held-out check says the task is solved, or
until its budget runs out, and reports *when* it was solved. Every budget is at
least twice the slowest crossing measured (the figures sit beside each test), and
the memory proofs and the feedforward check assert on a majority of seeds, so that a different floating-point
path (AVX-512 against AVX2 kernels, another oneDNN or MKL build) moves a seed's
crossing without moving the verdict.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
import yaml
from torch import nn

from pomdp_bench.agents import PPO
from pomdp_bench.agents.sac import SAC
from pomdp_bench.data import data_dir
from pomdp_bench.memory import build_memory
from pomdp_bench.memory.kernels.episodes import positions_in_episode


@dataclass(frozen=True)
class Outcome:
    """One seed's training: when it was solved (``None``: never, within the budget)
    and its final score on episodes it never trained or checked on."""

    solved_at: int | None
    final: float
    budget: int


class StopWhenSolved:
    """A ``learn`` callback: when ``due(model)``, score the model with ``check(model, k)``
    (``k``: how many checks came before) and stop once a score reaches ``SOLVED_CHECK``."""

    SOLVED_CHECK = 0.95

    def __init__(self, due: Callable[[Any], bool], check: Callable[[Any, int], float]) -> None:
        self.due, self.check = due, check
        self.scores: list[float] = []
        self.solved_at: int | None = None  # env steps at the first solved check

    def __call__(self, model: Any) -> bool:
        if not self.due(model):
            return True
        self.scores.append(self.check(model, len(self.scores)))
        if self.scores[-1] >= self.SOLVED_CHECK:
            self.solved_at = int(model.num_timesteps)
            return False
        return True


# ----------------------------------------------------------------------------- memory proof
PROOF_SYMBOLS, PROOF_LAG, PROOF_PERIOD = 4, 8, 12
PROOF_CHECK_EVERY = 10  # Adam steps between held-out checks
PROOF_SOLVED = 0.98  # held-out accuracy that stops training; the test then asks > 0.95 on new data
# Per kind: settings and the Adam-step budget, at least twice the slowest crossing measured
# (quoted in tests/test_memory.py).
PROOF: dict[str, tuple[dict, int]] = {
    "none": ({"kind": "none"}, 60),
    "framestack": ({"kind": "framestack", "window": 12}, 60),
    "gru": ({"kind": "gru", "hidden_size": 32}, 200),
    "lstm": ({"kind": "lstm", "hidden_size": 32}, 800),
    "transformer": ({"kind": "transformer", "hidden_size": 16, "num_heads": 2, "window": 12}, 200),
    "mamba": ({"kind": "mamba", "hidden_size": 16, "d_state": 4}, 600),
    "lru": ({"kind": "lru", "hidden_size": 16, "d_state": 16}, 200),
    "s5": ({"kind": "s5", "hidden_size": 16, "d_state": 16}, 200),
    "ffm": ({"kind": "ffm", "hidden_size": 16, "d_state": 8}, 200),
    "linear_attention": ({"kind": "linear_attention", "hidden_size": 16, "num_heads": 2}, 200),
    "gtrxl": ({"kind": "gtrxl", "hidden_size": 16, "num_heads": 2, "window": 12}, 200),
    "mingru": ({"kind": "mingru", "hidden_size": 16}, 200),
    "minlstm": ({"kind": "minlstm", "hidden_size": 16}, 200),
    "mlstm": ({"kind": "mlstm", "hidden_size": 16, "num_heads": 2}, 300),
    "slstm": ({"kind": "slstm", "hidden_size": 16, "num_heads": 2}, 200),
    "mamba2": ({"kind": "mamba2", "hidden_size": 16, "d_state": 8, "head_size": 8}, 420),
    "gated_deltanet": ({"kind": "gated_deltanet", "hidden_size": 16, "num_heads": 2}, 200),
    "rwkv7": ({"kind": "rwkv7", "hidden_size": 16, "head_size": 8}, 200),
}


def cue_batch(gen: torch.Generator, steps: int = 48, batch: int = 32):
    """Episodes start at random; every 12th step of an episode shows one of 4 cues
    (one-hot, plus a flag), other steps are blank. Eight steps after each cue the
    target is that cue: the model must remember it across the blank steps.

    Returns ``x [T, B, 5]``, ``starts [T, B]``, ``target [T, B]``, ``asked [T, B]``.
    """
    starts = torch.rand(steps, batch, generator=gen) < 1 / 30
    starts[0] = True
    position = positions_in_episode(starts, 0)
    shown = (position % PROOF_PERIOD == 0).float().unsqueeze(-1)
    cues = torch.randint(PROOF_SYMBOLS, (steps, batch), generator=gen)
    x = torch.cat([F.one_hot(cues, PROOF_SYMBOLS).float() * shown, shown], dim=-1)
    asked = position % PROOF_PERIOD == PROOF_LAG
    return x, starts, cues.roll(PROOF_LAG, dims=0), asked


def recall_accuracy(memory: nn.Module, head: nn.Module, seed: int) -> float:
    """Accuracy on the asked steps of a fresh batch of 256 sequences."""
    x, starts, target, asked = cue_batch(torch.Generator().manual_seed(seed), batch=256)
    with torch.no_grad():
        y, _ = memory(x, memory.initial_state(x.shape[1]), starts)
        return (head(y).argmax(-1)[asked] == target[asked]).float().mean().item()


def train_recall(kind: str, seed: int = 0, budget: int | None = None) -> Outcome:
    """Adam on the cue-recall batches until the held-out check reaches ``PROOF_SOLVED``.

    The check batch (seed 1000 + seed) and the final batch (seed 2000 + seed) are
    never trained on; the training batches come from generator seed ``seed + 1``.
    """
    settings, default_budget = PROOF[kind]
    budget = default_budget if budget is None else budget
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed + 1)
    memory = build_memory(settings, input_size=PROOF_SYMBOLS + 1)
    head = nn.Linear(memory.output_size, PROOF_SYMBOLS)
    optimizer = torch.optim.Adam([*memory.parameters(), *head.parameters()], lr=1e-2)
    solved_at = None
    for step in range(1, budget + 1):
        x, starts, target, asked = cue_batch(gen)
        y, _ = memory(x, memory.initial_state(x.shape[1]), starts)
        loss = F.cross_entropy(head(y)[asked], target[asked])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % PROOF_CHECK_EVERY == 0 and recall_accuracy(memory, head, 1000 + seed) >= PROOF_SOLVED:
            solved_at = step
            break
    return Outcome(solved_at, recall_accuracy(memory, head, 2000 + seed), budget)


# ----------------------------------------------------------------------------- PPO
PPO_SETTINGS = dict(
    n_envs=16,
    n_steps=32,
    num_minibatches=4,
    n_epochs=4,
    ent_coef=0.01,
    gamma=0.99,
    gae_lambda=0.95,
    net_arch=[32],
    device="cpu",
)
PPO_TASKS = {
    # env id: (env kwargs, learning rate, budget in env steps, feedforward ceiling)
    "TMaze-v1": ({"corridor_length": 5}, "lin_0.002", 30_000, 0.5),
    "CueRecall-v0": ({"delay": 5}, "lin_0.003", 40_000, 0.25),
}


def train_ppo(env_id: str, memory: dict | None, seed: int = 0) -> tuple[Outcome, list[float]]:
    """PPO until a periodic 50-episode evaluation (every 4 updates) reaches 0.95.

    Returns the outcome (``final``: 100 fresh episodes, reset seed 12345) and the
    periodic evaluations. The budget is a cap: the linear learning-rate decay is
    over the whole budget, so a seed that solves early stops with a higher rate.
    """
    kwargs, lr, budget, _ = PPO_TASKS[env_id]
    model = PPO(env_id, memory, env_kwargs=kwargs, learning_rate=lr, seed=seed, **PPO_SETTINGS)
    stop = StopWhenSolved(
        due=lambda m: len(m.history) % 4 == 0,
        check=lambda m, k: float(m.evaluate(50, seed=k).mean()),
    )
    model.learn(budget, callback=stop)
    final = float(model.evaluate(100, seed=12345).mean())
    return Outcome(stop.solved_at, final, budget), stop.scores


# The long-horizon recipe: agents/ppo.yaml's delay-21 band (64 copies, one episode a
# piece) with an LSTM whose forget gate starts open (init="forget_bias").
LONG_RECALL = ("CueRecall-v0", {"delay": 20}, {"kind": "lstm", "hidden_size": 32, "init": "forget_bias"})
LONG_RECALL_BUDGET = 150_000


def train_long_recall(seed: int = 0, budget: int = LONG_RECALL_BUDGET) -> tuple[Outcome, list[float]]:
    """PPO on cue recall with a 20-step delay, with the tuned band, until a 50-episode
    evaluation every 2 updates reaches 0.95; ``final`` is 100 fresh episodes."""
    env_id, env_kwargs, memory = LONG_RECALL
    model = PPO.from_tuned(env_id, memory, env_kwargs=env_kwargs, seed=seed)
    stop = StopWhenSolved(
        due=lambda m: len(m.history) % 2 == 0, check=lambda m, k: float(m.evaluate(50, seed=k).mean())
    )
    model.learn(budget, callback=stop)
    final = float(model.evaluate(100, seed=12345).mean())
    return Outcome(stop.solved_at, final, budget), stop.scores


# ----------------------------------------------------------------------------- SAC
SAC_TASKS = {
    # name: (env id, env kwargs, episode length, budget in env steps, memory)
    "tmaze": ("TMaze-v1", {"corridor_length": 5}, 6, 20_000, {"kind": "gru", "hidden_size": 32}),
    "cue_recall": ("CueRecall-v0", {"delay": 5}, 7, 12_000, {"kind": "gru", "hidden_size": 32}),
    "tmaze_none": ("TMaze-v1", {"corridor_length": 5}, 6, 8_000, {"kind": "none"}),
}


def train_sac(task: str, seed: int = 0, budget: int | None = None) -> tuple[Outcome, list[float]]:
    """SAC with ``agents/sac.yaml``'s settings for the env id, the replayed windows
    sized to these short episodes (burn-in covers a whole episode), until a 64-episode
    check every 1000 steps reaches 0.95; ``final`` is 200 fresh episodes."""
    env_id, env_kwargs, episode_length, default_budget, memory = SAC_TASKS[task]
    budget = default_budget if budget is None else budget
    hp = dict(yaml.safe_load((data_dir("agents") / "sac.yaml").read_text())[env_id])
    hp.update(burn_in=episode_length - 1, sequence_length=8, learning_starts=800)
    agent = SAC(env_id, memory, env_kwargs=env_kwargs, seed=seed, device="cpu", **hp)
    stop = StopWhenSolved(
        due=lambda m: m.num_timesteps % 1000 == 0 and m.num_timesteps > m.settings.learning_starts,
        check=lambda m, k: float(m.evaluate(64, seed=1).mean()),
    )
    agent.learn(budget, callback=stop)
    final = float(agent.evaluate(200, seed=2).mean())
    return Outcome(stop.solved_at, final, budget), stop.scores


def majority(outcomes: list[bool]) -> bool:
    """More than half of the seeds."""
    return int(np.sum(outcomes)) * 2 > len(outcomes)
