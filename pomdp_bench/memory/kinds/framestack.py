"""``framestack``: the last ``window`` inputs side by side, the cheap-memory baseline
that POPGym ships."""

from __future__ import annotations

import dataclasses

from torch import Tensor

from pomdp_bench.memory.base import Memory, State, StateSpec
from pomdp_bench.memory.config import MemoryConfig
from pomdp_bench.memory.kernels.episodes import history_windows
from pomdp_bench.memory.options import LegacyKeys
from pomdp_bench.memory.registry import register_memory


@dataclasses.dataclass(frozen=True)
class FrameStackOptions(LegacyKeys):
    """Settings of ``framestack``.

    Args:
        window: how many inputs are concatenated. Default 32.
    """

    window: int = 32

    def __post_init__(self) -> None:
        self._check_ints("window")


class FrameStackMemory(Memory):
    """Concatenates the last ``window`` inputs: ``[T, B, D] -> [T, B, window * D]``.

    The oldest input comes first and the current one last; inputs from before the
    episode start are zeros. It has no parameters, so nothing trains through time.

    State: ``(history [B, window - 1, D],)``, the inputs before the next step, oldest
    first, zero where they precede the episode start.
    """

    kind = "framestack"
    trains_through_time = False

    @classmethod
    def visible_past(cls, config: MemoryConfig) -> tuple[int, str] | None:
        """``window - 1`` steps back, bounded by its ``"frames"``."""
        return int(config.window) - 1, "frames"

    def __init__(self, config: MemoryConfig, input_size: int) -> None:
        super().__init__(config, input_size, output_size=config.window * input_size)
        self.window = config.window

    def state_spec(self) -> tuple[StateSpec, ...]:
        return (((self.window - 1, self.input_size), True),)

    def _forward(self, x: Tensor, state: State, starts: Tensor) -> tuple[Tensor, State]:
        windows, history = history_windows(x, state[0], starts)  # [T, B, window, D]
        return windows.flatten(2), (history,)


register_memory("framestack", FrameStackMemory, options=FrameStackOptions)
