"""TicTacToe: the PettingZoo game and the single-agent envgym/TicTacToe-v0."""

from __future__ import annotations

from functools import cache
from typing import Any, ClassVar

from envgym.envs.games.board import MARKS, MarkGame
from envgym.selfplay import VersusEnv

__all__ = ["TicTacToe", "TicTacToeEnv"]

LINES = ((0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6))
#: The lines through each cell: a move can only complete one of these.
LINES_THROUGH = tuple(tuple(line for line in LINES if cell in line) for cell in range(9))


class TicTacToe(MarkGame):
    """TicTacToe for two players.

    ## Description
    Players take turns marking an empty cell of a 3x3 grid; ``player_0`` plays
    X and moves first, ``player_1`` plays O. Three marks in a row, column or
    diagonal win; a full board without a line is a draw.

    ## Action Space
    Text: the number (1-9) of an empty cell in answer tags, e.g.
    ``<answer>5</answer>``. Cells are numbered left to right, top to bottom.
    A reply that is not an empty cell gets a warning and the player moves
    again; a second invalid reply in the same turn loses the game.

    ## Observation Space
    Text: the player's mark, the opponent's last move, the board with empty
    cells shown by their numbers, and the legal moves.

    ## Starting State
    An empty board, X to move.

    ## Rewards
    Zero-sum: +1 for a win, -1 for a loss, 0 for a draw, given when the game
    ends. Losing by two invalid replies counts as a loss (-1, opponent +1).

    ## Episode End
    A line of three, a full board, or a forfeit.

    ## Arguments
    ``illegal_retries`` (default 1): invalid replies forgiven per turn.
    Single-agent ``envgym/TicTacToe-v0``: ``difficulty`` easy/medium/hard is
    the opponent (random / optimal half the time / perfect minimax play),
    ``opponent`` and ``seat`` override it (see `envgym.selfplay.VersusEnv`).

    ## Version History
    * v0: initial version.
    """

    move_prompt: ClassVar[str] = "an empty cell"
    moves_label: ClassVar[str] = "Empty cells"
    metadata: ClassVar[dict[str, Any]] = {
        "render_modes": ["ansi", "human"],
        "name": "tictactoe_v0",
        "is_parallelizable": False,
    }
    default_max_moves: ClassVar[int] = 9
    _snapshot_fields: ClassVar[tuple[str, ...]] = ("board", "last_move")
    system_prompt: ClassVar[str] = (
        "You are playing TicTacToe. Cells are numbered 1-9, left to right, top to "
        "bottom. Reply with the number of an empty cell in answer tags, e.g. "
        "<answer>5</answer>."
    )

    def _new_game(self, options: dict[str, Any]) -> None:
        self.board = [" "] * 9
        self.current = 0
        self.last_move = ""

    def _legal_actions(self, player: int) -> list[str]:
        return [str(i + 1) for i, cell in enumerate(self.board) if cell == " "]

    def _apply(self, player: int, action: str) -> dict[int, float] | None:
        cell = int(action) - 1
        mark = MARKS[player]
        self.board[cell] = mark
        self.last_move = f"{mark} took cell {action}"
        self.current = 1 - player
        board = self.board
        if any(board[a] == board[b] == board[c] == mark for a, b, c in LINES_THROUGH[cell]):
            self.outcome = f"{mark} wins"
            return {player: 1.0, 1 - player: -1.0}
        if " " not in self.board:
            self.outcome = "draw"
            return {0: 0.0, 1: 0.0}
        return None

    def _grid(self) -> str:
        cells = [c if c != " " else str(i + 1) for i, c in enumerate(self.board)]
        rows = [" " + " | ".join(cells[r * 3 : r * 3 + 3]) for r in range(3)]
        return "\n---+---+---\n".join(rows)

    def _state_key(self) -> str:
        return "".join(c if c != " " else "." for c in self.board) + f":{MARKS[self.current]}"

    def _render_text(self) -> str:
        return self._grid()

    def optimal_action(self, player: int, rng: Any) -> str:
        best = _best_moves("".join(self.board), MARKS[player])
        return str(best[int(rng.integers(len(best)))] + 1)


@cache
def _value(board: str, mark: str) -> int:
    """Minimax value for the side to move (`mark`): +1 win, 0 draw, -1 loss."""
    other = "O" if mark == "X" else "X"
    if any(all(board[i] == other for i in line) for line in LINES):
        return -1
    if " " not in board:
        return 0
    return max(
        -_value(board[:i] + mark + board[i + 1 :], other) for i, c in enumerate(board) if c == " "
    )


@cache
def _best_moves(board: str, mark: str) -> tuple[int, ...]:
    """Every cell that keeps the minimax value (ties broken by the caller)."""
    other = "O" if mark == "X" else "X"
    scores = {
        i: -_value(board[:i] + mark + board[i + 1 :], other)
        for i, c in enumerate(board)
        if c == " "
    }
    top = max(scores.values())
    return tuple(i for i, s in scores.items() if s == top)


class TicTacToeEnv(VersusEnv):
    __doc__ = TicTacToe.__doc__
    game_cls = TicTacToe
    default_max_turns: ClassVar[int] = 20
