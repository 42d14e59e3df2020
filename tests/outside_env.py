"""A tiny env registered the way an outside package registers its own (imported by
name from suites in tests/test_outside_envs.py): ``OutsideBit-v0`` shows a bit, then
asks for it; ``OutsideText-v0`` observes a Dict with a text part, as MiniGrid does."""

import gymnasium as gym


class OutsideBitEnv(gym.Env):
    """Step 0 shows a bit (observation 1 or 2), step 1 asks for it (observation 0);
    reward 1 for the right answer at step 1. Memoryless ceiling 0.5, optimum 1."""

    def __init__(self) -> None:
        self.observation_space = gym.spaces.Discrete(3)
        self.action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._bit, self._t = int(self.np_random.integers(2)), 0
        return 1 + self._bit, {}

    def step(self, action):
        self._t += 1
        if self._t == 1:
            return 0, 0.0, False, False, {}
        return 0, float(int(action) == self._bit), True, False, {}


class OutsideTextEnv(OutsideBitEnv):
    """``OutsideBitEnv`` seen as ``Dict(bit: Discrete(3), mission: Text)``."""

    def __init__(self) -> None:
        super().__init__()
        self.observation_space = gym.spaces.Dict(
            {"bit": gym.spaces.Discrete(3), "mission": gym.spaces.Text(max_length=20)}
        )

    def reset(self, *, seed=None, options=None):
        obs, info = super().reset(seed=seed, options=options)
        return {"bit": obs, "mission": "recallthebit"}, info

    def step(self, action):
        obs, *rest = super().step(action)
        return {"bit": obs, "mission": "recallthebit"}, *rest


for _id, _cls in (("OutsideBit-v0", OutsideBitEnv), ("OutsideText-v0", OutsideTextEnv)):
    if _id not in gym.registry:
        gym.register(_id, entry_point=f"{__name__}:{_cls.__name__}")
