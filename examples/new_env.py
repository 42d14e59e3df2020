"""Add an env of your own, with its card, and train on it like on a shipped one.

The env: ``Parity-v0`` shows ``length`` random bits one per step, then asks for their
parity. A memoryless policy sees the same query observation whatever the bits were,
so it can do no better than 0.5; a memory can reach 1.0.

    python examples/new_env.py               # check the env, then train gru and none (40k steps each)
    python examples/new_env.py --steps 2000  # a quick look

In a checkout, an env of the package instead gets a module in ``pomdp_bench/envs/``
with a natively vectorized twin and a card ``envs/<Id>.yaml`` (docs/DESIGN.md,
"Extending"); ``tests/test_envs.py`` then runs the env contract on it.
"""

import argparse

import gymnasium as gym
import numpy as np
from gymnasium.utils.env_checker import check_env

from pomdp_bench import PPO, PPOSettings
from pomdp_bench.envs import register_card


class ParityEnv(gym.Env):
    """Report the parity of ``length`` bits shown one per step.

    | | |
    |---|---|
    | Observation | ``Box(0, 1, (2,))``: ``[bit, 0]`` at steps ``0 .. length-1``, ``[0, 1]`` at the query step ``length`` |
    | Action | ``Discrete(2)``: the parity at the query step; ignored before it |
    | Reward | 1 if the answer at the query step is the parity of the bits, else 0 |
    | Termination | after the query step (``length + 1`` steps) |
    | Truncation | never |
    | Memory horizon | ``length`` (the first bit is needed ``length`` steps later) |
    | Optimal return | 1.0 |
    | Feedforward ceiling | 0.5 |
    """

    metadata = {"render_modes": []}

    def __init__(self, length: int = 2) -> None:
        if not isinstance(length, int) or length < 1:
            raise ValueError(f"length must be an int >= 1, got {length!r}")
        self.length = length
        self.observation_space = gym.spaces.Box(0.0, 1.0, (2,), np.float32)
        self.action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._bits = self.np_random.integers(2, size=self.length)
        self._t = 0
        return self._observation(), {}

    def step(self, action):
        if not self.action_space.contains(action):
            raise ValueError(f"action must be 0 or 1, got {action!r}")
        query = self._t == self.length
        reward = float(query and int(action) == int(self._bits.sum() % 2))
        self._t += 1
        return self._observation(), reward, query, False, {}

    def _observation(self) -> np.ndarray:
        if self._t < self.length:
            return np.array([self._bits[self._t], 0.0], np.float32)
        return np.array([0.0, 1.0], np.float32)


CARD = {
    "id": "Parity-v0",
    "description": "The parity of length bits shown one per step, asked for after the last one.",
    "entry_point": "__main__:ParityEnv",  # a class in the running script; "package.module:Class" otherwise
    "vector_entry_point": None,  # no native twin: the agents step copies with Gymnasium's SyncVectorEnv
    "kwargs": {"length": 2},
    "max_episode_steps": None,
    "observation": "Box(0, 1, (2,)): [bit, 0] before the query, [0, 1] at the query step",
    "action": "Discrete(2): the parity, at the query step",
    "reward": "1 for the right parity at the query step, else 0",
    "termination": "after the query step, length + 1 steps",
    "truncation": "never",
    "memory_horizon": 2,
    "optimal_return": 1.0,
    "ff_ceiling": 0.5,
    "ff_ceiling_source": "analytic",
    "ff_ceiling_derivation": "The query observation is the same whatever the bits; both parities are equally likely.",
    "budget": {"total_timesteps": 40_000},
}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False
    )
    parser.add_argument("--steps", type=int, default=40_000, help="env steps per agent")
    args = parser.parse_args()

    card = register_card(CARD)  # gym.make("Parity-v0") works now, and the harness knows its ceiling
    check_env(gym.make("Parity-v0").unwrapped)  # Gymnasium's own env checker
    print(f"{card.id}: registered; Gymnasium's check_env passes")

    settings = PPOSettings.tuned("CueRecall-v0", seed=0)  # a similar task's tuned settings
    for memory in ("gru", None):
        model = PPO("Parity-v0", memory, settings=settings, device="cpu")
        model.learn(args.steps)
        mean = model.evaluate(100).mean()
        print(f"{memory or 'none'}: mean return {mean:.3f} (feedforward ceiling {card.ff_ceiling})")


if __name__ == "__main__":
    main()
