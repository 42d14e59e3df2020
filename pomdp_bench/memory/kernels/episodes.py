"""Episode bookkeeping from ``episode_starts``: positions and reset-masked input windows.

The kinds that look back over a fixed number of steps (framestack, the mamba
convolution, the transformer's attention window) must never reach across an
episode start. A step's position within its episode answers that question for
every lag at once: the step ``lag`` steps back is in the same episode exactly when
``lag <= position``.
"""

from __future__ import annotations

import torch
from torch import Tensor


def positions_in_episode(starts: Tensor, offset: Tensor | int) -> Tensor:
    """How many steps of its episode precede each step.

    Args:
        starts: ``[T, B]`` bool, step ``t`` begins an episode.
        offset: ``[B]`` or an int, the position of step 0 when it does not begin an
            episode (the steps the episode had before this call).

    Returns:
        ``[T, B]`` int64: 0 at a start, counting up by one per step after it;
        ``offset + t`` before the first start.
    """
    steps = torch.arange(starts.shape[0], device=starts.device).unsqueeze(1)  # [T, 1]
    last_start = torch.where(starts, steps, -1).cummax(dim=0).values  # [T, B]
    return torch.where(last_start >= 0, steps - last_start, steps + offset)


def lag_mask(positions: Tensor, window: int) -> Tensor:
    """Which of the last ``window`` steps lie in the same episode as each step.

    Args:
        positions: ``[T, B]`` from :func:`positions_in_episode`.
        window: how many steps a window holds (the step itself included).

    Returns:
        ``[T, B, window]`` bool, oldest first: entry ``i`` is the step
        ``window - 1 - i`` steps back, true when it is in the same episode.
    """
    lags = torch.arange(window - 1, -1, -1, device=positions.device)  # [window], oldest first
    return lags <= positions.unsqueeze(-1)


def history_windows(x: Tensor, history: Tensor, starts: Tensor) -> tuple[Tensor, Tensor]:
    """The last ``K`` inputs at every step, zero where they precede the episode start.

    Args:
        x: ``[T, B, D]`` inputs.
        history: ``[B, K - 1, D]`` the ``K - 1`` inputs before step 0, oldest first,
            already zero where they precede their episode's start (a zero history is a
            fresh episode).
        starts: ``[T, B]`` bool episode starts.

    Returns:
        ``windows [T, B, K, D]`` (oldest first, the current step last) and the history
        to carry into the next call, ``[B, K - 1, D]``, zeroed the same way.
    """
    size = history.shape[1] + 1
    extended = torch.cat([history.transpose(0, 1), x], dim=0)  # [K - 1 + T, B, D]
    windows = extended.unfold(0, size, 1).movedim(-1, 2)  # [T, B, K, D]
    # The history is zero wherever it is stale, so before the first start it all counts.
    valid = lag_mask(positions_in_episode(starts, size - 1), size)  # [T, B, K]
    windows = windows * valid.unsqueeze(-1).to(windows.dtype)
    # contiguous: a stored state must not keep the whole window tensor alive.
    return windows, windows[-1, :, 1:].contiguous()
