"""PPO's settings, semantics and reliability (see docs/DESIGN.md, "Semantics that are easy to get wrong")."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium.vector import AutoresetMode
from torch import Tensor

import pomdp_bench  # noqa: F401
from pomdp_bench.agents import PPO
from pomdp_bench.agents.common.pieces import default_bptt_length
from pomdp_bench.agents.ppo.agent import clip_ratio
from pomdp_bench.agents.ppo.networks import (
    ActorCriticState,
    MultiCategoricalHead,
    epsilon_soft_log_probs,
    uniform_kl,
)
from pomdp_bench.envs.make import make_vector_env
from pomdp_bench.memory import MEMORY_KINDS, MemoryConfig

# Verdicts here depend on torch's floating-point path: scripts/kernel_settings.sh reruns them
# under other CPU kernel settings.
pytestmark = pytest.mark.trajectory


torch.set_num_threads(1)

SMALL = dict(n_steps=16, num_minibatches=2, n_epochs=2, net_arch=[16], device="cpu")


def _cartpole(n: int, max_steps: int | None = None) -> gym.vector.VectorEnv:
    """MaskedCartPole copies; with ``max_steps`` a short time limit, so truncations happen."""
    if max_steps is None:
        return make_vector_env("MaskedCartPole-v0", n)
    return gym.make_vec(
        "MaskedCartPole-v0",
        n,
        vectorization_mode="sync",
        vector_kwargs={"autoreset_mode": AutoresetMode.SAME_STEP},
        max_episode_steps=max_steps,
    )


def _gru(**kw) -> PPO:
    return PPO(
        _cartpole(kw.pop("n_envs", 4), kw.pop("max_steps", None)),
        {"kind": "gru", "hidden_size": 8},
        **{**SMALL, **kw},
    )


# -- settings ------------------------------------------------------------------
@pytest.mark.parametrize(
    ("n_envs", "n_steps", "minibatches", "expected"),
    [(4, 2048, 32, 256), (4, 128, 4, 128), (8, 128, 4, 128), (1, 32, 2, 16), (8, 32, 1, 32), (6, 12, 4, 6)],
)
def test_default_bptt_length(n_envs: int, n_steps: int, minibatches: int, expected: int) -> None:
    assert default_bptt_length(n_envs, n_steps, minibatches) == expected


def test_impossible_minibatches_are_refused() -> None:
    with pytest.raises(ValueError, match="8 equal pieces, which do not divide 100"):
        default_bptt_length(4, 100, 32)
    with pytest.raises(ValueError, match="Valid num_minibatches"):
        PPO(_cartpole(4), "gru", n_steps=100, num_minibatches=32, device="cpu")


def test_bptt_length_must_divide_the_default() -> None:
    assert _gru(bptt_length=4).settings.bptt_length == 4
    assert _gru().settings.bptt_length == 16  # n_envs 4 is a multiple of 2 minibatches: whole rollouts
    with pytest.raises(ValueError, match=r"Valid values: \[1, 2, 4, 8, 16\]"):
        _gru(bptt_length=5)
    with pytest.raises(ValueError, match="must divide the default 16"):
        _gru(bptt_length=32)


def test_batch_size_and_env_checks() -> None:
    assert _gru(num_minibatches=None, batch_size=32).settings.num_minibatches == 2
    with pytest.raises(ValueError, match="valid batch sizes"):
        _gru(num_minibatches=None, batch_size=48)
    with pytest.raises(ValueError, match="not both"):
        _gru(batch_size=32)
    next_step = gym.make_vec("MaskedCartPole-v0", 2, vectorization_mode="sync")
    with pytest.raises(ValueError, match="SAME_STEP"):
        PPO(next_step)
    with pytest.raises(ValueError, match="num_envs=4"):
        PPO(_cartpole(4), n_envs=8)
    with pytest.raises(ValueError, match="unknown memory setting"):
        PPO(_cartpole(2), {"kind": "gru", "hiden_size": 3})


def test_an_id_builds_its_env() -> None:
    model = PPO("CueRecall-v0", "gru", env_kwargs={"delay": 3}, n_steps=8, device="cpu")
    assert model.n_envs == 8 and model.env.num_envs == 8
    assert model.env_kwargs == {"delay": 3}


# -- rollouts, resets and pieces -------------------------------------------------
def _replay(model: PPO, trunk: str, t_end: int, state: tuple) -> tuple:
    """Run a trunk over the buffer's steps [0, t_end) from ``state``, one step at a time."""
    policy, buf = model.policy, model.buffer
    net = getattr(policy, trunk)
    with torch.no_grad():
        for t in range(t_end):
            _, state = net(policy.preprocess(buf.obs[t : t + 1]), state, buf.episode_starts[t : t + 1])
    return state


@pytest.mark.parametrize("shared", [False, True])
def test_pieces_start_from_the_collecting_memory(shared: bool) -> None:
    model = _gru(bptt_length=4, max_steps=12, shared_memory=shared)
    model.learn(4 * 16)
    model._collect_rollout()  # starts mid-episode; compared with the weights it collected with
    buf = model.buffer
    first = buf.piece_states[0]
    assert first.actor[0].abs().sum() > 0  # carried over from the first rollout, not zero
    for k in range(1, 4):
        actor = _replay(model, "actor_trunk", 4 * k, first.actor)
        torch.testing.assert_close(buf.piece_states[k].actor, actor, atol=1e-6, rtol=0)
        if not shared:
            critic = _replay(model, "critic_trunk", 4 * k, first.critic)
            torch.testing.assert_close(buf.piece_states[k].critic, critic, atol=1e-6, rtol=0)
    # The memory resets where the previous step ended an episode (terminated or truncated).
    torch.testing.assert_close(buf.episode_starts[1:], buf.dones[:-1])
    assert buf.dones.any() and not torch.equal(buf.dones, buf.terminated)


def test_obs_skip_puts_the_observation_beside_the_memory() -> None:
    """With ``obs_skip`` the heads read ``[memory(x_t), x_t]``: wider heads, and the
    action logits change with the present observation even where the memory's output
    is held fixed."""
    plain, skip = _gru(), _gru(obs_skip=True)
    d = skip.policy.obs_size  # MaskedCartPole: position and angle
    assert skip.policy.actor_trunk.output_size == plain.policy.actor_trunk.output_size + d
    assert skip.policy.pi_net[0].in_features == 8 + d
    trunk = skip.policy.actor_trunk
    x = torch.randn(3, 2, d)
    y, _ = trunk(x, trunk.initial_state(2), torch.zeros(3, 2, dtype=torch.bool))
    torch.testing.assert_close(y[..., 8:], x)  # no encoder: the observation itself
    with torch.no_grad():
        for p in trunk.memory.parameters():
            p.zero_()  # memory output now constant (0)
    y2, _ = trunk(x + 1.0, trunk.initial_state(2), torch.zeros(3, 2, dtype=torch.bool))
    assert not y2[..., :8].any() and torch.equal(y2[..., 8:], x + 1.0)
    skip.learn(64)  # and it trains
    assert skip.settings.obs_skip


@pytest.mark.parametrize("epsilon", [0.0, 0.01, 0.3])
def test_epsilon_soft_keeps_every_action_possible(epsilon: float) -> None:
    """The epsilon-soft head's distribution is ``(1 - e) softmax + e / n``: normalised,
    every action at least ``e / n`` even where the logits are extreme, the same mode,
    and at ``e = 0`` exactly the plain head."""
    logits = torch.tensor([[40.0, -40.0, 0.0, -5.0], [0.0, 0.0, 0.0, 0.0]])
    log_probs = epsilon_soft_log_probs(logits, epsilon)
    probs = log_probs.exp()
    expected = (1 - epsilon) * torch.softmax(logits, -1) + epsilon / 4
    torch.testing.assert_close(probs, expected)
    torch.testing.assert_close(probs.sum(-1), torch.ones(2))
    assert (probs >= epsilon / 4 * (1 - 1e-6)).all() and torch.isfinite(log_probs).all()
    assert torch.equal(log_probs.argmax(-1), logits.argmax(-1))
    if epsilon == 0.0:
        assert torch.equal(log_probs, torch.log_softmax(logits, -1))


def test_epsilon_soft_samples_the_rare_action_and_trains() -> None:
    """A PPO with ``epsilon_soft`` samples an action its logits rule out about
    ``e / n`` of the time, and its entropy is the mixture's."""
    model = PPO("TMaze-v1", "gru", n_envs=2, epsilon_soft=0.2, **SMALL)
    head = model.policy.action_head
    assert head.epsilon_soft == 0.2
    with torch.no_grad():
        head.linear.weight.zero_()
        head.linear.bias.copy_(torch.tensor([50.0, 0.0, 0.0, 0.0]))  # "right" only, unmixed
    logits = head(torch.zeros(20_000, head.linear.in_features))
    actions = head.sample(logits, torch.Generator().manual_seed(0))
    share = torch.bincount(actions, minlength=4).double() / actions.numel()
    torch.testing.assert_close(
        share, torch.tensor([0.85, 0.05, 0.05, 0.05], dtype=torch.float64), atol=0.01, rtol=0
    )
    assert head.entropy(logits[:1]).item() > 0.5  # the plain head's would be ~0
    model.learn(2 * 16)
    assert np.isfinite(model.history[-1]["value_loss"])


def test_epsilon_soft_is_checked() -> None:
    for bad in (-0.1, 1.0, 1.5):
        with pytest.raises(ValueError, match="epsilon_soft"):
            PPO("TMaze-v1", "gru", epsilon_soft=bad, **SMALL)
    with pytest.raises(TypeError, match="epsilon_soft"):
        PPO("TMaze-v1", "gru", epsilon_soft="0.1", **SMALL)
    with pytest.raises(ValueError, match="epsilon_soft needs discrete actions"):
        PPO("MaskedPendulum-v0", "gru", epsilon_soft=0.1, **SMALL)


def test_uniform_kl_is_a_log_barrier() -> None:
    """``KL(U || pi)`` is 0 at the uniform policy, matches the definition, grows without
    bound as an action's probability goes to 0, and pulls that action's logit up with a
    gradient of about ``1/n`` where the entropy's pull has vanished."""
    torch.testing.assert_close(uniform_kl(torch.log_softmax(torch.zeros(3, 4), -1)), torch.zeros(3))
    logits = torch.tensor([[2.0, -1.0, 0.5, 0.0]])
    p = torch.softmax(logits, -1)
    expected = (0.25 * (math.log(0.25) - p.log())).sum(-1)
    torch.testing.assert_close(uniform_kl(torch.log_softmax(logits, -1)), expected)
    assert uniform_kl(torch.log_softmax(torch.tensor([[40.0, 0.0, 0.0, 0.0]]), -1)).item() > 25
    saturated = torch.tensor([[15.0, 0.0, 0.0, 0.0]], requires_grad=True)
    (g_kl,) = torch.autograd.grad(uniform_kl(torch.log_softmax(saturated, -1)).sum(), saturated)
    log_p = torch.log_softmax(saturated, -1)
    (g_h,) = torch.autograd.grad(-(log_p.exp() * log_p).sum(), saturated)
    assert g_kl[0, 1].item() == pytest.approx(-0.25, abs=1e-4)  # minimising raises the rare logit
    assert abs(g_h[0, 1].item()) < 1e-4  # the entropy's pull is gone
    head = PPO("TMaze-v1", "gru", n_envs=2, uniform_kl_coef=0.01, **SMALL).policy.action_head
    torch.testing.assert_close(head.uniform_kl(torch.log_softmax(logits, -1)), expected)
    multi = MultiCategoricalHead(4, [2, 4])  # MultiDiscrete: the sum over the groups
    params = multi(torch.randn(5, 4))
    torch.testing.assert_close(
        multi.uniform_kl(params), uniform_kl(params[:, :2]) + uniform_kl(params[:, 2:])
    )


def test_uniform_kl_coef_trains_and_is_checked() -> None:
    """The penalty enters the loss (the logged KL is finite and positive once the policy
    moves; a larger weight keeps the policy nearer uniform on the same data), and bad
    weights or a Box action space are refused, naming the setting."""
    kls = {}
    for coef in (0.001, 1.0):
        model = PPO("TMaze-v1", "gru", n_envs=4, uniform_kl_coef=coef, learning_rate=3e-3, **SMALL)
        model.learn(8 * 64)
        kls[coef] = model.history[-1]["uniform_kl"]
        assert np.isfinite(kls[coef]) and kls[coef] >= 0
    assert kls[1.0] < kls[0.001]
    assert "uniform_kl" not in PPO("TMaze-v1", "gru", n_envs=2, **SMALL).learn(32).history[-1]
    for bad in (-0.1, float("nan")):
        with pytest.raises(ValueError, match="uniform_kl_coef"):
            PPO("TMaze-v1", "gru", uniform_kl_coef=bad, **SMALL)
    with pytest.raises(TypeError, match="uniform_kl_coef"):
        PPO("TMaze-v1", "gru", uniform_kl_coef="0.1", **SMALL)
    with pytest.raises(ValueError, match="uniform_kl_coef needs discrete actions"):
        PPO("MaskedPendulum-v0", "gru", uniform_kl_coef=0.1, **SMALL)


def test_clip_ratio_bounds_a_rise_by_ratio_or_by_probability() -> None:
    """Falls stop at ``1 - clip_range`` in both modes; a rise stops at ``1 + clip_range``
    under the ratio clip and at ``pi_old + clip_range`` in probability under
    ``"probability"``, which equals the ratio clip for an action at probability 1."""
    old = torch.tensor([1e-3, 1e-3, 1e-3, 1.0, 0.5]).log()
    ratio = torch.tensor([50.0, 300.0, 0.5, 1.5, 1.3])
    torch.testing.assert_close(clip_ratio(ratio, old, 0.2, "ratio"), ratio.clamp(0.8, 1.2))
    # pi: 0.05 (free), 0.3 -> 0.201, a fall to 0.8, 1.5 -> 1.2 (= 1 + 0.2 / 1), 0.65 free (<= 0.7)
    expected = torch.tensor([50.0, 201.0, 0.8, 1.2, 1.3])
    torch.testing.assert_close(clip_ratio(ratio, old, 0.2, "probability"), expected)


def test_clip_rise_lets_a_rare_good_action_come_back() -> None:
    """PPO's loss on one state whose rare action (probability 1e-3 when collected) alone
    did well. The gradient stops where the clipped ratio binds: at 1.2e-3 under the
    ratio clip, at ``1e-3 + 0.2`` under ``clip_rise="probability"``. So in an update of
    1000 Adam steps the action stays near 1.2e-3 with the ratio clip (Adam's momentum
    carries it a little past) and comes back past 0.1 with the probability clip."""
    actions = torch.tensor([0] * 99 + [1])
    advantages = torch.tensor([0.0] * 99 + [10.0])  # only the rare action's sample is good
    old_log_probs = torch.log(torch.tensor([0.999, 1e-3]))[actions]

    def loss(logits: Tensor, mode: str) -> Tensor:
        ratio = (torch.log_softmax(logits, -1)[actions] - old_log_probs).exp()
        clipped = clip_ratio(ratio, old_log_probs, 0.2, mode)
        return -torch.min(advantages * ratio, advantages * clipped).mean()

    def logits_at(p_rare: float) -> Tensor:
        return torch.tensor([math.log(1 - p_rare), math.log(p_rare)], requires_grad=True)

    for p_rare, live in ((1.1e-3, {"ratio", "probability"}), (0.1, {"probability"}), (0.25, set())):
        for mode in ("ratio", "probability"):
            logits = logits_at(p_rare)
            (grad,) = torch.autograd.grad(loss(logits, mode), logits)
            assert (grad[1].item() < 0) == (mode in live), (p_rare, mode)  # < 0: descent raises it

    rises = {}
    for mode in ("ratio", "probability"):
        logits = logits_at(1e-3)
        optimizer = torch.optim.Adam([logits], lr=0.01)
        for _ in range(1000):
            optimizer.zero_grad()
            loss(logits, mode).backward()
            optimizer.step()
        rises[mode] = torch.softmax(logits, -1)[1].item()
    assert 1.19e-3 < rises["ratio"] < 2e-3
    assert rises["probability"] > 0.1


def test_clip_rise_is_checked() -> None:
    model = PPO("TMaze-v1", "gru", n_envs=2, clip_rise="probability", **SMALL)
    assert 0 <= model.learn(32).history[-1]["clip_fraction"] <= 1
    with pytest.raises(ValueError, match=r"clip_rise must be one of \['ratio', 'probability'\]"):
        PPO("TMaze-v1", "gru", clip_rise="tv", **SMALL)
    with pytest.raises(ValueError, match="clip_rise='probability' needs discrete actions"):
        PPO("MaskedPendulum-v0", "gru", clip_rise="probability", **SMALL)


def test_minibatches_hold_whole_pieces() -> None:
    model = _gru(bptt_length=4, num_minibatches=4)
    model.learn(4 * 16)
    buf = model.buffer
    pieces = {(b, k): buf.obs[4 * k : 4 * k + 4, b] for b in range(4) for k in range(4)}
    seen = []
    for mb in buf.minibatches(4, torch.Generator().manual_seed(0)):
        assert mb.obs.shape[:2] == (4, 4)
        for j in range(mb.obs.shape[1]):
            match = [key for key, x in pieces.items() if torch.equal(x, mb.obs[:, j])]
            assert len(match) == 1
            b, k = match[0]
            torch.testing.assert_close(mb.state.actor[0][j], buf.piece_states[k].actor[0][b])
            seen.append(match[0])
    assert sorted(seen) == sorted(pieces)


def test_no_gradient_crosses_a_piece_start() -> None:
    model = _gru(bptt_length=4)
    model.learn(4 * 16)
    buf = model.buffer
    obs = buf.obs.clone().requires_grad_(True)
    full = buf.all_pieces()
    log_prob, _, values, _ = model.policy.evaluate_actions(
        buf._pieces(obs), full.actions, full.state, full.episode_starts
    )
    piece = 2 * 4 + 1  # copy 1's third piece: steps 8-11
    (log_prob[:, piece].sum() + values[:, piece].sum()).backward()
    grad = obs.grad.abs().sum(-1)  # [T, B]
    assert grad[8:12, 1].sum() > 0
    grad[8:12, 1] = 0
    assert grad.sum() == 0  # nothing before the piece's start (steps 0-7 of copy 1), nothing else


def _small_memory(kind: str) -> dict:
    """A small memory of ``kind``: 8 units, 2 heads (or heads of 4) and a window of 4 where
    it has them."""
    small = {"kind": kind, "hidden_size": 8, "num_heads": 2, "head_size": 4, "window": 4}
    return {name: value for name, value in small.items() if name in MemoryConfig.field_names(kind)}


@pytest.mark.parametrize("kind", MEMORY_KINDS)
def test_training_pieces_reproduce_the_collected_numbers(kind: str) -> None:
    """Re-run over pieces (each from its stored memory, resets inside), the
    networks give back the log-probs and values they had while acting."""
    model = PPO(
        _cartpole(4, max_steps=10),
        _small_memory(kind),
        bptt_length=8,
        **SMALL,
    )
    model.learn(4 * 16)
    model._collect_rollout()
    full = model.buffer.all_pieces()
    assert full.episode_starts[1:].any()
    with torch.no_grad():
        log_prob, _, values, _ = model.policy.evaluate_actions(
            full.obs, full.actions, full.state, full.episode_starts
        )
    torch.testing.assert_close(log_prob, full.log_probs, atol=1e-5, rtol=0)
    torch.testing.assert_close(values, full.values, atol=1e-5, rtol=0)


@pytest.mark.parametrize("shared", [False, True])
def test_truncation_bootstraps_on_the_final_obs_with_the_episode_memory(shared: bool) -> None:
    model = _gru(max_steps=6, shared_memory=shared, n_steps=16)
    final_obs: dict[tuple[int, int], np.ndarray] = {}
    step, t = model.env.step, iter(range(10**6))

    def recording_step(action):
        out = step(action)
        i = next(t)
        info = out[4]
        for b in np.flatnonzero(out[3] & ~out[2]):
            final_obs[(i % 16, b)] = info["final_obs"][b]
        return out

    model.env.step = recording_step
    model._start_episodes()
    model._collect_rollout()
    buf = model.buffer
    assert final_obs, "the time limit should have truncated some episodes"
    trunk = "actor_trunk" if shared else "critic_trunk"
    start = buf.piece_states[0].actor if shared else buf.piece_states[0].critic
    for (ti, b), obs in final_obs.items():
        state = _replay(model, trunk, ti + 1, start)  # the memory after step ti, before any reset
        state_b = ActorCriticState(*(tuple(s[b : b + 1] for s in state),) * 2)
        with torch.no_grad():
            v = model.policy.predict_values(
                torch.as_tensor(obs).view(1, 1, -1), state_b, torch.zeros(1, 1, dtype=torch.bool)
            )
        torch.testing.assert_close(buf.final_values[ti, b], v[0, 0], atol=1e-5, rtol=0)
    cut = torch.zeros_like(buf.dones)
    for ti, b in final_obs:
        cut[ti, b] = True
    assert (buf.final_values[~cut] == 0).all()


def test_feedforward_runs_through_the_same_code() -> None:
    model = PPO(_cartpole(4), None, **SMALL)
    assert model.memory_config.kind == "none" and not model.policy.recurrent
    model.learn(4 * 16)
    assert model.buffer.piece_states[0].actor == ()


@pytest.mark.parametrize("kind", MEMORY_KINDS)
@pytest.mark.parametrize("shared", [False, True])
def test_every_memory_kind_learns_a_few_updates(kind: str, shared: bool) -> None:
    model = PPO(
        "CueRecall-v0",
        _small_memory(kind),
        env_kwargs={"delay": 2},
        n_envs=4,
        shared_memory=shared,
        **SMALL,
    )
    model.learn(2 * 4 * 16)
    assert len(model.history) == 2 and np.isfinite(model.history[-1]["value_loss"])
    returns = model.evaluate(3)
    assert returns.shape == (3,)


def test_box_actions() -> None:
    model = PPO(
        "MaskedPendulum-v0", "gru", n_envs=2, normalize_observations=True, normalize_rewards=True, **SMALL
    )
    model.learn(2 * 16)
    action, _ = model.predict(np.zeros((2, 2), np.float32))
    assert action.shape == (2, 1) and np.all(np.abs(action) <= 2.0)
    assert model.buffer.actions.shape == (16, 2, 1)


# -- reliability -----------------------------------------------------------------
def test_nan_raises_naming_the_update() -> None:
    model = _gru()
    model.learn(4 * 16)
    with torch.no_grad():
        model.policy.value_head.weight.fill_(float("nan"))
    with pytest.raises(FloatingPointError, match="PPO update 2"):
        model.learn(4 * 16)


def test_save_load_round_trip(tmp_path) -> None:
    model = PPO(
        "CueRecall-v0", "lstm", env_kwargs={"delay": 3}, n_envs=4, normalize_observations=True, **SMALL
    )
    model.learn(2 * 4 * 16)
    model.save(tmp_path / "ppo.pt")
    loaded = PPO.load(tmp_path / "ppo.pt", device="cpu")
    obs, _ = model.env.reset(seed=5)
    s1 = s2 = None
    for t in range(8):
        a1, s1 = model.predict(obs, s1, np.full(4, t == 0), deterministic=True)
        a2, s2 = loaded.predict(obs, s2, np.full(4, t == 0), deterministic=True)
        np.testing.assert_array_equal(a1, a2)
        obs, *_ = model.env.step(a1)
    np.testing.assert_array_equal(model.evaluate(5), loaded.evaluate(5))
    assert loaded.num_timesteps == model.num_timesteps


def test_same_seed_same_learning_curve() -> None:
    def run(seed: int) -> PPO:
        model = PPO("CueRecall-v0", "gru", env_kwargs={"delay": 3}, n_envs=4, seed=seed, **SMALL)
        return model.learn(3 * 4 * 16)

    a, b, c = run(1), run(1), run(2)
    assert a.history and [h["value_loss"] for h in a.history] == [h["value_loss"] for h in b.history]
    assert a.episode_log == b.episode_log
    for p, q in zip(a.policy.parameters(), b.policy.parameters(), strict=True):
        assert torch.equal(p, q)
    assert [h["value_loss"] for h in a.history] != [h["value_loss"] for h in c.history]


def test_learn_records_history_and_schedules() -> None:
    model = _gru(learning_rate="lin_0.001", clip_range="lin_0.2")
    calls = []
    model.learn(4 * 4 * 16, callback=lambda m: calls.append(m.num_timesteps))
    assert [h["timesteps"] for h in model.history] == [64, 128, 192, 256] == calls
    lrs = [h["learning_rate"] for h in model.history]
    assert lrs == sorted(lrs, reverse=True) and lrs[-1] == 0.0 and abs(lrs[0] - 0.00075) < 1e-12
    assert {"mean_return", "episodes", "policy_loss", "approx_kl", "steps_per_second"} <= set(
        model.history[0]
    )
    stopped = _gru()
    stopped.learn(10 * 64, callback=lambda m: False)
    assert len(stopped.history) == 1


def test_evaluate_starts_each_episode_from_zero_memory() -> None:
    model = PPO("CueRecall-v0", "gru", env_kwargs={"delay": 3}, n_envs=4, **SMALL)
    model.learn(4 * 16)
    returns = model.evaluate(6)
    assert returns.shape == (6,) and set(np.unique(returns)) <= {0.0, 1.0}
    np.testing.assert_array_equal(returns, model.evaluate(6))  # deterministic, independent of training state


def test_transformer_pieces_attend_to_keys_of_the_current_weights() -> None:
    """After an update, a stored piece that starts mid-episode reads keys and values the
    current weights compute from the stored inputs: its outputs equal the current
    weights run over the rollout from its first step."""
    memory = {"kind": "transformer", "hidden_size": 8, "num_heads": 2, "window": 6, "num_layers": 2}
    model = PPO(_cartpole(2), memory, bptt_length=4, **SMALL)
    model.learn(2 * 16)  # one rollout (from fresh episodes at t = 0), then one update
    policy, buf = model.policy, model.buffer
    trunk = policy.actor_trunk
    with torch.no_grad():
        truth, _ = trunk(policy.preprocess(buf.obs), trunk.initial_state(2), buf.episode_starts)
        for k in range(1, 4):
            piece = slice(4 * k, 4 * k + 4)
            state = buf.piece_states[k].actor
            y, _ = trunk(policy.preprocess(buf.obs[piece]), state, buf.episode_starts[piece])
            torch.testing.assert_close(y, truth[piece], atol=1e-5, rtol=0)
