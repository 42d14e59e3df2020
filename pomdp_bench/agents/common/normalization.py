"""Running observation and reward normalisation, as SB3's ``VecNormalize`` does it.

The agent owns its normaliser rather than wrapping the env, so a saved agent
carries its statistics and ``predict`` takes raw observations. The arithmetic
follows ``VecNormalize`` step for step (float64 statistics, the same update
order and clipping), so that runs compare like for like with sb3-contrib.
"""

from __future__ import annotations

from typing import Any

import numpy as np


class RunningMeanStd:
    """Mean and variance of a stream of batches (Chan et al.'s parallel update).

    Args:
        shape: the shape of one sample.
        epsilon: the initial pseudo-count, which keeps the first update finite.
    """

    def __init__(self, shape: tuple[int, ...] = (), epsilon: float = 1e-4) -> None:
        self.mean = np.zeros(shape, np.float64)
        self.var = np.ones(shape, np.float64)
        self.count = float(epsilon)

    def update(self, batch: np.ndarray) -> None:
        """Fold in ``batch [N, *shape]``."""
        batch = np.asarray(batch, np.float64)
        batch_count = batch.shape[0]
        # np.mean/np.var cost more in Python overhead than the arithmetic here.
        batch_mean = np.add.reduce(batch, axis=0) / batch_count
        centred = batch - batch_mean
        batch_var = np.add.reduce(centred * centred, axis=0) / batch_count
        delta = batch_mean - self.mean
        total = self.count + batch_count
        self.mean = self.mean + delta * batch_count / total
        m2 = self.var * self.count + batch_var * batch_count + delta**2 * self.count * batch_count / total
        self.var = m2 / total
        self.count = total

    def state_dict(self) -> dict[str, Any]:
        return {"mean": self.mean.tolist(), "var": self.var.tolist(), "count": self.count}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.mean = np.asarray(state["mean"], np.float64)
        self.var = np.asarray(state["var"], np.float64)
        self.count = float(state["count"])


class Normalizer:
    """Normalises observations by their running statistics and rewards by the
    running standard deviation of the discounted return.

    Args:
        obs_shape: the shape of one observation.
        num_envs: copies stepped together (one discounted return each).
        normalize_observations: whether :meth:`obs` standardises.
        normalize_rewards: whether :meth:`reward` scales.
        gamma: the discount of the return whose spread scales the rewards.
        clip_obs: normalised observations are clipped to ``[-clip_obs, clip_obs]``.
        clip_reward: normalised rewards are clipped to ``[-clip_reward, clip_reward]``.
        epsilon: added to variances before the square root.
    """

    def __init__(
        self,
        obs_shape: tuple[int, ...],
        num_envs: int,
        *,
        normalize_observations: bool,
        normalize_rewards: bool,
        gamma: float,
        clip_obs: float = 10.0,
        clip_reward: float = 10.0,
        epsilon: float = 1e-8,
    ) -> None:
        self.normalize_observations = normalize_observations
        self.normalize_rewards = normalize_rewards
        self.gamma = gamma
        self.clip_obs = clip_obs
        self.clip_reward = clip_reward
        self.epsilon = epsilon
        self.obs_rms = RunningMeanStd(obs_shape)
        self.ret_rms = RunningMeanStd(())
        self.returns = np.zeros(num_envs, np.float64)

    def obs(self, obs: np.ndarray, update: bool = False) -> np.ndarray:
        """``obs [N, *obs_shape]`` normalised (float32); fold it into the statistics first if ``update``."""
        if not self.normalize_observations:
            return np.array(obs, np.float32)  # a copy: envs may reuse their arrays
        if update:
            self.obs_rms.update(obs)
        out = (obs - self.obs_rms.mean) / np.sqrt(self.obs_rms.var + self.epsilon)
        return np.clip(out, -self.clip_obs, self.clip_obs).astype(np.float32)

    def reward(self, reward: np.ndarray, done: np.ndarray) -> np.ndarray:
        """``reward [N]`` scaled (float32), updating the return statistics; ``done [N]``
        (terminated or truncated) restarts each copy's discounted return afterwards."""
        if not self.normalize_rewards:
            return np.asarray(reward, np.float32)
        self.returns = self.returns * self.gamma + reward
        self.ret_rms.update(self.returns)
        out = np.clip(reward / np.sqrt(self.ret_rms.var + self.epsilon), -self.clip_reward, self.clip_reward)
        self.returns[done] = 0.0
        return out.astype(np.float32)

    def reset_returns(self) -> None:
        """Start every copy's discounted return from zero (after an env reset)."""
        self.returns[:] = 0.0

    def state_dict(self) -> dict[str, Any]:
        return {"obs_rms": self.obs_rms.state_dict(), "ret_rms": self.ret_rms.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.obs_rms.load_state_dict(state["obs_rms"])
        self.ret_rms.load_state_dict(state["ret_rms"])
