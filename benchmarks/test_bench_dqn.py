"""DQN gradient-step cost per memory kind, and training throughput beside SB3.

    pytest benchmarks/test_bench_dqn.py --benchmark-only

- ``test_gradient_step``: one DQN gradient step (TD targets included) on a batch of 32
  whole T-Maze episodes (corridor 20, ``align_to_episodes``, double Q), each memory kind
  at hidden 64. ``items_per_call`` = 32 x 21 learned steps.
- ``test_cartpole_training_beside_sb3``: 512 env steps of training (two updates of 128
  gradient steps), ours (``memory=None``) and SB3's DQN at rl-zoo3's CartPole-v1
  settings, one after the other; ``items_per_call`` = 512 env steps.
"""

from __future__ import annotations

import gymnasium as gym
import pytest
import yaml

from pomdp_bench.agents.dqn import DQN
from pomdp_bench.data import data_dir
from pomdp_bench.memory import MEMORY_KINDS

BATCH, CORRIDOR = 32, 20


@pytest.mark.parametrize("kind", MEMORY_KINDS)
def test_gradient_step(benchmark, kind: str) -> None:
    T = CORRIDOR + 1
    model = DQN(
        "TMaze-v1", kind, env_kwargs={"corridor_length": CORRIDOR}, n_envs=8, burn_in=0, sequence_length=T,
        align_to_episodes=True, double_q=True, batch_size=BATCH, learning_starts=8 * 4 * T, seed=0, device="cpu",
    )  # fmt: skip
    model.learn(model.settings.learning_starts)  # fill the buffer (random actions, no updates)

    def step() -> None:
        model._gradient_step(model.buffer.sample(BATCH, model._sample_generator))

    benchmark.extra_info["items_per_call"] = BATCH * T
    benchmark.pedantic(step, rounds=10, warmup_rounds=1)


@pytest.mark.parametrize("agent", ["pomdp_bench", "sb3"])
def test_cartpole_training_beside_sb3(benchmark, agent: str) -> None:
    hp = yaml.safe_load((data_dir("agents") / "dqn.yaml").read_text())["CartPole-v1"]
    if agent == "sb3":
        sb3 = pytest.importorskip("stable_baselines3")
        zoo = {k: v for k, v in hp.items() if k not in ("burn_in", "sequence_length", "net_arch")}
        model = sb3.DQN(
            "MlpPolicy", "CartPole-v1", policy_kwargs=dict(net_arch=[256, 256]), seed=0, device="cpu", **zoo
        )
        model.learn(1024)

        def train() -> None:
            model.learn(512, reset_num_timesteps=False)

    else:
        model = DQN(lambda: gym.make("CartPole-v1"), None, seed=0, device="cpu", **hp)
        model.learn(1024)

        def train() -> None:
            model.learn(512, reset_num_timesteps=False)

    benchmark.extra_info["items_per_call"] = 512
    benchmark.pedantic(train, rounds=3, warmup_rounds=1)
