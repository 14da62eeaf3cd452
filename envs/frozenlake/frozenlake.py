"""FrozenLake as a text environment: walk across generated ice maps to the goal.

The class docstring of `FrozenLakeEnv` is its manual; the maps, their
generation and the move rule are in `envgym.envs.frozenlake.lake`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar

from envgym.core import Preset, TextEnv, Turn, check_int, setting
from envgym.envs.frozenlake.lake import (
    ACTIONS,
    GOAL,
    HOLE,
    MAX_SIZE,
    MIN_SIZE,
    SLIP_OUTCOMES,
    Lake,
    generate_lake,
    lake_from_task_id,
)
from envgym.parsing import GRID_MOVES, parse_answer, split_moves

__all__ = ["ACTIONS", "FORMAT_PENALTY", "FrozenLakeEnv", "LakePreset"]

#: Reward component "format" for a reply that is not a list of legal moves.
FORMAT_PENALTY = -0.1
MAX_HOLE_FRACTION = 0.5
MAX_ACTIONS_PER_TURN = 50
_MOVE_INDEX = {name: i for i, name in enumerate(ACTIONS)}


@dataclass(frozen=True)
class LakePreset(Preset):
    """What a difficulty level sets; ``max_turns`` is the turn limit on firm ice."""

    size: int = setting(4, MIN_SIZE, MAX_SIZE, "the map's side length")
    hole_fraction: float = setting(
        0.15, 0.0, MAX_HOLE_FRACTION, "the share of tiles that are holes"
    )
    #: The turn limit on slippery ice, where the way to the goal takes longer.
    slippery_max_turns: int = 50


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
    presets: ClassVar[dict[str, LakePreset]] = {
        "easy": LakePreset(size=4, hole_fraction=0.15, max_turns=10, slippery_max_turns=50),
        "medium": LakePreset(size=6, hole_fraction=0.2, max_turns=20, slippery_max_turns=80),
        "hard": LakePreset(size=8, hole_fraction=0.25, max_turns=30, slippery_max_turns=120),
    }
    snapshot_exclude: ClassVar[tuple[str, ...]] = ("slippery", "max_actions_per_turn")
    fast_calls: ClassVar[bool] = True

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
        if not isinstance(slippery, bool):
            raise ValueError(f"slippery must be True or False, got {slippery!r}")
        self.slippery = slippery  # read by _configure, which the base class calls
        super().__init__(
            difficulty=difficulty,
            render_mode=render_mode,
            size=size,
            hole_fraction=hole_fraction,
            max_turns=max_turns,
        )
        self.max_actions_per_turn = check_int(
            max_actions_per_turn,
            "max_actions_per_turn",
            1,
            MAX_ACTIONS_PER_TURN,
            "moves allowed in one reply",
        )
        self._lake: Lake | None = None
        self._pos = 0

    def _configure(self, config: LakePreset) -> LakePreset:
        if self.slippery and "max_turns" not in self.overrides:
            return dataclasses.replace(config, max_turns=config.slippery_max_turns)
        return config

    # ----------------------------------------------------------- TextEnv hooks
    def _new_task(self, options: dict[str, Any]) -> str:
        task_id = options.get("task_id")
        if task_id is None:
            lake = generate_lake(self.np_random, self.config.size, self.config.hole_fraction)
        else:
            lake = lake_from_task_id(task_id)
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

        tiles, table, slippery = self._lake.tiles, self._lake.table, self.slippery
        pos = self._pos
        tile = tiles[pos]
        parts = []
        used = len(moves)
        for count, name in enumerate(moves, start=1):
            intended = went = _MOVE_INDEX[name]
            if slippery:
                went = SLIP_OUTCOMES[intended][int(self.np_random.random() * 3.0)]
            nxt = table[pos][went]
            if went != intended:
                slid = ACTIONS[went]
                name += f" (slid {slid}, blocked by the edge)" if nxt == pos else f" (slid {slid})"
            elif nxt == pos:
                name += " (blocked by the edge)"
            parts.append(name)
            pos = nxt
            tile = tiles[pos]
            if tile == HOLE or tile == GOAL:
                used = count
                break
        self._pos = pos
        text = "Moves: " + ", ".join(parts) + "."
        if used < len(moves):
            left = len(moves) - used
            text += f" The last {left} move{'s were' if left > 1 else ' was'} not used."
        if tile == GOAL:
            text += " You reached the goal!"
        elif tile == HOLE:
            text += " You fell into a hole. Game over."
        return Turn(
            text + "\n" + self._board(self.turn + 1),
            {"goal": 1.0 if tile == GOAL else 0.0, "format": 0.0},
            terminated=tile == HOLE or tile == GOAL,
            success=tile == GOAL,
        )

    def _task_info(self) -> dict[str, Any]:
        lake, pos = self._lake, self._pos
        if lake is None:
            return {}
        return {
            "state_key": f"{lake.task_id}@{pos}",
            "admissible_actions": list(ACTIONS),
            "privileged": {
                "shortest_path_length": max(lake.distance[pos], -1),
                "solution": list(lake.solution(pos)),
            },
        }

    def _render_text(self) -> str:
        if self._lake is None:
            return "(no map yet: call reset())"
        return self._board(self.turn)

    def _board(self, turns_taken: int) -> str:
        """The map with P on it, the position and the turns left, as text."""
        row, col = divmod(self._pos, self._lake.n_cols)
        return (
            f"{self._lake.picture(self._pos)}\nPosition: row {row + 1}, column {col + 1}. "
            f"Turns left: {max(self.max_turns - turns_taken, 0)}."
        )
