"""FrozenLake maps: the tiles, the moves, the one breadth-first search, map
generation and task ids.

A map is a grid of tiles numbered row by row (``row * n_cols + col``). The
move rule lives in `neighbours` (where each move leads from each tile; a move
into the edge stays put) and `SLIP_OUTCOMES` (where slippery ice may send a
move): the env's step and the oracle's planning both use them. `breadth_first`
is the one search over them, for the generator's solvability check, the env's
hints (``info["privileged"]``) and the oracle's shortest paths.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from envgym import graphs
from envgym.core import short_repr

__all__ = [
    "ACTIONS",
    "DELTAS",
    "FROZEN",
    "GOAL",
    "HOLE",
    "Lake",
    "MAX_SIZE",
    "MIN_SIZE",
    "SLIP_OUTCOMES",
    "START",
    "breadth_first",
    "generate_lake",
    "lake_from_task_id",
    "move_between",
    "neighbours",
    "next_tiles",
]

# The tiles of a map.
START, FROZEN, HOLE, GOAL = "S", "F", "H", "G"
TILES = frozenset(START + FROZEN + HOLE + GOAL)

#: Move names, in the order used for move indices everywhere in this package.
ACTIONS = ("Up", "Down", "Left", "Right")
UP, DOWN, LEFT, RIGHT = range(4)
#: Row and column change of each move.
DELTAS = ((-1, 0), (1, 0), (0, -1), (0, 1))
#: For each move: the intended move, then the two moves at right angles to it.
SLIP_OUTCOMES = ((UP, LEFT, RIGHT), (DOWN, LEFT, RIGHT), (LEFT, UP, DOWN), (RIGHT, UP, DOWN))

#: Map sides any map may have.
MIN_SIZE, MAX_SIZE = 2, 16
#: Maps drawn per reset before giving up. At 16x16 with half the tiles holes about
#: 1 in 40 draws is solvable, so this only bounds the loop (to well under a second).
MAX_MAP_DRAWS = 10_000


@lru_cache(maxsize=64)
def neighbours(n_rows: int, n_cols: int) -> tuple[tuple[int, int, int, int], ...]:
    """For each tile, the tile each move leads to: a move into the edge stays put."""
    table = []
    for tile in range(n_rows * n_cols):
        row, col = divmod(tile, n_cols)
        moves = []
        for d_row, d_col in DELTAS:
            to_row, to_col = row + d_row, col + d_col
            inside = 0 <= to_row < n_rows and 0 <= to_col < n_cols
            moves.append(to_row * n_cols + to_col if inside else tile)
        table.append(tuple(moves))
    return tuple(table)


@lru_cache(maxsize=64)
def next_tiles(n_rows: int, n_cols: int) -> tuple[tuple[int, ...], ...]:
    """For each tile, the other tiles one move reaches, in move order."""
    return tuple(
        tuple(there for there in row if there != tile)
        for tile, row in enumerate(neighbours(n_rows, n_cols))
    )


def breadth_first(
    tiles: Sequence[str], n_rows: int, n_cols: int, source: int
) -> tuple[list[int], list[int]]:
    """Breadth-first search from `source` by the moves of `neighbours`, never
    onto a hole.

    Returns, per tile, the fewest moves from the source (-1: no way there;
    -2: a hole) and the tile it was first reached from, one move closer to the
    source (-1 at the source and where there is no way). Every move can be
    undone, so the distances from the goal are also the distances to it.
    """
    holes = {tile for tile, kind in enumerate(tiles) if kind == HOLE}
    distance, came_from = graphs.breadth_first(next_tiles(n_rows, n_cols), source, holes)
    for hole in holes:
        if hole != source:
            distance[hole] = -2
    return distance, came_from


def move_between(table: Sequence[Sequence[int]], here: int, there: int) -> str:
    """The name of the move from `here` to the neighbouring tile `there`."""
    return ACTIONS[table[here].index(there)]


class Lake:
    """One map and what the search says about it; immutable, so copies share it."""

    __slots__ = (
        "task_id",
        "tiles",
        "n_rows",
        "n_cols",
        "start",
        "goal",
        "table",
        "distance",
        "came_from",
        "grid",
        "_solutions",
    )

    def __init__(self, rows: list[str], search: tuple[list[int], list[int]] | None = None) -> None:
        self.n_rows, self.n_cols = len(rows), len(rows[0])
        self.tiles = "".join(rows)
        self.task_id = "/".join(rows)
        self.start = self.tiles.index(START)
        self.goal = self.tiles.index(GOAL)
        self.table = neighbours(self.n_rows, self.n_cols)
        if search is None:
            search = breadth_first(self.tiles, self.n_rows, self.n_cols, self.goal)
        # Fewest moves to the goal per tile (-1: no way, -2: a hole), and the next
        # tile on one shortest way there; never mutated.
        self.distance, self.came_from = search
        # Tiles separated by spaces, one row a line (see `picture`).
        self.grid = "\n".join([" ".join(row) for row in rows])
        self._solutions: dict[int, tuple[str, ...]] = {}

    def picture(self, tile: int) -> str:
        """The map as text with P on `tile`. Every tile in the text is followed by
        a space or a newline, so tile number t is character 2 * t."""
        return self.grid[: 2 * tile] + "P" + self.grid[2 * tile + 1 :]

    def solution(self, tile: int) -> tuple[str, ...]:
        """A shortest list of moves from `tile` to the goal (empty if none)."""
        found = self._solutions.get(tile)
        if found is None:
            came_from, table = self.came_from, self.table
            moves: list[str] = []
            here = tile
            while came_from[here] != -1:  # the search began at the goal
                there = came_from[here]
                moves.append(ACTIONS[table[here].index(there)])  # see `move_between`
                here = there
            found = self._solutions[tile] = tuple(moves)
        return found

    def __deepcopy__(self, memo: dict[int, Any]) -> Lake:
        return self

    def __getstate__(self) -> dict[str, Any]:
        return {"rows": self.task_id.split("/")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["rows"])


def generate_lake(rng: np.random.Generator, size: int, hole_fraction: float) -> Lake:
    """Draw `size` x `size` maps from `rng` until the goal is reachable from the start."""
    tiles_count = size * size
    n_holes = round(hole_fraction * (tiles_count - 2))
    for _ in range(MAX_MAP_DRAWS):
        # One shuffle places everything: the start first, the goal at the first
        # tile far enough from it, holes on the first n_holes of the rest (which
        # lie among the n_holes + 1 tiles after the start, the goal being one tile).
        order = rng.permutation(tiles_count).tolist()
        start = order[0]
        start_row, start_col = divmod(start, size)
        goal = next(
            (g for g in order if abs(g // size - start_row) + abs(g % size - start_col) >= size),
            None,
        )
        if goal is None:  # the centre of an odd map has no tile far enough away
            continue
        tiles = [FROZEN] * tiles_count
        for tile in [t for t in order[1 : n_holes + 2] if t != goal][:n_holes]:
            tiles[tile] = HOLE
        tiles[start], tiles[goal] = START, GOAL
        search = breadth_first(tiles, size, size, goal)
        if search[0][start] != -1:
            flat = "".join(tiles)
            return Lake([flat[r * size : (r + 1) * size] for r in range(size)], search)
    raise RuntimeError(
        f"drew {MAX_MAP_DRAWS} {size}x{size} maps with {n_holes} holes and none had a path "
        "from S to G; use a lower hole_fraction"
    )


def lake_from_task_id(task_id: Any) -> Lake:
    """A map from its task id ("SFFF/FHFH/FFFH/HFFG"); ValueError saying what is wrong."""
    shape = (
        "a task_id is the map's rows joined by '/', tiles from S, F, H, G, e.g. "
        "'SFFF/FHFH/FFFH/HFFG'"
    )
    if not isinstance(task_id, str):
        raise ValueError(f"task_id must be a string; {shape}; got {short_repr(task_id)}")
    if len(task_id) > MAX_SIZE * (MAX_SIZE + 1) - 1:  # checked before splitting it
        raise ValueError(
            f"task_id is {len(task_id)} characters long; a map is at most {MAX_SIZE} by "
            f"{MAX_SIZE} tiles ({MAX_SIZE * (MAX_SIZE + 1) - 1} characters with the '/')"
        )
    rows = task_id.split("/")
    if not all(rows) or len({len(row) for row in rows}) != 1:
        raise ValueError(f"task_id rows must be non-empty and of equal length; {shape}")
    if len(rows) > MAX_SIZE or len(rows[0]) > MAX_SIZE:
        raise ValueError(
            f"task_id map must be at most {MAX_SIZE} tiles on each side, got "
            f"{len(rows)}x{len(rows[0])}"
        )
    if not set(task_id) - {"/"} <= TILES:
        raise ValueError(f"task_id has tiles other than S, F, H, G; {shape}")
    if task_id.count(START) != 1 or task_id.count(GOAL) != 1:
        raise ValueError(f"task_id must hold exactly one S and one G; {shape}")
    lake = Lake(rows)
    if lake.distance[lake.start] == -1:
        raise ValueError(f"task_id {task_id!r} has no path from S to G avoiding holes")
    return lake
