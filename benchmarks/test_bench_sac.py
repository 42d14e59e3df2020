"""SAC gradient-step cost per memory kind, and training throughput beside SB3.

    pytest benchmarks/test_bench_sac.py --benchmark-only

- ``test_gradient_step``: one SAC gradient step (entropy coefficient, critic, actor,
  target critic) on a batch of 32 sequences of 24 learned steps
  (``sequence_length=24``) after the default ``burn_in=8``: windows of 33 rows.
  MaskedPendulum-v0 (Box actions), ``agents/sac.yaml``'s settings otherwise, each
  memory kind at its default size (hidden 64). ``items_per_call`` = 32 x 24 learned
  steps.
- ``test_pendulum_training_beside_sb3``: 200 env steps of training, ours
  (``memory=None``) and SB3's SAC at the parity settings, one after the other;
  ``items_per_call`` = 200 env steps.
"""

from __future__ import annotations

import pytest
import yaml

from pomdp_bench.agents.sac import SAC
from pomdp_bench.data import data_dir
from pomdp_bench.memory import MEMORY_KINDS

BATCH, SEQUENCE = 32, 24


@pytest.mark.parametrize("kind", MEMORY_KINDS)
def test_gradient_step(benchmark, kind: str) -> None:
    hp = yaml.safe_load((data_dir("agents") / "sac.yaml").read_text())["MaskedPendulum-v0"]
    hp.update(batch_size=BATCH, sequence_length=SEQUENCE, burn_in=8, learning_starts=400, buffer_size=10_000)
    model = SAC("MaskedPendulum-v0", kind, seed=0, device="cpu", **hp)
    model.learn(model.settings.learning_starts)  # fill the buffer (random actions, no updates)

    def step() -> None:
        model._gradient_step(model.buffer.sample(BATCH, model._sample_generator))

    benchmark.extra_info["items_per_call"] = BATCH * SEQUENCE
    benchmark.pedantic(step, rounds=10, warmup_rounds=1)


@pytest.mark.parametrize("agent", ["pomdp_bench", "sb3"])
def test_pendulum_training_beside_sb3(benchmark, agent: str) -> None:
    """Training throughput beside SB3's SAC at the parity settings (Pendulum-v1,
    ``memory=None``, rl-zoo3's hyperparameters): one call is 200 env steps with one
    gradient step each. ``items_per_call`` = 200 env steps."""
    if agent == "sb3":
        sb3 = pytest.importorskip("stable_baselines3")
        model = sb3.SAC("MlpPolicy", "Pendulum-v1", learning_rate=1e-3, seed=0, device="cpu")
        model.learn(200)

        def train() -> None:
            model.learn(200, reset_num_timesteps=False)

    else:
        hp = yaml.safe_load((data_dir("agents") / "sac.yaml").read_text())["Pendulum-v1"]
        model = SAC("Pendulum-v1", None, seed=0, device="cpu", **hp)
        model.learn(200)

        def train() -> None:
            model.learn(200, reset_num_timesteps=False)

    benchmark.extra_info["items_per_call"] = 200
    benchmark.pedantic(train, rounds=5, warmup_rounds=1)
