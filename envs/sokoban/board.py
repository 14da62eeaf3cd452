"""The Sokoban board: its cells, its text, and the rules for a move and a walk.

A board is a flat grid, row by row: the cell in row ``r`` and column ``c`` of
a board ``width`` cells wide is number ``r * width + c``, and a move adds its
step (`move_steps`) to a cell number. The outer cells are wall, so a move
from a floor cell never leaves the grid. The env's step, the solver, the
generator and the oracle all move the player with `move` and `walk`, and
write and read boards with `render_board` and `parse_board`.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from envgym.graphs import breadth_first

__all__ = [
    "BOX",
    "BOX_ON_TARGET",
    "FLOOR",
    "MOVE_NAMES",
    "PLAYER",
    "PLAYER_ON_TARGET",
    "SYMBOLS",
    "TARGET",
    "WALL",
    "floor_neighbours",
    "move",
    "move_steps",
    "parse_board",
    "path",
    "render_board",
    "text_index",
    "walk",
]

# What each cell of the board text shows.
WALL = "#"
FLOOR = "_"
TARGET = "."
BOX = "$"
BOX_ON_TARGET = "*"
PLAYER = "@"
PLAYER_ON_TARGET = "+"
SYMBOLS = frozenset(WALL + FLOOR + TARGET + BOX + BOX_ON_TARGET + PLAYER + PLAYER_ON_TARGET)

MOVE_NAMES = ("Up", "Down", "Left", "Right")


def move_steps(width: int) -> tuple[int, int, int, int]:
    """How each move (in `MOVE_NAMES` order) changes a cell number on a board
    `width` cells wide: a row up or down, a column left or right."""
    return (-width, width, -1, 1)


def move(
    floor: Sequence[int], boxes: Collection[int], player: int, step: int
) -> tuple[int, int | None] | None:
    """The rule for one move: the player steps by `step` onto floor; stepping
    onto a box pushes it one cell further, if that cell is floor without a box.

    Returns the player's new cell and the cell the pushed box lands on (None
    when no box moved), or None when the move is blocked. `floor` is true for
    every cell that is not wall.
    """
    ahead = player + step
    if not floor[ahead]:
        return None
    if ahead not in boxes:
        return ahead, None
    beyond = ahead + step
    if not floor[beyond] or beyond in boxes:
        return None
    return ahead, beyond


def floor_neighbours(floor: Sequence[int], width: int) -> list[tuple[int, ...]]:
    """For each cell, the floor cells one move away, in `MOVE_NAMES` order
    (none from a wall): the board's map for `walk`."""
    steps = move_steps(width)
    return [
        tuple(cell + step for step in steps if floor[cell + step]) if floor[cell] else ()
        for cell in range(len(floor))
    ]


def walk(
    neighbours: Sequence[tuple[int, ...]], boxes: Collection[int], start: int
) -> tuple[list[int], list[int]]:
    """Where the player can go from `start` by moves that push nothing (see
    `move`), on a board given by its `floor_neighbours`.

    Returns, per cell, the fewest such moves (-1 where it cannot go) and the
    cell it is first reached from, one move closer to `start` (-1 at `start`
    and where it cannot go). `path` turns that into move names.
    """
    return breadth_first(neighbours, start, blocked=boxes)


def path(width: int, came_from: list[int], start: int, end: int) -> list[str]:
    """The move names of the way `walk` found from `start` to `end`."""
    steps = move_steps(width)
    names = []
    cell = end
    while cell != start:
        previous = came_from[cell]
        names.append(MOVE_NAMES[steps.index(cell - previous)])
        cell = previous
    return names[::-1]


def text_index(cell: int, width: int) -> int:
    """Where a cell's symbol is in the board text: every row before it adds a newline."""
    return cell + cell // width


def render_board(
    height: int,
    width: int,
    floor: Sequence[int],
    targets: Collection[int],
    boxes: Collection[int],
    player: int,
) -> str:
    """The board as text, one row a line, in the symbols above."""
    cells = [FLOOR if is_floor else WALL for is_floor in floor]
    for target in targets:
        cells[target] = TARGET
    for box in boxes:
        cells[box] = BOX_ON_TARGET if box in targets else BOX
    cells[player] = PLAYER_ON_TARGET if player in targets else PLAYER
    return "\n".join("".join(cells[r * width : (r + 1) * width]) for r in range(height))


def parse_board(text: str) -> tuple[int, int, bytes, frozenset[int], tuple[int, ...], int]:
    """Read a board written by `render_board` back into (height, width, floor,
    targets, boxes, player); `floor` holds 1 for every cell that is not wall."""
    rows = text.strip("\n").split("\n")
    height, width = len(rows), max(len(row) for row in rows)
    floor = bytearray(height * width)
    targets, boxes, player = set(), [], -1
    for r, row in enumerate(rows):
        for c, symbol in enumerate(row):
            cell = r * width + c
            if symbol == WALL:
                continue
            floor[cell] = 1
            if symbol in (TARGET, BOX_ON_TARGET, PLAYER_ON_TARGET):
                targets.add(cell)
            if symbol in (BOX, BOX_ON_TARGET):
                boxes.append(cell)
            if symbol in (PLAYER, PLAYER_ON_TARGET):
                player = cell
    if player < 0 or not boxes or len(boxes) != len(targets):
        raise ValueError("not a Sokoban board: need one player and as many boxes as targets")
    return height, width, bytes(floor), frozenset(targets), tuple(sorted(boxes)), player
