"""Behaviour of envgym/FrozenLake-v0 and its oracle, as a user of the env sees it."""

from __future__ import annotations

import math
import pickle
import re
from collections import Counter, deque

import gymnasium as gym
import pytest

import envgym  # noqa: F401  (registers the ids)
from envgym.agents import RandomAgent, make_agent
from envgym.core import CHARSET
from envgym.envs.frozenlake import FrozenLakeEnv
from envgym.envs.frozenlake.oracle import FrozenLakeOracle

ENV_ID = "envgym/FrozenLake-v0"
SIZES = {"easy": 4, "medium": 6, "hard": 8}
POSITION = re.compile(r"Position: row (\d+), column (\d+)\.")


def position(observation: str) -> tuple[int, int]:
    """(row, column), 1-based, as the observation states it."""
    match = POSITION.search(observation)
    assert match, observation
    return int(match.group(1)), int(match.group(2))


def grid_rows(observation: str) -> list[str]:
    return [
        line.replace(" ", "")
        for line in observation.splitlines()
        if re.fullmatch(r"[SFHGP]( [SFHGP])*", line)
    ]


def reachable(rows: list[str]) -> bool:
    """Independent check: is G reachable from S without stepping on H?"""
    cells = {(r, c): ch for r, row in enumerate(rows) for c, ch in enumerate(row)}
    start = next(k for k, v in cells.items() if v == "S")
    seen, queue = {start}, deque([start])
    while queue:
        r, c = queue.popleft()
        if cells[(r, c)] == "G":
            return True
        for nxt in ((r - 1, c), (r + 1, c), (r, c - 1), (r, c + 1)):
            if nxt in cells and nxt not in seen and cells[nxt] != "H":
                seen.add(nxt)
                queue.append(nxt)
    return False


def run_episode(env: gym.Env, agent, seed: int | None) -> dict:
    obs, info = env.reset(seed=seed)
    agent.reset()
    total, done = 0.0, False
    while not done:
        obs, reward, terminated, truncated, info = env.step(agent.act(obs, info))
        total += reward
        done = terminated or truncated
    return {"success": info["success"], "return": total, "turns": info["turn"]}


# --------------------------------------------------------------------- maps
@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_every_generated_map_is_solvable_and_sized_by_difficulty(difficulty):
    env = FrozenLakeEnv(difficulty=difficulty)
    n = SIZES[difficulty]
    hole_counts = set()
    for seed in range(300):
        obs, info = env.reset(seed=seed)
        rows = info["task_id"].split("/")
        assert len(rows) == n and all(len(row) == n for row in rows)
        assert reachable(rows), info["task_id"]
        flat = "".join(rows)
        assert flat.count("S") == 1 and flat.count("G") == 1
        s, g = flat.index("S"), flat.index("G")
        assert abs(s // n - g // n) + abs(s % n - g % n) >= n  # never a trivial walk
        hole_counts.add(flat.count("H"))
        # The observation shows the same map, with P on the start.
        assert "".join(grid_rows(obs)) == flat.replace("S", "P")
        assert info["privileged"]["shortest_path_length"] >= n
    assert len(hole_counts) == 1 and hole_counts.pop() > 0  # a fixed share of holes


def test_hole_density_rises_with_difficulty():
    shares = []
    for difficulty in ("easy", "medium", "hard"):
        _, info = FrozenLakeEnv(difficulty=difficulty).reset(seed=0)
        flat = info["task_id"].replace("/", "")
        shares.append(flat.count("H") / (len(flat) - 2))
    assert shares == sorted(shares) and shares[0] < shares[-1]


def test_size_and_hole_fraction_override_the_level():
    env = FrozenLakeEnv(difficulty="hard", size=5, hole_fraction=0.0)
    for seed in range(20):
        _, info = env.reset(seed=seed)
        rows = info["task_id"].split("/")
        assert len(rows) == 5 and "H" not in info["task_id"]
    dense = FrozenLakeEnv(size=10, hole_fraction=0.5)
    for seed in range(20):
        _, info = dense.reset(seed=seed)
        assert reachable(info["task_id"].split("/"))
        assert info["task_id"].count("H") == 49  # half of the 98 other tiles


def test_same_seed_same_map_and_different_seeds_differ():
    a, b = FrozenLakeEnv(difficulty="medium"), FrozenLakeEnv(difficulty="medium")
    for seed in range(20):
        assert a.reset(seed=seed) == b.reset(seed=seed)
    maps = {a.reset(seed=seed)[1]["task_id"] for seed in range(50)}
    assert len(maps) >= 45


def test_task_id_option_loads_that_map():
    env = FrozenLakeEnv()
    obs, info = env.reset(options={"task_id": "SFFF/FHFH/FFFH/HFFG"})
    assert info["task_id"] == "SFFF/FHFH/FFFH/HFFG"
    assert grid_rows(obs) == ["PFFF", "FHFH", "FFFH", "HFFG"]
    assert info["privileged"]["shortest_path_length"] == 6
    # A task id from any episode replays that episode's map.
    _, first = env.reset(seed=11)
    _, again = env.reset(seed=99, options={"task_id": first["task_id"]})
    assert again["task_id"] == first["task_id"]


@pytest.mark.parametrize(
    ("task_id", "message"),
    [
        ("SFF/FF", "equal length"),
        ("SFX/FFG/FFF", "tiles other than"),
        ("SFF/FHF/FFF", "exactly one S and one G"),
        ("SHF/HFF/FFG", "no path"),
        ("S" + "F" * 15 + "G", "at most 16"),
        (42, "must be a string"),
    ],
)
def test_bad_task_id_says_what_is_wrong(task_id, message):
    with pytest.raises(ValueError, match=message):
        FrozenLakeEnv().reset(options={"task_id": task_id})


def test_hostile_task_ids_and_kwargs_are_refused_before_any_work():
    env = FrozenLakeEnv()
    # Three million characters: refused by length, never split into a million rows.
    with pytest.raises(ValueError, match="task_id is 3000000 characters long; a map is at most 16"):
        env.reset(options={"task_id": "SF/" * 1_000_000})
    with pytest.raises(ValueError, match="must be a string") as error:
        env.reset(options={"task_id": ["SFFG"] * 100_000})
    assert len(str(error.value)) < 400  # the list is not echoed back whole
    with pytest.raises(ValueError, match="max_actions_per_turn must be an integer from 1 to 50"):
        FrozenLakeEnv(max_actions_per_turn=10**9)
    with pytest.raises(ValueError, match="max_turns must be an integer from 1 to 100000"):
        gym.make(ENV_ID, max_turns=10**12)
    # The largest, densest lake still draws a solvable map at once.
    env = FrozenLakeEnv(size=16, hole_fraction=0.5)
    for seed in range(20):
        assert reachable(env.reset(seed=seed)[1]["task_id"].split("/"))


def test_difficulty_option_switches_level_at_reset():
    env = FrozenLakeEnv()
    obs, info = env.reset(seed=0, options={"difficulty": "hard"})
    assert len(info["task_id"].split("/")) == 8
    assert env.max_turns == 30 and "Turns left: 30." in obs
    env.reset(seed=0, options={"difficulty": "easy"})
    assert env.max_turns == 10
    fixed = FrozenLakeEnv(size=5, max_turns=7)
    _, info = fixed.reset(seed=0, options={"difficulty": "hard"})
    assert len(info["task_id"].split("/")) == 5 and fixed.max_turns == 7
    with pytest.raises(ValueError, match="easy"):
        env.reset(options={"difficulty": "extreme"})


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"size": 1}, "from 2 to 16"),
        ({"size": 17}, "from 2 to 16"),
        ({"size": "4"}, "from 2 to 16"),
        ({"hole_fraction": 0.7}, r"from 0 to 0\.5"),
        ({"hole_fraction": -0.1}, r"from 0 to 0\.5"),
        ({"hole_fraction": True}, r"from 0 to 0\.5"),
        ({"max_actions_per_turn": 0}, "from 1 to 50"),
        ({"slippery": "yes"}, "True or False"),
        ({"difficulty": "extreme"}, "choose one of"),
        ({"max_turns": 0}, "from 1 to 100000"),
    ],
)
def test_bad_kwargs_raise_value_error_naming_what_is_allowed(kwargs, message):
    with pytest.raises(ValueError, match=message):
        FrozenLakeEnv(**kwargs)
    with pytest.raises(ValueError, match=message):
        gym.make(ENV_ID, **kwargs)


# -------------------------------------------------------------------- moves
def test_moves_goal_and_reward():
    env = FrozenLakeEnv()
    env.reset(options={"task_id": "SFF/HHF/GFF"})
    obs, reward, terminated, truncated, info = env.step("<answer>Right || Right</answer>")
    assert position(obs) == (1, 3) and reward == 0.0 and not terminated
    assert info["action_valid"] and info["reward_components"] == {"goal": 0.0, "format": 0.0}
    assert info["privileged"]["shortest_path_length"] == 4
    obs, reward, terminated, truncated, info = env.step(
        "<think>maybe <answer>Up</answer></think><answer>down, DOWN; l || Left || Up</answer>"
    )
    assert "at most 3" in obs and not info["action_valid"]
    obs, reward, terminated, truncated, info = env.step("<answer>down || DOWN || l</answer>")
    assert position(obs) == (3, 2) and reward == 0.0
    obs, reward, terminated, truncated, info = env.step("<answer>Left || Up</answer>")
    assert reward == 1.0 and terminated and not truncated and info["success"]
    assert info["reward_components"] == {"goal": 1.0, "format": 0.0}
    assert "reached the goal" in obs and "1 move was not used" in obs
    with pytest.raises(gym.error.ResetNeeded):
        env.step("<answer>Up</answer>")


def test_walking_into_a_hole_ends_the_episode_as_a_failure():
    env = FrozenLakeEnv()
    env.reset(options={"task_id": "SH/FG"})
    obs, reward, terminated, truncated, info = env.step("<answer>Right || Down</answer>")
    assert terminated and not truncated and reward == 0.0
    assert info["success"] is False and info["action_valid"]
    assert "fell into a hole" in obs and "not used" in obs
    assert position(obs) == (1, 2)
    assert info["privileged"]["shortest_path_length"] == -1


def test_moving_into_the_edge_stays_put():
    env = FrozenLakeEnv()
    obs, _ = env.reset(options={"task_id": "SFF/FFF/FFG"})
    obs, reward, terminated, truncated, info = env.step("<answer>Up || Left</answer>")
    assert position(obs) == (1, 1) and "blocked by the edge" in obs
    assert info["action_valid"] and reward == 0.0 and info["turn"] == 1


@pytest.mark.parametrize(
    "reply",
    [
        "Down",
        "<answer>Jump</answer>",
        "<answer></answer>",
        "<answer>Down",
        "<answer>Down || Right || Down || Right</answer>",
        "<answer>Down\u00e9\x00</answer>",
        None,
        b"\xff\xfe",
        12345,
    ],
)
def test_invalid_replies_give_feedback_and_a_penalty_and_use_a_turn(reply):
    env = FrozenLakeEnv()
    start_obs, _ = env.reset(seed=3)
    obs, reward, terminated, truncated, info = env.step(reply)
    assert info["action_valid"] is False
    assert reward == pytest.approx(-0.1)
    assert info["reward_components"] == {"goal": 0.0, "format": -0.1}
    assert obs.startswith("Invalid reply:") and "<answer>Down || Right</answer>" in obs
    assert position(obs) == position(start_obs) and info["turn"] == 1
    assert not terminated and not truncated
    assert all(ch in CHARSET for ch in obs)


def test_turn_limit_truncates():
    env = FrozenLakeEnv(max_turns=2)
    env.reset(options={"task_id": "SFF/FFF/FFG"})
    assert env.step("<answer>Up</answer>")[3] is False
    obs, reward, terminated, truncated, info = env.step("nonsense")
    assert truncated and not terminated and info["turn"] == 2 and not info["success"]


def test_defaults_for_turn_limits_and_moves_per_turn():
    assert FrozenLakeEnv().max_turns == 10
    assert FrozenLakeEnv(difficulty="hard").max_turns == 30
    assert FrozenLakeEnv(slippery=True).max_turns == 50
    assert FrozenLakeEnv(difficulty="hard", slippery=True).max_turns == 120
    env = FrozenLakeEnv(max_actions_per_turn=1)
    env.reset(options={"task_id": "SFF/FFF/FFG"})
    obs, *_, info = env.step("<answer>Right || Down</answer>")
    assert not info["action_valid"] and "at most 1" in obs


def test_info_keys():
    env = gym.make(ENV_ID)
    obs, info = env.reset(seed=5)
    assert info["system_prompt"] == FrozenLakeEnv.system_prompt
    assert "<answer>" in info["system_prompt"] and "H" in info["system_prompt"]
    assert info["admissible_actions"] == ["Up", "Down", "Left", "Right"]
    assert info["turn"] == 0 and info["success"] is False
    path = info["privileged"]["solution"]
    assert len(path) == info["privileged"]["shortest_path_length"]
    start_key = info["state_key"]
    assert info["task_id"] in start_key
    # Following the privileged solution move by move counts down the distance.
    obs, *_, info = env.step(f"<answer>{path[0]}</answer>")
    assert info["privileged"]["shortest_path_length"] == len(path) - 1
    assert info["state_key"] != start_key
    assert "system_prompt" not in info
    # The state key ignores history: back on the start tile, the key is the start's.
    back = {"Up": "Down", "Down": "Up", "Left": "Right", "Right": "Left"}[path[0]]
    obs, *_, info = env.step(f"<answer>{back}</answer>")
    assert info["state_key"] == start_key and info["turn"] == 2
    # The trainer-only solution never leaks into what the agent sees.
    assert "solution" not in obs and "privileged" not in obs


def test_render_ansi_shows_the_board():
    env = gym.make(ENV_ID, render_mode="ansi")
    env.reset(options={"task_id": "SFF/FFF/FFG"})
    env.step("<answer>Right</answer>")
    text = env.render()
    assert grid_rows(text) == ["SPF", "FFF", "FFG"] and "Turns left: 9." in text


# ----------------------------------------------------------------- slippery
def test_slip_model_matches_the_documentation():
    env = FrozenLakeEnv(slippery=True)
    env.reset(seed=0)
    outcomes = Counter()
    episodes = 900
    for _ in range(episodes):
        env.reset(options={"task_id": "FFF/FSF/FFG"})  # start in the middle
        obs, *_ = env.step("<answer>Up</answer>")
        outcomes[position(obs)] += 1
    # Up goes up, or slides left or right; never down, each about a third.
    assert set(outcomes) == {(1, 2), (2, 1), (2, 3)}
    sd = math.sqrt(episodes * (1 / 3) * (2 / 3))
    for count in outcomes.values():
        assert abs(count - episodes / 3) < 4 * sd


def test_slipping_is_reported_and_firm_ice_never_slips():
    slippery = FrozenLakeEnv(slippery=True)
    slippery.reset(seed=1, options={"task_id": "SFFFF/FFFFF/FFFFF/FFFFF/FFFFG"})
    texts = [slippery.step("<answer>Up</answer>")[0] for _ in range(20)]
    assert any("(slid Left" in t or "(slid Right" in t for t in texts)
    firm = FrozenLakeEnv()
    firm.reset(seed=1)
    for _ in range(9):
        obs, *_ = firm.step("<answer>Up || Left</answer>")
        assert "slid" not in obs


def test_slippery_episodes_are_reproducible_from_the_seed():
    def rollout(seed):
        env = FrozenLakeEnv(slippery=True, difficulty="medium")
        out = [env.reset(seed=seed)[0]]
        for move in ["Down", "Right"] * 10:
            obs, reward, terminated, truncated, _ = env.step(f"<answer>{move}</answer>")
            out.append((obs, reward))
            if terminated or truncated:
                break
        return out

    assert rollout(4) == rollout(4)


# -------------------------------------------------------------------- oracle
@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_oracle_solves_every_deterministic_map(difficulty):
    env = FrozenLakeEnv(difficulty=difficulty)
    oracle = FrozenLakeOracle(env)
    results = [run_episode(env, oracle, seed) for seed in range(200)]
    assert all(r["success"] and r["return"] == 1.0 for r in results)
    # Three moves per reply: a shortest path of L moves takes ceil(L / 3) turns.
    length = env.reset(seed=0)[1]["privileged"]["shortest_path_length"]
    assert run_episode(env, oracle, 0)["turns"] == math.ceil(length / 3)


def test_oracle_is_the_registered_oracle_and_respects_moves_per_turn():
    env = gym.make(ENV_ID, difficulty="medium", max_actions_per_turn=1)
    oracle = make_agent("oracle", env)
    assert isinstance(oracle, FrozenLakeOracle) and oracle.name == "oracle"
    obs, info = env.reset(seed=2)
    reply = oracle.act(obs, info)
    assert "||" not in reply
    result = run_episode(env, oracle, 2)
    assert result["success"]
    assert result["turns"] == info["privileged"]["shortest_path_length"]


def test_slippery_oracle_matches_its_predicted_success_and_beats_random():
    env = FrozenLakeEnv(slippery=True)
    oracle = FrozenLakeOracle(env)
    episodes = 400
    predicted, successes = [], 0
    for seed in range(episodes):
        obs, _ = env.reset(seed=seed)
        predicted.append(oracle.success_probability(obs))
        successes += run_episode(env, oracle, seed)["success"]
    # Each episode succeeds with its own predicted probability p_i: compare the
    # count with the sum of p_i, within four standard deviations.
    expected = sum(predicted)
    sd = math.sqrt(sum(p * (1 - p) for p in predicted))
    assert abs(successes - expected) <= 4 * sd + 1, (successes, expected, sd)
    random_agent = RandomAgent(seed=0)
    random_successes = sum(run_episode(env, random_agent, s)["success"] for s in range(episodes))
    assert successes / episodes > random_successes / episodes + 0.4
    assert 0.5 < expected / episodes < 1.0  # slips cost the oracle something


def test_slippery_oracle_prediction_on_a_known_map():
    # One row, the goal to the right. Right, Up and Down each reach G with
    # probability 1/3 per try (the other outcomes bump into the edge and stay
    # put); Left never does.
    env = FrozenLakeEnv(slippery=True, max_turns=3)
    oracle = FrozenLakeOracle(env)
    obs, _ = env.reset(options={"task_id": "SG"})
    assert oracle.success_probability(obs) == pytest.approx(1 - (2 / 3) ** 3)
    assert oracle.act(obs, {}) != "<answer>Left</answer>"
    obs, _ = env.reset(options={"task_id": "GS"})
    assert oracle.act(obs, {}) != "<answer>Right</answer>"


# ------------------------------------------------------------------ forking
@pytest.mark.parametrize("slippery", [False, True])
def test_snapshot_restore_replays_identically(slippery):
    env = FrozenLakeEnv(slippery=slippery, difficulty="hard", max_turns=200)
    env.reset(seed=8)
    for move in ["Up", "Left", "Down"]:
        _, _, terminated, *_ = env.step(f"<answer>{move}</answer>")
    assert not terminated
    snap = env.snapshot()
    moves = ["Right", "Up", "nonsense", "Left", "Down", "Right", "Up", "Up"] * 3

    def play(target):
        out = []
        for move in moves:
            obs, reward, terminated, truncated, info = target.step(f"<answer>{move}</answer>")
            out.append((obs, reward, terminated, truncated, info["state_key"]))
            if terminated or truncated:
                break
        return out

    first = play(env)
    env.restore(snap)
    assert play(env) == first
    # Into another env, after it moved on to other maps, via pickle.
    other = FrozenLakeEnv(slippery=slippery, difficulty="hard", max_turns=200)
    other.reset(seed=123)
    other.restore(pickle.loads(pickle.dumps(snap)))
    assert play(other) == first
