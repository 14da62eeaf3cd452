"""envgym/Sokoban-v0: push every box onto a target, in text."""

from __future__ import annotations

import dataclasses
import hashlib
import re
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from envgym.arguments import match_task_id, task_id_parts
from envgym.core import MAX_TASK_SEED, Preset, TextEnv, Turn, check_int, setting, short_repr
from envgym.envs.sokoban.board import (
    BOX,
    BOX_ON_TARGET,
    FLOOR,
    MOVE_NAMES,
    PLAYER,
    PLAYER_ON_TARGET,
    SYMBOLS,
    TARGET,
    WALL,
    move,
    move_steps,
    parse_board,
    text_index,
)
from envgym.envs.sokoban.level import Level, LevelTooHard, generate_level, node_budget
from envgym.envs.sokoban.solver import SolverGaveUp, solve
from envgym.parsing import GRID_MOVES, parse_answer, split_moves

__all__ = ["MAX_BOXES", "MAX_SIZE", "SokobanEnv", "SokobanPreset", "max_min_pushes"]

#: Room sides (outer wall included) and boxes any level may have.
MIN_SIZE, MAX_SIZE = 5, 16
MAX_BOXES = 6
#: Moves one reply may run, at most.
MAX_ACTIONS_PER_TURN = 50
#: Level seeds a reset without a task id tries before it gives up (see `_draw_level`).
LEVEL_DRAWS = 3
_TASK_ID = re.compile(r"^(\d{1,3})x(\d{1,3})-b(\d{1,3})-p(\d{1,4})-(\d{1,20})$")
LEGEND = (
    f"Legend: {WALL} wall, {FLOOR} floor, {TARGET} target, {BOX} box, "
    f"{BOX_ON_TARGET} box on a target, {PLAYER} you, {PLAYER_ON_TARGET} you on a target."
)

STEP_PENALTY = -0.1
ON_TARGET_REWARD = 1.0
OFF_TARGET_PENALTY = -1.0
SOLVED_BONUS = 10.0
FORMAT_PENALTY = -0.1
# Rounded once here: -0.1 * 3 is -0.30000000000000004 in floating point.
_STEP_REWARDS = tuple(round(STEP_PENALTY * n, 6) for n in range(MAX_ACTIONS_PER_TURN + 1))


def max_min_pushes(height: int, width: int, num_boxes: int) -> int:
    """The most pushes a level of this shape may be asked to need: every box
    at most a room's height plus width (inside the walls) from its target."""
    return num_boxes * (height + width - 4)


@dataclass(frozen=True)
class SokobanPreset(Preset):
    """What a difficulty level sets (see the Arguments section of `SokobanEnv`)."""

    #: (height, width) of the room, outer wall included (checked by `_check_size`).
    size: tuple[int, int] = setting((6, 6))
    num_boxes: int = setting(1, 1, MAX_BOXES, "boxes in the room")
    min_pushes: int = setting(
        2, 1, max_min_pushes(MAX_SIZE, MAX_SIZE, MAX_BOXES), "pushes a level needs at least"
    )


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
    level's preset; with ``size`` given and no ``min_pushes``, a level needs
    at least ``num_boxes + 1`` pushes (the preset's count suits its own room).
    ``max_turns`` (1 to 100,000) and ``max_actions_per_turn``
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

    presets: ClassVar[dict[str, SokobanPreset]] = {
        # RAGEN's default level.
        "easy": SokobanPreset(size=(6, 6), num_boxes=1, min_pushes=2, max_turns=20),
        # GEM's Sokoban-v0-easy room.
        "medium": SokobanPreset(size=(6, 6), num_boxes=2, min_pushes=4, max_turns=30),
        # GEM's Sokoban-v0-hard room.
        "hard": SokobanPreset(size=(8, 8), num_boxes=4, min_pushes=5, max_turns=50),
    }
    system_prompt: ClassVar[str] = (
        "You are playing Sokoban. Push every box onto a target. You can push a box "
        "but never pull it. " + LEGEND + " Reply with your moves inside answer tags, "
        "several separated by ||, e.g. <answer>Up || Left</answer>. "
        "Moves: Up, Down, Left, Right."
    )
    reset_options: ClassVar[tuple[str, ...]] = ("task_id", "board", "difficulty")
    snapshot_exclude: ClassVar[tuple[str, ...]] = ("max_actions_per_turn",)
    fast_calls: ClassVar[bool] = True

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
        super().__init__(
            difficulty=difficulty,
            render_mode=render_mode,
            size=_check_size(size),
            num_boxes=num_boxes,
            min_pushes=min_pushes,
            max_turns=max_turns,
        )
        self.max_actions_per_turn = check_int(
            max_actions_per_turn,
            "max_actions_per_turn",
            1,
            MAX_ACTIONS_PER_TURN,
            "moves run per turn",
        )
        self._level: Level | None = None

    def _configure(self, config: SokobanPreset) -> SokobanPreset:
        if "size" in self.overrides and "min_pushes" not in self.overrides:
            # The preset's push count suits the preset's room; in a room the caller
            # chose, ask for what the generator asks by default.
            config = dataclasses.replace(config, min_pushes=config.num_boxes + 1)
        height, width = config.size
        _check_level(height, width, config.num_boxes, config.min_pushes, "min_pushes")
        return config

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
        board = self._board_text
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
        height, width = self.config.size
        boxes, pushes = self.config.num_boxes, self.config.min_pushes
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
        self._level = level
        self._steps = dict(zip(MOVE_NAMES, move_steps(level.width), strict=True))
        self._boxes = set(level.boxes)
        self._player = level.player
        self._boxes_on_target = sum(box in level.targets for box in level.boxes)
        self._board_text = level.board()
        # The board text as a list of characters, redrawn cell by cell as things move.
        self._text = list(self._board_text)

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
        level, boxes, text, steps = self._level, self._boxes, self._text, self._steps
        floor, targets, width = level.floor, level.targets, level.width
        player, placed = self._player, self._boxes_on_target
        on = off = made = blocked = 0
        solved = False
        for name in moves:
            made += 1
            outcome = move(floor, boxes, player, steps[name])
            if outcome is None:
                blocked += 1
                continue
            ahead, pushed_to = outcome
            if pushed_to is not None:
                boxes.remove(ahead)
                boxes.add(pushed_to)
                if pushed_to in targets:
                    on += 1
                    placed += 1
                if ahead in targets:
                    off += 1
                    placed -= 1
                text[text_index(pushed_to, width)] = BOX_ON_TARGET if pushed_to in targets else BOX
            text[text_index(player, width)] = TARGET if player in targets else FLOOR
            text[text_index(ahead, width)] = PLAYER_ON_TARGET if ahead in targets else PLAYER
            player = ahead
            if placed == len(boxes):
                solved = True
                break
        self._player, self._boxes_on_target = player, placed
        feedback = f"You moved {', '.join(moves[:made])}."
        if blocked:
            feedback += f" {blocked} move(s) hit a wall or a stuck box."
        if dropped > 0:
            feedback += (
                f" {dropped} extra move(s) ignored (max {self.max_actions_per_turn} a turn)."
            )
        if solved:
            feedback += " Solved: every box is on a target!"
        board = self._board_text = "".join(text)
        return Turn(
            observation=(
                f"{feedback}\nBoxes on targets: {self._boxes_on_target}/{len(boxes)}\n{board}"
            ),
            reward_components={
                "step": _STEP_REWARDS[made],
                "box_on_target": ON_TARGET_REWARD * on,
                "box_off_target": OFF_TARGET_PENALTY * off if off else 0.0,
                "solved": SOLVED_BONUS if solved else 0.0,
            },
            terminated=solved,
            success=solved,
        )

    def _task_info(self) -> dict[str, Any]:
        level = self._level
        return {
            "state_key": self._board_text,
            "admissible_actions": list(MOVE_NAMES),
            "privileged": {
                "optimal_moves": level.optimal_moves,
                "optimal_pushes": level.optimal_pushes,
            },
        }

    def _render_text(self) -> str:
        return self._board_text


def _make_level(height: int, width: int, boxes: int, pushes: int, level_seed: int) -> Level:
    """The level a task id names (LevelTooHard if proving it optimal costs too much)."""
    rng = np.random.default_rng(level_seed)
    return generate_level(rng, height, width, boxes, min_pushes=pushes)


def _check_size(size: Any) -> tuple[int, int] | None:
    """A room size (an int for a square, or (height, width)) as (height, width)."""
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
    match = match_task_id(
        task_id,
        _TASK_ID,
        "a Sokoban task id",
        "e.g. '6x6-b1-p3-12345' (HEIGHTxWIDTH-bBOXES-pPUSHES-SEED)",
    )
    height, width, boxes, pushes, seed = (int(g) for g in match.groups())
    with task_id_parts(task_id, "names no level this env makes"):
        _check_size((height, width))
        check_int(boxes, "its box count", 1, MAX_BOXES)
        _check_level(height, width, boxes, pushes, "its push count")
        check_int(seed, "its seed", 0, MAX_TASK_SEED)
    return height, width, boxes, pushes, seed


def _level_from_board(text: Any) -> Level:
    """A level from a board given as text, checked and solved (ValueError if it cannot be)."""
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
    players = board.count(PLAYER) + board.count(PLAYER_ON_TARGET)
    if set(board) - SYMBOLS - {"\n"} or players != 1:
        raise ValueError(
            "options['board'] may use only # _ . $ * @ + and newlines, with exactly one player"
        )
    if len({len(r) for r in rows}) != 1 or any(r[0] != WALL or r[-1] != WALL for r in rows if r):
        raise ValueError("options['board'] must be a rectangle of rows enclosed by '#' walls")
    boxes_on_board = board.count(BOX) + board.count(BOX_ON_TARGET)
    if boxes_on_board > MAX_BOXES:
        raise ValueError(
            f"options['board'] has {boxes_on_board} boxes; a board may have at most {MAX_BOXES}"
        )
    height, width, floor, targets, boxes, player = parse_board(board)
    if any(floor[:width]) or any(floor[(height - 1) * width :]):
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
