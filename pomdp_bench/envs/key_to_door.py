"""Key-to-Door of Ni et al. 2023, after Hung et al. 2019, with its vectorized twin.

"When do transformers shine in RL? Decoupling memory from credit assignment"
(Ni, Ma, Eysenbach, Bacon; NeurIPS 2023). Their code (Memory-RL,
``envs/key_to_door``) runs DeepMind's pycolab game from TVT (Hung et al. 2019).
This module follows its rules, vectorised in numpy over copies. An episode has
three phases, each on its own 7 x 11 board (``#`` wall, ``k`` key, ``d`` door,
``a`` apple, ``+`` player start; cells outside a board look like empty floor)::

    explore (E steps)    distractor (D steps)    reward (R steps)
      #######            ###########
      #kkkkk#            #a a a a a#              ##d##
      #kkkkk#            # a a a a #              #   #
      ##   ##            #a a a a a#              # + #
      #+++++#            # a a a a #              #   #
      #+++++#            #a a + a a#              #####
      #######            ###########

Explore: one key on one of the 10 ``k`` cells and the player on one of the 10
``+`` cells, both uniform. Stepping onto the key picks it up. Distractor:
``num_apples`` apples on a uniform subset of the 22 ``a`` cells; each pickup pays
``apple_reward``. Reward: the door is a wall unless the key was picked up;
stepping onto it with the key pays ``final_reward``, once.

**Frame counting (the reference's).** pycolab counts frames per phase: frame 0
is the phase's first observation (its ``its_showtime``, with no move), and the
agent's ``k``-th step in the phase is frame ``k``. A phase ends at the frame
equal to its length, and the next phase's frame 0 is what that step returns.
So the explore phase takes steps 1..E, the distractor steps 1..D and the
reward phase steps 1..R: ``T = E + D + R`` steps in all. The agent never sees a
phase's last frame, except the reward phase's, which is the final observation.
An apple picked up at frame ``f`` is back at the end of frame ``f + respawn_every
+ 1``: the first frame ``g > f + respawn_every`` (``AppleDrape``). Within a
frame the player moves first, then a present apple under it is picked up, then
apples respawn. So the apple is missing from ``respawn_every + 1`` observations.
A respawn under the player pays only if the player stays on that cell next step.

**Indicator.** The step that picks up the key shows an indicator at board cell
``(0, 5)`` (a wall cell) for that one observation. If the pickup is the last
explore step, that observation is the distractor's first, and no indicator shows.

**Observation: the one difference from the reference.** The reference crops a
5 x 5 window centred on the player (pycolab's ``ScrollingCropper``, margins 2,
padded with floor) and shows it as RGB, one colour per object kind. Here each
of the 25 cells is a one-hot over the kinds that can appear: wall, key, door,
apple, indicator. The player needs no channel: it is always the centre cell.
Floor and the player are all zeros. The door is drawn over the player (the
reference's z-order), so the centre shows the door while the player stands on it.
A respawned apple under the player is hidden by the player, as in the reference.
This carries the same information as the reference's pixels.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode

from pomdp_bench.envs.batched import Batch, BatchedEnv, BatchedVectorEnv
from pomdp_bench.validation import check_float, check_int

#: The longest phase accepted, in steps.
MAX_PHASE_LENGTH = 100_000
#: The shortest explore phase: from the farthest start the key is 8 steps away.
MIN_EXPLORE = 8
#: The shortest reward phase: the door is 2 steps north of the start.
MIN_REWARD = 2

# Actions, as pycolab's: 0 north, 1 south, 2 west, 3 east.
NORTH, SOUTH, WEST, EAST = 0, 1, 2, 3
_DR = np.array([-1, 1, 0, 0])
_DC = np.array([0, 0, -1, 1])

ROWS, COLS = 7, 11
VIEW = 5  # the side of the egocentric window
_PAD = VIEW // 2

EXPLORE_GRID = (
    "  #######  ",
    "  #kkkkk#  ",
    "  #kkkkk#  ",
    "  ##   ##  ",
    "  #+++++#  ",
    "  #+++++#  ",
    "  #######  ",
)
DISTRACTOR_GRID = (
    "###########",
    "#a a a a a#",
    "# a a a a #",
    "#a a a a a#",
    "# a a a a #",
    "#a a + a a#",
    "###########",
)
REWARD_GRID = (
    "           ",
    "   ##d##   ",
    "   #   #   ",
    "   # + #   ",
    "   #   #   ",
    "   #####   ",
    "           ",
)

# Cell kinds; an observation has one channel for each of WALL .. INDICATOR.
FLOOR, WALL, KEY, DOOR, APPLE, INDICATOR = range(6)
CHANNELS = ("wall", "key", "door", "apple", "indicator")
_KINDS = np.arange(WALL, INDICATOR + 1)  # [5] the kind of each channel


def _cells(grid: tuple[str, ...], char: str) -> np.ndarray:
    """The flat indices ``row * COLS + col`` of ``char`` in ``grid``, row-major."""
    return np.flatnonzero(np.array([list(row) for row in grid]).ravel() == char)


def _walls(grid: tuple[str, ...]) -> np.ndarray:
    return np.array([list(row) for row in grid]).ravel() == "#"


_KEY_CELLS = _cells(EXPLORE_GRID, "k")  # [10]
_EXPLORE_STARTS = _cells(EXPLORE_GRID, "+")  # [10]
APPLE_CELLS = _cells(DISTRACTOR_GRID, "a")  # [22]
_DISTRACTOR_START = int(_cells(DISTRACTOR_GRID, "+")[0])  # (5, 5)
_REWARD_START = int(_cells(REWARD_GRID, "+")[0])  # (3, 5)
DOOR_CELL = int(_cells(REWARD_GRID, "d")[0])  # (1, 5)
INDICATOR_CELL = 0 * COLS + 5  # (0, 5), a wall cell of the explore board

# [3, 77] the walls of each phase's board; the door is handled apart.
_WALLS = np.stack([_walls(EXPLORE_GRID), _walls(DISTRACTOR_GRID), _walls(REWARD_GRID)])
_BASE = _WALLS.astype(np.int8) * WALL  # [3, 77] cell kinds before the objects
_BASE[2, DOOR_CELL] = DOOR
# [77] the apple slot of a board cell, -1 where there is none.
_APPLE_SLOT = np.full(ROWS * COLS, -1, dtype=np.int64)
_APPLE_SLOT[APPLE_CELLS] = np.arange(len(APPLE_CELLS))
# The board padded with floor by 2 on every side, flat; [77] where each cell lies in it.
_PADDED_COLS = COLS + 2 * _PAD
_INNER = ((np.arange(ROWS)[:, None] + _PAD) * _PADDED_COLS + np.arange(COLS)[None, :] + _PAD).ravel()
# [77, 25] the padded cells of the 5 x 5 window centred on each board cell.
_r, _c = np.divmod(np.arange(ROWS * COLS), COLS)
_VIEW_CELLS = (
    (_r[:, None, None] + np.arange(VIEW)[None, :, None]) * _PADDED_COLS
    + _c[:, None, None]
    + np.arange(VIEW)[None, None, :]
).reshape(ROWS * COLS, VIEW * VIEW)
_CENTRE = VIEW * VIEW // 2
_NEVER = np.int64(2**40)  # the last pickup of an apple never picked up: it never respawns

_RENDER_MODES = ["ansi", "rgb_array"]
_CELL_PX = 16  # side of one window cell in rgb_array frames, in pixels
# The reference's colours (pycolab's 0-1000 scale, times 255/1000), one per kind.
_COLOURS = np.array(
    [
        (204, 204, 204),  # floor
        (25, 25, 25),  # wall
        (159, 81, 44),  # key
        (134, 206, 235),  # door
        (140, 178, 0),  # apple
        (255, 255, 255),  # indicator
    ],
    dtype=np.uint8,
)
_PLAYER_COLOUR = (228, 148, 109)
_CHARS = np.array([" ", "#", "k", "d", "a", "i"])


class KeyToDoorBatch(Batch):
    """``num_envs`` copies of Key-to-Door.

    A copy's state: ``t`` the steps taken, ``pos`` the player's flat cell on the
    current phase's board, the key's cell and whether it still lies there, whether
    the player holds the key, whether the indicator shows, and per apple cell
    whether an apple is there and the frame of its last pickup.
    """

    def __init__(
        self,
        num_envs: int,
        explore: int,
        distractor: int,
        reward: int,
        num_apples: int,
        apple_reward: float,
        final_reward: float,
        respawn_every: int,
    ) -> None:
        super().__init__(num_envs)
        self.explore, self.distractor, self.reward = explore, distractor, reward
        self.episode_length = explore + distractor + reward
        self.num_apples = num_apples
        self.apple_reward = np.float32(apple_reward)
        self.final_reward = np.float32(final_reward)
        self.respawn_every = respawn_every
        self.single_observation_space = spaces.Box(
            0.0, 1.0, shape=(len(CHANNELS) * VIEW * VIEW,), dtype=np.float32
        )
        self.single_action_space = spaces.Discrete(4)
        self._ends = np.array([explore, explore + distractor])  # steps where a phase ends
        self._starts = np.array([0, explore, explore + distractor])  # [3] by phase

        n, a = num_envs, len(APPLE_CELLS)
        self._t = np.zeros(n, dtype=np.int64)
        self._pos = np.zeros(n, dtype=np.int64)
        self._key_cell = np.zeros(n, dtype=np.int64)
        self._key_present = np.ones(n, dtype=np.bool_)
        self._has_key = np.zeros(n, dtype=np.bool_)
        self._indicator = np.zeros(n, dtype=np.bool_)
        self._apples = np.zeros((n, a), dtype=np.bool_)
        self._last_pickup = np.full((n, a), _NEVER, dtype=np.int64)

    def _phase(self) -> np.ndarray:
        """``[N]`` 0 explore, 1 distractor, 2 reward."""
        return np.searchsorted(self._ends, self._t, side="right")

    def reset_copies(self, idx: np.ndarray) -> None:
        u = self.streams.uniform(idx, 0, 2 + len(APPLE_CELLS))  # [K, 24]
        n_key, n_start = len(_KEY_CELLS), len(_EXPLORE_STARTS)
        self._key_cell[idx] = _KEY_CELLS[np.minimum((u[:, 0] * n_key).astype(np.int64), n_key - 1)]
        self._pos[idx] = _EXPLORE_STARTS[np.minimum((u[:, 1] * n_start).astype(np.int64), n_start - 1)]
        rank = np.argsort(np.argsort(u[:, 2:], axis=1), axis=1)  # a uniform permutation
        self._apples[idx] = rank < self.num_apples  # a uniform subset of num_apples cells
        self._last_pickup[idx] = _NEVER
        self._t[idx] = 0
        self._key_present[idx] = True
        self._has_key[idx] = False
        self._indicator[idx] = False

    def step(self, action: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        phase = self._phase()
        frame = self._t - self._starts[phase] + 1  # this step's frame in its phase
        # Move (pycolab's MazeWalker): off the board or into a wall, stay put.
        row, col = np.divmod(self._pos, COLS)
        row, col = row + _DR[action], col + _DC[action]
        on_board = (row >= 0) & (row < ROWS) & (col >= 0) & (col < COLS)
        target = np.where(on_board, row * COLS + col, self._pos)
        locked = (phase == 2) & (target == DOOR_CELL) & self._key_present  # never picked up
        pos = np.where(_WALLS[phase, target] | locked, self._pos, target)

        # Explore: the key, and the indicator for exactly the pickup's frame.
        pickup = (phase == 0) & self._key_present & (pos == self._key_cell)
        self._key_present &= ~pickup
        self._has_key |= pickup
        self._indicator = pickup

        reward = np.zeros(self.num_envs, dtype=np.float32)
        d = np.flatnonzero(phase == 1)
        if d.size:  # distractor: pick up, then respawn
            slot = _APPLE_SLOT[pos[d]]
            rows, slots = d[slot >= 0], slot[slot >= 0]
            eaten = self._apples[rows, slots]
            rows, slots = rows[eaten], slots[eaten]
            self._apples[rows, slots] = False
            self._last_pickup[rows, slots] = frame[rows]
            reward[rows] += self.apple_reward
            self._apples[d] |= frame[d, None] > self._last_pickup[d] + self.respawn_every

        opened = (phase == 2) & self._has_key & (pos == DOOR_CELL)
        reward[opened] += self.final_reward
        self._has_key &= ~opened

        self._t += 1
        pos = np.where(self._t == self._ends[0], _DISTRACTOR_START, pos)
        self._pos = np.where(self._t == self._ends[1], _REWARD_START, pos)
        terminated = self._t == self.episode_length
        return reward, terminated, np.zeros(self.num_envs, dtype=np.bool_)

    def boards(self) -> np.ndarray:
        """``[N, 77] int8`` the cell kinds of each copy's current board, player excluded."""
        phase = self._phase()
        board = _BASE[phase]  # a fresh array
        k = np.flatnonzero((phase == 0) & self._key_present)
        board[k, self._key_cell[k]] = KEY
        board[np.flatnonzero((phase == 0) & self._indicator), INDICATOR_CELL] = INDICATOR
        d = np.flatnonzero(phase == 1)
        board[d[:, None], APPLE_CELLS[None, :]] = np.where(self._apples[d], APPLE, FLOOR)
        return board

    def views(self) -> np.ndarray:
        """``[N, 25] int8`` the kinds in each copy's 5 x 5 window, row-major; the centre
        is the player (FLOOR), or the door when the player stands on it."""
        padded = np.zeros((self.num_envs, (ROWS + 2 * _PAD) * _PADDED_COLS), dtype=np.int8)
        padded[:, _INNER] = self.boards()
        view = np.take_along_axis(padded, _VIEW_CELLS[self._pos], axis=1)
        view[:, _CENTRE] = np.where(view[:, _CENTRE] == DOOR, DOOR, FLOOR)
        return view

    def observe(self) -> np.ndarray:
        one_hot = self.views()[:, None, :] == _KINDS[None, :, None]  # [N, 5, 25]
        return one_hot.reshape(self.num_envs, -1).astype(np.float32)

    def render_copy(self, i: int, mode: str) -> Any:
        if mode == "ansi":
            phase = int(self._phase()[i])
            chars = _CHARS[self.boards()[i]].reshape(ROWS, COLS)
            r, c = divmod(int(self._pos[i]), COLS)
            if chars[r, c] != "d":  # the door is drawn over the player, as in the reference
                chars[r, c] = "+"
            name = ("explore", "distractor", "reward")[phase]
            step = int(self._t[i] - self._starts[phase])
            length = (self.explore, self.distractor, self.reward)[phase]
            header = (
                f"t={int(self._t[i])}/{self.episode_length}  {name} {step}/{length}  "
                f"has_key={bool(self._has_key[i])}\n"
            )
            return header + "".join("".join(line) + "\n" for line in chars)
        if mode == "rgb_array":
            view = self.views()[i].reshape(VIEW, VIEW)
            frame = _COLOURS[view]  # [5, 5, 3]
            if view[_PAD, _PAD] == FLOOR:
                frame[_PAD, _PAD] = _PLAYER_COLOUR
            return np.repeat(np.repeat(frame, _CELL_PX, axis=0), _CELL_PX, axis=1)
        raise ValueError(f"render mode {mode!r} is not supported: use one of {_RENDER_MODES}")


def _make_batch(
    num_envs: int,
    explore: int,
    distractor: int,
    reward: int,
    num_apples: int,
    apple_reward: float,
    final_reward: float,
    respawn_every: int,
) -> KeyToDoorBatch:
    return KeyToDoorBatch(
        num_envs,
        explore=check_int("explore", explore, minimum=MIN_EXPLORE, maximum=MAX_PHASE_LENGTH),
        distractor=check_int("distractor", distractor, minimum=1, maximum=MAX_PHASE_LENGTH),
        reward=check_int("reward", reward, minimum=MIN_REWARD, maximum=MAX_PHASE_LENGTH),
        num_apples=check_int("num_apples", num_apples, minimum=1, maximum=len(APPLE_CELLS)),
        apple_reward=check_float("apple_reward", apple_reward),
        final_reward=check_float("final_reward", final_reward),
        respawn_every=check_int("respawn_every", respawn_every, minimum=1, maximum=MAX_PHASE_LENGTH),
    )


class KeyToDoorEnv(BatchedEnv):
    """Key-to-Door (Ni et al. 2023): pick up a key, collect apples, open the door with the key.

    Three phases of ``E = explore``, ``D = distractor`` and ``R = reward`` steps
    (module docstring: the boards and the reference's frame counting).

    | | |
    |---|---|
    | Observation | `Box(0, 1, (125,), float32)`: the 5 x 5 window centred on the player, one-hot per cell over [wall, key, door, apple, indicator] (table below) |
    | Action | `Discrete(4)`: 0 north, 1 south, 2 west, 3 east; a move into a wall or off the board stays put |
    | Reward | `apple_reward` per apple picked up (distractor); `final_reward` once, on stepping onto the door with the key (reward phase); else 0 |
    | Termination | after exactly `T = E + D + R` steps (fixed horizon; `terminated=True`) |
    | Truncation | never |
    | Memory horizon | `E + D + R` steps at most (key picked up in the explore phase, paid at the door) |
    | Optimal return | not derived (the apples a best policy gets); the door adds `final_reward` |
    | Feedforward ceiling | none: a memoryless policy can act optimally; scored by success rate (door opened) |

    **Observation.** Index ``k * 25 + 5 * i + j`` is channel ``k`` of window cell
    ``(i, j)``, ``(2, 2)`` the player (the reference's CHW order, flattened).
    Channels: 0 wall, 1 key, 2 door, 3 apple, 4 indicator. Floor, the player and
    cells beyond the board are all zeros. The reference shows the same window
    as RGB, one colour per kind: the one-hot carries the same information.

    **No feedforward ceiling.** A policy of the current observation alone can act
    optimally. It walks north through the gap in the wall, then towards the key
    once in view. It collects the apples in view, and walks north into the door.
    ``tests/test_key_to_door.py`` plays such a policy: it opens the door every
    time. Key-to-Door measures credit assignment instead: the key's value shows
    only at the door. The benchmark scores it by success rate, the share of
    episodes where the door opened. With ``apple_reward=0`` and ``final_reward=1``
    the return is exactly that.

    Args:
        explore: ``E``, steps of the explore phase, in ``[8, 100000]`` (the key can
            be 8 steps from the start).
        distractor: ``D``, steps of the apple phase, in ``[1, 100000]``; the paper
            uses 60, 120, 250 and 500.
        reward: ``R``, steps of the door phase, in ``[2, 100000]`` (the door is 2
            steps north).
        num_apples: apples placed at the distractor start, in ``[1, 22]``.
        apple_reward: reward per apple, finite.
        final_reward: reward for opening the door, finite.
        respawn_every: an apple picked up at frame ``f`` is back at frame
            ``f + respawn_every + 1``; in ``[1, 100000]``.
        render_mode: ``None``, ``"ansi"`` (the whole board as text) or
            ``"rgb_array"`` (the 5 x 5 window in the reference's colours, ``[80, 80, 3] uint8``).
    """

    metadata: dict[str, Any] = {"render_modes": _RENDER_MODES, "render_fps": 4}

    def __init__(
        self,
        explore: int = 15,
        distractor: int = 60,
        reward: int = 10,
        num_apples: int = 10,
        apple_reward: float = 1.0,
        final_reward: float = 5.0,
        respawn_every: int = 20,
        render_mode: str | None = None,
    ) -> None:
        batch = _make_batch(
            1, explore, distractor, reward, num_apples, apple_reward, final_reward, respawn_every
        )
        self._init_batch(batch, render_mode)


class KeyToDoorVectorEnv(BatchedVectorEnv):
    """``num_envs`` copies of :class:`KeyToDoorEnv`, stepped together with numpy array ops.

    Copy ``i`` reset with ``seed=s`` plays exactly the episodes of a single
    :class:`KeyToDoorEnv` reset with ``seed=s + i``. Autoresets like Gymnasium's
    vector envs (``autoreset_mode`` ``NEXT_STEP`` or ``SAME_STEP``).

    Args:
        num_envs: how many copies, ``>= 1``.
        explore, distractor, reward, num_apples, apple_reward, final_reward,
            respawn_every: as in :class:`KeyToDoorEnv`.
        autoreset_mode: Gymnasium's autoreset mode.
        render_mode: as in :class:`KeyToDoorEnv`; ``render()`` returns one frame per copy.
    """

    metadata: dict[str, Any] = {"render_modes": _RENDER_MODES, "render_fps": 4}

    def __init__(
        self,
        num_envs: int = 1,
        explore: int = 15,
        distractor: int = 60,
        reward: int = 10,
        num_apples: int = 10,
        apple_reward: float = 1.0,
        final_reward: float = 5.0,
        respawn_every: int = 20,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        render_mode: str | None = None,
    ) -> None:
        num_envs = check_int("num_envs", num_envs, minimum=1)
        batch = _make_batch(
            num_envs, explore, distractor, reward, num_apples, apple_reward, final_reward, respawn_every
        )
        self._init_batch(batch, autoreset_mode, render_mode)
