"""Our DQN against Stable-Baselines3's ``DQN``: same weights, same batch, same numbers.

With ``memory=None``, ``burn_in=0, sequence_length=1`` (sequences of two rows are
transitions), ``double_q=False``, ``n_steps=1`` and the Huber loss, one gradient step of
ours gives SB3's loss (``smooth_l1_loss`` of ``Q(s, a)`` against ``r + gamma (1 - done)
max_a' Q_target(s', a')``), and the same weights after the step (Adam, clipping at SB3's
norm of 10): SB3's own ``train`` runs on the batch.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

pytest.importorskip("stable_baselines3")

from stable_baselines3 import DQN as SB3DQN
from stable_baselines3.common.logger import Logger
from stable_baselines3.common.type_aliases import ReplayBufferSamples

from pomdp_bench.agents.common.sequence_buffer import SequenceBatch
from pomdp_bench.agents.dqn import DQN
from pomdp_bench.agents.dqn.networks import copy_sb3_q_weights, linear_layers

# Verdicts here depend on torch's floating-point path: scripts/kernel_settings.sh reruns them
# under other CPU kernel settings.
pytestmark = pytest.mark.trajectory

torch.set_num_threads(1)
ARCH, BATCH, LR = [32, 24], 64, 1e-3


def _pair(seed: int = 0) -> tuple[DQN, SB3DQN]:
    ours = DQN(
        lambda: gym.make("CartPole-v1"), None, burn_in=0, sequence_length=1, batch_size=BATCH,
        learning_rate=LR, net_arch=ARCH, gamma=0.97, seed=seed, device="cpu",
    )  # fmt: skip
    theirs = SB3DQN(
        "MlpPolicy", gym.make("CartPole-v1"), learning_rate=LR, batch_size=BATCH, gamma=0.97,
        policy_kwargs=dict(net_arch=ARCH), seed=seed, device="cpu",
    )  # fmt: skip
    # Perturb SB3's networks (the target apart from the online one) so a copy that
    # silently failed, or a target read as the online network, could not pass.
    with torch.no_grad():
        for p in theirs.q_net.parameters():
            p.add_(0.1 * torch.randn_like(p))
        for p in theirs.q_net_target.parameters():
            p.add_(0.2 * torch.randn_like(p))
    copy_sb3_q_weights(theirs.q_net.q_net, ours.q_net)
    copy_sb3_q_weights(theirs.q_net_target.q_net, ours.q_target)
    return ours, theirs


def _transitions(seed: int) -> dict[str, torch.Tensor]:
    """Observations of CartPole's range, random actions and rewards, a quarter terminal."""
    g = torch.Generator().manual_seed(seed)
    return {
        "obs": torch.randn(BATCH, 4, generator=g),
        "next_obs": torch.randn(BATCH, 4, generator=g),
        "actions": torch.randint(2, (BATCH,), generator=g),
        "rewards": torch.rand(BATCH, generator=g) * 2 - 0.5,
        "dones": torch.rand(BATCH, generator=g) < 0.25,
    }


def _our_batch(t: dict[str, torch.Tensor]) -> SequenceBatch:
    """The transitions as sequences of two rows: the step, then the next observation."""
    zeros = torch.zeros(BATCH, dtype=torch.bool)
    return SequenceBatch(
        obs=torch.stack([t["obs"], t["next_obs"]]),
        prev_actions=torch.zeros(0),
        actions=torch.stack([t["actions"], torch.zeros_like(t["actions"])]),
        rewards=torch.stack([t["rewards"], torch.zeros_like(t["rewards"])]),
        terminated=torch.stack([t["dones"], zeros]),
        episode_starts=torch.stack([zeros, t["dones"]]),
        final=torch.stack([zeros, zeros]),
        actor_state=(),
    )


def _sb3_batch(t: dict[str, torch.Tensor]) -> ReplayBufferSamples:
    return ReplayBufferSamples(
        observations=t["obs"],
        actions=t["actions"].unsqueeze(1),
        next_observations=t["next_obs"],
        dones=t["dones"].float().unsqueeze(1),
        rewards=t["rewards"].unsqueeze(1),
    )


@pytest.mark.parametrize("seed", [0, 1])
def test_one_gradient_step_matches_sb3_number_for_number(seed: int) -> None:
    ours, theirs = _pair(seed)
    losses: list[float] = []

    class Recorder(Logger):
        def record(self, key, value, exclude=None) -> None:
            if key == "train/loss":
                losses.append(value)

    theirs.set_logger(Recorder(folder=None, output_formats=[]))
    for step in range(3):  # three steps: Adam's moments and the clipping as well
        t = _transitions(100 * seed + step)
        theirs.replay_buffer.sample = lambda batch_size, env=None, t=t: _sb3_batch(t)
        theirs.train(gradient_steps=1, batch_size=BATCH)
        ours.q_net.train(True)
        stats = ours._gradient_step(_our_batch(t))
        assert float(stats["loss"]) == pytest.approx(losses[-1], rel=1e-6, abs=1e-7)
        for a, b in zip(linear_layers(theirs.q_net.q_net), linear_layers(ours.q_net), strict=True):
            torch.testing.assert_close(b.weight, a.weight, atol=1e-6, rtol=1e-5)
            torch.testing.assert_close(b.bias, a.bias, atol=1e-6, rtol=1e-5)


def test_the_loss_is_sb3s_formula_on_the_batch() -> None:
    """The same loss written out from SB3's ``DQN.train``, independent of its logger."""
    ours, theirs = _pair(3)
    t = _transitions(7)
    with torch.no_grad():
        next_q = theirs.q_net_target(t["next_obs"]).max(dim=1).values
        target = t["rewards"] + (1 - t["dones"].float()) * 0.97 * next_q
        current = theirs.q_net(t["obs"]).gather(1, t["actions"].unsqueeze(1)).squeeze(1)
        expected = torch.nn.functional.smooth_l1_loss(current, target)
    ours.q_net.train(True)
    got = ours._gradient_step(_our_batch(t))["loss"]
    assert float(got) == pytest.approx(float(expected), rel=1e-6, abs=1e-7)
    assert np.isfinite(float(got))
