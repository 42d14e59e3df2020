"""Unit tests of PQN's Q(lambda) targets, rollout and public surface (no learning here;
see ``tests/test_pqn_learning.py``)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from counter_env import counter_vec_env

from pomdp_bench.agents.pqn import PQN
from pomdp_bench.agents.pqn.agent import q_lambda_targets
from pomdp_bench.agents.pqn.settings import PQNSettings
from pomdp_bench.agents.registry import get_agent

# Verdicts here depend on torch's floating-point path: scripts/kernel_settings.sh reruns them
# under other CPU kernel settings.
pytestmark = pytest.mark.trajectory

SMALL = dict(net_arch={"encoder": [16], "q": [16]}, device="cpu")
GRU = {"kind": "gru", "hidden_size": 8}


def reference_targets(rewards, terminated, dones, next_max_q, gamma, lam):
    """Peng's Q(lambda), one column and one step at a time, from its recursive definition."""
    T, B = rewards.shape
    out = np.zeros((T, B))
    for b in range(B):
        later = None
        for t in reversed(range(T)):
            if terminated[t, b]:
                g = rewards[t, b]
            elif dones[t, b] or t == T - 1:  # truncated, or the rollout's end: one-step target
                g = rewards[t, b] + gamma * next_max_q[t, b]
            else:
                g = rewards[t, b] + gamma * ((1 - lam) * next_max_q[t, b] + lam * later)
            out[t, b] = later = g
    return out


@pytest.mark.parametrize("lam", [0.0, 0.3, 0.95, 1.0])
def test_q_lambda_targets_equal_the_reference_loop(lam) -> None:
    rng = np.random.default_rng(0)
    T, B = 13, 5
    rewards = rng.normal(size=(T, B))
    terminated = rng.random((T, B)) < 0.15
    dones = terminated | (rng.random((T, B)) < 0.1)
    next_max_q = rng.normal(size=(T, B))
    got = q_lambda_targets(
        torch.as_tensor(rewards),
        torch.as_tensor(terminated),
        torch.as_tensor(dones),
        torch.as_tensor(next_max_q),
        0.9,
        lam,
    )
    np.testing.assert_allclose(
        got.numpy(), reference_targets(rewards, terminated, dones, next_max_q, 0.9, lam)
    )


def test_lambda_0_is_one_step_q_learning_and_lambda_1_a_monte_carlo_return() -> None:
    rewards = torch.tensor([[1.0], [2.0], [3.0], [4.0]])
    terminated = torch.tensor([[False], [False], [True], [False]])
    next_max_q = torch.tensor([[10.0], [20.0], [30.0], [40.0]])
    g = 0.5
    one_step = q_lambda_targets(rewards, terminated, terminated, next_max_q, g, 0.0)
    torch.testing.assert_close(one_step[:, 0], torch.tensor([1 + g * 10, 2 + g * 20, 3.0, 4 + g * 40]))
    mc = q_lambda_targets(rewards, terminated, terminated, next_max_q, g, 1.0)
    # The terminated episode (steps 0-2): discounted returns, no bootstrap.
    torch.testing.assert_close(mc[:3, 0], torch.tensor([1 + g * 2 + g * g * 3, 2 + g * 3, 3.0]))


def test_truncation_bootstraps_on_the_final_observation_and_stops_the_trace() -> None:
    """A truncated step's target is ``r + gamma * max Q(final obs)`` whatever lambda is,
    and the step before it reads that target, never the next episode's."""
    rewards = torch.ones(3, 1)
    terminated = torch.zeros(3, 1, dtype=torch.bool)
    dones = torch.tensor([[False], [True], [False]])
    next_max_q = torch.tensor([[5.0], [7.0], [100.0]])
    g, lam = 0.5, 0.8
    got = q_lambda_targets(rewards, terminated, dones, next_max_q, g, lam)[:, 0]
    assert got[1] == 1 + g * 7.0
    torch.testing.assert_close(got[0], 1 + g * ((1 - lam) * 5.0 + lam * got[1]))


def test_the_agent_bootstraps_truncations_on_the_final_observations_value() -> None:
    """On CounterEnv, with ``Q = [t, t]`` (the observation's step count), every target of
    the rollout is the hand-computed one: the final observation of a truncated episode
    (t = 7) is read, the next episode's first (t = 0) never is."""
    agent = PQN(counter_vec_env(), None, n_steps=40, num_minibatches=1, q_lambda=0.0, seed=3, **SMALL)
    agent.q_net.forward = lambda x, state, starts: (x[..., 1:2].expand(*x.shape[:-1], 2), state)
    agent._start_episodes()
    agent._collect_rollout()
    targets = agent._targets()
    t = agent.buf_obs[..., 1]
    term, done = agent.buf_terminated, agent.buf_dones
    cut = done & ~term
    assert bool(term.any()) and bool(cut.any())
    g, r = agent.settings.gamma, agent.buf_rewards
    expected = torch.where(term, r, r + g * (t + 1))  # inside an episode: the next step's t
    torch.testing.assert_close(targets, expected)
    assert bool((t[cut] == 6).all())  # truncated after step 7: bootstrapped on t = 7


def test_pieces_rerun_from_their_stored_memory_give_the_acting_q_values() -> None:
    """The memory resets at episode starts: rerunning every piece from the memory stored
    at its start gives the Q values seen while acting, and a piece that begins an episode
    gives the same from a zero memory."""
    agent = PQN(counter_vec_env(), GRU, n_steps=24, num_minibatches=2, bptt_length=6, seed=4, **SMALL)
    agent.learn(agent.settings.rollout_size)  # one update, so the network is not the initial one
    agent._collect_rollout()
    obs, starts = agent._pieces(agent.buf_obs), agent._pieces(agent.buf_starts)
    state = tuple(torch.cat(p) for p in zip(*agent.piece_states, strict=True))
    with torch.no_grad():
        q, _ = agent.q_net(obs, state, starts)
        zero = agent.q_net.initial_state(obs.shape[1])
        fresh = starts.clone()
        fresh[0] = True  # the same pieces from a zero memory
        q_zero, _ = agent.q_net(obs, zero, fresh)
    torch.testing.assert_close(q.max(-1).values, agent._pieces(agent.buf_max_q), atol=1e-5, rtol=1e-5)
    # Once a piece has met an episode start, a zero memory at its first step changes nothing.
    met = starts.cumsum(0) > 0
    torch.testing.assert_close(q[met], q_zero[met], atol=1e-5, rtol=1e-5)
    assert bool(met.any()) and not bool(met.all())


def test_the_loss_reaches_the_memory_and_not_past_a_piece_start() -> None:
    agent = PQN(counter_vec_env(), GRU, n_steps=12, num_minibatches=1, seed=5, **SMALL)
    agent.learn(agent.settings.rollout_size)
    grads = [p.grad for p in agent.q_net.memory.parameters()]
    assert all(g is not None and bool(g.abs().sum() > 0) for g in grads)
    stored = agent.piece_states[0]
    assert all(not s.requires_grad for s in stored)


@pytest.mark.parametrize(
    ("changes", "match"),
    [
        ({"epsilon_end": 1.5}, "epsilon_end must be <= 1.0"),
        ({"epsilon_start": -0.1}, "epsilon_start must be >= 0.0"),
        ({"exploration_fraction": 2.0}, "exploration_fraction must be <= 1.0"),
        ({"q_lambda": 1.2}, "q_lambda must be <= 1.0"),
        ({"q_lambda": -0.5}, "q_lambda must be >= 0.0"),
        ({"loss": "l1"}, r"loss must be one of \['huber', 'mse'\]"),
        ({"n_epochs": 0}, "n_epochs must be >= 1"),
    ],
)
def test_bad_settings_are_refused_saying_what_is_valid(changes, match) -> None:
    with pytest.raises(ValueError, match=match):
        PQNSettings(**changes)


def test_minibatches_that_do_not_divide_the_rollout_are_refused() -> None:
    with pytest.raises(ValueError, match=r"num_minibatches=3 minibatches.*Valid num_minibatches here"):
        PQN("TMaze-v1", "gru", env_kwargs={"corridor_length": 3}, n_envs=4, n_steps=8, num_minibatches=3)
    with pytest.raises(ValueError, match=r"bptt_length=3 is not valid.*Valid values: \[1, 2, 4, 8\]"):
        PQN("TMaze-v1", "gru", env_kwargs={"corridor_length": 3}, n_envs=4, n_steps=8, bptt_length=3)


def test_a_box_action_space_is_refused_naming_ppo_and_sac() -> None:
    with pytest.raises(ValueError, match=r"PQN takes Discrete actions only.*use PPO.*or SAC"):
        PQN("MaskedPendulum-v0", "gru", n_envs=2, n_steps=8, **SMALL)


def test_epsilon_falls_linearly_over_the_exploration_fraction() -> None:
    s = PQNSettings(epsilon_start=1.0, epsilon_end=0.1, exploration_fraction=0.5)
    assert [round(s.exploration_rate(p), 6) for p in (0.0, 0.25, 0.5, 0.9)] == [1.0, 0.55, 0.1, 0.1]
    agent = PQN("TMaze-v1", None, env_kwargs={"corridor_length": 3}, n_envs=4, n_steps=4, **SMALL)
    agent.learn(160)
    rates = [h["exploration_rate"] for h in agent.history]
    assert rates[0] == 1.0 and rates[-1] == 0.01 and rates == sorted(rates, reverse=True)


def test_the_registry_knows_pqn_and_its_search_space() -> None:
    import optuna

    entry = get_agent("pqn")
    assert entry.load_class() is PQN and entry.load_settings_class() is PQNSettings
    trial = optuna.trial.FixedTrial(
        {
            "n_envs": 16,
            "n_epochs": 2,
            "num_minibatches": 4,
            "gamma": 0.99,
            "q_lambda": 0.9,
            "exploration_fraction": 0.1,
            "epsilon_end": 0.01,
            "loss": "mse",
            "max_grad_norm": 10.0,
            "net_arch": "small",
            "learning_rate": 1e-3,
            "lr_decay": True,
            "rollout_pieces": 2,
            "hidden_size": 32,
        }
    )
    hp, hidden = entry.load_search_space()(trial, 10)
    assert hidden == 32 and hp["n_steps"] == 64 and hp["learning_rate"] == "lin_0.001"
    PQNSettings(**hp).resolve(hp["n_envs"])


def test_previous_action_inputs_are_the_last_actions_one_hot_and_zero_at_starts() -> None:
    agent = PQN(counter_vec_env(), GRU, n_steps=20, num_minibatches=1, previous_action=True, seed=6, **SMALL)
    agent._start_episodes()
    agent._collect_rollout()
    previous = agent.buf_obs[..., 2:]  # after the observation's two features
    expected = torch.nn.functional.one_hot(agent.buf_actions[:-1], 2).float()
    expected[agent.buf_starts[1:]] = 0.0
    torch.testing.assert_close(previous[1:], expected)
    assert bool((previous[0] == 0).all())  # the first step of every copy starts an episode
    obs = np.zeros((3, 2), np.float32)
    action, state = agent.predict(obs, episode_start=np.ones(3, bool), deterministic=True)
    assert state[-1].shape == (3, 2) and (state[-1].argmax(-1) == action).all()


@pytest.mark.parametrize(
    "env_id, kwargs, episode",
    [
        ("TMaze-v1", {"corridor_length": 100}, 101),
        ("TMazeActive-v1", {"corridor_length": 100}, 103),
        ("CueRecall-v0", {"delay": 200}, 202),
        ("CueRecall-v0", {"delay": 1000}, 1002),
    ],
)
def test_tuned_settings_make_a_piece_one_episode(env_id, kwargs, episode) -> None:
    settings = PQNSettings.tuned(env_id, kwargs).resolve(32)
    assert settings.n_steps == settings.bptt_length == episode


def test_cue_recall_gives_no_previous_action_where_a_policy_could_carry_the_cue_in_it() -> None:
    """Cue recall's actions before the query do nothing, so the previous action would be a
    memory outside the kind (none reached 0.40 at delay 10 with it). Only horizon-long's
    cells, published before, keep it, and say so."""
    from pomdp_bench.harness.suites import expand, load_suite

    assert PQNSettings.tuned("CueRecall-v0", {"delay": 10}).previous_action is False
    for name in ("answer", "horizon-long"):
        cue = [s for s in expand(load_suite(name)) if s.agent == "pqn" and s.env_id == "CueRecall-v0"]
        assert cue, name
        with_it = {s.horizon for s in cue if s.hyperparams.get("previous_action")}
        assert with_it == (set() if name == "answer" else {201, 501, 1001}), name


def _discrete_obs_vec_env(n: int = 4):
    """FrozenLake (a ``Discrete`` observation) with a 6-step time limit, so some episodes
    are truncated."""
    from gymnasium.vector import AutoresetMode, SyncVectorEnv

    make = [lambda: gym.make("FrozenLake-v1", max_episode_steps=6) for _ in range(n)]
    return SyncVectorEnv(make, autoreset_mode=AutoresetMode.SAME_STEP)


@pytest.mark.parametrize("env_name", ["counter", "frozenlake", "tmaze"])
@pytest.mark.parametrize("previous_action", [True, False])
@pytest.mark.parametrize("memory", [None, GRU])
def test_the_fast_rollout_equals_the_plain_torch_loop(env_name, previous_action, memory) -> None:
    """``_collect_rollout`` (NumPy host arrays) and ``_collect_rollout_reference`` (a torch
    write per field and step) fill the same buffers and train the same weights, bit for bit,
    with truncations (CounterEnv, FrozenLake), ``Discrete`` observations (FrozenLake) and
    fixed-length episodes (T-Maze)."""
    make = {
        "counter": lambda: (counter_vec_env(), {}),
        "frozenlake": lambda: (_discrete_obs_vec_env(), {}),
        "tmaze": lambda: ("TMaze-v1", {"env_kwargs": {"corridor_length": 4}, "n_envs": 4}),
    }[env_name]
    agents = []
    for reference in (False, True):
        env, extra = make()
        agent = PQN(
            env,
            memory,
            n_steps=12,
            bptt_length=6,
            num_minibatches=2,
            previous_action=previous_action,
            seed=5,
            **SMALL,
            **extra,
        )
        if reference:
            agent._collect_rollout = agent._collect_rollout_reference
        buffers = []
        for _ in range(3):
            agent.learn(agent.settings.rollout_size, reset_num_timesteps=False)
            fields = ("buf_obs", "buf_actions", "buf_rewards", "buf_terminated", "buf_dones", "buf_starts")
            buffers.append([getattr(agent, f).clone() for f in (*fields, "buf_max_q", "buf_final_max_q")])
        agents.append((agent, buffers))
    (fast, fast_buffers), (plain, plain_buffers) = agents
    for got, want in zip(fast_buffers, plain_buffers, strict=True):
        for a, b in zip(got, want, strict=True):
            torch.testing.assert_close(a, b, rtol=0, atol=0)
    for a, b in zip(fast.q_net.state_dict().values(), plain.q_net.state_dict().values(), strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    assert fast.episode_log == plain.episode_log


def test_per_copy_epsilons_are_log_spaced_between_the_two_ends() -> None:
    settings = PQNSettings(epsilon_end=0.01, epsilon_end_max=0.64, exploration_fraction=0.5)
    assert PQNSettings().copy_exploration_rates(0.9, 4) is None  # the default: one schedule
    ends = settings.copy_exploration_rates(0.9, 4)
    np.testing.assert_allclose(ends, [0.01, 0.04, 0.16, 0.64])
    # During the fall each copy is on its own line from epsilon_start to its end.
    np.testing.assert_allclose(settings.copy_exploration_rates(0.25, 4), (1.0 + ends) / 2)
    assert settings.copy_exploration_rates(0.9, 1).tolist() == [0.01]
    with pytest.raises(ValueError, match="epsilon_end_max"):
        PQNSettings(epsilon_end=0.1, epsilon_end_max=0.05)


def test_each_copy_explores_at_its_own_rate() -> None:
    """With Q always preferring action 0, a copy takes action 1 only when it explores, half
    the time: about epsilon_i / 2 of its steps."""
    agent = PQN(
        counter_vec_env(4),
        None,
        n_steps=2000,
        num_minibatches=1,
        epsilon_end=0.0,
        epsilon_end_max=0.8,
        exploration_fraction=0.0,
        seed=3,
        **SMALL,
    )
    agent.q_net.forward = lambda x, state, starts: (
        torch.stack([torch.ones(x.shape[:-1]), torch.zeros(x.shape[:-1])], -1),
        state,
    )
    agent._start_episodes()
    agent._copy_rates = agent.settings.copy_exploration_rates(1.0, 4)
    agent._collect_rollout()
    share = agent.buf_actions.float().mean(0).numpy()  # [B] share of action 1
    assert share[0] == 0.0  # epsilon 0: always greedy
    np.testing.assert_allclose(share[1:], agent._copy_rates[1:] / 2, atol=0.04)
