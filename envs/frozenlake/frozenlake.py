"""FrozenLake as a text environment: walk across generated ice maps to the goal.

One env, one file. The class docstring of `FrozenLakeEnv` is its manual.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, ClassVar

from envgym.core import TextEnv, Turn, check_int, short_repr
from envgym.parsing import GRID_MOVES, parse_answer, split_moves

__all__ = [
    "ACTIONS",
    "DEFAULT_MAX_TURNS",
    "FORMAT_PENALTY",
    "LEVELS",
    "FrozenLakeEnv",
]

#: Move names, in the order used for action indices everywhere in this package.
ACTIONS = ("Up", "Down", "Left", "Right")
#: Row and column change of each move.
DELTAS = ((-1, 0), (1, 0), (0, -1), (0, 1))
#: For each move: the intended move, then the two moves at right angles to it.
SLIP_OUTCOMES = ((0, 2, 3), (1, 2, 3), (2, 0, 1), (3, 0, 1))

#: Difficulty level -> (map side length, fraction of the other cells that are holes).
LEVELS: dict[str, tuple[int, float]] = {
    "easy": (4, 0.15),
    "medium": (6, 0.2),
    "hard": (8, 0.25),
}
#: Default turn limit per level, for deterministic and for slippery ice.
DEFAULT_MAX_TURNS: dict[str, tuple[int, int]] = {
    "easy": (10, 50),
    "medium": (20, 80),
    "hard": (30, 120),
}
#: Reward component "format" for a reply that is not a list of legal moves.
FORMAT_PENALTY = -0.1

MIN_SIZE, MAX_SIZE = 2, 16
MAX_HOLE_FRACTION = 0.5
MAX_ACTIONS_PER_TURN = 50
#: Maps drawn per reset before giving up. At 16x16 with half the tiles holes about
#: 1 in 40 draws is solvable, so this only bounds the loop (to well under a second).
MAX_MAP_DRAWS = 10_000
_TILES = frozenset("SFHG")
_MOVE_INDEX = {name: i for i, name in enumerate(ACTIONS)}


@lru_cache(maxsize=64)
def _neighbours(n_rows: int, n_cols: int) -> tuple[tuple[int, int, int, int], ...]:
    """For each cell index, the cell each move leads to (itself at the border)."""
    table = []
    for cell in range(n_rows * n_cols):
        r, c = divmod(cell, n_cols)
        moves = []
        for dr, dc in DELTAS:
            rr, cc = r + dr, c + dc
            inside = 0 <= rr < n_rows and 0 <= cc < n_cols
            moves.append(rr * n_cols + cc if inside else cell)
        table.append(tuple(moves))
    return tuple(table)


def _distances_to(
    tiles: str | list[str], n_rows: int, n_cols: int, goal: int
) -> tuple[list[int], list[int]]:
    """Breadth-first search back from `goal`, never through a hole.

    Returns, per cell, the fewest moves to the goal (-1: no way; -2: a hole)
    and the first move of one such shortest path (-1 where there is none).
    Unrolled by hand: map generation runs it on every draw.
    """
    nbrs = _neighbours(n_rows, n_cols)
    dist = [-2 if tile == "H" else -1 for tile in tiles]
    first_move = [-1] * len(tiles)
    dist[goal] = 0
    queue = [goal]
    append = queue.append
    for cell in queue:  # the list grows while we walk it: a FIFO queue
        step = dist[cell] + 1
        up, down, left, right = nbrs[cell]
        # A neighbour reached by moving Up from `cell` goes Down to get here, etc.
        if dist[up] == -1:
            dist[up], first_move[up] = step, 1
            append(up)
        if dist[down] == -1:
            dist[down], first_move[down] = step, 0
            append(down)
        if dist[left] == -1:
            dist[left], first_move[left] = step, 3
            append(left)
        if dist[right] == -1:
            dist[right], first_move[right] = step, 2
            append(right)
    return dist, first_move


class _Lake:
    """One map and everything derived from it; immutable, so copies share it."""

    __slots__ = (
        "task_id",
        "tiles",
        "n_rows",
        "n_cols",
        "start",
        "goal",
        "dist",
        "first_move",
        "grid",
        "nbrs",
        "_solutions",
    )

    def __init__(self, rows: list[str], search: tuple[list[int], list[int]] | None = None) -> None:
        self.n_rows, self.n_cols = len(rows), len(rows[0])
        self.tiles = "".join(rows)
        self.task_id = "/".join(rows)
        self.start = self.tiles.index("S")
        self.goal = self.tiles.index("G")
        if search is None:
            search = _distances_to(self.tiles, self.n_rows, self.n_cols, self.goal)
        # Fewest moves to the goal per cell (-1: no way, -2: a hole); never mutated.
        self.dist, self.first_move = search
        # Cells separated by spaces; P's index in this text is cell_row * 2 * n_cols + 2 * col.
        self.grid = "\n".join(" ".join(row) for row in rows)
        self.nbrs = _neighbours(self.n_rows, self.n_cols)
        self._solutions: dict[int, tuple[str, ...]] = {}

    def solution(self, cell: int) -> tuple[str, ...]:
        """A shortest list of moves from `cell` to the goal (empty if none)."""
        found = self._solutions.get(cell)
        if found is None:
            moves: list[str] = []
            first_move, nbrs = self.first_move, self.nbrs
            at = cell
            move = first_move[at]
            while move != -1:
                moves.append(ACTIONS[move])
                at = nbrs[at][move]
                move = first_move[at]
            found = self._solutions[cell] = tuple(moves)
        return found

    def __deepcopy__(self, memo: dict[int, Any]) -> _Lake:
        return self

    def __getstate__(self) -> dict[str, Any]:
        return {"rows": self.task_id.split("/")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["rows"])


class FrozenLakeEnv(TextEnv):
    """Walk across a frozen lake from the start to the goal without falling into a hole.

    ## Description

    The lake is a grid of tiles: `S` the start, `F` frozen ice, `H` a hole and
    `G` the goal; `P` marks the agent. Every reset draws a new map from the
    env's seeded random generator: the start and the goal are placed at
    random at least `size` moves apart (Manhattan distance), then a fixed
    share of the other tiles become holes. A map whose goal cannot be reached
    from the start is thrown away and drawn again (checked by breadth-first
    search), so every generated task is solvable.

    The ice is firm by default: a move goes where it says. With
    `slippery=True` each move goes the intended way with probability 1/3 and
    to each of the two sides at right angles with probability 1/3 (it never
    goes backwards). Slips are drawn from `self.np_random`, so a seeded
    episode, and a restored snapshot, replays exactly.

    ## Action Space

    The reply is free text (`gymnasium.spaces.Text`). The env reads the last
    `<answer>...</answer>` (else the last `\\boxed{...}`), ignoring any
    `<think>` block, and splits it into moves on `||`, commas, semicolons or
    new lines. A move is `Up`, `Down`, `Left` or `Right` (any case; `U`, `D`,
    `L`, `R` also work). One turn holds 1 to `max_actions_per_turn` moves,
    applied in order, for example `<answer>Down || Down || Right</answer>`.
    Moves after the agent reaches the goal or falls into a hole are ignored.
    A move into the edge of the map leaves the agent where it is (the turn
    still counts).

    A reply that has no answer, names an unknown move or holds too many moves
    is invalid: nothing moves, the turn is used up, `info["action_valid"]` is
    False, the observation says what was wrong, and the reward carries the
    format penalty.

    ## Observation Space

    ASCII text (`gymnasium.spaces.Text` over `envgym.core.CHARSET`). The first
    observation states the task and the reply format; later ones start with
    what the last reply did (the moves made, slips, bumps into the edge, or
    why the reply was invalid). Every observation then shows the map, one
    row per line, tiles separated by spaces, row 1 at the top, followed by
    `Position: row R, column C. Turns left: N.` For example::

        P F F F
        F H F H
        F F F H
        H F F G
        Position: row 1, column 1. Turns left: 10.

    ## Starting State

    The agent stands on `S`. `reset(options={"task_id": "SFFF/FHFH/FFFH/HFFG"})`
    loads a given map instead of drawing one (rows separated by `/`, at most
    16 by 16 tiles from `SFHG`, exactly one `S` and one `G`, the goal
    reachable; any rectangle, a single row included); the
    `task_id` of every episode names its map this way, so any task can be
    replayed. `options={"difficulty": ...}` switches the level at reset.

    ## Rewards

    The reward is the sum of `info["reward_components"]`:

    - `goal`: +1 on the step that reaches `G`, else 0.
    - `format`: -0.1 for an invalid reply (see Action Space), else 0.

    Falling into a hole, bumping into the edge and running out of turns cost
    nothing beyond the missed goal reward.

    ## Episode End

    - Termination: the agent reaches `G` (`info["success"]` True) or falls into
      a hole (`info["success"]` False).
    - Truncation: `max_turns` turns (replies) pass without either.

    ## Arguments

    ```python
    gym.make("envgym/FrozenLake-v0", difficulty="easy", size=None, hole_fraction=None,
             slippery=False, max_actions_per_turn=3, max_turns=None, render_mode=None)
    ```

    - `difficulty`: `"easy"` (4x4, 15% holes), `"medium"` (6x6, 20%) or
      `"hard"` (8x8, 25%).
    - `size`: map side length, 2 to 16; overrides the level's size.
    - `hole_fraction`: share of the tiles other than `S` and `G` that are
      holes, 0.0 to 0.5; overrides the level's share.
    - `slippery`: slippery ice (see Description).
    - `max_actions_per_turn`: most moves one reply may hold, 1 to 50.
    - `max_turns`: turn limit (1 to 100,000); by default 10 / 20 / 30 turns on firm ice and
      50 / 80 / 120 on slippery ice for easy / medium / hard.
    - `render_mode`: `"ansi"` (`render()` returns the map text) or `"human"`
      (prints it).

    `info` carries the shared keys (`task_id`, `turn`, `action_valid`,
    `success`, `reward_components`) and `state_key` (`"<task_id>@<tile>"`, the
    tile numbered row by row from 0: the same text whenever the agent stands on
    the same tile of the same map),
    `admissible_actions` (the four moves), `privileged` (trainer-only:
    `shortest_path_length` from the current tile ignoring slips, -1 in a hole,
    and `solution`, one shortest list of moves) and, on reset, `system_prompt`.

    ## Version History

    - v0: first version: generated solvable maps, three levels, optional
      slippery ice, several moves per turn. Since then `max_actions_per_turn`
      is at most 50 and a `task_id` longer than a 16x16 map is refused before
      it is read; anything out of range is a ValueError naming what is allowed.
    """

    system_prompt: ClassVar[str] = (
        "You are playing Frozen Lake. The map is a grid shown one row per line, row 1 at the "
        "top: P is you, S the start, F frozen ice (safe), H a hole (falling in ends the game "
        "with no reward) and G the goal (reaching it gives reward 1). Move with Up, Down, Left "
        "or Right inside answer tags, e.g. <answer>Down</answer>. You may send several moves "
        "in one reply, separated by ||, e.g. <answer>Down || Right</answer>; each task says "
        "how many are allowed. Moving into the edge of the map leaves you in place. If the "
        "ice is slippery, a move goes the intended way only a third of the time and otherwise "
        "slides to one side, at a right angle. Think first if you like, then give your moves."
    )
    _snapshot_fields: ClassVar[tuple[str, ...]] = (
        "_lake",
        "_pos",
        "size",
        "hole_fraction",
        "max_turns",
    )

    def __init__(
        self,
        *,
        difficulty: str = "easy",
        size: int | None = None,
        hole_fraction: float | None = None,
        slippery: bool = False,
        max_actions_per_turn: int = 3,
        max_turns: int | None = None,
        render_mode: str | None = None,
    ) -> None:
        super().__init__(difficulty=difficulty, max_turns=max_turns, render_mode=render_mode)
        if size is not None:
            size = check_int(size, "size", MIN_SIZE, MAX_SIZE, "the map's side length")
        if hole_fraction is not None and (
            isinstance(hole_fraction, bool)
            or not isinstance(hole_fraction, int | float)
            or not 0.0 <= hole_fraction <= MAX_HOLE_FRACTION
        ):
            raise ValueError(
                f"hole_fraction must be a number from 0.0 to {MAX_HOLE_FRACTION} (the share of "
                f"tiles that are holes), got {hole_fraction!r}"
            )
        if not isinstance(slippery, bool):
            raise ValueError(f"slippery must be True or False, got {slippery!r}")
        self.max_actions_per_turn = check_int(
            max_actions_per_turn,
            "max_actions_per_turn",
            1,
            MAX_ACTIONS_PER_TURN,
            "moves allowed in one reply",
        )
        self._size_arg = size
        self._hole_fraction_arg = None if hole_fraction is None else float(hole_fraction)
        self.slippery = slippery
        self._apply_difficulty(self.difficulty)
        self._lake: _Lake | None = None
        self._pos = 0

    # ----------------------------------------------------------- TextEnv hooks
    def _apply_difficulty(self, difficulty: str) -> None:
        self.difficulty = difficulty
        level_size, level_holes = LEVELS[difficulty]
        self.size = level_size if self._size_arg is None else self._size_arg
        self.hole_fraction = self._hole_fraction_arg
        if self.hole_fraction is None:
            self.hole_fraction = level_holes
        if self._max_turns_arg is None:
            self.max_turns = DEFAULT_MAX_TURNS[difficulty][1 if self.slippery else 0]

    def _new_task(self, options: dict[str, Any]) -> str:
        task_id = options.get("task_id")
        lake = self._parse_task_id(task_id) if task_id is not None else self._generate()
        self._lake = lake
        self.task_id = lake.task_id
        self._pos = lake.start
        slip = (
            " The ice is slippery: each move goes the intended way with probability 1/3 and "
            "slides to either side at a right angle otherwise."
            if self.slippery
            else ""
        )
        intro = (
            f"Frozen Lake, {lake.n_rows}x{lake.n_cols}. Reach G without falling into a hole (H); "
            f"P is you, S and F are safe ice.{slip} Reply with 1 to {self.max_actions_per_turn} "
            "moves (Up, Down, Left, Right) separated by ||, e.g. <answer>Down || Right</answer>."
        )
        return intro + "\n" + self._board(0)

    def _act(self, action: str) -> Turn:
        lake = self._lake
        parsed = parse_answer(action, example="Down")
        error = parsed.error
        moves: list[str] = []
        if error is None:
            moves, error = split_moves(parsed.value, GRID_MOVES)
            if error is None and len(moves) > self.max_actions_per_turn:
                error = (
                    f"You sent {len(moves)} moves; at most {self.max_actions_per_turn} are "
                    "allowed in one reply."
                )
        if error is not None:
            text = (
                f"Invalid reply: {error} Reply with 1 to {self.max_actions_per_turn} of Up, Down, "
                "Left, Right separated by ||, e.g. <answer>Down || Right</answer>. You did not "
                "move.\n" + self._board(self.turn + 1)
            )
            return Turn(text, {"goal": 0.0, "format": FORMAT_PENALTY}, action_valid=False)

        pos, tiles, nbrs = self._pos, lake.tiles, lake.nbrs
        slippery = self.slippery
        parts = []
        tile = tiles[pos]
        done_at = len(moves)
        for i, name in enumerate(moves):
            intended = _MOVE_INDEX[name]
            went = intended
            if slippery:
                went = SLIP_OUTCOMES[intended][int(self.np_random.random() * 3.0)]
            nxt = nbrs[pos][went]
            if went != intended:
                slid = ACTIONS[went]
                name += f" (slid {slid}, blocked by the edge)" if nxt == pos else f" (slid {slid})"
            elif nxt == pos:
                name += " (blocked by the edge)"
            parts.append(name)
            pos = nxt
            tile = tiles[pos]
            if tile == "H" or tile == "G":
                done_at = i + 1
                break
        self._pos = pos
        text = "Moves: " + ", ".join(parts) + "."
        if done_at < len(moves):
            left = len(moves) - done_at
            text += f" The last {left} move{'s were' if left > 1 else ' was'} not used."
        if tile == "G":
            text += " You reached the goal!"
            reward = {"goal": 1.0, "format": 0.0}
        elif tile == "H":
            text += " You fell into a hole. Game over."
            reward = {"goal": 0.0, "format": 0.0}
        else:
            reward = {"goal": 0.0, "format": 0.0}
        terminal = tile == "H" or tile == "G"
        return Turn(
            text + "\n" + self._board(self.turn + 1),
            reward,
            terminated=terminal,
            success=tile == "G",
        )

    def _task_info(self) -> dict[str, Any]:
        lake, pos = self._lake, self._pos
        if lake is None:
            return {}
        return {
            "state_key": f"{lake.task_id}@{pos}",
            "admissible_actions": list(ACTIONS),
            "privileged": {
                "shortest_path_length": max(lake.dist[pos], -1),
                "solution": list(lake.solution(pos)),
            },
        }

    def _render_text(self) -> str:
        if self._lake is None:
            return "(no map yet: call reset())"
        return self._board(self.turn)

    # ----------------------------------------------------------------- helpers
    def _board(self, turns_taken: int) -> str:
        """The map with P on it, the position and the turns left, as text."""
        lake, pos = self._lake, self._pos
        r, c = divmod(pos, lake.n_cols)
        at = r * 2 * lake.n_cols + 2 * c
        grid = lake.grid
        return (
            f"{grid[:at]}P{grid[at + 1 :]}\nPosition: row {r + 1}, column {c + 1}. "
            f"Turns left: {max(self.max_turns - turns_taken, 0)}."
        )

    def _generate(self) -> _Lake:
        """Draw maps from self.np_random until the goal is reachable from the start."""
        n = self.size
        cells = n * n
        n_holes = round(self.hole_fraction * (cells - 2))
        for _ in range(MAX_MAP_DRAWS):
            # One shuffle places everything: the start first, the goal at the first
            # cell far enough from it, holes on the first n_holes of the rest.
            order = self.np_random.permutation(cells).tolist()
            start = order[0]
            sr, sc = divmod(start, n)
            goal = next((g for g in order if abs(g // n - sr) + abs(g % n - sc) >= n), None)
            if goal is None:  # the centre of an odd map has no tile far enough away
                continue
            tiles = ["F"] * cells
            for cell in [g for g in order[1:] if g != goal][:n_holes]:
                tiles[cell] = "H"
            tiles[start], tiles[goal] = "S", "G"
            search = _distances_to(tiles, n, n, goal)
            if search[0][start] != -1:
                flat = "".join(tiles)
                return _Lake([flat[r * n : (r + 1) * n] for r in range(n)], search)
        raise RuntimeError(
            f"drew {MAX_MAP_DRAWS} {n}x{n} maps with {n_holes} holes and none had a path from "
            "S to G; use a lower hole_fraction"
        )

    @staticmethod
    def _parse_task_id(task_id: Any) -> _Lake:
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
        if not set(task_id) - {"/"} <= _TILES:
            raise ValueError(f"task_id has tiles other than S, F, H, G; {shape}")
        if task_id.count("S") != 1 or task_id.count("G") != 1:
            raise ValueError(f"task_id must hold exactly one S and one G; {shape}")
        lake = _Lake(rows)
        if lake.dist[lake.start] == -1:
            raise ValueError(f"task_id {task_id!r} has no path from S to G avoiding holes")
        return lake
