"""pomdp-bench: a benchmark suite for memory in reinforcement learning.

Importing the package registers its environments with Gymnasium::

    import gymnasium as gym
    import pomdp_bench  # noqa: F401  (registers the ids)

    env = gym.make("MaskedCartPole-v0")
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from pomdp_bench.envs import register_envs

try:
    __version__ = version("pomdp-bench")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"

register_envs()

__all__ = ["__version__", "register_envs"]
