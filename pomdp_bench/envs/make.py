"""Build the vector envs the agents train on.

The agents need the final observation of every episode (to bootstrap through a
truncation), so they run vector envs in Gymnasium's ``SAME_STEP`` autoreset
mode: ``info["final_obs"][i]`` holds copy ``i``'s last observation, masked by
``info["_final_obs"]``, and the returned observation is already the next
episode's first.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
from gymnasium.vector import AutoresetMode, VectorEnv

import pomdp_bench.envs  # noqa: F401  (registers the ids)


def make_vector_env(env_id: str, num_envs: int, **env_kwargs: Any) -> VectorEnv:
    """``num_envs`` copies of ``env_id`` in ``SAME_STEP`` autoreset mode.

    Uses the env's natively vectorized twin when it has one, else Gymnasium's
    ``SyncVectorEnv``.
    """
    spec = gym.spec(env_id)
    if spec.vector_entry_point is not None:
        return gym.make_vec(
            env_id,
            num_envs=num_envs,
            vectorization_mode="vector_entry_point",
            autoreset_mode=AutoresetMode.SAME_STEP,
            **env_kwargs,
        )
    return gym.make_vec(
        env_id,
        num_envs=num_envs,
        vectorization_mode="sync",
        vector_kwargs={"autoreset_mode": AutoresetMode.SAME_STEP},
        **env_kwargs,
    )


def check_same_step(env: VectorEnv) -> None:
    """Refuse a vector env that does not autoreset in ``SAME_STEP`` mode."""
    mode = env.metadata.get("autoreset_mode", AutoresetMode.NEXT_STEP)
    if mode != AutoresetMode.SAME_STEP:
        raise ValueError(
            f"the agents need a vector env with autoreset_mode=SAME_STEP (final observations "
            f"in info['final_obs']), got {mode}; build one with pomdp_bench.envs.make.make_vector_env"
        )
