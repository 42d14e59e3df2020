"""A counter env for the Q-learning agents' tests (tests/test_dqn.py, tests/test_pqn.py)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, SyncVectorEnv


class CounterEnv(gym.Env):
    """Observation ``[episode index, step in episode]``, two actions, reward the step
    count; episodes end by termination (probability 0.15 a step) or by truncation at 7."""

    metadata: dict = {}

    def __init__(self) -> None:
        self.observation_space = spaces.Box(0.0, 1e6, (2,), np.float32)
        self.action_space = spaces.Discrete(2)
        self.episode = -1

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.episode += 1
        self.t = 0
        return np.array([self.episode, 0], np.float32), {}

    def step(self, action):
        self.t += 1
        terminated = bool(self.np_random.random() < 0.15)
        truncated = not terminated and self.t >= 7
        return np.array([self.episode, self.t], np.float32), float(self.t), terminated, truncated, {}


def counter_vec_env(n: int = 3) -> SyncVectorEnv:
    """``n`` copies of :class:`CounterEnv` in ``SAME_STEP`` autoreset mode."""
    return SyncVectorEnv([CounterEnv for _ in range(n)], autoreset_mode=AutoresetMode.SAME_STEP)
