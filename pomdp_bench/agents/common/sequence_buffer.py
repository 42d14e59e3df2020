"""SAC's sequence replay (R2D2, Kapturowski et al. 2019): whole trajectories per copy,
sampled as contiguous windows.

Each copy has its own ring of rows, written in time order, so any run of
consecutive rows of one copy is a piece of its trajectory. A row is one step:
the observation the agent saw, the previous action (zero at an episode start), the
action it took, the reward, ``terminated``, whether the step began an episode, and
optionally the actor's memory before the step (``stored_state``).

Truncation: where a time limit cut an episode, the buffer writes one extra
*final row* after its last step, holding the final observation (and the last action
as its previous action). The TD target of the last step then bootstraps on the row
after it, like every other step, and a memory run over the window reads the final
observation with the memory the episode built; the next episode's first row resets
it. A final row takes no action: it gets no loss (see ``SequenceBatch.final``). A
terminated episode needs none: its last step does not bootstrap.

A sampled window has ``burn_in + sequence_length + 1`` rows: the memory warms up
on the first ``burn_in``, the losses use the next ``sequence_length``, and the last
row gives the bootstrap value of the step before it. Windows may span episodes;
``episode_starts`` marks where the memory must reset.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch
from torch import Tensor

StateSpec = tuple[tuple[int, ...], torch.dtype]


class SequenceBatch(NamedTuple):
    """``B`` windows of ``W = burn_in + sequence_length + 1`` rows, time-first.

    Attributes:
        obs: ``[W, B, *obs_shape]`` observations (the final observation on final rows).
        prev_actions: ``[W, B, A']`` float features of the action before each row
            (tanh units for ``Box``, one-hot for ``Discrete``), zero at episode starts.
        actions: ``[W, B, *action_shape]`` the action taken (zero on final rows).
        rewards: ``[W, B]`` float32 reward of each step (zero on final rows).
        terminated: ``[W, B]`` bool, the step ended its episode by termination: no
            bootstrap from the next row.
        episode_starts: ``[W, B]`` bool, the row begins an episode: reset the memory.
        final: ``[W, B]`` bool, a final-observation row after a truncation: no action,
            no loss, only the bootstrap value of the step before it.
        actor_state: the actor's memory before row ``burn_in``, as it was when it
            acted (tensors ``[B, ...]``); ``()`` unless the buffer stores states.
    """

    obs: Tensor
    prev_actions: Tensor
    actions: Tensor
    rewards: Tensor
    terminated: Tensor
    episode_starts: Tensor
    final: Tensor
    actor_state: tuple[Tensor, ...]


class SequenceReplayBuffer:
    """Rings of ``capacity`` rows per copy for ``n_envs`` copies.

    Args:
        capacity: rows kept per copy; the oldest are overwritten first. Final rows
            after truncations take one row each.
        n_envs: copies written side by side.
        obs_shape, obs_dtype: one observation.
        action_shape, action_dtype: one stored action (``()`` and int64 for
            ``Discrete``, ``(A,)`` float32 in tanh units for ``Box``).
        action_feature_size: ``A'``, the width of the previous-action features.
        burn_in, sequence_length: a window has ``burn_in + sequence_length + 1`` rows.
        state_spec: per actor-memory tensor, its shape without the batch dimension and
            its dtype; ``None`` stores no states.
        device: where the rows live and batches are returned.
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
        state_spec: tuple[StateSpec, ...] | None = None,
        device: torch.device | str = "cpu",
    ) -> None:
        self.window = burn_in + sequence_length + 1
        if capacity < self.window:
            raise ValueError(
                f"the buffer keeps {capacity} rows per copy, fewer than one window of "
                f"burn_in + sequence_length + 1 = {self.window}; raise buffer_size to at least "
                f"{self.window} * n_envs = {self.window * n_envs}"
            )
        self.capacity, self.n_envs = capacity, n_envs
        self.burn_in, self.sequence_length = burn_in, sequence_length
        self.device = torch.device(device)
        c, n, dev = capacity, n_envs, self.device
        # torch.empty: pages are only touched as rows are written, so a large buffer_size
        # costs memory as it fills; rows are read only once written.
        self.obs = torch.empty((c, n, *obs_shape), dtype=obs_dtype, device=dev)
        self.prev_actions = torch.empty((c, n, action_feature_size), dtype=torch.float32, device=dev)
        self.actions = torch.empty((c, n, *action_shape), dtype=action_dtype, device=dev)
        self.rewards = torch.empty((c, n), dtype=torch.float32, device=dev)
        self.terminated = torch.empty((c, n), dtype=torch.bool, device=dev)
        self.episode_starts = torch.empty((c, n), dtype=torch.bool, device=dev)
        self.final = torch.empty((c, n), dtype=torch.bool, device=dev)
        self.states: tuple[Tensor, ...] | None = None
        if state_spec is not None:
            self.states = tuple(torch.empty((c, n, *shape), dtype=dt, device=dev) for shape, dt in state_spec)
        # Per copy: the next row to write, and how many rows are held.
        self.pos = np.zeros(n, dtype=np.int64)
        self.size = np.zeros(n, dtype=np.int64)
        self._all = torch.arange(n, device=dev)

    @property
    def stores_states(self) -> bool:
        return self.states is not None

    def num_windows(self) -> int:
        """How many distinct windows can be sampled now."""
        return int(np.maximum(self.size - self.window + 1, 0).sum())

    def _advance(self, copies: np.ndarray) -> None:
        self.pos[copies] = (self.pos[copies] + 1) % self.capacity
        self.size[copies] = np.minimum(self.size[copies] + 1, self.capacity)

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
        """Write one step of every copy (each argument ``[N, ...]``, ``actor_state`` the
        actor's memory before the step, ignored unless states are stored)."""
        rows = torch.as_tensor(self.pos, device=self.device)
        idx = (rows, self._all)
        self.obs[idx] = obs
        self.prev_actions[idx] = prev_actions
        self.actions[idx] = actions
        self.rewards[idx] = rewards
        self.terminated[idx] = terminated
        self.episode_starts[idx] = episode_starts
        self.final[idx] = False
        if self.states is not None:
            for store, s in zip(self.states, actor_state, strict=True):
                store[idx] = s
        self._advance(np.arange(self.n_envs))

    def add_final(
        self,
        copies: np.ndarray,
        final_obs: Tensor,
        last_actions: Tensor,
        actor_state: tuple[Tensor, ...] = (),
    ) -> None:
        """Write the final row of the truncated episodes of ``copies [K]``:
        ``final_obs [K, *obs_shape]``, the episodes' last action features
        ``[K, A']`` and the actor's memory after the last step (``[K, ...]`` each)."""
        copies = np.asarray(copies, dtype=np.int64)
        idx = (
            torch.as_tensor(self.pos[copies], device=self.device),
            torch.as_tensor(copies, device=self.device),
        )
        self.obs[idx] = final_obs
        self.prev_actions[idx] = last_actions
        self.actions[idx] = 0
        self.rewards[idx] = 0.0
        self.terminated[idx] = False
        self.episode_starts[idx] = False
        self.final[idx] = True
        if self.states is not None:
            for store, s in zip(self.states, actor_state, strict=True):
                store[idx] = s
        self._advance(copies)

    def sample(self, batch_size: int, generator: torch.Generator) -> SequenceBatch:
        """``batch_size`` windows drawn uniformly (with replacement) from every window
        of ``W`` consecutive rows of one copy that the buffer holds.

        Args:
            batch_size: ``B``.
            generator: a CPU generator for the draws.

        Raises:
            RuntimeError: no copy holds a whole window yet.
        """
        avail = np.maximum(self.size - self.window + 1, 0)  # [N] window starts per copy
        total = int(avail.sum())
        if total == 0:
            raise RuntimeError(
                f"no copy holds a whole window of {self.window} rows yet (rows held: {self.size.tolist()})"
            )
        draw = torch.randint(total, (batch_size,), generator=generator).numpy()
        ends = np.cumsum(avail)
        copy = np.searchsorted(ends, draw, side="right")  # [B]
        offset = draw - (ends - avail)[copy]  # [B] chronological index of the window start
        first = (self.pos[copy] - self.size[copy] + offset) % self.capacity  # [B] ring row
        rows = (first[None, :] + np.arange(self.window)[:, None]) % self.capacity  # [W, B]
        rows_t = torch.as_tensor(rows, device=self.device)
        copy_t = torch.as_tensor(copy, device=self.device).expand(self.window, -1)
        idx = (rows_t, copy_t)
        state: tuple[Tensor, ...] = ()
        if self.states is not None:
            state_idx = (rows_t[self.burn_in], copy_t[0])
            state = tuple(store[state_idx] for store in self.states)
        return SequenceBatch(
            obs=self.obs[idx],
            prev_actions=self.prev_actions[idx],
            actions=self.actions[idx],
            rewards=self.rewards[idx],
            terminated=self.terminated[idx],
            episode_starts=self.episode_starts[idx],
            final=self.final[idx],
            actor_state=state,
        )
