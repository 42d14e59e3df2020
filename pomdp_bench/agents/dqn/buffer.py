"""DQN's sequence replay: SAC's rings of whole trajectories per copy
(:mod:`pomdp_bench.agents.common.sequence_buffer`), with room for n-step targets and, on
request, sequences that begin at episode starts.

A sampled sequence has ``burn_in + sequence_length + n_steps`` rows: the memory warms
up on the first ``burn_in``, the loss uses the next ``sequence_length``, and the last
``n_steps`` rows give the bootstrap values of the learned rows' n-step targets.

``align_to_episodes``: only sequences whose row ``burn_in`` (then 0) begins an
episode are drawn, uniformly among the episode starts the buffer holds with a whole
sequence after them. With a ``sequence_length`` of at least the episode length each
is a whole episode, as Memory-RL replays them; rows after the episode's end belong to
the next one (the memory resets there) and carry losses of their own.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from pomdp_bench.agents.common.sequence_buffer import SequenceBatch, SequenceReplayBuffer, StateSpec


class DQNReplayBuffer(SequenceReplayBuffer):
    """Rings of ``capacity`` rows per copy for ``n_envs`` copies (see the module docstring).

    Args:
        capacity, n_envs, obs_shape, obs_dtype, action_shape, action_dtype,
        action_feature_size, state_spec, device: as
            :class:`~pomdp_bench.agents.common.sequence_buffer.SequenceReplayBuffer`.
        burn_in, sequence_length, n_steps: a sequence has ``burn_in + sequence_length +
            n_steps`` rows.
        align_to_episodes: draw only sequences whose row ``burn_in`` begins an episode.
    """

    def __init__(
        self,
        capacity: int,
        n_envs: int,
        obs_shape: tuple[int, ...],
        obs_dtype: torch.dtype,
        action_shape: tuple[int, ...],
        action_dtype: torch.dtype,
        action_feature_size: int,
        burn_in: int,
        sequence_length: int,
        n_steps: int = 1,
        align_to_episodes: bool = False,
        state_spec: tuple[StateSpec, ...] | None = None,
        device: torch.device | str = "cpu",
    ) -> None:
        # The parent's window is burn_in + its sequence_length + 1: widen it by n_steps - 1.
        super().__init__(
            capacity, n_envs, obs_shape, obs_dtype, action_shape, action_dtype, action_feature_size,
            burn_in, sequence_length + n_steps - 1, state_spec, device,
        )  # fmt: skip
        self.sequence_length, self.n_steps = sequence_length, n_steps
        self.align_to_episodes = align_to_episodes
        # Rows ever written per copy (final rows included): a row's ring index is its count
        # modulo the capacity. Episode starts as (copy, count) pairs, for aligned draws.
        self.written = np.zeros(n_envs, dtype=np.int64)
        self._start_copy = np.zeros(0, dtype=np.int64)
        self._start_at = np.zeros(0, dtype=np.int64)
        self._pending: list[tuple[np.ndarray, np.ndarray]] = []
        self._no_prev_actions = torch.zeros(0, device=self.device)

    def _advance(self, copies: np.ndarray) -> None:
        super()._advance(copies)
        self.written[copies] += 1

    def add(
        self,
        obs: Tensor,
        prev_actions: Tensor,
        actions: Tensor,
        rewards: Tensor,
        terminated: Tensor,
        episode_starts: Tensor,
        actor_state: tuple[Tensor, ...] = (),
    ) -> None:
        """Write one step of every copy (as the parent's ``add``; ``actor_state`` is the Q
        network's memory before the step)."""
        if self.align_to_episodes:
            copies = np.flatnonzero(episode_starts.cpu().numpy())
            if copies.size:
                self._pending.append((copies, self.written[copies].copy()))
        super().add(obs, prev_actions, actions, rewards, terminated, episode_starts, actor_state)

    def num_windows(self) -> int:
        """How many distinct sequences can be drawn now."""
        if not self.align_to_episodes:
            return super().num_windows()
        return int(self._eligible_starts()[0].size)

    def _eligible_starts(self) -> tuple[np.ndarray, np.ndarray]:
        """``(copies, counts)`` of the held episode starts with a whole sequence after them."""
        if self._pending:
            self._start_copy = np.concatenate([self._start_copy, *(c for c, _ in self._pending)])
            self._start_at = np.concatenate([self._start_at, *(a for _, a in self._pending)])
            self._pending.clear()
            oldest = self.written - self.size  # [N] the count of each copy's oldest held row
            held = self._start_at >= oldest[self._start_copy]
            self._start_copy, self._start_at = self._start_copy[held], self._start_at[held]
        oldest = self.written - self.size
        ok = (self._start_at >= oldest[self._start_copy]) & (
            self._start_at + self.window <= self.written[self._start_copy]
        )
        return self._start_copy[ok], self._start_at[ok]

    def sample(self, batch_size: int, generator: torch.Generator) -> SequenceBatch:
        """``batch_size`` sequences drawn uniformly with replacement: from every run of
        ``W`` consecutive rows of one copy the buffer holds, or with
        ``align_to_episodes`` from those that begin at an episode start.

        Raises:
            RuntimeError: no sequence can be drawn yet.
        """
        if not self.align_to_episodes:  # the parent's draw, gathered without previous actions
            avail = np.maximum(self.size - self.window + 1, 0)  # [N] sequence starts per copy
            total = int(avail.sum())
            if total == 0:
                raise RuntimeError(
                    f"no copy holds a whole sequence of {self.window} rows yet (rows held: {self.size.tolist()})"
                )
            draw = torch.randint(total, (batch_size,), generator=generator).numpy()
            ends = np.cumsum(avail)
            copy = np.searchsorted(ends, draw, side="right")  # [B]
            offset = draw - (ends - avail)[copy]  # [B] chronological index of the sequence start
            return self._gather(copy, (self.pos[copy] - self.size[copy] + offset) % self.capacity)
        copies, counts = self._eligible_starts()
        if copies.size == 0:
            raise RuntimeError(
                f"no copy holds an episode start with a whole sequence of {self.window} rows after it "
                f"yet (rows held: {self.size.tolist()})"
            )
        draw = torch.randint(copies.size, (batch_size,), generator=generator).numpy()
        copy, first = copies[draw], counts[draw] % self.capacity  # [B]
        return self._gather(copy, first)

    def _gather(self, copy: np.ndarray, first: np.ndarray) -> SequenceBatch:
        """The sequences of copies ``copy [B]`` starting at ring rows ``first [B]``."""
        rows = (first[None, :] + np.arange(self.window)[:, None]) % self.capacity  # [W, B]
        rows_t = torch.as_tensor(rows, device=self.device)
        copy_t = torch.as_tensor(copy, device=self.device).expand(self.window, -1)
        idx = (rows_t, copy_t)
        state: tuple[Tensor, ...] = ()
        if self.states is not None:
            state = tuple(store[rows_t[self.burn_in], copy_t[0]] for store in self.states)
        return SequenceBatch(
            obs=self.obs[idx],
            prev_actions=self._no_prev_actions,  # DQN's network reads none
            actions=self.actions[idx],
            rewards=self.rewards[idx],
            terminated=self.terminated[idx],
            episode_starts=self.episode_starts[idx],
            final=self.final[idx],
            actor_state=state,
        )
