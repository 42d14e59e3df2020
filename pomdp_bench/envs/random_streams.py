"""Counter-based random streams: one per env copy, drawn without a Python loop.

A natively vectorized twin must give copy ``i`` exactly the episode a single env
seeded with ``seed + i`` would give (what ``SyncVectorEnv`` does), yet it may not
loop over copies. A stateful ``np.random.Generator`` per copy cannot do that, so
every random number here is a pure function of
``(stream key, episode index, tag, draw index)``, hashed with the SplitMix64
finaliser. The single env and its twin call the same functions, so they agree
bit for bit.

``tag`` separates the draws of one episode: tag 0 is the reset, tag ``t + 1`` is
step ``t`` (observation noise, say).
"""

from __future__ import annotations

import numpy as np

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_EPISODE_MUL = np.uint64(0xD1B54A32D192ED03)
_TAG_MUL = np.uint64(0xAEF17502108EF2D9)
_DRAW_MUL = np.uint64(0xF1357AEA2E62A9C5)
_TO_UNIT = 2.0**-53


def _mix(z: np.ndarray) -> np.ndarray:
    """SplitMix64 finaliser on a uint64 array (wrapping arithmetic)."""
    z = z + _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


def key_from_seed(seed: np.ndarray | int) -> np.ndarray:
    """Stream keys ``[N] uint64`` from non-negative integer seeds."""
    seeds = np.atleast_1d(np.asarray(seed, dtype=np.uint64))
    return _mix(seeds)


class RandomStreams:
    """Per-copy random streams for ``num_envs`` copies.

    Attributes:
        keys: ``[N] uint64`` one key per copy, set by :meth:`seed`.
        episodes: ``[N] uint64`` how many episodes each copy has begun since seeding.
    """

    def __init__(self, num_envs: int) -> None:
        self.keys = np.zeros(num_envs, dtype=np.uint64)
        self.episodes = np.zeros(num_envs, dtype=np.uint64)
        self.seeded = False

    def seed(self, seeds: np.ndarray) -> None:
        """Key every copy from ``seeds[N]`` and rewind its episode counter."""
        self.keys = key_from_seed(seeds)
        self.episodes = np.zeros_like(self.keys)
        self.seeded = True

    def uniform(self, idx: np.ndarray, tag: np.ndarray | int, n: int) -> np.ndarray:
        """``[len(idx), n] float64`` uniforms in ``[0, 1)`` for the copies ``idx``.

        Args:
            idx: ``[K] int`` copies to draw for.
            tag: scalar or ``[K]`` which draw of the episode (0 = reset, t + 1 = step t).
            n: draws per copy.
        """
        base = self.keys[idx] ^ _mix(
            self.episodes[idx] * _EPISODE_MUL + np.asarray(tag, dtype=np.uint64) * _TAG_MUL
        )
        draws = np.arange(1, n + 1, dtype=np.uint64) * _DRAW_MUL  # [n]
        z = _mix(base[:, None] + draws[None, :])  # [K, n]
        return (z >> np.uint64(11)).astype(np.float64) * _TO_UNIT

    def normal(self, idx: np.ndarray, tag: np.ndarray | int, n: int) -> np.ndarray:
        """``[len(idx), n] float64`` standard normals (Box-Muller on :meth:`uniform`)."""
        u = self.uniform(idx, tag, 2 * n)
        radius = np.sqrt(-2.0 * np.log1p(-u[:, :n]))  # 1 - u is in (0, 1]
        return radius * np.cos(2.0 * np.pi * u[:, n:])

    def integers(self, idx: np.ndarray, tag: np.ndarray | int, high: int) -> np.ndarray:
        """``[len(idx)] int64`` integers uniform in ``[0, high)``."""
        return np.minimum((self.uniform(idx, tag, 1)[:, 0] * high).astype(np.int64), high - 1)
