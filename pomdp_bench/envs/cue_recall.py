"""Cue recall: see a cue, wait out a delay, then name the cue. With its vectorized twin.

The plainest memory test: nothing the agent does matters except its answer at
the query step, and nothing it sees then tells the answer. Timeline of one
episode (``D = delay``, ``Q = D + 1``, ``R = reward_delay``)::

    step t:        0        1 ... D        Q = D + 1                Q + 1 ... Q + R
    observation:   cue      blank          blank, query flag on     blank
    action:        ignored  ignored        names the cue            ignored
    reward:        0        0              1 or 0 if R = 0          1 or 0 at Q + R
                                           (then terminated)        (then terminated)

``reward_delay`` separates how long the task must remember (``D + 1`` steps, cue to
answer) from how long its reward takes to come back (``R`` steps, answer to reward):
Ni et al.'s memory length and credit-assignment length.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode

from pomdp_bench.envs.batched import Batch, BatchedEnv, BatchedVectorEnv
from pomdp_bench.validation import check_int

# The observation table has (num_cues + delay + 2) x (num_cues + 2) float32 entries:
# 11 MB at the largest values accepted.
MAX_DELAY = 10_000
MAX_NUM_CUES = 256
MAX_REWARD_DELAY = 10_000

_RENDER_MODES = ["ansi", "rgb_array"]
_CELL_PX = 16  # side of one cue square in rgb_array frames, in pixels
_COLOURS = {
    "background": (40, 40, 40),
    "cue_off": (90, 90, 90),
    "cue_on": (255, 200, 0),
    "hidden_cue": (120, 100, 40),  # the cue the agent must name, while it is not shown
    "time": (70, 130, 230),
    "query": (220, 60, 60),
}


class CueRecallBatch(Batch):
    """``num_envs`` copies of cue recall.

    A copy's state is its cue ``[N]`` and the row ``[N]`` of a precomputed
    observation table that it shows: rows ``0..K-1`` are step 0 showing cue
    ``k``, row ``K + t - 1`` is step ``t >= 1`` (blank cue), so row ``K + D`` is
    the query, rows ``K + D + 1 .. K + D + R`` are the blank steps until the
    reward, and the last row follows it. The observation is then one lookup, with no
    per-step arithmetic on the one-hot. ``_correct [N]`` holds whether the answer named
    the cue, from the query step until the reward pays it.
    """

    def __init__(self, num_envs: int, num_cues: int, delay: int, reward_delay: int = 0) -> None:
        super().__init__(num_envs)
        self.num_cues = num_cues
        self.delay = delay
        self.reward_delay = reward_delay
        self.query_step = delay + 1  # the step whose action is scored
        self.reward_step = self.query_step + reward_delay  # the step that pays the answer
        self.episode_length = delay + 2 + reward_delay
        self.single_observation_space = spaces.Box(0.0, 1.0, shape=(num_cues + 2,), dtype=np.float32)
        self.single_action_space = spaces.Discrete(num_cues)

        k, q, p = num_cues, self.query_step, self.reward_step
        step = np.concatenate([np.zeros(k, dtype=np.int64), np.arange(1, p + 2)])  # [K + P + 1] t by row
        self._obs = np.zeros((k + p + 1, k + 2), dtype=np.float32)  # [rows, K + 2]
        self._obs[np.arange(k), np.arange(k)] = 1.0
        self._obs[:, k] = np.maximum(q - step, 0) / q
        self._obs[:, k + 1] = step == q
        self._step_of_row = step
        self._next_row = np.minimum(np.maximum(np.arange(k + p + 1) + 1, k), k + p)  # [rows]
        self._query_row = k + q - 1
        self._reward_row = k + p - 1
        self._cue = np.zeros(num_envs, dtype=np.int64)  # [N]
        self._row = np.zeros(num_envs, dtype=np.int64)  # [N]
        self._correct = np.zeros(num_envs, dtype=np.bool_)  # [N] the answer named the cue

    def reset_copies(self, idx: np.ndarray) -> None:
        cue = self.streams.integers(idx, 0, self.num_cues)
        self._cue[idx] = cue
        self._row[idx] = cue
        self._correct[idx] = False

    def step(self, action: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        query = self._row == self._query_row  # [N] this action answers the query
        self._correct = np.where(query, action == self._cue, self._correct)  # other actions count for nothing
        paid = self._row == self._reward_row  # [N] the answer's reward arrives now (at the query if R = 0)
        reward = (self._correct & paid).astype(np.float32)
        self._row = self._next_row.take(self._row)
        return reward, paid, np.zeros(self.num_envs, dtype=np.bool_)

    def observe(self) -> np.ndarray:
        # A fresh array: callers may keep it (final_obs) while the state moves on.
        return self._obs.take(self._row, axis=0)

    def render_copy(self, i: int, mode: str) -> Any:
        row, cue, k, q = int(self._row[i]), int(self._cue[i]), self.num_cues, self.query_step
        t, remaining = int(self._step_of_row[row]), float(self._obs[row, k])
        if mode == "ansi":
            marks = ["*" if t == 0 and c == cue else "." for c in range(k)]
            phase = "cue shown" if t == 0 else ("QUERY: name the cue" if t == q else "waiting")
            if t > q:
                phase = "answered, reward pending" if t <= self.reward_step else "answered"
            bar_len = 20
            bar = "#" * round(remaining * bar_len) + "." * (bar_len - round(remaining * bar_len))
            return (
                f"t={t}/{self.episode_length}  cue={cue} ({'visible' if t == 0 else 'hidden'})\n"
                f"cues [{' '.join(marks)}]  time left [{bar}]  {phase}\n"
            )
        if mode == "rgb_array":
            # Row 0: the cue squares; row 1: the time-remaining bar; row 2: the query light.
            width = max(k, 8) * _CELL_PX
            frame = np.empty((3 * _CELL_PX, width, 3), dtype=np.uint8)
            frame[:] = _COLOURS["background"]
            m = _CELL_PX // 8
            for c in range(k):  # a loop over cue squares of one frame, not over copies
                colour = "cue_off"
                if c == cue:
                    colour = "cue_on" if t == 0 else "hidden_cue"
                frame[m : _CELL_PX - m, c * _CELL_PX + m : (c + 1) * _CELL_PX - m] = _COLOURS[colour]
            frame[_CELL_PX + m : 2 * _CELL_PX - m, : round(remaining * width)] = _COLOURS["time"]
            if t == q:
                frame[2 * _CELL_PX + m : 3 * _CELL_PX - m, m : _CELL_PX - m] = _COLOURS["query"]
            return frame
        raise ValueError(f"render mode {mode!r} is not supported: use one of {_RENDER_MODES}")


def _make_batch(num_envs: int, num_cues: int, delay: int, reward_delay: int) -> CueRecallBatch:
    num_cues = check_int("num_cues", num_cues, minimum=2, maximum=MAX_NUM_CUES)
    delay = check_int("delay", delay, minimum=1, maximum=MAX_DELAY)
    reward_delay = check_int("reward_delay", reward_delay, minimum=0, maximum=MAX_REWARD_DELAY)
    return CueRecallBatch(num_envs, num_cues, delay, reward_delay)


class CueRecallEnv(BatchedEnv):
    """Cue recall: one of ``num_cues`` cues shows at step 0; name it after ``delay`` blank steps.

    | | |
    |---|---|
    | Observation | `Box(0, 1, (K + 2,), float32)`: `[cue one-hot (K), time remaining, query flag]`, `K = num_cues` |
    | Action | `Discrete(K)`: at the query step, the cue the agent names; ignored at every other step |
    | Reward | 1 if the action at the query step names the cue, else 0, paid `R = reward_delay` steps later; 0 at every other step |
    | Termination | right after the reward step: `T = D + 2 + R` steps (`D = delay`) |
    | Truncation | never (the episode length is part of the task) |
    | Memory horizon | `D + 1` steps (cue seen at step 0, named at step `D + 1`) |
    | Optimal return | 1.0 |
    | Feedforward ceiling | `1 / K` (0.25 by default; analytic, derived below) |

    **Observation** at step ``t`` (``Q = D + 1`` is the query step):

    | Index | Meaning | Values |
    |---|---|---|
    | `0 .. K-1` | the cue, one-hot, at `t = 0`; all zero afterwards | {0, 1} |
    | `K` | time remaining until the query, `(Q - t) / Q` | 1 at `t = 0` .. 0 at `t = Q` |
    | `K + 1` | query flag: 1 exactly at `t = Q`, when the action is scored | {0, 1} |

    The observations after the answer (until the reward, and the final one) are all zero.

    **Feedforward ceiling 1/K.** The query observation ``[0, ..., 0, 0, 1]`` is the
    same whatever the cue, and nothing the agent did before changes anything, so
    a memoryless policy names cue ``k`` with probabilities ``pi(k)`` that do not
    depend on the cue. With the cue uniform, it is right with probability
    ``sum_k pi(k) / K = 1 / K``, whatever ``pi``. A policy that remembers the cue
    is always right: 1.0.

    Args:
        num_cues: ``K``, how many cues, in ``[2, 256]``.
        delay: ``D``, blank steps between the cue and the query, in ``[1, 10000]``.
        reward_delay: ``R``, steps from the answer to its reward, in ``[0, 10000]``
            (default 0: paid at the answer). The steps between are blank and their
            actions ignored; the optimum and the ceiling do not change.
        render_mode: ``None``, ``"ansi"`` (a text picture) or ``"rgb_array"``
            (``[48, 16 max(K, 8), 3] uint8``).
    """

    metadata: dict[str, Any] = {"render_modes": _RENDER_MODES, "render_fps": 4}

    def __init__(
        self, num_cues: int = 4, delay: int = 10, reward_delay: int = 0, render_mode: str | None = None
    ) -> None:
        self._init_batch(_make_batch(1, num_cues, delay, reward_delay), render_mode)


class CueRecallVectorEnv(BatchedVectorEnv):
    """``num_envs`` copies of :class:`CueRecallEnv`, stepped together with numpy array ops.

    Copy ``i`` reset with ``seed=s`` plays exactly the episodes of a single
    :class:`CueRecallEnv` reset with ``seed=s + i``. Autoresets like Gymnasium's
    vector envs (``autoreset_mode`` ``NEXT_STEP`` or ``SAME_STEP``).

    Args:
        num_envs: how many copies, ``>= 1``.
        num_cues: as in :class:`CueRecallEnv`.
        delay: as in :class:`CueRecallEnv`.
        reward_delay: as in :class:`CueRecallEnv`.
        autoreset_mode: Gymnasium's autoreset mode.
        render_mode: as in :class:`CueRecallEnv`; ``render()`` returns one frame per copy.
    """

    metadata: dict[str, Any] = {"render_modes": _RENDER_MODES, "render_fps": 4}

    def __init__(
        self,
        num_envs: int = 1,
        num_cues: int = 4,
        delay: int = 10,
        reward_delay: int = 0,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        render_mode: str | None = None,
    ) -> None:
        num_envs = check_int("num_envs", num_envs, minimum=1)
        self._init_batch(_make_batch(num_envs, num_cues, delay, reward_delay), autoreset_mode, render_mode)
