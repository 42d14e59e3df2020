"""The classic T-Maze of Ni et al. 2023, passive and active, with its vectorized twin.

"When do transformers shine in RL? Decoupling memory from credit assignment"
(Ni, Ma, Eysenbach, Bacon; arXiv 2307.03864), after Bakker 2001. The layout,
with ``o`` the oracle cell, ``s`` the start, ``J`` the T-junction and ``G``/``g``
the two arms, one of which holds the goal::

                      G        y = +1
    o s - - - - - - - J        y =  0
                      g        y = -1

    x: 0 1 ...          o+L    (o = 0 passive, 1 active; L = corridor_length)

Implementation: the whole state of a copy (cell, goal side, whether the oracle
was seen, how far ahead of schedule it is) is one integer, so a step is a lookup
in a precomputed transition table, and the observation and the reward are
lookups too. That keeps the vectorized twin to a handful of numpy ops per step
however long the corridor is.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode

from pomdp_bench.envs.batched import Batch, BatchedEnv, BatchedVectorEnv
from pomdp_bench.validation import check_bool, check_int

#: The largest ``corridor_length`` accepted: the lookup tables grow linearly with it (15 MB here).
MAX_CORRIDOR_LENGTH = 10_000

# Actions as in the reference implementation: 0 right, 1 up, 2 left, 3 down.
RIGHT, UP, LEFT, DOWN = 0, 1, 2, 3
_DX = np.array([1, 0, -1, 0])
_DY = np.array([0, 1, 0, -1])
_NUM_ACTIONS = 4

_RENDER_MODES = ["ansi", "rgb_array"]
_CELL_PX = 10  # side of one maze cell in rgb_array frames, in pixels
_COLOURS = {
    "wall": (40, 40, 40),
    "floor": (200, 200, 200),
    "oracle": (150, 100, 210),
    "goal": (60, 180, 75),
    "wrong": (220, 60, 60),
    "agent": (255, 200, 0),
}


class TMazeBatch(Batch):
    """``num_envs`` copies of the T-Maze, each state one integer key into lookup tables.

    A copy's state is ``(cell, goal, seen, lead)``:

    - ``cell``: ``0..J`` the corridor (``x = cell``, ``J = o + L`` the junction),
      ``J + 1`` the upper arm, ``J + 2`` the lower arm;
    - ``goal``: 0 when the goal is the upper arm (``y = +1``), 1 the lower (``y = -1``);
    - ``seen``: whether the copy stood on the oracle cell at an earlier step (the
      cue shows only on the first visit);
    - ``lead``: ``x - (t - o)``, how far ahead of schedule the copy is, clipped
      below at -1. No move gains more than one cell a step, so the lead never
      grows: once behind (lead < 0) a copy stays behind, and the clipped lead is
      exact. It makes the per-step penalty a lookup instead of arithmetic on ``t``.

    The key is ``4 * state_id``, so that ``key + action`` indexes the transition
    table directly; the other tables are repeated 4 times to be indexed by the key.
    """

    def __init__(self, num_envs: int, corridor_length: int, active: bool, penalty: str = "corridor") -> None:
        super().__init__(num_envs)
        self.corridor_length = corridor_length
        self.active = active
        self.penalty = penalty
        self.oracle_length = 1 if active else 0
        o, length = self.oracle_length, corridor_length
        self.junction = o + length
        # Passive: L moves right and one turn. Active: one step left to the oracle and back too.
        self.episode_length = length + 1 + 2 * o
        # Ni et al.'s reference charges 1/L a step behind schedule (v1); v0 charged 1/T.
        self.step_penalty = 1.0 / (length if penalty == "corridor" else self.episode_length)
        self.single_observation_space = spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32)
        self.single_action_space = spaces.Discrete(_NUM_ACTIONS)
        self._build_tables()
        self._key = np.zeros(num_envs, dtype=np.int64)  # [N] 4 * state id
        self._t = np.zeros(num_envs, dtype=np.int64)  # [N] steps taken this episode

    # State ids: ((goal * 2 + seen) * n_lead + lead + 1) * n_cells + cell.
    def _encode(self, cell: Any, goal: Any, seen: Any, lead: Any) -> Any:
        return ((goal * 2 + seen) * self._n_lead + lead + 1) * self._n_cells + cell

    def _decode(self, state: int) -> tuple[int, int, int, int]:
        rest, cell = divmod(state, self._n_cells)
        rest, lead = divmod(rest, self._n_lead)
        goal, seen = divmod(rest, 2)
        return cell, goal, seen, lead - 1

    def _cell_xy(self, cell: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        j = self.junction
        x = np.minimum(cell, j)
        y = np.where(cell == j + 1, 1, np.where(cell == j + 2, -1, 0))
        return x, y

    def _build_tables(self) -> None:
        """Precompute, for every state, its successor under each action, observation and rewards."""
        j, o = self.junction, self.oracle_length
        self._n_cells = j + 3
        # The lead runs over -1..2o: a copy starts o cells right of the oracle, whose column is
        # on schedule at t = o, so its start lead is 2o.
        self._n_lead = 2 * o + 2
        cell, goal, seen, lead = np.meshgrid(
            np.arange(self._n_cells),
            np.arange(2),
            np.arange(2),
            np.arange(-1, 2 * o + 1),
            indexing="ij",
        )
        cell, goal, seen, lead = (a.ravel() for a in (cell, goal, seen, lead))
        state = self._encode(cell, goal, seen, lead)  # a permutation of 0..S-1
        num_states = state.size
        x, y = self._cell_xy(cell)

        nxt = np.empty((num_states, _NUM_ACTIONS), dtype=np.int64)
        for a in range(_NUM_ACTIONS):  # a loop over 4 actions at build time, not over copies
            nx, ny = x + _DX[a], y + _DY[a]
            on_corridor = (ny == 0) & (nx >= 0) & (nx <= j)
            on_arm = (nx == j) & (np.abs(ny) == 1)
            moved = on_corridor | on_arm  # into a wall: stay put
            nx, ny = np.where(moved, nx, x), np.where(moved, ny, y)
            ncell = np.where(ny == 0, nx, np.where(ny == 1, j + 1, j + 2))
            nseen = seen | (cell == 0)
            nlead = np.maximum(lead + (nx - x) - 1, -1)
            nxt[state, a] = self._encode(ncell, goal, nseen, nlead)

        goal_y = np.where(goal == 0, 1, -1)
        cue_now = (cell == 0) & (seen == 0)  # standing on the oracle for the first time
        obs = np.zeros((num_states, 2), dtype=np.float32)
        obs[state, 0] = cell >= j
        obs[state, 1] = np.where(cell >= j, y, np.where(cue_now, goal_y, 0))
        penalty = np.zeros(num_states, dtype=np.float32)
        penalty[state] = np.where(lead < 0, -self.step_penalty, 0.0)
        goal_reward = np.zeros(num_states, dtype=np.float32)
        goal_reward[state] = (cell > j) & (y == goal_y)

        # Indexed by key = 4 * state id (see the class docstring).
        self._next = (4 * nxt).ravel()  # [4S] key of the successor of (key + action)
        self._obs = np.repeat(obs, _NUM_ACTIONS, axis=0)  # [4S, 2]
        self._penalty = np.repeat(penalty, _NUM_ACTIONS)  # [4S] reward of a non-final step
        self._goal_reward = np.repeat(goal_reward, _NUM_ACTIONS)  # [4S] reward of the final step
        start = np.arange(2)
        self._start_key = 4 * self._encode(o, start, 0, 2 * o)  # [2] by goal

    @property
    def goal(self) -> np.ndarray:
        """``[N] int`` the goal side of each copy: +1 upper arm, -1 lower arm (hidden from the agent)."""
        goal = self._key // 4 // (self._n_cells * self._n_lead * 2)
        return np.where(goal == 0, 1, -1)

    def reset_copies(self, idx: np.ndarray) -> None:
        goal = self.streams.integers(idx, 0, 2)  # 0: upper arm, 1: lower arm
        self._key[idx] = self._start_key[goal]
        self._t[idx] = 0

    def step(self, action: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        key = self._next.take(self._key + action)
        self._key = key
        self._t += 1
        done = self._t >= self.episode_length
        reward = self._penalty.take(key)
        # Every copy ends at the same step of its episode, so this runs on 1 step in T.
        if done.any():
            rows = np.flatnonzero(done)
            reward[rows] = self._goal_reward.take(key[rows])
        return reward, done, np.zeros(self.num_envs, dtype=np.bool_)

    def observe(self) -> np.ndarray:
        # A fresh array: callers may keep it (final_obs) while the state moves on.
        return self._obs.take(self._key, axis=0)

    def render_copy(self, i: int, mode: str) -> Any:
        cell, goal, seen, lead = self._decode(int(self._key[i]) // 4)
        j = self.junction
        x, y = (int(v) for v in self._cell_xy(np.array(cell)))
        goal_y = 1 if goal == 0 else -1
        if mode == "ansi":
            corridor = ["o", *("-" * (j - 1)), "J"]
            arm = {goal_y: "G", -goal_y: "x"}
            rows = {1: [" "] * j + [arm[1]], 0: corridor, -1: [" "] * j + [arm[-1]]}
            rows[y][x] = "A"
            cue = "shown now" if cell == 0 and not seen else ("seen" if seen else "not seen")
            t = int(self._t[i])
            schedule = "over" if t >= self.episode_length else ("behind" if lead < 0 else "on schedule")
            header = (
                f"t={t}/{self.episode_length}  goal={'up' if goal_y > 0 else 'down'}  cue {cue}  {schedule}"
            )
            return "\n".join([header, *("".join(rows[r]) for r in (1, 0, -1))]) + "\n"
        if mode == "rgb_array":
            grid = np.empty((3, j + 1, 3), dtype=np.uint8)  # rows y = +1, 0, -1
            grid[:] = _COLOURS["wall"]
            grid[1] = _COLOURS["floor"]
            grid[1, 0] = _COLOURS["oracle"]
            grid[1 - goal_y, j] = _COLOURS["goal"]
            grid[1 + goal_y, j] = _COLOURS["wrong"]
            frame = np.repeat(np.repeat(grid, _CELL_PX, axis=0), _CELL_PX, axis=1)
            r, c, m = (1 - y) * _CELL_PX, x * _CELL_PX, _CELL_PX // 5
            frame[r + m : r + _CELL_PX - m, c + m : c + _CELL_PX - m] = _COLOURS["agent"]
            return frame
        raise ValueError(f"render mode {mode!r} is not supported: use one of {_RENDER_MODES}")


#: ``penalty`` values: what the per-step penalty for being behind schedule divides 1 by.
PENALTIES = ("corridor", "episode")


def _make_batch(num_envs: int, corridor_length: int, active: bool, penalty: str) -> TMazeBatch:
    length = check_int("corridor_length", corridor_length, minimum=1, maximum=MAX_CORRIDOR_LENGTH)
    if penalty not in PENALTIES:
        raise ValueError(f"penalty must be one of {list(PENALTIES)}, got {penalty!r}")
    return TMazeBatch(num_envs, length, check_bool("active", active), penalty)


class TMazeEnv(BatchedEnv):
    """The classic T-Maze (Ni et al. 2023): remember the cue to turn to the goal at the junction.

    The agent walks a corridor of ``corridor_length`` cells to a T-junction and
    turns up or down at the last step. Only the oracle cell at the corridor's
    left end shows which arm holds the goal, and only on the agent's first visit.
    **Passive** (``TMaze-v1``): the agent starts on the oracle cell. **Active**
    (``TMazeActive-v1``, ``active=True``): it starts one cell right of it and
    must step back left to see the cue, which costs the two spare steps it has.

    Versions: ``-v1`` charges the reference implementation's ``-1/L`` a step behind
    schedule (Memory-RL's ``configs/envs/tmaze_passive.py`` and ``tmaze_active.py``);
    ``-v0`` (``penalty="episode"``) charged ``-1/T``. Everything else is the same.

    | | |
    |---|---|
    | Observation | `Box(-1, 1, (2,), float32)`: see the table below; the same 2 numbers for any `corridor_length` |
    | Action | `Discrete(4)`: 0 right (+x), 1 up (+y), 2 left (-x), 3 down (-y); a move into a wall stays put |
    | Reward | final step: 1 in the goal arm, 0 elsewhere; every other step: `-1/L` (v0: `-1/T`) if the agent is behind schedule, else 0 |
    | Termination | after exactly `T` steps: `T = L + 1` passive, `L + 3` active (`L = corridor_length`) |
    | Truncation | never (the horizon is part of the task, so it ends with `terminated=True`) |
    | Memory horizon | `L` steps passive (cue at step 0, turn at step `L`), `L + 1` active (cue at step 1, turn at step `L + 2`) |
    | Optimal return | 1.0 |
    | Feedforward ceiling | 0.5 (analytic, derived below) |

    **Observation** ``[junction, signal]`` (the "ambiguous position" encoding of the
    reference implementation, so corridor cells look alike):

    | Where the agent is | Observation |
    |---|---|
    | oracle cell, first visit | `[0, +1]` goal up, `[0, -1]` goal down |
    | oracle cell again, or any corridor cell before the junction | `[0, 0]` |
    | T-junction | `[1, 0]` |
    | upper arm / lower arm | `[1, +1]` / `[1, -1]` |

    **Reward.** Let ``t`` be the number of steps taken (after this one) and
    ``o`` the oracle length (0 passive, 1 active). The schedule is ``x = t - o``:
    the fastest walk to the junction, via the oracle in the active maze. A
    non-final step with ``x < t - o`` gives ``-1/L`` (``-1/T`` with
    ``penalty="episode"``, the v0 ids); the final step gives 1 if
    the agent stands in the goal arm and 0 otherwise, with no penalty (at ``t = T``
    no cell is on schedule). The optimal policy (passive: ``L`` times right, then
    towards the cue; active: left, ``L + 1`` times right, then towards the cue)
    is never behind and scores 1.0.

    **Feedforward ceiling 0.5.** A policy that sees only the current observation
    acts on ``[1, 0]`` at the junction the same way whatever the goal, so it
    enters the goal arm with probability at most 1/2 (the goal is uniform). The
    cue could only be carried in the agent's position or timing, but there is no
    slack for that: the passive maze needs all ``L + 1`` steps for the walk and the
    turn, and in the active maze seeing the cue uses both spare steps, so any
    cue-dependent detour arrives too late to turn. Walking right and turning up
    (then holding still) is never behind and scores 0.5 in expectation.

    Args:
        corridor_length: ``L``, cells from the oracle column to the junction, in
            ``[1, 10000]``; the observation does not grow with it.
        active: ``False`` for the passive maze, ``True`` for the active one.
        penalty: ``"corridor"`` (``-1/L`` a step behind schedule, the reference and
            the v1 ids) or ``"episode"`` (``-1/T``, the v0 ids).
        render_mode: ``None``, ``"ansi"`` (a text picture) or ``"rgb_array"``
            (``[30, 10 (o + L + 1), 3] uint8``).
    """

    metadata: dict[str, Any] = {"render_modes": _RENDER_MODES, "render_fps": 4}

    def __init__(
        self,
        corridor_length: int = 10,
        active: bool = False,
        penalty: str = "corridor",
        render_mode: str | None = None,
    ) -> None:
        self._init_batch(_make_batch(1, corridor_length, active, penalty), render_mode)


class TMazeVectorEnv(BatchedVectorEnv):
    """``num_envs`` copies of :class:`TMazeEnv`, stepped together with numpy array ops.

    Copy ``i`` reset with ``seed=s`` plays exactly the episodes of a single
    :class:`TMazeEnv` reset with ``seed=s + i``. Autoresets like Gymnasium's
    vector envs (``autoreset_mode`` ``NEXT_STEP`` or ``SAME_STEP``).

    Args:
        num_envs: how many copies, ``>= 1``.
        corridor_length: as in :class:`TMazeEnv`.
        active: as in :class:`TMazeEnv`.
        penalty: as in :class:`TMazeEnv`.
        autoreset_mode: Gymnasium's autoreset mode.
        render_mode: as in :class:`TMazeEnv`; ``render()`` returns one frame per copy.
    """

    metadata: dict[str, Any] = {"render_modes": _RENDER_MODES, "render_fps": 4}

    def __init__(
        self,
        num_envs: int = 1,
        corridor_length: int = 10,
        active: bool = False,
        penalty: str = "corridor",
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        render_mode: str | None = None,
    ) -> None:
        num_envs = check_int("num_envs", num_envs, minimum=1)
        self._init_batch(_make_batch(num_envs, corridor_length, active, penalty), autoreset_mode, render_mode)
