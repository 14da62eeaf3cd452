"""Connect Four: the PettingZoo game and the single-agent envgym/ConnectFour-v0."""

from __future__ import annotations

from functools import lru_cache
from typing import Any, ClassVar

from envgym.core import check_int
from envgym.envs.games.board import MARKS, MarkGame
from envgym.envs.games.versus import VersusEnv, versus_presets

__all__ = ["ConnectFour", "ConnectFourEnv"]

ROWS, COLUMNS = 6, 7

# Bitboards: cell (column c, row r from the bottom) is bit c * 7 + r. Each column
# has one spare bit on top, so a line's shifted copies never wrap into the next
# column, and "mask + bottom" fills the lowest empty cell of every column.
_STRIDE = ROWS + 1
_BOTTOM_ROW = sum(1 << (c * _STRIDE) for c in range(COLUMNS))
_COLUMN = [((1 << ROWS) - 1) << (c * _STRIDE) for c in range(COLUMNS)]
_FULL = sum(_COLUMN)
# Search the centre first: central moves are usually best, so alpha-beta cuts sooner.
_ORDER = (3, 2, 4, 1, 5, 0, 6)
_CENTRE = _COLUMN[3]
_CENTRE_WEIGHT = 3
# Heuristic worth of a line of four holding n stones of one side and none of the other.
_LINE_WEIGHT = (0, 0, 2, 8, 0)
_WIN = 1_000_000
#: Deepest built-in search: each extra ply multiplies the time of a move (0.3 s at 8).
MAX_SEARCH_DEPTH = 8
_INF = 10 * _WIN


def _lines() -> tuple[int, ...]:
    """Every set of four cells in a row, column or diagonal, as bitmasks."""
    lines = []
    for c in range(COLUMNS):
        for r in range(ROWS):
            for dc, dr in ((1, 0), (0, 1), (1, 1), (1, -1)):
                end_c, end_r = c + 3 * dc, r + 3 * dr
                if 0 <= end_c < COLUMNS and 0 <= end_r < ROWS:
                    lines.append(sum(1 << ((c + k * dc) * _STRIDE + r + k * dr) for k in range(4)))
    return tuple(lines)


_LINES = _lines()
#: The name of each column's move: "1" to "7".
_LABELS = tuple(str(c + 1) for c in range(COLUMNS))
_HEADER = " ".join(_LABELS)
_COLUMN_SHIFTS = tuple(c * _STRIDE for c in range(COLUMNS))


def _column_cells() -> dict[tuple[int, int], tuple[str, ...]]:
    """Every possible column as its cells, top row first ("X", "O" or "."),
    keyed by (X's bits, O's bits) of the column: the board text is looked up,
    never drawn bit by bit."""
    cells = {}
    for height in range(ROWS + 1):
        for x in range(1 << height):
            o = ((1 << height) - 1) ^ x
            column = ["X" if x >> r & 1 else "O" if o >> r & 1 else "." for r in range(ROWS)]
            cells[x, o] = tuple(reversed(column))
    return cells


_COLUMN_CELLS = _column_cells()
_TOP_ROW = sum(1 << (c * _STRIDE + ROWS - 1) for c in range(COLUMNS))
#: The labels of the open columns, by the top-row cells that are taken.
_OPEN_LABELS = {
    taken: tuple(_LABELS[c] for c in range(COLUMNS) if not taken & _COLUMN[c])
    for taken in (
        sum(1 << (c * _STRIDE + ROWS - 1) for c in range(COLUMNS) if full >> c & 1)
        for full in range(1 << COLUMNS)
    )
}
#: Where a stone's cell (its bit) is in `_grid()` and in `_state_key()`: the
#: grid is the column header and six rows of "X O . ...", top row first; the
#: key the rows without spaces, joined by "/".
_TEXT_AT = {
    1 << (c * _STRIDE + r): (2 * COLUMNS * (ROWS - r) + 2 * c, (COLUMNS + 1) * (ROWS - 1 - r) + c)
    for c in range(COLUMNS)
    for r in range(ROWS)
}
_COLUMN_BITS = (1 << ROWS) - 1


# The rules, written once: the game and its search both use them.
def _playable(mask: int) -> int:
    """The cell where each column's next stone lands (none for a full column),
    with `mask` the stones of both players; 0 when the board is full."""
    return (mask + _BOTTOM_ROW) & _FULL


def open_columns(mask: int) -> list[int]:
    """The columns (0-based) that are not full: the legal moves."""
    playable = _playable(mask)
    return [c for c in range(COLUMNS) if playable & _COLUMN[c]]


def _has_four(stones: int) -> bool:
    """True if `stones` hold four in a row in any direction: the winning rule.
    (`_winning_cells` looks one stone ahead; a test holds the two to agree.)"""
    for shift in (1, _STRIDE, _STRIDE - 1, _STRIDE + 1):
        pairs = stones & (stones >> shift)
        if pairs & (pairs >> (2 * shift)):
            return True
    return False


def _winning_cells(stones: int, mask: int) -> int:
    """Empty cells where one more stone would give `stones` four in a row
    (`_has_four`, one stone ahead, for every cell at once)."""
    # Vertical: three stacked stones below the cell.
    cells = (stones << 1) & (stones << 2) & (stones << 3)
    for shift in (_STRIDE, _STRIDE - 1, _STRIDE + 1):  # horizontal and both diagonals
        pair = (stones << shift) & (stones << 2 * shift)
        cells |= pair & (stones << 3 * shift)
        cells |= pair & (stones >> shift)
        pair = (stones >> shift) & (stones >> 2 * shift)
        cells |= pair & (stones << shift)
        cells |= pair & (stones >> 3 * shift)
    return cells & (_FULL ^ mask)


def _evaluate(me: int, other: int) -> int:
    """Positional score for the side to move: open twos and threes, centre stones."""
    score = _CENTRE_WEIGHT * ((me & _CENTRE).bit_count() - (other & _CENTRE).bit_count())
    for line in _LINES:
        mine = me & line
        theirs = other & line
        if mine:
            if not theirs:
                score += _LINE_WEIGHT[mine.bit_count()]
        elif theirs:
            score -= _LINE_WEIGHT[theirs.bit_count()]
    return score


def _negamax(me: int, mask: int, depth: int, alpha: int, beta: int) -> int:
    """Alpha-beta negamax value of the position for the side to move (`me`).

    A win found with `depth` plies left scores ``_WIN + depth``, so sooner wins
    (and later losses) are preferred; at depth 0 the heuristic decides.
    """
    playable = _playable(mask)
    if not playable:
        return 0  # full board: draw
    if _winning_cells(me, mask) & playable:
        return _WIN + depth
    threats = _winning_cells(me ^ mask, mask)
    forced = playable & threats
    if forced:
        if forced & (forced - 1):
            return -(_WIN + depth - 1)  # two threats to block: the opponent wins next
        candidates = forced
    else:
        # Never fill the cell under an opponent's threat: they would play on top.
        candidates = playable & ~(threats >> 1)
        if not candidates:
            return -(_WIN + depth - 1)
    if depth <= 0:
        return _evaluate(me, me ^ mask)
    other = me ^ mask
    best = -_INF
    for column in _ORDER:
        move = candidates & _COLUMN[column]
        if not move:
            continue
        value = -_negamax(other, mask | move, depth - 1, -beta, -alpha)
        if value > best:
            best = value
            if value > alpha:
                alpha = value
                if alpha >= beta:
                    break
    return best


@lru_cache(maxsize=1 << 16)
def best_columns(me: int, other: int, depth: int) -> tuple[int, ...]:
    """Every column (0-based) whose search value is the best for the side to
    move, with `me` and `other` its and the opponent's stones as bitboards.

    Immediate wins come first, then forced blocks, then a depth-limited
    alpha-beta negamax with the positional heuristic at the leaves. Cached:
    openings and the positions of replayed games come back often.
    """
    mask = me | other
    playable = _playable(mask)
    columns = open_columns(mask)
    wins = _winning_cells(me, mask) & playable
    if wins:
        return tuple(c for c in columns if wins & _COLUMN[c])
    blocks = _winning_cells(other, mask) & playable
    if blocks:
        return tuple(c for c in columns if blocks & _COLUMN[c])
    best, chosen = -_INF, []
    for column in _ORDER:
        move = playable & _COLUMN[column]
        if not move:
            continue
        # A window just below `best` gives exact values for ties, bounds for worse moves.
        value = -_negamax(other, mask | move, depth - 1, -_INF, -(best - 1))
        if value > best:
            best, chosen = value, [column]
        elif value == best:
            chosen.append(column)
    return tuple(sorted(chosen))


def _rows(x: int, o: int) -> list[str]:
    """The board of X's stones `x` and O's `o` as text rows, top row first."""
    columns = [_COLUMN_CELLS[x >> s & _COLUMN_BITS, o >> s & _COLUMN_BITS] for s in _COLUMN_SHIFTS]
    return ["".join(row) for row in zip(*columns, strict=True)]


def _board_texts(x: int, o: int) -> tuple[str, str]:
    """The board drawn for players (under the column numbers) and as a state key."""
    rows = _rows(x, o)
    return "\n".join([_HEADER, *(" ".join(row) for row in rows)]), "/".join(rows)


_EMPTY_TEXTS = _board_texts(0, 0)


class ConnectFour(MarkGame):
    """Connect Four for two players on a 6-row, 7-column board.

    ## Description
    Players take turns dropping a stone into one of seven columns; it falls to
    the lowest empty cell. ``player_0`` plays X and moves first, ``player_1``
    plays O. Four stones of one player in a row, column or diagonal win; a full
    board without a line of four is a draw.

    ## Action Space
    Text: a column number (1-7, left to right) in answer tags, e.g.
    ``<answer>4</answer>``. Only columns that are not full are legal. A reply
    that is not a legal column gets a warning and the player moves again; a
    second invalid reply in the same turn loses the game.

    ## Observation Space
    Text: the player's mark, the last move (who dropped where), the board with
    the column numbers above it (``X``, ``O``, ``.`` for empty; bottom row
    last), and the open columns when it is the player's turn.

    ## Starting State
    An empty board, X to move.

    ## Rewards
    Zero-sum: +1 for a win, -1 for a loss, 0 for a draw, given when the game
    ends. Losing by two invalid replies counts as a loss (-1, opponent +1).

    ## Episode End
    Four in a row, a full board (42 stones: a draw), or a forfeit.

    ## Arguments
    ``search_depth`` (1 to 8, default 4; a move at 8 plies takes up to about
    0.3 s): plies of the built-in alpha-beta search that plays
    `optimal_action` (it takes an immediate win, blocks an immediate loss, and
    scores leaves by open twos and threes and centre stones).
    ``illegal_retries`` (default 1): invalid replies forgiven per turn.
    Single-agent ``envgym/ConnectFour-v0``: ``difficulty`` easy/medium/hard is
    the opponent (random / the search half of the time / the search),
    ``opponent`` and ``seat`` override it (see
    `envgym.envs.games.versus.VersusEnv`). Its turn limit (``max_turns``)
    defaults to 50, enough for the agent's 21 moves with a retry each.

    ## Version History
    * v0: initial version. Since then ``search_depth`` is at most 8, so no
      built-in move can take seconds.
      The single-agent id's built-in opponents never draw the numbers the
      game draws (see `envgym.envs.games.versus.VersusEnv`).
    """

    move_prompt: ClassVar[str] = "a column number"
    moves_label: ClassVar[str] = "Open columns"
    metadata: ClassVar[dict[str, Any]] = {
        "render_modes": ["ansi", "human"],
        "name": "connect_four_v0",
        "is_parallelizable": False,
    }
    default_max_moves: ClassVar[int] = ROWS * COLUMNS
    snapshot_exclude: ClassVar[tuple[str, ...]] = ("search_depth", "_texts_cache")
    lower_case_moves: ClassVar[bool] = True
    #: `_texts()` of the state `_version` names (a cache, not game state).
    _texts_cache: tuple[int, str, str] = (-1, "", "")
    system_prompt: ClassVar[str] = (
        "You are playing Connect Four on a board of 6 rows and 7 columns. Players "
        "take turns dropping a stone into a column; it falls to the lowest empty "
        "cell. Four of your stones in a row, column or diagonal win. Columns are "
        "numbered 1-7 from left to right. Reply with the number of a column that is "
        "not full in answer tags, e.g. <answer>4</answer>."
    )

    def __init__(self, *, search_depth: int = 4, **kwargs: Any) -> None:
        search_depth = check_int(
            search_depth,
            "search_depth",
            1,
            MAX_SEARCH_DEPTH,
            "plies the built-in player looks ahead",
        )
        super().__init__(**kwargs)
        self.search_depth = search_depth
        self.stones = [0, 0]
        self.last_move = ""

    def _new_game(self, options: dict[str, Any]) -> None:
        self.stones = [0, 0]
        self.current = 0
        self.last_move = ""
        # Every game starts from the empty board: its texts are built once.
        self._texts_cache = (self._version, *_EMPTY_TEXTS)

    def _legal_actions(self, player: int) -> list[str]:
        # open_columns, looked up: a column is open while its top cell is empty.
        return list(_OPEN_LABELS[(self.stones[0] | self.stones[1]) & _TOP_ROW])

    def _apply(self, player: int, action: str) -> dict[int, float] | None:
        column = int(action) - 1
        mask = self.stones[0] | self.stones[1]
        move = _playable(mask) & _COLUMN[column]
        self.stones[player] |= move
        mark = MARKS[player]
        version, grid, key = self._texts_cache
        if version == self._version - 1:  # the texts of the state before this move
            grid_at, key_at = _TEXT_AT[move]
            grid = f"{grid[:grid_at]}{mark}{grid[grid_at + 1 :]}"
            key = f"{key[:key_at]}{mark}{key[key_at + 1 :]}"
            self._texts_cache = (self._version, grid, key)
        self.last_move = f"{mark} dropped a stone in column {action}"
        self.current = 1 - player
        if _has_four(self.stones[player]):
            self.outcome = f"{mark} wins with four in a row"
            return {player: 1.0, 1 - player: -1.0}
        if not _playable(mask | move):
            self.outcome = "draw, the board is full"
            return {0: 0.0, 1: 0.0}
        return None

    def _rows(self) -> list[str]:
        """The board as text rows, top row first."""
        return _rows(*self.stones)

    def _texts(self) -> tuple[str, str]:
        """`_grid()` and `_state_key()` without its mark, once per game state
        (a move patches the previous state's texts: one cell changes)."""
        version, grid, key = self._texts_cache
        if version != self._version:
            grid, key = _board_texts(*self.stones)
            self._texts_cache = (self._version, grid, key)
        return grid, key

    def _grid(self) -> str:
        return self._texts()[0]

    def _state_key(self) -> str:
        return f"{self._texts()[1]}:{MARKS[self.current]}"

    def _render_text(self) -> str:
        return self._grid()

    def optimal_action(self, player: int, rng: Any) -> str:
        best = best_columns(self.stones[player], self.stones[1 - player], self.search_depth)
        return str(best[int(rng.integers(len(best)))] + 1)


class ConnectFourEnv(VersusEnv):
    __doc__ = ConnectFour.__doc__
    game_cls = ConnectFour
    presets = versus_presets(max_turns=50)
