"""MaskedPendulum: Pendulum-v1 with the angular velocity hidden."""

from __future__ import annotations

import numpy as np
from gymnasium import spaces
from gymnasium.envs.classic_control.pendulum import PendulumEnv
from gymnasium.vector import AutoresetMode

from pomdp_bench.envs.batched import Batch, BatchedEnv, BatchedVectorEnv
from pomdp_bench.validation import check_float, check_int


class MaskedPendulumBatch(Batch):
    """``N`` copies of Pendulum-v1's dynamics (same constants), observed as ``(cos θ, sin θ)``."""

    max_speed = 8.0
    max_torque = 2.0
    dt = 0.05
    m = 1.0
    l = 1.0

    def __init__(self, num_envs: int, g: float = 10.0, max_episode_steps: int | None = None) -> None:
        super().__init__(num_envs)
        self.g = check_float("g", g, minimum=0.0)
        self.max_episode_steps = (
            None
            if max_episode_steps is None
            else check_int("max_episode_steps", max_episode_steps, minimum=1)
        )
        self.single_observation_space = spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32)
        self.single_action_space = spaces.Box(-self.max_torque, self.max_torque, shape=(1,), dtype=np.float32)
        self.th = np.zeros(num_envs)  # [N] angle (rad), 0 = upright
        self.thdot = np.zeros(num_envs)  # [N] angular velocity (rad/s), hidden
        self.last_u = np.zeros(num_envs)  # [N] last torque, for the renderer
        self.steps = np.zeros(num_envs, dtype=np.int64)

    def render_copy(self, i: int, mode: str) -> np.ndarray:
        """Copy ``i`` drawn by Pendulum-v1's own renderer, ``[H, W, 3] uint8``."""
        if mode != "rgb_array":
            raise ValueError(f"render mode {mode!r} is not supported by the vector env: use 'rgb_array'")
        if getattr(self, "_renderer", None) is None:
            self._renderer = PendulumEnv(render_mode="rgb_array", g=self.g)
        self._renderer.state = np.array([self.th[i], self.thdot[i]])
        self._renderer.last_u = None if self.steps[i] == 0 else float(self.last_u[i])
        return self._renderer.render()

    def reset_copies(self, idx: np.ndarray) -> None:
        # Pendulum-v1: theta uniform in [-pi, pi], theta_dot uniform in [-1, 1].
        u = self.streams.uniform(idx, 0, 2)
        self.th[idx] = (2.0 * u[:, 0] - 1.0) * np.pi
        self.thdot[idx] = 2.0 * u[:, 1] - 1.0
        self.last_u[idx] = 0.0
        self.steps[idx] = 0

    def step(self, action: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        u = action[:, 0].astype(np.float64)  # [N] torque (N m), already within bounds
        th, thdot = self.th, self.thdot
        th_norm = ((th + np.pi) % (2 * np.pi)) - np.pi
        costs = th_norm**2 + 0.1 * thdot**2 + 0.001 * u**2
        newthdot = thdot + (3 * self.g / (2 * self.l) * np.sin(th) + 3.0 / (self.m * self.l**2) * u) * self.dt
        newthdot = np.clip(newthdot, -self.max_speed, self.max_speed)
        self.th = th + newthdot * self.dt
        self.thdot = newthdot
        self.last_u = u
        self.steps += 1
        if self.max_episode_steps is None:
            truncated = np.zeros(self.num_envs, dtype=np.bool_)
        else:
            truncated = self.steps >= self.max_episode_steps
        return (-costs).astype(np.float32), np.zeros(self.num_envs, dtype=np.bool_), truncated

    def observe(self) -> np.ndarray:
        return np.stack((np.cos(self.th), np.sin(self.th)), axis=1).astype(np.float32)  # [N, 2]


class MaskedPendulumEnv(BatchedEnv, PendulumEnv):
    """Pendulum-v1 in which the agent sees the angle as ``(cos θ, sin θ)`` but not the angular velocity.

    Swinging up needs to know which way, and how fast, the pendulum turns; with
    the velocity hidden a policy must infer it from successive angles.

    | | |
    |---|---|
    | Observation | ``Box(-1, 1, (2,))`` float32 ``[cos θ, sin θ]`` (θ = 0 is upright) |
    | Action | ``Box(-2, 2, (1,))`` float32 torque (N m); out-of-range torques raise ``ValueError`` (agents clip) |
    | Reward | ``-(θ² + 0.1 θ̇² + 0.001 u²)`` with θ normalised to [-π, π); in [-16.27, 0] |
    | Termination | never |
    | Truncation | 200 steps (``max_episode_steps`` of the registration) |
    | Memory horizon | 2 steps: two consecutive angles give the velocity |
    | Optimal return | about -148 (empirical: a swing-up controller reading the true state) |
    | Feedforward ceiling | about -1006 (empirical: the best memoryless controller found; see the card) |

    Args:
        g: gravity (m/s²), Pendulum-v1's default 10.
        render_mode: ``None``, ``"human"`` or ``"rgb_array"`` (Pendulum-v1's renderer).
    """

    def __init__(self, g: float = 10.0, render_mode: str | None = None) -> None:
        PendulumEnv.__init__(self, render_mode=None, g=g)
        self._init_batch(MaskedPendulumBatch(1, g), render_mode)

    def _sync_render_state(self) -> None:
        # Pendulum-v1's renderer draws self.state and self.last_u.
        b = self._batch
        self.state = np.array([b.th[0], b.thdot[0]])
        self.last_u = None if b.steps[0] == 0 else float(b.last_u[0])

    render = PendulumEnv.render
    close = PendulumEnv.close


class MaskedPendulumVectorEnv(BatchedVectorEnv):
    """``num_envs`` copies of :class:`MaskedPendulumEnv` stepped with numpy array operations."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 30, "autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(
        self,
        num_envs: int = 1,
        g: float = 10.0,
        max_episode_steps: int | None = 200,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        render_mode: str | None = None,
    ) -> None:
        num_envs = check_int("num_envs", num_envs, minimum=1)
        self._init_batch(MaskedPendulumBatch(num_envs, g, max_episode_steps), autoreset_mode, render_mode)
