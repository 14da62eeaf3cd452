"""Sokoban rules, rewards, level generation and the oracle."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import envgym  # noqa: F401  (registers the ids)
from envgym.agents import make_agent
from envgym.envs.sokoban.level import generate_level, parse_board
from envgym.envs.sokoban.oracle import board_from_observation

# Player left of a box left of a target; a second box already on a target below.
CORRIDOR = """\
#######
#@$_._#
#___*_#
#######"""


def make_board_env(board: str = CORRIDOR, **kwargs):
    env = gym.make("envgym/Sokoban-v0", **kwargs)
    obs, info = env.reset(seed=0, options={"board": board})
    return env, obs, info


def test_board_option_and_observation_show_the_level():
    env, obs, info = make_board_env()
    assert board_from_observation(obs) == CORRIDOR
    assert "Boxes on targets: 1/2" in obs
    assert info["privileged"] == {"optimal_moves": 2, "optimal_pushes": 2}
    assert "optimal" not in obs


def test_pushing_a_box_onto_the_last_target_solves_with_ragen_rewards():
    env, obs, info = make_board_env()
    obs, reward, terminated, truncated, info = env.step("<answer>Right</answer>")
    assert info["reward_components"] == {
        "step": -0.1,
        "box_on_target": 0.0,
        "box_off_target": 0.0,
        "solved": 0.0,
    }
    assert "#_@$._#" in obs and not terminated
    obs, reward, terminated, truncated, info = env.step("<answer>Right</answer>")
    assert terminated and not truncated and info["success"] is True
    assert reward == pytest.approx(-0.1 + 1.0 + 10.0)
    assert "#__@*_#" in obs and "Solved" in obs


def test_pushing_a_box_off_a_target_costs_one():
    board = """\
#######
#@*_._#
#_____#
#___$_#
#_____#
#######"""
    env, obs, info = make_board_env(board)
    obs, reward, *_, info = env.step("<answer>Right</answer>")
    assert info["reward_components"]["box_off_target"] == -1.0
    assert reward == pytest.approx(-1.1)
    assert "Boxes on targets: 0/2" in obs


def test_several_moves_per_turn_walls_and_the_turn_cap():
    env, obs, info = make_board_env(max_actions_per_turn=2)
    # Up hits the wall (costs a move, changes nothing), then the first push.
    obs, reward, terminated, truncated, info = env.step("<answer>Up || Right || Right</answer>")
    assert info["reward_components"]["step"] == pytest.approx(-0.2)
    assert "hit a wall" in obs and "1 extra move(s) ignored" in obs
    assert "#_@$._#" in obs and not terminated


def test_unknown_move_runs_nothing_and_says_why():
    env, obs, info = make_board_env()
    before = board_from_observation(obs)
    obs, reward, terminated, truncated, info = env.step("<answer>Right || Jump</answer>")
    assert info["action_valid"] is False
    assert reward == pytest.approx(-0.1)
    assert "Unknown move 'Jump'" in obs
    assert board_from_observation(obs) == before
    assert info["turn"] == 1


def test_boxed_answers_lowercase_and_thinking_are_accepted():
    env, obs, info = make_board_env()
    obs, reward, terminated, *_ = env.step("<think>go <answer>Left</answer></think>\\boxed{right}")
    assert "#_@$._#" in obs
    obs, reward, terminated, *_ = env.step("<answer> r </answer>")
    assert terminated


def test_turn_limit_truncates():
    env, obs, info = make_board_env(max_turns=2)
    env.step("<answer>Left</answer>")
    obs, reward, terminated, truncated, info = env.step("<answer>Left</answer>")
    assert truncated and not terminated and info["success"] is False


@pytest.mark.parametrize(
    "board,message",
    [
        ("#####\n#@$.#\n####", "rectangle"),
        ("#####\n#@$.#\n#####\nxx", "may use only"),
        ("#####\n#@$_#\n#####", "boxes as targets"),
        ("######\n#@_.$#\n######", "no solution"),
        (42, "as text"),
    ],
)
def test_bad_boards_are_rejected_with_a_clear_error(board, message):
    env = gym.make("envgym/Sokoban-v0")
    with pytest.raises(ValueError, match=message):
        env.reset(options={"board": board})


def test_bad_kwargs_and_options_are_clear_errors():
    with pytest.raises(ValueError, match="num_boxes"):
        gym.make("envgym/Sokoban-v0", num_boxes=0)
    with pytest.raises(ValueError, match="size"):
        gym.make("envgym/Sokoban-v0", size=3)
    with pytest.raises(ValueError, match="too small"):
        gym.make("envgym/Sokoban-v0", size=5, num_boxes=6)
    env = gym.make("envgym/Sokoban-v0")
    with pytest.raises(ValueError, match="unknown reset option"):
        env.reset(options={"level": 3})
    with pytest.raises(ValueError, match="not a Sokoban task id"):
        env.reset(options={"task_id": "level-7"})


def test_task_id_replays_the_same_level_in_a_fresh_env():
    env = gym.make("envgym/Sokoban-v0", difficulty="hard")
    obs, info = env.reset(seed=5)
    other = gym.make("envgym/Sokoban-v0")
    obs2, info2 = other.reset(options={"task_id": info["task_id"]})
    assert board_from_observation(obs2) == board_from_observation(obs)
    assert info2["task_id"] == info["task_id"]


@pytest.mark.parametrize(
    "difficulty,shape,boxes", [("easy", (6, 6), 1), ("medium", (6, 6), 2), ("hard", (8, 8), 4)]
)
def test_difficulty_sets_room_size_and_box_count(difficulty, shape, boxes):
    env = gym.make("envgym/Sokoban-v0", difficulty=difficulty)
    obs, info = env.reset(seed=1)
    rows = board_from_observation(obs).split("\n")
    assert (len(rows), len(rows[0])) == shape
    assert sum(row.count("$") + row.count("*") for row in rows) == boxes
    assert info["privileged"]["optimal_pushes"] >= env.unwrapped.min_pushes


def test_size_and_box_kwargs_override_the_preset():
    env = gym.make("envgym/Sokoban-v0", size=(7, 9), num_boxes=2)
    rows = board_from_observation(env.reset(seed=2)[0]).split("\n")
    assert (len(rows), len(rows[0])) == (7, 9)
    assert sum(row.count("$") + row.count("*") for row in rows) == 2


def test_difficulty_option_at_reset_changes_the_level():
    env = gym.make("envgym/Sokoban-v0")
    obs, _ = env.reset(seed=0, options={"difficulty": "hard"})
    assert len(board_from_observation(obs).split("\n")) == 8
    assert env.unwrapped.max_turns == 50


def _bfs_optimal_moves(board: str) -> int:
    """Exhaustive breadth-first search over (player, boxes): the ground truth."""
    height, width, floor, targets, boxes, player = parse_board(board)
    start = (player, frozenset(boxes))
    frontier, seen, depth = [start], {start}, 0
    while frontier:
        nxt = []
        for p, bs in frontier:
            if bs == targets:
                return depth
            for d in (-width, width, -1, 1):
                q = p + d
                if not floor[q]:
                    continue
                nbs = bs
                if q in bs:
                    if not floor[q + d] or q + d in bs:
                        continue
                    nbs = (bs - {q}) | {q + d}
                state = (q, nbs)
                if state not in seen:
                    seen.add(state)
                    nxt.append(state)
        frontier, depth = nxt, depth + 1
    raise AssertionError("unsolvable level")


@pytest.mark.parametrize("height,width,boxes", [(6, 6, 1), (6, 6, 2), (7, 7, 2)])
def test_reported_optimal_length_matches_exhaustive_search(height, width, boxes):
    for seed in range(25):
        level = generate_level(np.random.default_rng(seed), height, width, boxes)
        assert level.optimal_moves == _bfs_optimal_moves(level.board())


def run_agent(env_id: str, agent_name: str, episodes: int, **kwargs):
    env = gym.make(env_id, **kwargs)
    results = []
    for seed in range(episodes):
        agent = make_agent(agent_name, env, seed=seed)
        obs, info = env.reset(seed=seed)
        agent.reset()
        moves, total = 0, 0.0
        while True:
            reply = agent.act(obs, info)
            moves += reply.count("||") + 1
            obs, reward, terminated, truncated, info = env.step(reply)
            total += reward
            if terminated or truncated:
                break
        results.append((info["success"], moves, info["privileged"]["optimal_moves"], total))
    return results


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_oracle_solves_every_level_in_the_optimal_number_of_moves(difficulty):
    results = run_agent("envgym/Sokoban-v0", "oracle", 200, difficulty=difficulty)
    assert all(success for success, *_ in results)
    assert all(moves == optimal for _, moves, optimal, _ in results)


def test_random_agent_success_is_reported(capsys):
    for difficulty in ("easy", "hard"):
        results = run_agent("envgym/Sokoban-v0", "random", 50, difficulty=difficulty)
        rate = sum(s for s, *_ in results) / len(results)
        with capsys.disabled():
            print(f"\nrandom agent on Sokoban {difficulty}: success {rate:.0%} of 50")
        assert all(isinstance(r, float) for *_, r in results)
