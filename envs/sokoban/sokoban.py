"""envgym/Sokoban-v0: push every box onto a target, in text."""

from __future__ import annotations

import hashlib
import re
from typing import Any, ClassVar

import numpy as np

from envgym.core import TextEnv, Turn
from envgym.envs.sokoban.level import Level, generate_level, parse_board, solve
from envgym.parsing import GRID_MOVES, parse_answer, split_moves

__all__ = ["SokobanEnv", "DIFFICULTY_PRESETS"]

#: difficulty -> (room height, room width, boxes, minimum pushes, max turns)
DIFFICULTY_PRESETS: dict[str, tuple[int, int, int, int, int]] = {
    "easy": (6, 6, 1, 2, 20),  # RAGEN's default level
    "medium": (6, 6, 2, 4, 30),  # GEM's Sokoban-v0-easy room
    "hard": (8, 8, 4, 5, 50),  # GEM's Sokoban-v0-hard room
}
_TASK_ID = re.compile(r"^(\d+)x(\d+)-b(\d+)-p(\d+)-(\d+)$")
LEGEND = "Legend: # wall, _ floor, . target, $ box, * box on a target, @ you, + you on a target."

STEP_PENALTY = -0.1
BOX_ON_TARGET = 1.0
BOX_OFF_TARGET = -1.0
SOLVED_BONUS = 10.0
FORMAT_PENALTY = -0.1
# Rounded once here: -0.1 * 3 is -0.30000000000000004 in floating point.
_STEP_REWARDS = tuple(round(STEP_PENALTY * n, 6) for n in range(51))


class SokobanEnv(TextEnv):
    """Sokoban: push every box onto a target.

    ## Description
    A warehouse puzzle on a grid. The agent walks the player up, down, left
    and right; walking into a box pushes it one cell if the cell behind it is
    free. Boxes cannot be pulled, so a box pushed into a corner is stuck for
    good. Levels are generated procedurally by playing the game backwards from
    the solved state (pulling boxes), which makes every level solvable; an A*
    solver then finds the optimal number of moves, given to trainers in
    ``info["privileged"]``.

    ## Action Space
    Text: the model's whole reply. Moves go inside answer tags, several per
    turn separated by ``||``: ``<answer>Up || Left</answer>``. Move names are
    ``Up``, ``Down``, ``Left``, ``Right`` (any case; ``U/D/L/R`` also work).
    ``\\boxed{Up}`` is accepted too and ``<think>...</think>`` is ignored. At
    most ``max_actions_per_turn`` moves run per turn; extra moves are dropped
    and the feedback says so. A reply with no parsable answer, or with any
    unknown move, runs no move: the feedback says what was wrong.

    ## Observation Space
    Text. The first observation explains the task and the legend, then shows
    the board; each later one is a feedback line, the boxes on targets, and
    the board. Board symbols: ``#`` wall, ``_`` floor, ``.`` target, ``$``
    box, ``*`` box on a target, ``@`` player, ``+`` player on a target.

    ## Starting State
    A fresh level from the seed: a random room (carved by a random walk),
    targets, and boxes placed by backwards play so that at least
    ``min_pushes`` pushes are needed.

    ## Rewards
    RAGEN's scheme, per move, reported in ``info["reward_components"]``:
    ``step`` -0.1 for every move made (walking into a wall counts),
    ``box_on_target`` +1 for each push onto a target, ``box_off_target`` -1 for
    each push off one, ``solved`` +10 when every box is on a target, ``format``
    -0.1 for a reply that runs no move.

    ## Episode End
    Terminated when every box is on a target (``info["success"]`` is True).
    Truncated after ``max_turns`` turns.

    ## Info
    ``state_key`` (the board text), ``admissible_actions`` (the four moves),
    ``privileged`` (``optimal_moves``, ``optimal_pushes``), plus the shared
    keys ``task_id``, ``turn``, ``action_valid``, ``success``,
    ``reward_components``; ``system_prompt`` on reset.

    ## Arguments
    ``difficulty``: ``easy`` (6x6 room, 1 box, 20 turns), ``medium`` (6x6, 2
    boxes, 30 turns) or ``hard`` (8x8, 4 boxes, 50 turns). Sizes include the
    outer wall. ``size`` (int or (height, width), 5 to 16), ``num_boxes`` (1 to
    6) and ``min_pushes`` override the level's preset. ``max_turns`` and
    ``max_actions_per_turn`` (1 to 50, default 5) bound the episode.
    ``reset(options={"task_id": ...})`` replays a level by its id,
    ``options={"board": "..."}`` plays a board given as text in the symbols
    above, ``options={"difficulty": ...}`` changes the level for this and later
    resets.

    ## Version History
    * v0: initial version.
    """

    system_prompt: ClassVar[str] = (
        "You are playing Sokoban. Push every box onto a target. You can push a box "
        "but never pull it. " + LEGEND + " Reply with your moves inside answer tags, "
        "several separated by ||, e.g. <answer>Up || Left</answer>. "
        "Moves: Up, Down, Left, Right."
    )
    reset_options: ClassVar[tuple[str, ...]] = ("task_id", "board", "difficulty")
    _snapshot_fields: ClassVar[tuple[str, ...]] = (
        "_level",
        "_stride",
        "_offsets",
        "_wall",
        "_targets",
        "_boxes",
        "_player",
        "_cells",
        "_boxes_on_target",
        "_board_text",
    )

    def __init__(
        self,
        *,
        difficulty: str = "easy",
        size: int | tuple[int, int] | None = None,
        num_boxes: int | None = None,
        min_pushes: int | None = None,
        max_turns: int | None = None,
        max_actions_per_turn: int = 5,
        render_mode: str | None = None,
    ) -> None:
        super().__init__(difficulty=difficulty, max_turns=max_turns, render_mode=render_mode)
        self._size_arg = _check_size(size)
        if num_boxes is not None and (not isinstance(num_boxes, int) or not 1 <= num_boxes <= 6):
            raise ValueError(f"num_boxes must be an integer from 1 to 6, got {num_boxes!r}")
        if min_pushes is not None and (not isinstance(min_pushes, int) or min_pushes < 1):
            raise ValueError(f"min_pushes must be a positive integer, got {min_pushes!r}")
        if not isinstance(max_actions_per_turn, int) or not 1 <= max_actions_per_turn <= 50:
            raise ValueError(
                f"max_actions_per_turn must be an integer from 1 to 50, "
                f"got {max_actions_per_turn!r}"
            )
        self._num_boxes_arg = num_boxes
        self._min_pushes_arg = min_pushes
        self.max_actions_per_turn = max_actions_per_turn
        self._apply_difficulty(self.difficulty)
        self._level: Level | None = None

    # -------------------------------------------------------------- config
    def _apply_difficulty(self, difficulty: str) -> None:
        self.difficulty = difficulty
        height, width, boxes, pushes, turns = DIFFICULTY_PRESETS[difficulty]
        self.room_size = self._size_arg or (height, width)
        self.num_boxes = self._num_boxes_arg or boxes
        self.min_pushes = self._min_pushes_arg or (pushes if self._size_arg is None else None)
        self.max_turns = self._max_turns_arg or turns
        free = (self.room_size[0] - 2) * (self.room_size[1] - 2)
        if self.num_boxes * 3 + 2 > free:
            raise ValueError(
                f"a {self.room_size[0]}x{self.room_size[1]} room is too small for "
                f"{self.num_boxes} boxes; use a larger size or fewer boxes"
            )

    # ------------------------------------------------------------- episode
    def _new_task(self, options: dict[str, Any]) -> str:
        if "board" in options:
            level, task_id = _level_from_board(options["board"]), None
        else:
            if "task_id" in options:
                height, width, boxes, pushes, level_seed = _parse_task_id(options["task_id"])
            else:
                height, width = self.room_size
                boxes, pushes = self.num_boxes, self.min_pushes or self.num_boxes + 1
                level_seed = int(self.np_random.integers(0, 2**62))
            level = generate_level(
                np.random.default_rng(level_seed), height, width, boxes, min_pushes=pushes
            )
            task_id = f"{height}x{width}-b{boxes}-p{pushes}-{level_seed}"
        self._load(level)
        board = self._board_text = self._board()
        self.task_id = (
            task_id or "board-" + hashlib.blake2b(board.encode(), digest_size=8).hexdigest()
        )
        return (
            "Sokoban: push every box onto a target. You can push a box but never pull it.\n"
            f"{LEGEND}\nReply with moves in answer tags, e.g. <answer>Up || Left</answer> "
            f"(at most {self.max_actions_per_turn} a turn, {self.max_turns} turns).\n"
            f"Boxes on targets: {self._boxes_on_target}/{len(self._boxes)}\n{board}"
        )

    def _load(self, level: Level) -> None:
        """Re-encode a level with a stride of width + 1: the extra column holds the
        newlines of the rendered board and acts as wall, so a cell's index is also
        its position in the board text."""
        self._level = level
        width, stride = level.width, level.width + 1
        self._stride = stride
        self._offsets = {"Up": -stride, "Down": stride, "Left": -1, "Right": 1}

        def at(i: int) -> int:
            return (i // width) * stride + i % width

        cells = bytearray()
        for r in range(level.height):
            row = level.floor[r * width : (r + 1) * width]
            cells += bytes(ord("_") if f else ord("#") for f in row) + b"\n"
        self._wall = bytes(c != ord("_") for c in cells)
        self._targets = frozenset(at(t) for t in level.targets)
        self._boxes = {at(b) for b in level.boxes}
        self._player = at(level.player)
        for t in self._targets:
            cells[t] = ord(".")
        for b in self._boxes:
            cells[b] = ord("*") if b in self._targets else ord("$")
        cells[self._player] = ord("+") if self._player in self._targets else ord("@")
        self._cells = cells
        self._boxes_on_target = sum(b in self._targets for b in self._boxes)

    def _act(self, action: str) -> Turn:
        parsed = parse_answer(action, example="Up || Left")
        moves, error = split_moves(parsed.value, GRID_MOVES) if parsed.ok else ([], parsed.error)
        if error is not None:
            return Turn(
                observation=(
                    f"Invalid reply: {error} Moves are Up, Down, Left, Right.\n"
                    f"Boxes on targets: {self._boxes_on_target}/{len(self._boxes)}\n"
                    f"{self._board_text}"
                ),
                reward_components={"format": FORMAT_PENALTY},
                action_valid=False,
            )
        dropped = len(moves) - self.max_actions_per_turn
        if dropped > 0:
            moves = moves[: self.max_actions_per_turn]
        on = off = made = blocked = 0
        solved = False
        cells, wall, boxes, targets = self._cells, self._wall, self._boxes, self._targets
        offsets, n_boxes = self._offsets, len(self._boxes)
        for name in moves:
            d = offsets[name]
            made += 1
            p = self._player
            nxt = p + d
            if wall[nxt]:
                blocked += 1
                continue
            if nxt in boxes:
                dest = nxt + d
                if wall[dest] or dest in boxes:
                    blocked += 1
                    continue
                boxes.remove(nxt)
                boxes.add(dest)
                if dest in targets:
                    cells[dest] = 42  # '*'
                    on += 1
                    self._boxes_on_target += 1
                else:
                    cells[dest] = 36  # '$'
                if nxt in targets:
                    off += 1
                    self._boxes_on_target -= 1
            cells[p] = 46 if p in targets else 95  # '.' or '_'
            cells[nxt] = 43 if nxt in targets else 64  # '+' or '@'
            self._player = nxt
            if self._boxes_on_target == n_boxes:
                solved = True
                break
        feedback = f"You moved {', '.join(moves[:made])}."
        if blocked:
            feedback += f" {blocked} move(s) hit a wall or a stuck box."
        if dropped > 0:
            feedback += (
                f" {dropped} extra move(s) ignored (max {self.max_actions_per_turn} a turn)."
            )
        if solved:
            feedback += " Solved: every box is on a target!"
        board = self._board_text = cells[:-1].decode("ascii")
        return Turn(
            observation=(
                f"{feedback}\nBoxes on targets: {self._boxes_on_target}/{len(boxes)}\n{board}"
            ),
            reward_components={
                "step": _STEP_REWARDS[made],
                "box_on_target": BOX_ON_TARGET * on,
                "box_off_target": BOX_OFF_TARGET * off if off else 0.0,
                "solved": SOLVED_BONUS if solved else 0.0,
            },
            terminated=solved,
            success=solved,
        )

    def _task_info(self) -> dict[str, Any]:
        level = self._level
        return {
            "state_key": self._board_text,
            "admissible_actions": ["Up", "Down", "Left", "Right"],
            "privileged": {
                "optimal_moves": level.optimal_moves,
                "optimal_pushes": level.optimal_pushes,
            },
        }

    def _render_text(self) -> str:
        return self._board()

    def _board(self) -> str:
        return self._cells[:-1].decode("ascii")  # without the last row's newline


def _check_size(size: Any) -> tuple[int, int] | None:
    if size is None:
        return None
    if isinstance(size, int):
        size = (size, size)
    if (
        not isinstance(size, tuple | list)
        or len(size) != 2
        or not all(isinstance(v, int) and 5 <= v <= 16 for v in size)
    ):
        raise ValueError(
            f"size must be an int or (height, width) with each from 5 to 16 "
            f"(outer wall included), got {size!r}"
        )
    return (size[0], size[1])


def _parse_task_id(task_id: Any) -> tuple[int, int, int, int, int]:
    match = _TASK_ID.match(str(task_id))
    if match is None:
        raise ValueError(
            f"task_id {task_id!r} is not a Sokoban task id; use an id from info['task_id'], "
            "e.g. '6x6-b1-p3-12345'"
        )
    height, width, boxes, pushes, seed = (int(g) for g in match.groups())
    _check_size((height, width))
    return height, width, boxes, pushes, seed


def _level_from_board(text: Any) -> Level:
    if not isinstance(text, str):
        raise ValueError("options['board'] must be the board as text (rows of # _ . $ * @ +)")
    rows = text.strip("\n").split("\n")
    if set(text.strip("\n")) - set("#_.$*@+\n") or text.count("@") + text.count("+") != 1:
        raise ValueError(
            "options['board'] may use only # _ . $ * @ + and newlines, with exactly one player"
        )
    if len({len(r) for r in rows}) != 1 or any(r[0] != "#" or r[-1] != "#" for r in rows if r):
        raise ValueError("options['board'] must be a rectangle of rows enclosed by '#' walls")
    height, width, floor, targets, boxes, player = parse_board(text)
    if any(floor[c] for c in range(width)) or any(
        floor[(height - 1) * width + c] for c in range(width)
    ):
        raise ValueError("options['board'] must have a wall all around")
    solution = solve(width, floor, targets, boxes, player)
    if solution is None:
        raise ValueError("options['board'] has no solution; give a solvable level")
    moves, pushes = solution
    return Level(height, width, floor, targets, boxes, player, len(moves), pushes)
