"""MaskedCartPole: CartPole-v1 with the velocities hidden."""

from __future__ import annotations

import numpy as np
from gymnasium import spaces
from gymnasium.envs.classic_control.cartpole import CartPoleEnv
from gymnasium.vector import AutoresetMode

from pomdp_bench.envs.batched import Batch, BatchedEnv, BatchedVectorEnv
from pomdp_bench.validation import check_choice, check_float, check_int

OBS_LAYOUTS = ("masked", "zeroed")
_NOISE_TAG = 2**32  # step t's observation noise uses tag _NOISE_TAG + t


class MaskedCartPoleBatch(Batch):
    """``N`` copies of CartPole-v1's dynamics (Euler, same constants), observed without velocities."""

    gravity = 9.8
    masscart = 1.0
    masspole = 0.1
    total_mass = masspole + masscart
    length = 0.5  # half the pole's length
    polemass_length = masspole * length
    force_mag = 10.0
    tau = 0.02  # seconds per step
    theta_threshold = 12 * 2 * np.pi / 360
    x_threshold = 2.4

    def __init__(
        self,
        num_envs: int,
        obs_layout: str = "masked",
        obs_noise_std: float = 0.0,
        max_episode_steps: int | None = None,
    ) -> None:
        super().__init__(num_envs)
        self.obs_layout = check_choice("obs_layout", obs_layout, OBS_LAYOUTS)
        self.obs_noise_std = check_float("obs_noise_std", obs_noise_std, minimum=0.0)
        self.max_episode_steps = (
            None
            if max_episode_steps is None
            else check_int("max_episode_steps", max_episode_steps, minimum=1)
        )
        # The bounds CartPole-v1 uses for x and theta; velocities are unbounded.
        x_hi, th_hi = self.x_threshold * 2, self.theta_threshold * 2
        high = np.array(
            [x_hi, th_hi] if obs_layout == "masked" else [x_hi, np.inf, th_hi, np.inf], dtype=np.float32
        )
        if self.obs_noise_std > 0:
            high = np.full_like(high, np.inf)
        self.single_observation_space = spaces.Box(-high, high, dtype=np.float32)
        self.single_action_space = spaces.Discrete(2)
        self.state = np.zeros((4, num_envs))  # [4, N]: x, x_dot, theta, theta_dot (float64)
        self.steps = np.zeros(num_envs, dtype=np.int64)

    def render_copy(self, i: int, mode: str) -> np.ndarray:
        """Copy ``i`` drawn by CartPole-v1's own renderer, ``[H, W, 3] uint8``."""
        if mode != "rgb_array":
            raise ValueError(f"render mode {mode!r} is not supported by the vector env: use 'rgb_array'")
        if getattr(self, "_renderer", None) is None:
            self._renderer = CartPoleEnv(render_mode="rgb_array")
        self._renderer.state = self.state[:, i].copy()
        return self._renderer.render()

    def reset_copies(self, idx: np.ndarray) -> None:
        # CartPole-v1: every state variable uniform in [-0.05, 0.05].
        self.state[:, idx] = self.streams.uniform(idx, 0, 4).T * 0.1 - 0.05
        self.steps[idx] = 0

    def step(self, action: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        x, x_dot, theta, theta_dot = self.state
        force = (2.0 * action - 1.0) * self.force_mag
        costheta = np.cos(theta)
        sintheta = np.sin(theta)
        temp = (force + self.polemass_length * theta_dot * theta_dot * sintheta) / self.total_mass
        thetaacc = (self.gravity * sintheta - costheta * temp) / (
            self.length * (4.0 / 3.0 - self.masspole * costheta * costheta / self.total_mass)
        )
        xacc = temp - self.polemass_length * thetaacc * costheta / self.total_mass
        self.state = np.stack(
            (
                x + self.tau * x_dot,
                x_dot + self.tau * xacc,
                theta + self.tau * theta_dot,
                theta_dot + self.tau * thetaacc,
            )
        )
        terminated = (np.abs(self.state[0]) > self.x_threshold) | (
            np.abs(self.state[2]) > self.theta_threshold
        )
        self.steps += 1
        if self.max_episode_steps is None:
            truncated = np.zeros(self.num_envs, dtype=np.bool_)
        else:
            truncated = self.steps >= self.max_episode_steps
        return np.ones(self.num_envs, dtype=np.float32), terminated, truncated

    def observe(self) -> np.ndarray:
        if self.obs_layout == "masked":
            obs = self.state[::2].T.astype(np.float32)  # [N, 2]: x, theta
        else:
            obs = np.zeros((self.num_envs, 4), dtype=np.float32)
            obs[:, ::2] = self.state[::2].T
        if self.obs_noise_std > 0:
            idx = np.arange(self.num_envs)
            noise = self.streams.normal(idx, _NOISE_TAG + self.steps.astype(np.uint64), 2)
            visible = slice(None, None, 2) if self.obs_layout == "zeroed" else slice(None)
            obs[:, visible] += (self.obs_noise_std * noise).astype(np.float32)
        return obs


class MaskedCartPoleEnv(BatchedEnv, CartPoleEnv):
    """CartPole-v1 in which the agent sees the cart's position and the pole's angle only.

    The dynamics, start distribution, termination and the 500-step limit are
    CartPole-v1's. Hiding the two velocities makes the task partially observable:
    to balance, a policy must estimate them from how the position and angle
    change, which needs memory.

    The default observation is 2-d, ``[x, theta]``, not CartPole's 4-d vector with
    zeros where the velocities were: a constant zero carries no information, and
    a 2-d input makes it plain to a reader (and to a network's first layer) what
    the agent can see. ``obs_layout="zeroed"`` gives rl-zoo3's ``CartPoleNoVel-v1``
    layout, ``[x, 0, theta, 0]``, so results compare with published ones.

    | | |
    |---|---|
    | Observation | ``Box(2,)`` float32 ``[cart position (m), pole angle (rad)]``; with ``obs_layout="zeroed"`` ``Box(4,)`` ``[x, 0, theta, 0]``. Optional Gaussian noise of std ``obs_noise_std`` on the visible entries |
    | Action | ``Discrete(2)``: 0 pushes the cart left, 1 right (10 N) |
    | Reward | +1 for every step, the terminating one included |
    | Termination | ``abs(x) > 2.4`` or ``abs(theta) > 12°`` |
    | Truncation | 500 steps (``max_episode_steps`` of the registration) |
    | Memory horizon | 2 steps: two consecutive observations give both velocities by finite differences |
    | Optimal return | 500 |
    | Feedforward ceiling | about 45 (empirical: the best memoryless controller found; see the card) |

    Args:
        obs_layout: ``"masked"`` (2-d) or ``"zeroed"`` (4-d, CartPoleNoVel-v1).
        obs_noise_std: standard deviation of observation noise, in the units of each entry.
        render_mode: ``None``, ``"human"`` or ``"rgb_array"`` (CartPole-v1's renderer).
    """

    def __init__(
        self,
        obs_layout: str = "masked",
        obs_noise_std: float = 0.0,
        render_mode: str | None = None,
    ) -> None:
        CartPoleEnv.__init__(self, render_mode=None)
        self._init_batch(MaskedCartPoleBatch(1, obs_layout, obs_noise_std), render_mode)

    def _sync_render_state(self) -> None:
        # CartPole-v1's renderer draws self.state.
        self.state = self._batch.state[:, 0].copy()

    render = CartPoleEnv.render
    close = CartPoleEnv.close


class MaskedCartPoleVectorEnv(BatchedVectorEnv):
    """``num_envs`` copies of :class:`MaskedCartPoleEnv` stepped with numpy array operations."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 50, "autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(
        self,
        num_envs: int = 1,
        obs_layout: str = "masked",
        obs_noise_std: float = 0.0,
        max_episode_steps: int | None = 500,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        render_mode: str | None = None,
    ) -> None:
        num_envs = check_int("num_envs", num_envs, minimum=1)
        batch = MaskedCartPoleBatch(num_envs, obs_layout, obs_noise_std, max_episode_steps)
        self._init_batch(batch, autoreset_mode, render_mode)
