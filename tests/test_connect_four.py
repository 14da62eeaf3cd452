"""Connect Four: the rules, the built-in search opponent, and both env APIs."""

from __future__ import annotations

import pickle

import gymnasium as gym
import numpy as np
import pytest

import envgym  # noqa: F401
from envgym.envs.games import connect_four_v0
from envgym.envs.games.connect_four import (
    _COLUMN,
    ConnectFour,
    _has_four,
    _playable,
    _winning_cells,
    open_columns,
)

# Fills the board without four in a row for either side (found by a search).
DRAW_SEQUENCE = (
    "1 1 1 1 1 1 2 2 2 2 2 2 3 3 3 3 3 3 5 4 4 4 4 4 4 5 5 5 5 5 6 6 6 6 6 6 7 7 7 7 7 7"
)


def play(game: ConnectFour, moves: str) -> None:
    for column in moves.split():
        assert not game.game_over, f"the game ended before column {column}"
        game.step(f"<answer>{column}</answer>")
        assert game.infos[game.possible_agents[1 - game.current]]["action_valid"]


def new_game(moves: str = "", **kwargs) -> ConnectFour:
    game = connect_four_v0.env(**kwargs)
    game.reset(seed=0)
    play(game, moves)
    return game


def grid_of(game: ConnectFour) -> list[list[str]]:
    """The board read back from its text, as grid[column][row], row 0 at the bottom."""
    lines = game._render_text().splitlines()
    assert lines[0].split() == [str(c) for c in range(1, 8)]
    rows = [line.split() for line in reversed(lines[1:])]
    assert len(rows) == 6 and all(len(row) == 7 for row in rows)
    return [[rows[r][c] for r in range(6)] for c in range(7)]


LINES = [
    [(c + k * dc, r + k * dr) for k in range(4)]
    for c in range(7)
    for r in range(6)
    for dc, dr in ((1, 0), (0, 1), (1, 1), (1, -1))
    if 0 <= c + 3 * dc < 7 and 0 <= r + 3 * dr < 6
]


def has_four(grid: list[list[str]], mark: str) -> bool:
    return any(all(grid[x][y] == mark for x, y in line) for line in LINES)


def winning_columns(grid: list[list[str]], mark: str) -> set[int]:
    """Columns (1-7) where dropping `mark` makes four in a row: a plain brute force."""
    wins = set()
    for c in range(7):
        if "." not in grid[c]:
            continue
        row = grid[c].index(".")
        grid[c][row] = mark
        if has_four(grid, mark):
            wins.add(c + 1)
        grid[c][row] = "."
    return wins


@pytest.mark.parametrize(
    "moves,line",
    [
        ("1 1 2 2 3 3 4", "row"),
        ("1 2 1 2 1 2 1", "column"),
        ("1 2 2 3 3 4 3 4 5 4 4", "rising diagonal"),
        ("7 6 6 5 5 4 5 4 3 4 4", "falling diagonal"),
    ],
)
def test_four_in_a_row_wins_along_every_line(moves, line):
    *before, last = moves.split()
    game = new_game(" ".join(before))
    assert not game.game_over
    game.step(f"<answer>{last}</answer>")
    assert all(game.terminations.values()), f"a {line} of four must end the game"
    assert game.rewards == {"player_0": 1.0, "player_1": -1.0}
    assert has_four(grid_of(game), "X")
    assert "Game over: X wins" in game.observe("player_1")


def test_second_player_wins_too():
    game = new_game("1 2 1 2 3 2 4")
    game.step("<answer>2</answer>")
    assert game.rewards == {"player_0": -1.0, "player_1": 1.0}


def test_full_column_is_illegal():
    game = new_game("1 1 1 1 1 1")
    assert "1" not in game.legal_actions()
    assert game.legal_actions() == ["2", "3", "4", "5", "6", "7"]
    before = game._state_key()
    game.step("<answer>1</answer>")
    assert game.agent_selection == "player_0", "the same player tries again"
    assert game.infos["player_0"]["action_valid"] is False
    assert "not a legal move" in game.observe("player_0")
    assert game._state_key() == before
    game.step("<answer>8</answer>")
    assert game.rewards == {"player_0": -1.0, "player_1": 1.0}, "a second invalid move loses"


def test_full_board_without_a_line_is_a_draw():
    moves = DRAW_SEQUENCE.split()
    game = new_game(" ".join(moves[:-1]))
    assert not game.game_over
    game.step(f"<answer>{moves[-1]}</answer>")
    assert all(game.terminations.values())
    assert game.rewards == {"player_0": 0.0, "player_1": 0.0}
    grid = grid_of(game)
    assert "." not in sum(grid, []) and not has_four(grid, "X") and not has_four(grid, "O")
    assert "draw" in game.observe("player_0")


def test_observation_shows_the_board_last_move_and_open_columns():
    game = new_game("4 4")
    text = game.observe("player_0")
    assert "You are X" in text and "Last move: O dropped a stone in column 4" in text
    assert "1 2 3 4 5 6 7" in text
    assert ". . . O . . .\n. . . X . . ." in text
    assert "Open columns: 1, 2, 3, 4, 5, 6, 7" in text
    assert "Waiting for X" in game.observe("player_1")
    assert game.infos["player_0"]["state_key"].endswith(":X")
    assert game.infos["player_0"]["admissible_actions"] == [str(c) for c in range(1, 8)]


@pytest.mark.parametrize(
    "moves,expected",
    [
        ("1 1 2 2 3 3", "4"),  # X: take the row
        ("1 2 1 2 1 2", "1"),  # X: win in column 1 rather than block O's column 2
        ("1 7 2 7 3", "4"),  # O: block X's row
        ("7 1 7 1 6 1", "1"),  # X: block O's column
        ("4 4 3 3 2", "1|5"),  # O: X has an open three (it will lose, but must block one end)
    ],
)
def test_search_takes_a_win_and_blocks_a_loss_in_built_positions(moves, expected):
    game = new_game(moves)
    for seed in range(5):
        move = game.optimal_action(game.current, np.random.default_rng(seed))
        assert move in expected.split("|")


def test_search_never_misses_a_win_or_a_block_in_random_positions():
    game = new_game()
    rng = np.random.default_rng(0)
    wins_checked = blocks_checked = 0
    for seed in range(60):
        game.reset(seed=seed)
        while not game.game_over:
            grid = grid_of(game)
            mark, other = ("X", "O") if game.current == 0 else ("O", "X")
            mine, theirs = winning_columns(grid, mark), winning_columns(grid, other)
            move = game.optimal_action(game.current, rng)
            if mine:
                assert int(move) in mine, f"missed a win:\n{game._render_text()}"
                wins_checked += 1
            elif len(theirs) == 1:
                assert int(move) in theirs, f"missed a block:\n{game._render_text()}"
                blocks_checked += 1
            legal = game.legal_actions()
            game.step(f"<answer>{legal[int(rng.integers(len(legal)))]}</answer>")
    assert wins_checked > 100 and blocks_checked > 100


def test_the_search_predicts_exactly_the_moves_the_game_scores_as_wins():
    """The search looks ahead with `_winning_cells`; the game judges with `_has_four`."""
    rng = np.random.default_rng(1)
    predicted = 0
    for _ in range(400):
        stones, player = [0, 0], 0
        while columns := open_columns(stones[0] | stones[1]):
            mask = stones[0] | stones[1]
            wins = _winning_cells(stones[player], mask)
            for column in columns:
                move = _playable(mask) & _COLUMN[column]
                assert bool(move & wins) == _has_four(stones[player] | move)
                predicted += bool(move & wins)
            stones[player] |= _playable(mask) & _COLUMN[int(rng.choice(columns))]
            if _has_four(stones[player]):
                break
            player = 1 - player
    assert predicted > 300


@pytest.mark.parametrize("seat", [0, 1])
def test_search_beats_random_play_from_either_seat(seat):
    game = new_game()
    rng = np.random.default_rng(seat)
    wins = 0
    games = 200
    for seed in range(games):
        game.reset(seed=seed)
        while not game.game_over:
            if game.current == seat:
                move = game.optimal_action(seat, rng)
            else:
                legal = game.legal_actions()
                move = legal[int(rng.integers(len(legal)))]
            game.step(f"<answer>{move}</answer>")
        wins += game.rewards[f"player_{seat}"] == 1.0
    assert wins >= 0.95 * games


def test_search_depth_is_configurable_and_checked():
    assert new_game(search_depth=2).search_depth == 2
    env = gym.make("envgym/ConnectFour-v0", search_depth=6)
    assert env.unwrapped.game.search_depth == 6
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="search_depth"):
            ConnectFour(search_depth=bad)


def test_a_full_aec_game_loop():
    env = connect_four_v0.env()
    env.reset(seed=3)
    rng = np.random.default_rng(3)
    returns = {agent: 0.0 for agent in env.possible_agents}
    moves = 0
    for agent in env.agent_iter():
        obs, reward, terminated, truncated, info = env.last()
        returns[agent] += reward
        assert info["player"] == agent
        if terminated or truncated:
            env.step(None)
            continue
        assert "Your move" in obs and info["admissible_actions"]
        player = env.possible_agents.index(agent)
        if player == 0:
            move = env.optimal_action(0, rng)
        else:
            legal = info["admissible_actions"]
            move = legal[int(rng.integers(len(legal)))]
        env.step(f"<think>my move</think><answer>{move}</answer>")
        moves += 1
    assert env.agents == []
    assert returns == {"player_0": 1.0, "player_1": -1.0}
    assert 7 <= moves <= 42


def test_snapshot_and_restore_mid_game():
    game = new_game("4 4 3 5")
    snap = game.snapshot()
    continuation = "2 1 5 6"

    def rest():
        play(game, continuation)
        return game._state_key(), game.observe("player_0"), dict(game.rewards)

    first = rest()
    game.restore(snap)
    assert game._state_key() == "/".join(["......."] * 4 + ["...O...", "..XXO.."]) + ":X"
    assert rest() == first
    other = new_game("1")
    other.restore(pickle.loads(pickle.dumps(snap)))
    game = other
    assert rest() == first


def test_single_agent_env_plays_a_whole_game_against_the_search():
    env = gym.make("envgym/ConnectFour-v0", difficulty="hard", seat=1)
    obs, info = env.reset(seed=1)
    assert info["player"] == "player_1" and "Last move: X dropped" in obs
    assert env.unwrapped.max_turns == 50
    total, rng = 0.0, np.random.default_rng(1)
    while True:
        legal = info["admissible_actions"]
        move = legal[int(rng.integers(len(legal)))]
        obs, reward, terminated, truncated, info = env.step(f"<answer>{move}</answer>")
        total += reward
        assert set(info["reward_components"]) <= {"move", "result", "format"}
        if terminated or truncated:
            break
    assert terminated and total == -1.0, "random moves lose to the search"
    assert "Game over: X wins" in obs
