"""PPO's recurrent rollout buffer: storage ``[T, B, ...]``, GAE, and bptt pieces.

One buffer serves every memory kind and every observation space: it stores
tensors time-first, the memories at every piece start (the memory the policy
had while collecting), computes GAE with truncation bootstrapping, and cuts
each copy's rollout into pieces of ``bptt_length`` steps that minibatches take
whole.

Piece ``p = k * B + b`` is copy ``b``'s steps ``[k L, (k + 1) L)``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import torch
from torch import Tensor

from pomdp_bench.agents.ppo.networks import ActorCriticState


@dataclass
class Minibatch:
    """Whole pieces for one gradient step, time-first ``[L, P_mb, ...]``."""

    obs: Tensor
    actions: Tensor
    log_probs: Tensor  # [L, P_mb] at collection
    values: Tensor  # [L, P_mb] at collection
    advantages: Tensor  # [L, P_mb] (not normalised)
    returns: Tensor  # [L, P_mb]
    episode_starts: Tensor  # [L, P_mb] bool
    state: ActorCriticState  # memories before each piece's first step, [P_mb, ...] tensors


def gae(
    rewards: Tensor,
    values: Tensor,
    terminated: Tensor,
    dones: Tensor,
    final_values: Tensor,
    last_values: Tensor,
    gamma: float,
    gae_lambda: float,
) -> tuple[Tensor, Tensor]:
    """Generalised advantage estimation over a rollout, time-first.

    Where an episode ended at step t (``dones``: terminated or truncated), the
    trace stops; the bootstrap is 0 if it terminated and the critic's value of
    the final observation (``final_values``) if a time limit truncated it.

    Args:
        rewards, values, terminated, dones, final_values: ``[T, B]``.
        last_values: ``[B]`` value of the observation after the last step.

    Returns:
        ``(advantages [T, B], returns [T, B])``
    """
    steps = rewards.shape[0]
    advantages = torch.zeros_like(rewards)
    next_values = torch.cat([values[1:], last_values.unsqueeze(0)])
    # After an episode's last step the next value is its own final observation's
    # (zero if terminated), never the next episode's first.
    next_values = torch.where(dones, final_values, next_values)
    next_values = next_values * (~terminated).to(values.dtype)
    deltas = rewards + gamma * next_values - values
    carry = (~dones).to(values.dtype) * (gamma * gae_lambda)
    last = torch.zeros_like(last_values)
    for t in reversed(range(steps)):
        last = deltas[t] + carry[t] * last
        advantages[t] = last
    return advantages, advantages + values


class RecurrentRolloutBuffer:
    """Storage for one rollout of ``n_steps`` steps from ``n_envs`` copies.

    Args:
        n_steps: ``T``.
        n_envs: ``B``.
        obs_shape: the shape of one observation.
        obs_dtype: dtype the observations are stored in.
        action_shape: ``()`` for Discrete, ``(A,)`` for Box.
        action_dtype: ``torch.long`` or ``torch.float32``.
        bptt_length: ``L``, dividing ``n_steps``.
        device: where the tensors live.
    """

    def __init__(
        self,
        n_steps: int,
        n_envs: int,
        obs_shape: tuple[int, ...],
        obs_dtype: torch.dtype,
        action_shape: tuple[int, ...],
        action_dtype: torch.dtype,
        bptt_length: int,
        device: torch.device,
    ) -> None:
        if n_steps % bptt_length:
            raise ValueError(f"bptt_length={bptt_length} must divide n_steps={n_steps}")
        self.n_steps, self.n_envs, self.bptt_length = n_steps, n_envs, bptt_length
        self.device = device
        size = (n_steps, n_envs)
        self.obs = torch.zeros(*size, *obs_shape, dtype=obs_dtype, device=device)
        self.actions = torch.zeros(*size, *action_shape, dtype=action_dtype, device=device)
        self.log_probs = torch.zeros(size, device=device)
        self.values = torch.zeros(size, device=device)
        self.rewards = torch.zeros(size, device=device)
        self.final_values = torch.zeros(size, device=device)  # V(final obs) where truncated
        self.terminated = torch.zeros(size, dtype=torch.bool, device=device)
        self.dones = torch.zeros(size, dtype=torch.bool, device=device)  # terminated | truncated
        self.episode_starts = torch.zeros(size, dtype=torch.bool, device=device)
        self.advantages = torch.zeros(size, device=device)
        self.returns = torch.zeros(size, device=device)
        self.piece_states: list[ActorCriticState] = [ActorCriticState((), ())] * (n_steps // bptt_length)
        self._all: Minibatch | None = None  # all_pieces(), until the next rollout

    @property
    def num_pieces(self) -> int:
        return self.n_envs * (self.n_steps // self.bptt_length)

    def is_piece_start(self, t: int) -> bool:
        return t % self.bptt_length == 0

    def store_piece_start(self, t: int, state: ActorCriticState) -> None:
        """Keep the memories the policy has before step ``t`` (a piece start).

        Cloned, so the stored copies are ordinary tensors even when acting ran
        under ``torch.inference_mode``.
        """
        self.piece_states[t // self.bptt_length] = ActorCriticState(
            tuple(s.clone() for s in state.actor), tuple(s.clone() for s in state.critic)
        )

    def compute_gae(self, last_values: Tensor, gamma: float, gae_lambda: float) -> None:
        """Fill ``advantages`` and ``returns``; ``last_values [B]`` is V of the next observation."""
        self._all = None
        self.advantages, self.returns = gae(
            self.rewards,
            self.values,
            self.terminated,
            self.dones,
            self.final_values,
            last_values,
            gamma,
            gae_lambda,
        )

    def _pieces(self, x: Tensor) -> Tensor:
        """``[T, B, ...] -> [L, K * B, ...]``, piece ``k * B + b`` = copy b's k-th piece."""
        steps, envs = x.shape[:2]
        length = self.bptt_length
        x = x.reshape(steps // length, length, envs, *x.shape[2:]).transpose(0, 1)
        return x.reshape(length, (steps // length) * envs, *x.shape[3:])

    def all_pieces(self) -> Minibatch:
        """Every piece of the rollout, piece ``k * B + b`` at column ``k * B + b``
        (built once per rollout, after :meth:`compute_gae`)."""
        if self._all is None:
            fields = [
                self.obs,
                self.actions,
                self.log_probs,
                self.values,
                self.advantages,
                self.returns,
                self.episode_starts,
            ]
            obs, actions, log_probs, values, advantages, returns, starts = (self._pieces(f) for f in fields)
            states = self.piece_states
            self._all = Minibatch(
                obs=obs,
                actions=actions,
                log_probs=log_probs,
                values=values,
                advantages=advantages,
                returns=returns,
                episode_starts=starts,
                state=ActorCriticState(
                    tuple(torch.cat(parts) for parts in zip(*(s.actor for s in states), strict=True)),
                    tuple(torch.cat(parts) for parts in zip(*(s.critic for s in states), strict=True)),
                ),
            )
        return self._all

    def minibatches(self, num_minibatches: int, generator: torch.Generator | None) -> Iterator[Minibatch]:
        """Shuffle whole pieces into ``num_minibatches`` equal minibatches.

        Args:
            num_minibatches: it divides the number of pieces (checked at construction).
            generator: draws the shuffle.
        """
        full = self.all_pieces()
        if num_minibatches == 1:  # the order of pieces inside a minibatch does not matter
            yield full
            return
        order = torch.randperm(self.num_pieces, generator=generator).to(self.device)
        for idx in order.chunk(num_minibatches):
            starts = full.episode_starts.index_select(1, idx)
            yield Minibatch(
                obs=full.obs.index_select(1, idx),
                actions=full.actions.index_select(1, idx),
                log_probs=full.log_probs.index_select(1, idx),
                values=full.values.index_select(1, idx),
                advantages=full.advantages.index_select(1, idx),
                returns=full.returns.index_select(1, idx),
                episode_starts=starts,
                state=ActorCriticState(
                    tuple(s.index_select(0, idx) for s in full.state.actor),
                    tuple(s.index_select(0, idx) for s in full.state.critic),
                ),
            )
