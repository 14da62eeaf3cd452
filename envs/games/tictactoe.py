"""TicTacToe: the PettingZoo game and the single-agent envgym/TicTacToe-v0."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any, ClassVar

from envgym.envs.games.board import MARKS, MarkGame
from envgym.envs.games.versus import VersusEnv, versus_presets

__all__ = ["TicTacToe", "TicTacToeEnv"]

LINES = ((0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6))
#: The lines through each cell: a move can only complete one of these.
LINES_THROUGH = tuple(tuple(line for line in LINES if cell in line) for cell in range(9))
OTHER_MARK = {"X": "O", "O": "X"}
#: The name of each cell's move: "1" to "9".
_LABELS = tuple(str(cell + 1) for cell in range(9))
#: Where each cell is in the grid text: rows " 1 | 2 | 3" joined by "\n---+---+---\n".
_GRID_AT = tuple(23 * (cell // 3) + 1 + 4 * (cell % 3) for cell in range(9))


# The rules, written once: the game and its minimax solver both use them.
def empty_cells(board: Sequence[str]) -> list[int]:
    """The cells (0-8) a player may mark: the empty ones."""
    return [i for i, c in enumerate(board) if c == " "]


def result_of_move(board: Sequence[str], cell: int) -> int | None:
    """After a mark at `cell`: 1 if it completed a line (its player wins), 0 if
    the board is full (a draw), None while the game goes on."""
    mark = board[cell]
    for a, b, c in LINES_THROUGH[cell]:  # a loop, not any(): it runs on every move
        if board[a] == board[b] == board[c] == mark:
            return 1
    if " " not in board:
        return 0
    return None


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
    ``opponent`` and ``seat`` override it (see
    `envgym.envs.games.versus.VersusEnv`); ``max_turns`` (default 20) is the
    turn limit.

    ## Version History
    * v0: initial version. Since then the single-agent id's built-in opponents
      never draw the numbers the game draws (see
      `envgym.envs.games.versus.VersusEnv`).
    """

    move_prompt: ClassVar[str] = "an empty cell"
    moves_label: ClassVar[str] = "Empty cells"
    metadata: ClassVar[dict[str, Any]] = {
        "render_modes": ["ansi", "human"],
        "name": "tictactoe_v0",
        "is_parallelizable": False,
    }
    default_max_moves: ClassVar[int] = 9
    snapshot_exclude: ClassVar[tuple[str, ...]] = ("_texts_cache",)
    lower_case_moves: ClassVar[bool] = True
    #: `_texts()` of the state `_version` names (a cache, not game state).
    _texts_cache: tuple[int, str, str] = (-1, "", "")
    system_prompt: ClassVar[str] = (
        "You are playing TicTacToe. Cells are numbered 1-9, left to right, top to "
        "bottom. Reply with the number of an empty cell in answer tags, e.g. "
        "<answer>5</answer>."
    )

    def _new_game(self, options: dict[str, Any]) -> None:
        self.board = [" "] * 9
        self.current = 0
        self.last_move = ""
        # Every game starts from the empty board: its texts are built once.
        self._texts_cache = (self._version, *_EMPTY_TEXTS)

    def _legal_actions(self, player: int) -> list[str]:
        return [_LABELS[cell] for cell in empty_cells(self.board)]

    def _apply(self, player: int, action: str) -> dict[int, float] | None:
        cell = int(action) - 1
        mark = MARKS[player]
        self.board[cell] = mark
        version, grid, key = self._texts_cache
        if version == self._version - 1:  # the texts of the state before this move
            at = _GRID_AT[cell]
            grid = f"{grid[:at]}{mark}{grid[at + 1 :]}"
            key = f"{key[:cell]}{mark}{key[cell + 1 :]}"
            self._texts_cache = (self._version, grid, key)
        self.last_move = f"{mark} took cell {action}"
        self.current = 1 - player
        result = result_of_move(self.board, cell)
        if result == 1:
            self.outcome = f"{mark} wins"
            return {player: 1.0, 1 - player: -1.0}
        if result == 0:
            self.outcome = "draw"
            return {0: 0.0, 1: 0.0}
        return None

    def _texts(self) -> tuple[str, str]:
        """`_grid()` and `_state_key()` without its mark, once per game state
        (a move patches the previous state's texts: one cell changes)."""
        version, grid, key = self._texts_cache
        if version != self._version:
            grid, key = _board_texts(self.board)
            self._texts_cache = (self._version, grid, key)
        return grid, key

    def _grid(self) -> str:
        return self._texts()[0]

    def _state_key(self) -> str:
        return f"{self._texts()[1]}:{MARKS[self.current]}"

    def _render_text(self) -> str:
        return self._grid()

    def optimal_action(self, player: int, rng: Any) -> str:
        best = _best_moves("".join(self.board), MARKS[player])
        return str(best[int(rng.integers(len(best)))] + 1)


def _board_texts(board: list[str]) -> tuple[str, str]:
    """The board drawn for players (empty cells numbered) and as a state key."""
    cells = [c if c != " " else str(i + 1) for i, c in enumerate(board)]
    rows = [" " + " | ".join(cells[r * 3 : r * 3 + 3]) for r in range(3)]
    key = "".join(c if c != " " else "." for c in board)
    return "\n---+---+---\n".join(rows), key


_EMPTY_TEXTS = _board_texts([" "] * 9)


def _move_value(board: str, cell: int, mark: str) -> int:
    """Minimax value for `mark` of marking `cell`: +1 win, 0 draw, -1 loss."""
    after = board[:cell] + mark + board[cell + 1 :]
    result = result_of_move(after, cell)
    return -_value(after, OTHER_MARK[mark]) if result is None else result


@cache
def _value(board: str, mark: str) -> int:
    """Minimax value for the side to move (`mark`) of a game still going."""
    return max(_move_value(board, cell, mark) for cell in empty_cells(board))


@cache
def _best_moves(board: str, mark: str) -> tuple[int, ...]:
    """Every cell that keeps the minimax value (ties broken by the caller)."""
    scores = {cell: _move_value(board, cell, mark) for cell in empty_cells(board)}
    top = max(scores.values())
    return tuple(cell for cell, score in scores.items() if score == top)


class TicTacToeEnv(VersusEnv):
    __doc__ = TicTacToe.__doc__
    game_cls = TicTacToe
    presets = versus_presets(max_turns=20)
