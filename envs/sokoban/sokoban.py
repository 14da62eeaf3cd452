"""envgym/Sokoban-v0: push every box onto a target, in text."""

from __future__ import annotations

import hashlib
import re
from typing import Any, ClassVar

import numpy as np

from envgym.core import MAX_TASK_SEED, TextEnv, Turn, check_int, short_repr
from envgym.envs.sokoban.level import (
    Level,
    LevelTooHard,
    SolverGaveUp,
    generate_level,
    node_budget,
    parse_board,
    solve,
)
from envgym.parsing import GRID_MOVES, parse_answer, split_moves

__all__ = ["DIFFICULTY_PRESETS", "MAX_BOXES", "MAX_SIZE", "SokobanEnv", "max_min_pushes"]

#: difficulty -> (room height, room width, boxes, minimum pushes, max turns)
DIFFICULTY_PRESETS: dict[str, tuple[int, int, int, int, int]] = {
    "easy": (6, 6, 1, 2, 20),  # RAGEN's default level
    "medium": (6, 6, 2, 4, 30),  # GEM's Sokoban-v0-easy room
    "hard": (8, 8, 4, 5, 50),  # GEM's Sokoban-v0-hard room
}
#: Room sides (outer wall included) and boxes any level may have.
MIN_SIZE, MAX_SIZE = 5, 16
MAX_BOXES = 6
#: Level seeds a reset without a task id tries before it gives up (see `_draw_level`).
LEVEL_DRAWS = 3
_TASK_ID = re.compile(r"^(\d{1,3})x(\d{1,3})-b(\d{1,3})-p(\d{1,4})-(\d{1,20})$")
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
    outer wall. ``size`` (int or (height, width), 5 to 16), ``num_boxes`` (1
    to 6, with at least 3 cells a box plus 2 inside the walls) and
    ``min_pushes`` (1 to ``num_boxes * (height + width - 4)``) override the
    level's preset. ``max_turns`` (1 to 100,000) and ``max_actions_per_turn``
    (1 to 50, default 5) bound the episode.
    ``reset(options={"task_id": ...})`` replays a level by its id
    (``HEIGHTxWIDTH-bBOXES-pPUSHES-SEED``, each part in the ranges above, the
    seed below 2**63), ``options={"board": "..."}`` plays a board given as text
    in the symbols above (at most 16x16 and 6 boxes, walled all around),
    ``options={"difficulty": ...}`` changes the level for this and later
    resets. Anything outside these ranges is a ValueError that says what is
    allowed.

    Every reset is bounded: the solver that proves a level optimal may
    expand at most 5,000 positions in rooms up to 10x10 and proportionally
    fewer in larger ones (at most about half a second at any size; more than
    any preset level needs). A given board or task id that needs more raises
    ``LevelTooHard`` (a ValueError) instead of running on. A reset without a
    task id draws another level seed instead, up to 3 seeds; in rooms over
    10x10 with 5 or 6 boxes that can still fail: use fewer boxes there.

    ## Version History
    * v0: initial version. Since then: sizes, box counts, push counts and
      seeds in task ids and boards are bounded and refused up front, and the
      solver has a node limit (levels that need more raise ``LevelTooHard``;
      any other task id gives the level it gave before, and the presets give
      the same levels for the same seeds).
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
        if num_boxes is not None:
            num_boxes = check_int(num_boxes, "num_boxes", 1, MAX_BOXES)
        if min_pushes is not None:
            min_pushes = check_int(
                min_pushes, "min_pushes", 1, max_min_pushes(MAX_SIZE, MAX_SIZE, MAX_BOXES)
            )
        self.max_actions_per_turn = check_int(
            max_actions_per_turn, "max_actions_per_turn", 1, 50, "moves run per turn"
        )
        self._num_boxes_arg = num_boxes
        self._min_pushes_arg = min_pushes
        self._apply_difficulty(self.difficulty)
        self._level: Level | None = None

    # -------------------------------------------------------------- config
    def _apply_difficulty(self, difficulty: str) -> None:
        height, width, boxes, pushes, turns = DIFFICULTY_PRESETS[difficulty]
        room_size = self._size_arg or (height, width)
        num_boxes = self._num_boxes_arg or boxes
        min_pushes = self._min_pushes_arg or (pushes if self._size_arg is None else None)
        _check_level(*room_size, num_boxes, min_pushes or num_boxes + 1, "min_pushes")
        self.difficulty = difficulty
        self.room_size, self.num_boxes, self.min_pushes = room_size, num_boxes, min_pushes
        self.max_turns = self._max_turns_arg or turns

    # ------------------------------------------------------------- episode
    def _new_task(self, options: dict[str, Any]) -> str:
        if "board" in options:
            level, task_id = _level_from_board(options["board"]), None
        elif "task_id" in options:
            height, width, boxes, pushes, level_seed = _parse_task_id(options["task_id"])
            level = _make_level(height, width, boxes, pushes, level_seed)
            task_id = f"{height}x{width}-b{boxes}-p{pushes}-{level_seed}"
        else:
            level, task_id = self._draw_level()
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

    def _draw_level(self) -> tuple[Level, str]:
        """A level from a seed drawn from `self.np_random`. A level too costly to
        prove optimal (rare at every preset) gives way to the next seed drawn."""
        height, width = self.room_size
        boxes, pushes = self.num_boxes, self.min_pushes or self.num_boxes + 1
        for draw in range(LEVEL_DRAWS):
            level_seed = int(self.np_random.integers(0, 2**62))
            try:
                level = _make_level(height, width, boxes, pushes, level_seed)
                break
            except LevelTooHard:
                if draw == LEVEL_DRAWS - 1:
                    raise
        return level, f"{height}x{width}-b{boxes}-p{pushes}-{level_seed}"

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


def _make_level(height: int, width: int, boxes: int, pushes: int, level_seed: int) -> Level:
    """The level a task id names (LevelTooHard if proving it optimal costs too much)."""
    rng = np.random.default_rng(level_seed)
    return generate_level(rng, height, width, boxes, min_pushes=pushes)


def max_min_pushes(height: int, width: int, num_boxes: int) -> int:
    """The most pushes a level of this shape may be asked to need: every box
    at most a room's height plus width (inside the walls) from its target."""
    return num_boxes * (height + width - 4)


def _check_size(size: Any) -> tuple[int, int] | None:
    if size is None:
        return None
    if isinstance(size, int):
        size = (size, size)
    if not isinstance(size, tuple | list) or len(size) != 2:
        raise ValueError(
            f"size must be an int or (height, width) with each from {MIN_SIZE} to {MAX_SIZE} "
            f"(outer wall included), got {short_repr(size)}"
        )
    meaning = "a side of the room, outer wall included"
    return tuple(check_int(v, "size", MIN_SIZE, MAX_SIZE, meaning) for v in size)


def _check_level(height: int, width: int, boxes: int, pushes: int, pushes_name: str) -> None:
    """A room that fits `boxes` boxes, and a push count it can need (ValueError if not)."""
    free = (height - 2) * (width - 2)
    if boxes * 3 + 2 > free:
        raise ValueError(
            f"a {height}x{width} room is too small for {boxes} boxes; use a larger size or "
            "fewer boxes"
        )
    most = max_min_pushes(height, width, boxes)
    check_int(pushes, pushes_name, 1, most, f"for {boxes} box(es) in a {height}x{width} room")


def _parse_task_id(task_id: Any) -> tuple[int, int, int, int, int]:
    match = _TASK_ID.match(task_id) if isinstance(task_id, str) else None
    if match is None:
        raise ValueError(
            f"task_id {short_repr(task_id)} is not a Sokoban task id; use an id from "
            "info['task_id'], e.g. '6x6-b1-p3-12345' (HEIGHTxWIDTH-bBOXES-pPUSHES-SEED)"
        )
    height, width, boxes, pushes, seed = (int(g) for g in match.groups())
    try:
        _check_size((height, width))
        check_int(boxes, "its box count", 1, MAX_BOXES)
        _check_level(height, width, boxes, pushes, "its push count")
        check_int(seed, "its seed", 0, MAX_TASK_SEED)
    except ValueError as exc:
        raise ValueError(
            f"task_id {short_repr(task_id)} names no level this env makes: {exc}; use an id from "
            "info['task_id']"
        ) from None
    return height, width, boxes, pushes, seed


def _level_from_board(text: Any) -> Level:
    if not isinstance(text, str):
        raise ValueError("options['board'] must be the board as text (rows of # _ . $ * @ +)")
    board = text.strip("\n")
    rows = board.split("\n")
    height, width = len(rows), max(len(r) for r in rows)
    # Sized before anything else reads it: the solver's work grows with the board.
    if height > MAX_SIZE or width > MAX_SIZE:
        raise ValueError(
            f"options['board'] is {height}x{width}; a board may be at most "
            f"{MAX_SIZE}x{MAX_SIZE} (rows x columns, outer wall included)"
        )
    if set(board) - set("#_.$*@+\n") or board.count("@") + board.count("+") != 1:
        raise ValueError(
            "options['board'] may use only # _ . $ * @ + and newlines, with exactly one player"
        )
    if len({len(r) for r in rows}) != 1 or any(r[0] != "#" or r[-1] != "#" for r in rows if r):
        raise ValueError("options['board'] must be a rectangle of rows enclosed by '#' walls")
    boxes_on_board = board.count("$") + board.count("*")
    if boxes_on_board > MAX_BOXES:
        raise ValueError(
            f"options['board'] has {boxes_on_board} boxes; a board may have at most {MAX_BOXES}"
        )
    height, width, floor, targets, boxes, player = parse_board(board)
    if any(floor[c] for c in range(width)) or any(
        floor[(height - 1) * width + c] for c in range(width)
    ):
        raise ValueError("options['board'] must have a wall all around")
    limit = node_budget(height, width)
    try:
        solution = solve(width, floor, targets, boxes, player, max_nodes=limit)
    except SolverGaveUp:
        raise LevelTooHard(
            f"options['board'] is too hard to solve optimally within the {limit} solver "
            f"positions a {height}x{width} board may cost (or it has no solution); give a "
            "smaller board or fewer boxes"
        ) from None
    if solution is None:
        raise ValueError("options['board'] has no solution; give a solvable level")
    moves, pushes = solution
    return Level(height, width, floor, targets, boxes, player, len(moves), pushes)
