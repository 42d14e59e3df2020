"""The spaces contract: every supported observation and action space trains, acts and
evaluates; unsupported ones are refused with a message naming them (agents/common/spaces.py)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, SyncVectorEnv

from pomdp_bench.agents import PPO, SAC
from pomdp_bench.agents.common.spaces import check_observation_space, flatten_observations
from pomdp_bench.agents.ppo.networks import MultiCategoricalHead

OBSERVATION_SPACES = {
    "box": spaces.Box(-1.0, 1.0, (3,), np.float32),
    "box2d": spaces.Box(0.0, 1.0, (2, 2), np.float32),
    "discrete": spaces.Discrete(4),
    "discrete_start": spaces.Discrete(3, start=-1),
    "multidiscrete": spaces.MultiDiscrete([2, 3], start=[0, 1]),
    "multibinary": spaces.MultiBinary(3),
    "tuple": spaces.Tuple((spaces.Discrete(2), spaces.Box(-1.0, 1.0, (2,), np.float32))),
    "dict": spaces.Dict(
        {
            "bits": spaces.MultiBinary(2),
            "pos": spaces.Box(-1.0, 1.0, (1,), np.float32),
            "inner": spaces.Tuple((spaces.Discrete(3), spaces.MultiDiscrete([2, 2]))),
        }
    ),
}
ACTION_SPACES = {
    "discrete": spaces.Discrete(3),
    "discrete_start": spaces.Discrete(3, start=-1),
    "box": spaces.Box(-2.0, 2.0, (2,), np.float32),
    "multidiscrete": spaces.MultiDiscrete([2, 3]),
    "multidiscrete_start": spaces.MultiDiscrete([3, 2], start=[-1, 5]),
}


class SpacesEnv(gym.Env):
    """Random observations of any space; episodes of 4 steps; refuses actions outside
    its action space, so an agent that sends one fails the test."""

    def __init__(self, observation_space: spaces.Space, action_space: spaces.Space) -> None:
        self.observation_space = observation_space
        self.action_space = action_space
        self.t = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.observation_space.seed(int(self.np_random.integers(2**31)))
        self.t = 0
        return self.observation_space.sample(), {}

    def step(self, action):
        if not self.action_space.contains(np.asarray(action, dtype=self.action_space.dtype)):
            raise ValueError(f"action {action!r} is not in {self.action_space}")
        self.t += 1
        return self.observation_space.sample(), float(self.t), False, self.t >= 4, {}


def spaces_vec_env(obs: spaces.Space, act: spaces.Space, n: int = 2) -> SyncVectorEnv:
    return SyncVectorEnv([lambda: SpacesEnv(obs, act)] * n, autoreset_mode=AutoresetMode.SAME_STEP)


def spaces_factory(obs: spaces.Space, act: spaces.Space):
    """A function returning the env: agents build their copies (and evaluation's) from it."""
    return lambda: SpacesEnv(obs, act)


PPO_SMALL = dict(n_steps=8, num_minibatches=2, n_epochs=1, net_arch=[8], device="cpu", seed=1)
SAC_SMALL = dict(
    net_arch={"encoder": [8], "pi": [8], "qf": [8]},
    learning_starts=60,
    batch_size=8,
    sequence_length=4,
    burn_in=0,
    device="cpu",
    seed=1,
)


def _exercise(agent, obs_space: spaces.Space, steps: int) -> None:
    """Train a few updates, act on one raw observation and on a batch, evaluate."""
    agent.learn(steps)
    assert agent.n_updates > 0
    rng = np.random.default_rng(0)
    obs_space.seed(int(rng.integers(2**31)))
    one = obs_space.sample()
    action, _ = agent.predict(one, deterministic=True)
    assert agent.action_space.contains(np.asarray(action, dtype=agent.action_space.dtype))
    batch = gym.vector.utils.concatenate(
        obs_space, [obs_space.sample() for _ in range(3)], gym.vector.utils.create_empty_array(obs_space, 3)
    )
    actions, _ = agent.predict(batch, deterministic=True)
    assert len(actions) == 3
    # A batch acts as its observations one at a time (deterministic, fresh memory).
    for i, obs in enumerate(gym.vector.utils.iterate(gym.vector.utils.batch_space(obs_space, 3), batch)):
        np.testing.assert_allclose(agent.predict(obs, deterministic=True)[0], actions[i], rtol=0, atol=1e-5)
    returns = agent.evaluate(2)
    assert returns.shape == (2,) and np.all(returns == 10.0)  # 4 steps: 1 + 2 + 3 + 4


@pytest.mark.parametrize("act_name", list(ACTION_SPACES))
@pytest.mark.parametrize("obs_name", list(OBSERVATION_SPACES))
def test_ppo_trains_on_every_space(obs_name: str, act_name: str) -> None:
    obs_space, act_space = OBSERVATION_SPACES[obs_name], ACTION_SPACES[act_name]
    agent = PPO(
        spaces_factory(obs_space, act_space), {"kind": "gru", "hidden_size": 8}, n_envs=2, **PPO_SMALL
    )
    assert agent.raw_observation_space == obs_space
    assert agent.observation_space.shape == (spaces.flatdim(obs_space),) or obs_name in ("box2d", "discrete")
    _exercise(agent, obs_space, 32)


@pytest.mark.parametrize("act_name", ["discrete", "box"])
@pytest.mark.parametrize("obs_name", ["box", "discrete", "multidiscrete", "multibinary", "tuple", "dict"])
def test_sac_trains_on_every_space_it_takes(obs_name: str, act_name: str) -> None:
    obs_space, act_space = OBSERVATION_SPACES[obs_name], ACTION_SPACES[act_name]
    agent = SAC(
        spaces_factory(obs_space, act_space), {"kind": "gru", "hidden_size": 8}, n_envs=2, **SAC_SMALL
    )
    _exercise(agent, obs_space, 80)


@pytest.mark.parametrize("act_name", ["multidiscrete", "discrete_start"])
def test_sac_refuses_what_it_cannot_act_in(act_name: str) -> None:
    env = spaces_vec_env(OBSERVATION_SPACES["box"], ACTION_SPACES[act_name])
    with pytest.raises(
        TypeError, match=r"not supported by SAC: use one of Discrete, Box.*PPO takes MultiDiscrete"
    ):
        SAC(env, None, **SAC_SMALL)


@pytest.mark.parametrize(
    ("space", "match"),
    [
        (spaces.Text(10), r"observation space is Text.*a text part.*ImgObsWrapper.*FilterObservation"),
        (
            spaces.Dict({"image": spaces.Box(0, 1, (2,)), "mission": spaces.Text(10)}),
            r"observation space\['mission'\] is Text.*ImgObsWrapper",
        ),
        (
            spaces.Sequence(spaces.Discrete(2)),
            r"is Sequence.*not supported: use Box, Discrete, MultiDiscrete",
        ),
        (spaces.Tuple((spaces.Discrete(2), spaces.Graph(spaces.Box(0, 1, (1,)), None))), r"\[1\] is Graph"),
    ],
)
def test_unreadable_observation_spaces_are_refused(space: spaces.Space, match: str) -> None:
    with pytest.raises(TypeError, match=match):
        check_observation_space(space)
    env = spaces_vec_env(spaces.Discrete(2), spaces.Discrete(2))
    env.single_observation_space = space
    with pytest.raises(TypeError, match=match):
        PPO(env, None, **PPO_SMALL)


@pytest.mark.parametrize(
    "space",
    [spaces.MultiBinary(2), spaces.Box(-1, 1, (2, 2)), spaces.MultiDiscrete([[2, 2]]), spaces.Text(3)],
)
def test_ppo_refuses_actions_it_cannot_take(space: spaces.Space) -> None:
    env = spaces_vec_env(spaces.Discrete(2), spaces.Discrete(2))
    env.single_action_space = space
    with pytest.raises(
        TypeError, match=r"not supported by PPO: use one of Discrete, Box \(1-d\), MultiDiscrete"
    ):
        PPO(env, None, **PPO_SMALL)


def test_flattening_is_gymnasiums() -> None:
    """One observation and a batch both encode as gymnasium.spaces.flatten does."""
    space = OBSERVATION_SPACES["dict"]
    space.seed(0)
    samples = [space.sample() for _ in range(4)]
    expected = np.stack([spaces.flatten(space, s) for s in samples]).astype(np.float32)
    one, single = flatten_observations(space, samples[0])
    assert single and np.array_equal(one, expected[:1])
    batch = gym.vector.utils.concatenate(space, samples, gym.vector.utils.create_empty_array(space, 4))
    many, single = flatten_observations(space, batch)
    assert not single and np.array_equal(many, expected)
    with pytest.raises(ValueError, match="neither one observation of Dict"):
        flatten_observations(space, {"bits": [1, 0]})


def test_multicategorical_head_matches_torch_distributions() -> None:
    torch.manual_seed(0)
    head = MultiCategoricalHead(5, [2, 3, 4])
    logits = head(torch.randn(6, 5))  # [B, 9]
    groups = torch.split(logits, [2, 3, 4], dim=-1)
    dists = [torch.distributions.Categorical(logits=g) for g in groups]
    actions = head.sample(logits, torch.Generator().manual_seed(1))  # [B, 3]
    assert actions.shape == (6, 3)
    expected = sum(d.log_prob(actions[:, k]) for k, d in enumerate(dists))
    torch.testing.assert_close(head.log_prob(logits, actions), expected)
    torch.testing.assert_close(head.entropy(logits), sum(d.entropy() for d in dists))
    torch.testing.assert_close(head.mode(logits), torch.stack([g.argmax(-1) for g in groups], dim=-1))
    # Sampling follows each group's probabilities.
    many = head.sample(logits[:1].expand(20_000, -1), torch.Generator().manual_seed(2))
    for k, d in enumerate(dists):
        freq = torch.bincount(many[:, k], minlength=d.probs.shape[-1]).float() / 20_000
        torch.testing.assert_close(freq, d.probs[0], atol=0.015, rtol=0)


class MatchCueEnv(gym.Env):
    """One-step episodes: a cue in {0, 1} is shown; the reward is the share of the two
    action dimensions that equal it. Chance 0.5, the optimum 1."""

    observation_space = spaces.Discrete(2)
    action_space = spaces.MultiDiscrete([2, 2])

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.cue = int(self.np_random.integers(2))
        return self.cue, {}

    def step(self, action):
        reward = float(np.mean(np.asarray(action) == self.cue))
        return self.cue, reward, True, False, {}


@pytest.mark.trajectory
def test_ppo_learns_a_multidiscrete_task() -> None:
    # Measured (seeds 0-3, native kernels): sampled returns 0.9975-1.0 after 3000 steps.
    agent = PPO(
        MatchCueEnv,
        "none",
        n_envs=8,
        n_steps=16,
        num_minibatches=2,
        n_epochs=4,
        net_arch=[16],
        learning_rate=3e-3,
        device="cpu",
        seed=0,
    )
    chance = agent.evaluate(200, deterministic=False).mean()  # the untrained policy samples
    agent.learn(3000)
    sampled = agent.evaluate(200, deterministic=False).mean()
    assert abs(chance - 0.5) < 0.1
    assert sampled > 0.85 and agent.evaluate(50).mean() == 1.0


def test_sb3_adapter_reads_observations_as_our_agents_do() -> None:
    """sb3-contrib's RecurrentPPO gets the env flattened by the same rule (a Dict space
    it would otherwise need MultiInputLstmPolicy for) and predict takes raw observations."""
    pytest.importorskip("sb3_contrib")
    from pomdp_bench.agents.sb3 import SB3RecurrentPPO

    obs_space = OBSERVATION_SPACES["dict"]
    env_id = "SpacesDictTest-v0"
    if env_id not in gym.registry:
        gym.register(env_id, entry_point=lambda: SpacesEnv(obs_space, spaces.Discrete(3)))
    agent = SB3RecurrentPPO(env_id, n_envs=2, n_steps=8, num_minibatches=2, n_epochs=1, net_arch=[8])
    assert agent.env.observation_space == spaces.flatten_space(obs_space)
    agent.learn(16)
    obs_space.seed(0)
    action, _ = agent.predict(obs_space.sample(), deterministic=True)
    assert spaces.Discrete(3).contains(int(action))
