"""A newcomer's own env, in a module of its own, registered as an outside package
registers its ids; ``tests/test_newcomer_suite.py`` names it in a suite with ``import:``.

``NewcomerCue-v0``: 3 steps. Step 0 shows a cue (observation 1 or 2), step 1 shows
nothing (0), step 2 asks for the cue (3); the third action is rewarded 1 if it names
the cue (0 or 1), else 0. Memoryless ceiling 0.5, optimum 1, memory horizon 2.
"""

import gymnasium as gym


class NewcomerCueEnv(gym.Env):
    """The 3-step cue task of the module docstring."""

    def __init__(self) -> None:
        self.observation_space = gym.spaces.Discrete(4)
        self.action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._cue, self._t = int(self.np_random.integers(2)), 0
        return 1 + self._cue, {}

    def step(self, action):
        self._t += 1
        if self._t == 1:
            return 0, 0.0, False, False, {}
        if self._t == 2:
            return 3, 0.0, False, False, {}
        return 0, float(int(action) == self._cue), True, False, {}


if "NewcomerCue-v0" not in gym.registry:
    gym.register("NewcomerCue-v0", entry_point=f"{__name__}:NewcomerCueEnv")
