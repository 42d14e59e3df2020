"""Hand-written reference controllers for the masked control envs, and an episode runner.

They bracket what memory can buy. A *memoryless* controller sees only the
current observation; the best one we found sets the empirical feedforward
ceiling on the env card (``scripts/measure_ceilings.py`` reproduces it). A
*true-state* controller reads the hidden velocities from ``env._batch``; it shows
what a policy that can infer them achieves.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from pomdp_bench.envs.batched import BatchedVectorEnv

# Policies map a batch of observations [N, D] (or, for true-state controllers,
# the env's Batch) to a batch of actions [N, ...].
Policy = Callable[[np.ndarray], np.ndarray]


def cartpole_memoryless(obs: np.ndarray, x_gain: float = -0.4) -> np.ndarray:
    """Push towards the side the pole leans to, corrected by the cart position.

    ``obs`` is ``[N, 2]`` ``[x, theta]``; ``x_gain`` was chosen by a grid search
    over ``[-2, 1]`` (``scripts/measure_ceilings.py``).
    """
    return (obs[:, -1] + x_gain * obs[:, 0] > 0).astype(np.int64)


def cartpole_true_state(state: np.ndarray) -> np.ndarray:
    """A linear controller on the full state ``[4, N]`` (x, x_dot, theta, theta_dot); it balances."""
    x, x_dot, theta, theta_dot = state
    return (theta + 0.3 * theta_dot + 0.01 * x + 0.1 * x_dot > 0).astype(np.int64)


def pendulum_memoryless(obs: np.ndarray, gain: float = -19.0) -> np.ndarray:
    """A torque against the angle: ``u = clip(gain * sin θ)``; ``obs`` is ``[N, 2]`` ``[cos θ, sin θ]``.

    With the velocity hidden no memoryless controller can both pump energy
    (which needs the direction of motion) and damp it near the top.
    """
    return np.clip(gain * obs[:, 1:2], -2.0, 2.0).astype(np.float32)


def pendulum_true_state(th: np.ndarray, thdot: np.ndarray) -> np.ndarray:
    """Energy-pumping swing-up, then a PD catch near the top, from the true ``θ [N]`` and ``θ̇ [N]``."""
    th = ((th + np.pi) % (2 * np.pi)) - np.pi
    # Pendulum-v1 has θ'' = 15 sin θ + 3u, so E = θ'²/2 + 15 cos θ is 15 upright at rest,
    # and dE/dt = 3 u θ': push along θ' while E is short of 15.
    energy = 0.5 * thdot**2 + 15.0 * np.cos(th)
    swing = 2.0 * np.sign(thdot * (15.0 - energy) + 1e-12)
    catch = -(10.0 * th + 2.0 * thdot)
    return np.clip(np.where(np.cos(th) > 0.9, catch, swing), -2.0, 2.0)[:, None].astype(np.float32)


def run_episodes(
    env: BatchedVectorEnv,
    policy: Callable[[np.ndarray, BatchedVectorEnv], np.ndarray],
    episodes_per_copy: int,
    seed: int = 0,
) -> np.ndarray:
    """Run ``policy(obs, env)`` on a same-step vector env for ``episodes_per_copy`` episodes per copy.

    Every copy contributes the same number of episodes, so short episodes are not
    over-represented (as they would be by taking the first ``n`` to end).

    Returns:
        ``[num_envs * episodes_per_copy]`` undiscounted returns, copy-major.
    """
    obs, _ = env.reset(seed=seed)
    n = env.num_envs
    running = np.zeros(n)
    returns = np.zeros((n, episodes_per_copy))
    count = np.zeros(n, dtype=np.int64)
    while count.min() < episodes_per_copy:
        obs, reward, terminated, truncated, _ = env.step(policy(obs, env))
        running += reward
        done = (terminated | truncated) & (count < episodes_per_copy)
        idx = np.flatnonzero(done)
        returns[idx, count[idx]] = running[idx]
        count[idx] += 1
        running[terminated | truncated] = 0.0
    return returns.reshape(-1)
