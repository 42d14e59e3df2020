"""Unit tests of DQN's sequence replay, targets and public surface (no learning here;
see ``tests/test_dqn_learning.py``; SB3 parity in ``tests/test_dqn_sb3_parity.py``)."""

from __future__ import annotations

import numpy as np
import optuna
import pytest
import torch
from counter_env import counter_vec_env

from pomdp_bench.agents.common.networks import observation_features
from pomdp_bench.agents.dqn import DQNSettings
from pomdp_bench.agents.dqn.agent import DQN, n_step_returns
from pomdp_bench.agents.registry import get_agent

# Verdicts here depend on torch's floating-point path: scripts/kernel_settings.sh reruns them
# under other CPU kernel settings.
pytestmark = pytest.mark.trajectory

SMALL = dict(net_arch={"encoder": [16], "q": [16]}, device="cpu")
GRU = {"kind": "gru", "hidden_size": 8}


def filled_agent(memory=GRU, steps=240, **kw) -> DQN:
    """An agent whose buffer holds ``steps`` env steps of CounterEnv (no updates yet)."""
    defaults = {"burn_in": 3, "sequence_length": 5, "learning_starts": 10_000, "batch_size": 16, "seed": 3}
    agent = DQN(counter_vec_env(), memory, **{**defaults, **SMALL, **kw})
    agent.learn(steps)
    assert agent.n_updates == 0
    return agent


# ----------------------------------------------------------------------------------
# Construction
# ----------------------------------------------------------------------------------
def test_a_box_action_space_is_refused_naming_ppo_and_sac() -> None:
    with pytest.raises(ValueError, match=r"DQN takes Discrete actions only.*use PPO.*or SAC"):
        DQN("Pendulum-v1", None, device="cpu")


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(burn_in=4, sequence_length=4), r"burn_in=4 must be shorter than sequence_length=4"),
        (dict(exploration_final_eps=1.2), r"exploration_final_eps must be <= 1.0, got 1.2"),
        (dict(exploration_fraction=-0.5), r"exploration_fraction must be >= 0.0"),
        (dict(buffer_size=40, batch_size=8, burn_in=0, sequence_length=5), r"buffer_size >= 48"),
        (dict(learning_starts=20, n_envs=2), r"learning_starts >= 52"),
        (dict(align_to_episodes=True, burn_in=2), r"Use burn_in=0"),
        (dict(gradient_steps=0), r"gradient_steps must be >= 1, or -1"),
        (dict(tau=0.0), r"tau must be > 0"),
    ],
)
def test_construction_refusals(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        DQN(counter_vec_env(kwargs.pop("n_envs", 1)), None, **{"learning_starts": 1000, **kwargs}, **SMALL)


def test_dqn_is_registered_with_a_search_space_that_gives_valid_settings() -> None:
    entry = get_agent("dqn")
    assert entry.load_class() is DQN and entry.load_settings_class() is DQNSettings
    assert entry.settings({}, sequence_length=12).sequence_length == 12
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    for _ in range(20):
        hp, hidden = entry.load_search_space()(study.ask(), 10)
        DQNSettings.make(**hp).resolve(hp["n_envs"])
        assert hidden in (32, 64, 128)


def test_epsilon_falls_linearly_then_stays() -> None:
    s = DQNSettings(exploration_initial_eps=1.0, exploration_final_eps=0.1, exploration_fraction=0.2)
    assert [s.exploration_rate(p) for p in (0.0, 0.1, 0.2, 0.7)] == pytest.approx([1.0, 0.55, 0.1, 0.1])
    agent = DQN(counter_vec_env(1), None, learning_starts=100, **SMALL, exploration_fraction=0.5)
    agent.learn(200, log_interval=50)
    rates = [h["exploration_rate"] for h in agent.history]
    assert rates == pytest.approx([1 - 0.95 * 0.5, 1 - 0.95, 0.05, 0.05])


# ----------------------------------------------------------------------------------
# Targets
# ----------------------------------------------------------------------------------
def test_n_step_returns_stop_at_terminations_and_bootstrap_at_truncations() -> None:
    """One column, rows 0..5: a termination after row 1, a final row (truncation) at row 4."""
    g = 0.5
    rewards = torch.tensor([1.0, 2.0, 4.0, 8.0, 0.0, 16.0]).unsqueeze(1)
    terminated = torch.tensor([0, 1, 0, 0, 0, 0], dtype=torch.bool).unsqueeze(1)
    final = torch.tensor([0, 0, 0, 0, 1, 0], dtype=torch.bool).unsqueeze(1)
    ret, row, disc = n_step_returns(rewards, terminated, final, g, n=3, length=3)
    # row 0: r0 + g r1, terminated: no bootstrap; row 1: r1 only; row 2: r2 + g r3, then
    # the final row 4 is the bootstrap, two steps on.
    torch.testing.assert_close(ret[:, 0], torch.tensor([1 + g * 2, 2.0, 4 + g * 8]))
    torch.testing.assert_close(disc[:, 0], torch.tensor([0.0, 0.0, g**2]))
    assert row[2, 0] == 4
    ret1, row1, disc1 = n_step_returns(rewards, terminated, final, g, n=1, length=5)
    torch.testing.assert_close(ret1[:, 0], rewards[:5, 0])  # one step: the reward itself
    assert row1[:, 0].tolist() == [1, 2, 3, 4, 5]
    torch.testing.assert_close(disc1[:, 0], torch.tensor([g, 0.0, g, g, g]))
    # Without an episode end inside, n rows on with gamma^n.
    none = torch.zeros(7, 1, dtype=torch.bool)
    r, rw, d = n_step_returns(torch.ones(7, 1), none, none, g, n=3, length=4)
    torch.testing.assert_close(r[:, 0], torch.full((4,), 1 + g + g * g))
    assert rw[:, 0].tolist() == [3, 4, 5, 6] and torch.allclose(d, torch.full((4, 1), g**3))


def test_truncation_bootstraps_on_the_final_row_in_the_update() -> None:
    """The update's TD targets on CounterEnv (reward = step count), read through a target
    network replaced by ``Q(next) = [t, t]`` and a probe for the online Q values."""
    agent = filled_agent(None, burn_in=0, sequence_length=1, net_arch=[8], loss="mse")
    batch = agent.buffer.sample(256, agent._sample_generator)
    assert bool((batch.final[1] & ~batch.final[0]).any()) and bool(batch.terminated[0].any())
    agent.q_target.forward = lambda x, state, starts: (x[..., 1:2].expand(*x.shape[:-1], 2), state)
    probe = torch.zeros(1, 256, 2, requires_grad=True)
    agent.q_net.forward = lambda x, state, starts: (probe, state)
    agent._gradient_step(batch)
    keep = ~batch.final[0]
    weight = 1.0 / keep.sum()  # d(w (q - y)^2)/dq at q = 0 is -2 w y
    grad = probe.grad[0].gather(-1, batch.actions[0].unsqueeze(-1)).squeeze(-1)
    target = -grad[keep] / (2 * weight)
    t, r = batch.obs[0, :, 1][keep], batch.rewards[0][keep]
    term, cut = batch.terminated[0][keep], batch.final[1][keep]
    gamma = agent.settings.gamma
    torch.testing.assert_close(target[term], r[term])
    torch.testing.assert_close(target[cut], r[cut] + gamma * 7.0)  # the final obs: t = 7
    rest = ~term & ~cut
    torch.testing.assert_close(target[rest], r[rest] + gamma * (t[rest] + 1))


# ----------------------------------------------------------------------------------
# Sequence replay
# ----------------------------------------------------------------------------------
def test_burn_in_steps_carry_no_gradient() -> None:
    """The burn-in rows of a sequence get no gradient from the loss; the learned rows do."""
    agent = filled_agent(GRU, burn_in=4, sequence_length=5)
    batch = agent.buffer.sample(32, agent._sample_generator)
    obs = batch.obs.clone().requires_grad_(True)
    agent.q_net.train(True)
    agent._gradient_step(batch._replace(obs=obs))
    b, L = agent.settings.burn_in, agent.settings.sequence_length
    assert obs.grad is not None
    assert bool((obs.grad[:b] == 0).all())
    assert bool((obs.grad[b : b + L].abs().sum((1, 2)) > 0).all())  # every learned row
    assert bool((obs.grad[b + L :] == 0).all())  # the bootstrap row: the target network's
    grads = [p.grad for p in agent.q_net.trunk.memory.parameters()]
    assert all(g is not None and bool(g.abs().sum() > 0) for g in grads)


def test_aligned_sequences_are_whole_episodes() -> None:
    """With align_to_episodes every sequence begins at an episode start; with a
    sequence_length of the longest episode (7 steps and a final row) it holds it whole."""
    agent = filled_agent(GRU, burn_in=0, sequence_length=8, align_to_episodes=True)
    batch = agent.buffer.sample(128, agent._sample_generator)
    assert bool(batch.episode_starts[0].all())
    assert bool((batch.obs[0, :, 1] == 0).all())
    episode = batch.obs[..., 0]
    # Every row of the first episode is in the sequence: the next episode starts inside it.
    assert bool((episode != episode[0]).any(0).all())
    starts = agent.buffer.episode_starts.numpy()  # nothing overwritten: row r is step r
    expected = sum(int(starts[: int(agent.buffer.size[c]) - 9 + 1, c].sum()) for c in range(3))
    assert agent.buffer.num_windows() == expected


@pytest.mark.parametrize("kind", ["gru", "lstm"])
def test_stored_state_equals_the_recomputed_memory_and_goes_stale_with_updates(kind: str) -> None:
    """Right after storing, the stored start state equals the Q network's memory replayed
    from the episode's start (atol 1e-5); after 200 gradient steps the state replayed with
    the new weights differs from the stored one (R2D2's staleness)."""
    memory = {"kind": kind, "hidden_size": 8}
    agent = filled_agent(memory, burn_in=0, sequence_length=5, stored_state=True, steps=150)
    buf = agent.buffer

    def replayed_gap() -> float:
        """Largest gap between each copy's stored states and the memory replayed through
        its trajectory with the current weights."""
        gap = 0.0
        for c in range(buf.n_envs):
            state = agent.q_net.initial_state(1)
            with torch.no_grad():
                for r in range(int(buf.size[c])):
                    if not bool(buf.episode_starts[r, c]):
                        for got, want in zip((s[r, c][None] for s in buf.states), state, strict=True):
                            gap = max(gap, float((got - want).abs().max()))
                    x = observation_features(buf.obs[r, c][None, None], agent.observation_space)
                    _, state = agent.q_net(x, state, buf.episode_starts[r, c].view(1, 1))
        return gap

    assert replayed_gap() < 1e-5
    agent.settings = DQNSettings.make(agent.settings, learning_rate=1e-3)
    for group in agent.optimizer.param_groups:
        group["lr"] = 1e-3
    agent._train(200, 1.0)
    assert replayed_gap() > 1e-3


# ----------------------------------------------------------------------------------
# Training, acting, persistence
# ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"double_q": True, "n_steps": 3, "loss": "mse", "max_grad_norm": None},
        {"stored_state": True, "tau": 0.005, "target_update_interval": 1},
        {"burn_in": 0, "align_to_episodes": True, "sequence_length": 8},
    ],
)
def test_updates_run_and_are_finite(changes: dict) -> None:
    base = dict(
        burn_in=2, sequence_length=4, learning_starts=40, batch_size=4, train_freq=2, gradient_steps=3
    )
    agent = DQN(counter_vec_env(2), GRU, seed=1, **{**base, **SMALL, **changes})
    agent.learn(80, log_interval=40)
    assert agent.n_updates == 3 * ((80 - 40) // 4)
    assert np.isfinite(agent.history[-1]["loss"])


def test_same_seed_same_learning_curve_and_predict_between_learn_calls_changes_nothing() -> None:
    def run(predict_between: bool) -> DQN:
        agent = DQN(
            "TMaze-v1", GRU, env_kwargs={"corridor_length": 3}, n_envs=2, burn_in=1, sequence_length=3,
            learning_starts=20, batch_size=4, seed=7, **SMALL,
        )  # fmt: skip
        agent.learn(60, log_interval=30)
        if predict_between:
            for _ in range(5):
                agent.predict(np.eye(2, dtype=np.float32), deterministic=False)
        agent.learn(60, log_interval=30)
        return agent

    a, b = run(False), run(True)
    for p, q in zip(a.q_net.parameters(), b.q_net.parameters(), strict=True):
        assert torch.equal(p, q)
    strip = [{k: v for k, v in h.items() if k != "steps_per_second"} for h in a.history]
    assert strip == [{k: v for k, v in h.items() if k != "steps_per_second"} for h in b.history]


def test_predict_is_epsilon_greedy_and_evaluate_greedy(tmp_path) -> None:
    agent = DQN("TMaze-v1", GRU, env_kwargs={"corridor_length": 3}, learning_starts=30, **SMALL)
    obs = np.zeros((400, 2), np.float32)
    agent.exploration_rate = 1.0
    random, _ = agent.predict(obs)
    assert set(random.tolist()) == {0, 1, 2, 3}
    greedy, _ = agent.predict(obs, deterministic=True)
    assert len(set(greedy.tolist())) == 1
    agent.exploration_rate = 0.0
    np.testing.assert_array_equal(agent.predict(obs)[0], greedy)
    path = agent.save(tmp_path / "dqn")
    loaded = DQN.load(path)
    assert loaded.exploration_rate == 0.0
    np.testing.assert_array_equal(loaded.evaluate(4), agent.evaluate(4))


def test_nan_is_reported_naming_the_update() -> None:
    agent = filled_agent(None)
    with torch.no_grad():
        agent.q_net.q[-1].bias.fill_(float("nan"))
    with pytest.raises(FloatingPointError, match="the TD loss is nan"):
        agent._gradient_step(agent.buffer.sample(4, agent._sample_generator))
