"""The Sokoban oracle: reads the board from the observation and plays an optimal solution."""

from __future__ import annotations

from typing import Any

from envgym.envs.sokoban.board import (
    MOVE_NAMES,
    SYMBOLS,
    move,
    move_steps,
    parse_board,
    render_board,
)
from envgym.envs.sokoban.solver import SolverGaveUp, solve

__all__ = ["SokobanOracle", "board_from_observation"]


def board_from_observation(observation: str) -> str:
    """The board rows of a Sokoban observation (the lines made only of board symbols)."""
    rows = [line for line in observation.split("\n") if line and set(line) <= SYMBOLS]
    return "\n".join(rows)


class SokobanOracle:
    """Solves each position it sees with the optimal A* solver and sends the moves,
    as many per turn as the env allows. It re-plans whenever the board is not the
    one its plan expected, so it also recovers from positions it did not choose.
    A position the solver cannot finish within its node limit (or a dead one)
    gets a plain ``Up``: nothing better is known."""

    name = "oracle"

    def __init__(self, env: Any = None, max_actions_per_turn: int | None = None) -> None:
        if max_actions_per_turn is None:
            max_actions_per_turn = getattr(env, "max_actions_per_turn", 1)
        self.max_actions_per_turn = max_actions_per_turn
        self._plan: list[str] = []
        self._expected_board: str | None = None

    def reset(self) -> None:
        self._plan = []
        self._expected_board = None

    def act(self, observation: str, info: dict[str, Any]) -> str:
        board = board_from_observation(observation)
        if board != self._expected_board or not self._plan:
            height, width, floor, targets, boxes, player = parse_board(board)
            try:
                solution = solve(width, floor, targets, boxes, player)
            except SolverGaveUp:
                solution = None
            if solution is None:
                self._plan = []
                return "<answer>Up</answer>"  # a dead position: nothing can help
            self._plan = solution[0]
        chunk = self._plan[: self.max_actions_per_turn]
        self._plan = self._plan[len(chunk) :]
        self._expected_board = _board_after(board, chunk)
        return "<answer>" + " || ".join(chunk) + "</answer>"


def _board_after(board: str, moves: list[str]) -> str:
    """The board after `moves`, by the env's rules (to notice when the game went differently)."""
    height, width, floor, targets, boxes, player = parse_board(board)
    steps = dict(zip(MOVE_NAMES, move_steps(width), strict=True))
    box_set = set(boxes)
    for name in moves:
        outcome = move(floor, box_set, player, steps[name])
        if outcome is None:
            continue
        player, pushed_to = outcome
        if pushed_to is not None:
            box_set.remove(player)
            box_set.add(pushed_to)
    return render_board(height, width, floor, targets, box_set, player)
