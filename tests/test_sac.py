"""Unit tests of SAC's sequence replay, networks and public surface (no learning here;
see ``tests/test_sac_learning.py``)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, SyncVectorEnv

from pomdp_bench.agents.common.networks import observation_features
from pomdp_bench.agents.sac import SAC
from pomdp_bench.agents.sac.networks import action_features

# Verdicts here depend on torch's floating-point path: scripts/kernel_settings.sh reruns them
# under other CPU kernel settings.
pytestmark = pytest.mark.trajectory


SMALL = dict(net_arch={"encoder": [16], "pi": [16], "qf": [16]}, device="cpu")
SMALL_MEMORY = {
    "gru": {"kind": "gru", "hidden_size": 8},
    "lstm": {"kind": "lstm", "hidden_size": 8},
    "transformer": {"kind": "transformer", "hidden_size": 8, "num_heads": 2, "window": 6},
    "mamba": {"kind": "mamba", "hidden_size": 8, "d_state": 4},
    "framestack": {"kind": "framestack", "window": 3},
}


class CounterEnv(gym.Env):
    """Observation ``[episode index, step in episode]``; episodes end at random, by
    termination (probability 0.15 a step) or by truncation at 7 steps, so replayed
    windows cross both kinds of episode end. Each copy gets its own seed stream."""

    metadata: dict = {}

    def __init__(self, truncate_at: int = 7) -> None:
        self.observation_space = spaces.Box(0.0, 1e6, (2,), np.float32)
        self.action_space = spaces.Box(-2.0, 3.0, (1,), np.float32)
        self.truncate_at = truncate_at
        self.episode = -1

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.episode += 1
        self.t = 0
        return self._obs(), {}

    def _obs(self) -> np.ndarray:
        return np.array([self.episode, self.t], dtype=np.float32)

    def step(self, action):
        if not self.action_space.contains(np.asarray(action, dtype=np.float32)):
            raise ValueError(f"action {action} out of {self.action_space}")
        self.t += 1
        terminated = bool(self.np_random.random() < 0.15)
        truncated = not terminated and self.t >= self.truncate_at
        return self._obs(), float(self.t), terminated, truncated, {}


def counter_vec_env(n: int = 3) -> SyncVectorEnv:
    return SyncVectorEnv([CounterEnv for _ in range(n)], autoreset_mode=AutoresetMode.SAME_STEP)


def filled_agent(memory="gru", stored_state=False, burn_in=3, sequence_length=5, steps=240, **kw) -> SAC:
    """An agent whose buffer holds ``steps`` env steps of CounterEnv (no updates yet)."""
    agent = SAC(
        counter_vec_env(),
        SMALL_MEMORY.get(memory, memory),
        burn_in=burn_in,
        sequence_length=sequence_length,
        stored_state=stored_state,
        learning_starts=10_000,
        batch_size=16,
        seed=3,
        **{**SMALL, **kw},
    )
    agent.learn(steps)
    assert agent.n_updates == 0
    return agent


# ----------------------------------------------------------------------------------
# Construction refusals
# ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(learning_starts=75, n_envs=3), r"learning_starts // n_envs must exceed 25.*>= 78"),
        (dict(learning_starts=19, n_envs=1, burn_in=10, sequence_length=8), r"must exceed 19.*>= 20"),
        (dict(stored_state=True), r"stored_state=True needs a memory"),
        (dict(sequence_length=0), r"sequence_length must be >= 1"),
        (dict(burn_in=-1), r"burn_in must be >= 0"),
        (dict(gradient_steps=0), r"gradient_steps must be >= 1, or -1"),
        (dict(ent_coef="auto_-1"), r"ent_coef='auto_-1' is not valid"),
        (dict(buffer_size=60, n_envs=3), r"raise buffer_size to at least 25 \* n_envs = 75"),
        (dict(net_arch={"value": [3]}), r"net_arch has unknown keys \['value'\]"),
        (dict(tau=0.0), r"tau must be > 0"),
    ],
)
def test_construction_refusals(kwargs: dict, match: str) -> None:
    kwargs = {"learning_starts": 1000, "n_envs": 1, **kwargs}
    with pytest.raises(ValueError, match=match):
        SAC("Pendulum-v1", None, device="cpu", **kwargs)


def test_learning_starts_at_the_limit_is_accepted() -> None:
    SAC("Pendulum-v1", None, learning_starts=78, n_envs=3, device="cpu")  # 78 // 3 = 26 > 25


def test_unsupported_action_space_is_refused() -> None:
    env = SyncVectorEnv([lambda: gym.make("Pendulum-v1")], autoreset_mode=AutoresetMode.SAME_STEP)
    env.single_action_space = spaces.MultiDiscrete([2, 3])
    with pytest.raises(
        TypeError,
        match=r"not supported by SAC: use one of Discrete, Box \(1-d, bounded\).*PPO takes MultiDiscrete",
    ):
        SAC(env, None, device="cpu")


def test_next_step_vector_env_is_refused() -> None:
    env = gym.make_vec("Pendulum-v1", num_envs=2, vectorization_mode="sync")
    with pytest.raises(ValueError, match="SAME_STEP"):
        SAC(env, None, device="cpu")


# ----------------------------------------------------------------------------------
# Sequence replay
# ----------------------------------------------------------------------------------
@pytest.mark.parametrize("buffer_size", [1_000_000, 90])
def test_windows_follow_episodes_and_truncations(buffer_size: int) -> None:
    """Every sampled window is a run of consecutive steps of one copy, also once the
    rings have wrapped around (``buffer_size=90``: 30 rows per copy): episode starts
    exactly where the episode changes, a final row (the final observation) after every
    truncation and only there, and previous actions zero exactly at starts."""
    agent = filled_agent(buffer_size=buffer_size)
    assert (agent.buffer.size == agent.buffer.capacity).all() == (buffer_size == 90)
    batch = agent.buffer.sample(512, agent._sample_generator)
    episode, t = batch.obs[..., 0], batch.obs[..., 1]  # [W, B]
    same_episode = episode[1:] == episode[:-1]
    # Starts: exactly where the episode index changes (to the next one), and there t = 0.
    assert torch.equal(batch.episode_starts[1:], ~same_episode)
    assert bool((episode[1:][~same_episode] == episode[:-1][~same_episode] + 1).all())
    assert bool((t[batch.episode_starts] == 0).all())
    # Inside an episode the steps count up by one.
    assert bool((t[1:][same_episode] == t[:-1][same_episode] + 1).all())
    # A final row follows a truncated step (t reached 7, not terminated) and holds the
    # final observation; a terminated step is followed by the next episode's start.
    ended = ~same_episode | batch.final[1:]
    assert bool((batch.final[1:] == (~batch.terminated[:-1] & (t[:-1] == 6) & ~batch.final[:-1])).all())
    assert bool((t[batch.final] == 7).all())
    assert bool(batch.episode_starts[1:][batch.terminated[:-1]].all())
    assert bool(ended[batch.terminated[:-1]].all())
    assert batch.final.any() and batch.terminated.any() and batch.episode_starts[1:].any()
    # Previous actions: zero at a start, else the previous row's action.
    prev = batch.prev_actions
    assert bool((prev[batch.episode_starts] == 0).all())
    follows = ~batch.episode_starts[1:]
    assert torch.equal(prev[1:][follows], action_features(batch.actions[:-1], agent.action_space)[follows])
    # Rewards as the env gave them (the step count), zero on final rows.
    assert bool((batch.rewards[~batch.final & ~batch.final.roll(-1, 0)] >= 1).all())
    assert bool((batch.rewards[batch.final] == 0).all())


@pytest.mark.parametrize("kind", ["gru", "lstm", "transformer", "mamba", "framestack"])
def test_sampled_sequences_never_carry_memory_across_an_episode_start(kind: str) -> None:
    """Perturb every input before the first episode start inside a window: the
    outputs the update uses (actor and critic after their burn-in, target critic over
    the whole window) must not change from that start on."""
    agent = filled_agent(kind)
    batch = agent.buffer.sample(64, agent._sample_generator)
    columns = torch.nonzero(batch.episode_starts[1:].any(0)).squeeze(1)
    assert columns.numel() > 0
    starts = batch.episode_starts[:, columns]  # [W, C]
    first = 1 + starts[1:].float().argmax(0)  # [C] the first start after row 0
    before = torch.arange(starts.shape[0])[:, None] < first[None, :]  # [W, C]
    b = agent.settings.burn_in

    def outputs(obs: torch.Tensor, prev_actions: torch.Tensor) -> list[torch.Tensor]:
        """The update's forward passes: burn-in from zero, then the rest of the window."""
        x = observation_features(obs, agent.observation_space)
        latent_pi, _ = agent.actor(x[b:], agent._warm_up(agent.actor, x, starts), starts[b:])
        cx = agent.critic.inputs(x, prev_actions)
        latent_q, _ = agent.critic(cx[b:], agent._warm_up(agent.critic, cx, starts), starts[b:])
        target, _ = agent.critic_target(cx, agent.critic_target.initial_state(len(columns)), starts)
        return [latent_pi, latent_q, target[b:]]  # rows [b, W)

    obs, prev = batch.obs[:, columns], batch.prev_actions[:, columns]
    g = torch.Generator().manual_seed(0)
    mask = before[..., None]
    with torch.no_grad():
        reference = outputs(obs, prev)
        perturbed = outputs(
            torch.where(mask, obs + 5 * torch.randn(obs.shape, generator=g), obs),
            torch.where(mask, prev + torch.randn(prev.shape, generator=g), prev),
        )
    after, changed = ~before[b:], before[b:]
    for ref, new in zip(reference, perturbed, strict=True):
        torch.testing.assert_close(new[after], ref[after], atol=1e-5, rtol=1e-5)
    if changed.any():  # the perturbation is not a no-op where memory may carry it
        assert not torch.allclose(perturbed[2][changed], reference[2][changed])


def test_burn_in_steps_carry_no_gradient() -> None:
    """The burn-in rows of a window get no gradient from any loss; the learned rows do."""
    agent = filled_agent("gru", burn_in=4, sequence_length=5)
    batch = agent.buffer.sample(32, agent._sample_generator)
    obs = batch.obs.clone().requires_grad_(True)
    prev = batch.prev_actions.clone().requires_grad_(True)
    agent.actor.train(True)
    agent.critic.train(True)
    agent._gradient_step(batch._replace(obs=obs, prev_actions=prev))
    b, L = agent.settings.burn_in, agent.settings.sequence_length
    assert obs.grad is not None and prev.grad is not None
    assert bool((obs.grad[:b] == 0).all()) and bool((prev.grad[:b] == 0).all())
    assert bool((obs.grad[b : b + L].abs().sum((1, 2)) > 0).all())  # every learned row
    assert bool((prev.grad[b : b + L].abs().sum((1, 2)) > 0).all())
    # The memories' parameters did get gradients, through the learned rows.
    for net in (agent.actor, agent.critic):
        grads = [p.grad for p in net.trunk.memory.parameters()]
        assert all(g is not None and bool(g.abs().sum() > 0) for g in grads)


@pytest.mark.parametrize("kind", ["gru", "lstm", "transformer", "mamba"])
def test_stored_state_equals_the_actor_memory_while_acting(kind: str) -> None:
    """With stored_state, the state stored at each step is the actor memory it acted
    from: replaying each copy's trajectory one step at a time from zero reproduces
    it, and a sampled window's start state is the stored one at row burn_in."""
    agent = filled_agent(kind, stored_state=True, steps=120)
    buf = agent.buffer
    assert buf.states is not None
    for copy in range(buf.n_envs):
        size = int(buf.size[copy])
        rows = (int(buf.pos[copy]) - size + np.arange(size)) % buf.capacity
        assert int(buf.pos[copy]) == size  # nothing overwritten: row 0 is the first step
        state = agent.actor.initial_state(1)
        with torch.no_grad():
            for r in rows:
                stored = tuple(s[r, copy][None] for s in buf.states)
                if not bool(buf.episode_starts[r, copy]):  # at a start it is reset anyway
                    for got, want in zip(stored, state, strict=True):
                        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
                x = observation_features(buf.obs[r, copy][None, None], agent.observation_space)
                _, state = agent.actor(x, state, buf.episode_starts[r, copy].view(1, 1))
    # The sampled start state is the stored state at row burn_in of the window.
    g = torch.Generator().manual_seed(5)
    batch = buf.sample(8, g)
    g = torch.Generator().manual_seed(5)
    draw = torch.randint(buf.num_windows(), (8,), generator=g).numpy()
    avail = np.maximum(buf.size - buf.window + 1, 0)
    ends = np.cumsum(avail)
    copy = np.searchsorted(ends, draw, side="right")
    row = (buf.pos[copy] - buf.size[copy] + draw - (ends - avail)[copy] + buf.burn_in) % buf.capacity
    for got, store in zip(batch.actor_state, buf.states, strict=True):
        torch.testing.assert_close(got, store[torch.as_tensor(row), torch.as_tensor(copy)])
        assert got.shape[0] == 8


def test_stored_state_run_matches_acting_outputs() -> None:
    """The actor started from the stored state reproduces, on the learned rows, the
    latent it computed while acting (replayed here step by step)."""
    agent = filled_agent("gru", stored_state=True, burn_in=2, sequence_length=6, steps=150)
    batch = agent.buffer.sample(16, agent._sample_generator)
    x = observation_features(batch.obs, agent.observation_space)
    b = agent.settings.burn_in
    with torch.no_grad():
        whole, _ = agent.actor(x[b:], batch.actor_state, batch.episode_starts[b:])
        state = batch.actor_state
        for t in range(b, x.shape[0]):
            step, state = agent.actor(x[t : t + 1], state, batch.episode_starts[t : t + 1])
            torch.testing.assert_close(step[0], whole[t - b], atol=1e-5, rtol=1e-5)


# ----------------------------------------------------------------------------------
# Networks and actions
# ----------------------------------------------------------------------------------
def test_critic_reads_previous_action_and_scores_action_at_the_head() -> None:
    agent = SAC("MaskedPendulum-v0", "gru", learning_starts=1000, **SMALL)
    critic = agent.critic
    assert critic.reads_prev_action
    assert critic.trunk.encoder[0].in_features == 2 + 1  # [cos, sin] + previous torque
    # Scoring another action does not change the memory's output.
    x = torch.randn(5, 3, 3)
    starts = torch.zeros(5, 3, dtype=torch.bool)
    latent, _ = critic(x, critic.initial_state(3), starts)
    q1 = critic.q_values(latent, torch.full((5, 3, 1), -1.0))
    q2 = critic.q_values(latent, torch.full((5, 3, 1), 1.0))
    assert q1.shape == (2, 5, 3) and not torch.allclose(q1, q2)
    none = SAC("MaskedPendulum-v0", None, learning_starts=1000, **SMALL).critic
    assert not none.reads_prev_action  # SB3's Q(s, a)


def test_actor_and_critic_memories_are_separate() -> None:
    agent = SAC("MaskedPendulum-v0", "gru", learning_starts=1000, **SMALL)
    actor_params = {id(p) for p in agent.actor.parameters()}
    assert not actor_params & {id(p) for p in agent.critic.parameters()}
    assert not {id(p) for p in agent.critic.parameters()} & {id(p) for p in agent.critic_target.parameters()}


def test_box_actions_scale_into_the_bounds_exactly() -> None:
    agent = SAC(counter_vec_env(1), None, learning_starts=1000, **SMALL)  # bounds [-2, 3]
    out = agent._to_env_action(
        np.array([[-1.0], [1.0], [0.0], [1.0 + 1e-7], [-1.0 - 1e-7]], dtype=np.float32)
    )
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out[:, 0], np.array([-2.0, 3.0, 0.5, 3.0, -2.0], dtype=np.float32))
    obs = np.zeros((4, 2), np.float32)
    action, _ = agent.predict(obs)
    assert action.shape == (4, 1) and bool(((action >= -2) & (action <= 3)).all())


def test_squashed_gaussian_log_prob_matches_torch_distributions() -> None:
    agent = SAC("Pendulum-v1", None, learning_starts=1000, **SMALL)
    # Its own generator (the global one depends on test order) and small latents: near
    # |a| = 1 the atanh below loses the precision the comparison needs.
    latent = 0.3 * torch.randn(7, 16, generator=torch.Generator().manual_seed(1))
    g = torch.Generator().manual_seed(0)
    action, log_prob = agent.actor.policy(latent, g)
    assert bool((action.abs() < 0.99).all()), action
    mean = agent.actor.mu(latent)
    std = agent.actor.log_std(latent).clamp(-20, 2).exp()
    u = torch.atanh(action.clamp(-1 + 1e-6, 1 - 1e-6))
    expected = torch.distributions.Normal(mean, std).log_prob(u).sum(-1) - torch.log(
        1 - action.pow(2) + 1e-6
    ).sum(-1)
    torch.testing.assert_close(log_prob, expected, atol=1e-3, rtol=1e-4)


def test_discrete_policy_and_q_values() -> None:
    agent = SAC("CueRecall-v0", "gru", env_kwargs={"delay": 2}, learning_starts=1000, **SMALL)
    latent = torch.randn(3, 2, 16)
    probs, log_probs = agent.actor.policy(latent)
    assert probs.shape == (3, 2, 4)
    torch.testing.assert_close(probs.sum(-1), torch.ones(3, 2))
    torch.testing.assert_close(log_probs.exp(), probs)
    q = agent.critic.q_values(torch.randn(3, 2, agent.critic.trunk.output_size))
    assert q.shape == (2, 3, 2, 4)
    assert agent.target_entropy == pytest.approx(0.5 * np.log(4))


# ----------------------------------------------------------------------------------
# Updates, errors, persistence, determinism
# ----------------------------------------------------------------------------------
@pytest.mark.parametrize("env_id", ["MaskedPendulum-v0", "CueRecall-v0"])
@pytest.mark.parametrize("kind", [None, "gru", "transformer", "mamba", "framestack", "lstm"])
def test_updates_run_for_every_memory_kind(env_id: str, kind: str | None) -> None:
    agent = SAC(
        env_id, SMALL_MEMORY.get(kind, kind), n_envs=2, burn_in=2, sequence_length=4, learning_starts=20,
        batch_size=4, buffer_size=400, **SMALL,
    )  # fmt: skip
    agent.learn(40, log_interval=20)
    assert agent.n_updates == 10
    assert [h["timesteps"] for h in agent.history] == [20, 40]
    assert np.isfinite(agent.history[-1]["critic_loss"])


def test_nan_is_reported_naming_the_update() -> None:
    agent = filled_agent(None)
    with torch.no_grad():
        agent.critic.q_heads[0][-1].bias.fill_(float("nan"))
    with pytest.raises(FloatingPointError, match="the critic loss is nan"):
        agent._gradient_step(agent.buffer.sample(4, agent._sample_generator))


def test_same_seed_same_learning_curve() -> None:
    def run() -> list[dict]:
        agent = SAC("MaskedPendulum-v0", "gru", n_envs=2, learning_starts=60, batch_size=4, seed=7, **SMALL)
        agent.learn(100, log_interval=50)
        return agent.history

    a, b = run(), run()
    for x, y in zip(a, b, strict=True):
        x.pop("steps_per_second"), y.pop("steps_per_second")
        assert x == y


def test_save_and_load_roundtrip(tmp_path) -> None:
    agent = SAC(
        "CueRecall-v0", "lstm", env_kwargs={"delay": 2}, n_envs=2, learning_starts=60, batch_size=4, **SMALL
    )
    agent.learn(80)
    path = tmp_path / "sac.pt"
    agent.save(path)
    loaded = SAC.load(path)
    assert loaded.num_timesteps == agent.num_timesteps and loaded.n_updates == agent.n_updates
    assert loaded.env_kwargs == {"delay": 2}
    obs = np.eye(6, dtype=np.float32)[:3]
    a1, s1 = agent.predict(obs, deterministic=True)
    a2, s2 = loaded.predict(obs, deterministic=True)
    np.testing.assert_array_equal(a1, a2)
    for x, y in zip(s1, s2, strict=True):
        np.testing.assert_allclose(x, y)
    assert loaded.log_ent_coef.item() == pytest.approx(agent.log_ent_coef.item())


def test_predict_carries_memory_and_evaluate_returns_episodes() -> None:
    agent = SAC("MaskedPendulum-v0", "gru", learning_starts=1000, **SMALL)
    obs = np.array([[1.0, 0.0], [0.0, 1.0]], np.float32)
    a, state = agent.predict(obs, episode_start=np.array([True, True]), deterministic=True)
    assert a.shape == (2, 1) and state[0].shape == (2, 1, 64)
    a_again, _ = agent.predict(obs, state, np.array([True, True]), deterministic=True)
    np.testing.assert_array_equal(a, a_again)  # a start resets the memory
    single, _ = agent.predict(obs[0], deterministic=True)
    assert single.shape == (1,)
    returns = agent.evaluate(3)
    assert returns.shape == (3,) and bool((returns < 0).all())


def test_truncation_bootstraps_on_the_final_row() -> None:
    """The update's TD targets: a truncated step bootstraps on the final observation
    (its final row), a terminated step does not bootstrap, any other step bootstraps
    on the next row. Read from the update itself: the target critic is replaced by
    ``Q(next) = t of the next row``, and the online Q values by a probe whose
    gradient in the critic loss is ``weight * (q - target)``."""
    agent = filled_agent(None, burn_in=0, sequence_length=1, ent_coef=0.0, net_arch=[8])
    batch = agent.buffer.sample(256, agent._sample_generator)
    assert bool((batch.final[1] & ~batch.final[0]).any()) and bool(batch.terminated[0].any())
    agent.critic_target.q_values = lambda latent, actions=None: latent[..., 1].expand(2, *latent.shape[:-1])
    probe = torch.zeros(2, 1, 256, requires_grad=True)
    calls = []

    def online_q(latent, actions=None):
        calls.append(1)
        return probe if len(calls) == 1 else torch.zeros(2, *latent.shape[:-1])

    agent.critic.q_values = online_q
    agent._gradient_step(batch)
    weight = (~batch.final[0]).float() / (~batch.final[0]).sum()
    keep = weight > 0
    target = -probe.grad[0, 0][keep] / weight[keep]  # d(0.5 w (q - y)^2)/dq at q = 0
    t, r = batch.obs[0, :, 1][keep], batch.rewards[0][keep]
    t_next = batch.obs[1, :, 1][keep]
    term, cut = batch.terminated[0][keep], batch.final[1][keep]
    torch.testing.assert_close(target[term], r[term])
    torch.testing.assert_close(target[cut], r[cut] + agent.settings.gamma * 7.0)  # the final obs: t = 7
    assert bool((t_next[cut] == 7).all()) and bool((t[cut] == 6).all())
    rest = ~term & ~cut
    torch.testing.assert_close(target[rest], r[rest] + agent.settings.gamma * (t[rest] + 1))


@pytest.mark.parametrize("env_id", ["MaskedPendulum-v0", "CueRecall-v0"])
def test_actor_is_scored_by_the_critic_after_its_step(env_id: str) -> None:
    """The actor loss reads the critic's trunk and memory as they are after the critic's
    optimizer step (SB3 and Ni et al. recompute them), not the pre-step latent."""
    agent = SAC(
        env_id, "gru", n_envs=2, burn_in=2, sequence_length=4, learning_starts=10_000, batch_size=8,
        seed=5, **SMALL,
    )  # fmt: skip
    agent.learn(200)
    batch = agent.buffer.sample(8, agent._sample_generator)
    seen = []
    q_values = agent.critic.q_values

    def recording(latent, *args):
        seen.append(latent.detach().clone())
        return q_values(latent, *args)

    agent.critic.q_values = recording
    agent._gradient_step(batch)
    del agent.critic.q_values
    obs = observation_features(batch.obs, agent.observation_space)
    x = agent.critic.inputs(obs, batch.prev_actions)
    learn = slice(agent.settings.burn_in, agent.settings.burn_in + agent.settings.sequence_length)
    with torch.no_grad():
        state = agent._warm_up(agent.critic, x, batch.episode_starts)
        after, _ = agent.critic(x[learn], state, batch.episode_starts[learn])
    assert len(seen) == 2  # the critic loss's, then the actor loss's
    assert not torch.allclose(seen[0], after)  # the critic's step moved its latent ...
    torch.testing.assert_close(seen[1], after)  # ... and the actor was scored with the moved one


def test_predict_between_learn_calls_leaves_training_unchanged() -> None:
    def run(predict_between: bool) -> SAC:
        agent = SAC("CueRecall-v0", "gru", n_envs=2, learning_starts=60, batch_size=4, seed=7, **SMALL)
        agent.learn(80)
        if predict_between:
            obs = np.eye(6, dtype=np.float32)[:2]
            for _ in range(5):
                agent.predict(obs, deterministic=False)
        agent.learn(80)
        return agent

    a, b = run(False), run(True)
    for p, q in zip(a.actor.parameters(), b.actor.parameters(), strict=True):
        assert torch.equal(p, q)
    assert [h["critic_loss"] for h in a.history] == [h["critic_loss"] for h in b.history]
