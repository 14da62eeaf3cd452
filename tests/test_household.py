"""Household rules, task generation, success conditions and the oracle."""

from __future__ import annotations

import pickle
import warnings
from collections import Counter

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import envgym  # noqa: F401  (registers the ids)
from envgym.core import CHARSET
from envgym.envs.household import TASK_TYPES
from envgym.envs.household.oracle import HouseholdOracle, parse_goal

ENV_ID = "envgym/Household-v0"
_CHARS = frozenset(CHARSET)


def make(task_type: str | None = None, seed: int = 0, **kwargs):
    """A reset env (unwrapped) with a task of `task_type`."""
    if task_type is not None:
        kwargs.setdefault("task_types", [task_type])
    env = gym.make(ENV_ID, **kwargs).unwrapped
    obs, info = env.reset(seed=seed)
    return env, obs, info


def solution(info) -> list[str]:
    return info["privileged"]["solution"]


def play(env, actions):
    out = None
    for action in actions:
        out = env.step(action)
    return out


def test_first_observation_is_alfworld_style():
    env, obs, info = make("pick_heat_then_place", seed=1, difficulty="medium")
    assert obs.startswith("-= Welcome to TextWorld, ALFRED! =-\n\nYou are in the middle of a room.")
    assert "Looking quickly around you, you see a " in obs
    task = obs.split("Your task is to: ")[1]
    assert parse_goal(task)[0] == "pick_heat_then_place"
    assert info["privileged"]["goal"] == task
    assert set(obs) <= _CHARS
    assert "solution" not in obs and info["turn"] == 0


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_every_level_generates_its_task_types_and_each_is_solvable(difficulty):
    env = gym.make(ENV_ID, difficulty=difficulty)
    allowed = set(env.unwrapped.config.task_types)
    seen = Counter()
    for seed in range(150):
        obs, info = env.reset(seed=seed)
        seen[info["privileged"]["task_type"]] += 1
        *_, terminated, truncated, info = play(env, solution(info))
        assert terminated and info["success"], (seed, info["task_id"])
    assert set(seen) == allowed, seen
    if difficulty == "hard":
        assert set(seen) == set(TASK_TYPES)


@pytest.mark.parametrize("difficulty,expected", [("easy", 12), ("medium", 20), ("hard", 30)])
def test_difficulty_sets_home_size(difficulty, expected):
    env, obs, info = make(seed=3, difficulty=difficulty)
    assert len(env._home.rec_names) == expected
    env, obs, info = make(seed=3, difficulty=difficulty, num_receptacles=25)
    assert len(env._home.rec_names) == 25


def test_turn_limit_is_alfworlds_and_grows_with_larger_homes():
    assert [make(difficulty=d)[0].max_turns for d in ("easy", "medium", "hard")] == [50] * 3
    env, *_ = make(num_receptacles=40)  # 10 more than the hard level: 2 turns each
    assert env.max_turns == 70
    env.reset(seed=0, options={"difficulty": "hard"})  # the caller's home size stays
    assert env.max_turns == 70 and len(env._home.rec_names) == 40
    env, *_ = make(num_receptacles=40, max_turns=12)  # an explicit limit wins
    assert env.max_turns == 12
    *_, truncated, info = play(env, ["look"] * 12)
    assert truncated and info["turn"] == 12


def test_num_distractors_fixes_the_count_at_every_level():
    env, obs, info = make(seed=0, num_distractors=4)
    counts = {info["task_id"].split("-")[2]}
    for seed, level in ((1, "easy"), (2, "medium"), (3, "hard")):
        obs, info = env.reset(seed=seed, options={"difficulty": level})
        counts.add(info["task_id"].split("-")[2])
    assert counts == {"d4"}
    obs, info = gym.make(ENV_ID, difficulty="hard").reset(seed=3)
    assert 20 <= int(info["task_id"].split("-")[2][1:]) <= 30  # the level's range


def test_closed_receptacles_hide_their_contents_until_opened():
    for seed in range(200):
        env, obs, info = make("pick_and_place", seed=seed, difficulty="hard")
        plan = solution(info)
        if plan[1].startswith("open "):
            break
    else:
        pytest.fail("no task starts with a closed receptacle")
    receptacle = plan[1][len("open ") :]
    obj = plan[2].split(" from ")[0][len("take ") :]
    obs, *_, info = env.step(plan[0])
    assert obs == f"You arrive at {receptacle}. The {receptacle} is closed."
    assert not any(a.startswith("take ") for a in info["admissible_actions"])
    obs, *_, info = env.step(plan[2])  # taking from a closed receptacle
    assert obs == "Nothing happens." and info["action_valid"] is False
    obs, *_, info = env.step(plan[1])
    assert obs.startswith(f"You open the {receptacle}. The {receptacle} is open. In it, you see ")
    assert f"a {obj}" in obs
    obs, *_, info = env.step(plan[2])
    assert obs == f"You pick up the {obj} from the {receptacle}."
    obs, *_, info = env.step("inventory")
    assert obs == f"You are carrying: a {obj}."


def _steps(plan, verb):
    return [a for a in plan if a.startswith(verb + " ")]


def test_hot_task_needs_the_heat_action_at_the_microwave():
    env, obs, info = make("pick_heat_then_place", seed=4, difficulty="medium")
    plan = solution(info)
    heat = _steps(plan, "heat")[0]
    obj = heat.split()[1] + " " + heat.split()[2]
    take, move = _steps(plan, "take")[0], _steps(plan, "move")[0]
    target = move.split(" to ")[1]
    # Fetch the object, then deliver it unheated ("open" does nothing if the target has no door).
    play(env, plan[: plan.index(take) + 1])
    obs, reward, terminated, _, info = play(env, ["go to " + target, "open " + target, move])
    assert obs == f"You move the {obj} to the {target}."
    assert not terminated and reward == 0.0 and info["success"] is False
    obs, *_ = env.step(f"take {obj} from {target}")
    # Heating anywhere but at the microwave does nothing.
    obs, *_, info = env.step(heat)
    assert obs == "Nothing happens." and info["action_valid"] is False
    play(env, ["go to microwave 1"])
    obs, *_ = env.step(heat)
    assert obs == f"You heat the {obj} using the microwave 1."
    obs, reward, terminated, _, info = play(env, ["go to " + target, move])
    assert terminated and reward == 1.0 and info["success"] is True
    assert info["reward_components"] == {"success": 1.0}


def test_putting_an_object_in_the_fridge_does_not_cool_it():
    env, obs, info = make("pick_cool_then_place", seed=2, difficulty="medium")
    plan = solution(info)
    take, cool, move = _steps(plan, "take")[0], _steps(plan, "cool")[0], _steps(plan, "move")[0]
    obj = take.split(" from ")[0][len("take ") :]
    play(env, plan[: plan.index(take) + 1])
    # In and out of the fridge ("open" does nothing if it was opened to fetch the object).
    play(env, ["go to fridge 1", "open fridge 1"])
    obs, *_ = env.step(f"move {obj} to fridge 1")
    assert obs == f"You move the {obj} to the fridge 1."
    obs, *_ = env.step(f"take {obj} from fridge 1")
    assert obs == f"You pick up the {obj} from the fridge 1."
    target = move.split(" to ")[1]
    obs, reward, terminated, _, info = play(env, ["go to " + target, "open " + target, move])
    assert obs == f"You move the {obj} to the {target}."
    assert not terminated and not info["success"]
    play(env, [f"take {obj} from {target}", "go to fridge 1", cool, "go to " + target])
    obs, reward, terminated, _, info = env.step(move)
    assert terminated and reward == 1.0


def test_pick_two_needs_two_distinct_objects_in_one_receptacle():
    env, obs, info = make("pick_two_and_place", seed=5, difficulty="hard")
    plan = solution(info)
    moves = _steps(plan, "move")
    assert len(moves) == 2 and moves[0].split(" to ")[0] != moves[1].split(" to ")[0]
    first = plan.index(moves[0]) + 1
    obs, reward, terminated, _, info = play(env, plan[:first])
    assert not terminated and obs.startswith("You move the ")
    # Taking the same object out and putting it back again is still one object.
    obj, target = moves[0][len("move ") :].split(" to ")
    play(env, [f"take {obj} from {target}"])
    obs, reward, terminated, _, info = env.step(moves[0])
    assert not terminated
    obs, reward, terminated, _, info = play(env, plan[first:])
    assert terminated and info["success"] is True


def test_look_at_needs_the_object_in_hand_under_a_lit_lamp():
    env, obs, info = make("look_at_obj_in_light", seed=6)
    plan = solution(info)
    use = _steps(plan, "use")[0]
    lamp = use[len("use ") :]
    lamp_place = plan[plan.index(use) - 1] if plan[plan.index(use) - 1].startswith("go") else None
    take = _steps(plan, "take")[0]
    # Light the lamp empty-handed: nothing is solved.
    if lamp_place is None:  # the object lies by the lamp
        lamp_place = plan[0]
    obs, reward, terminated, _, info = play(env, [lamp_place, use])
    assert obs == f"You turn on the {lamp}." and not terminated
    # Fetch the object and come back under the lit lamp: solved on arrival.
    obs, reward, terminated, _, info = play(env, plan[: plan.index(take) + 1])
    if not terminated:
        obs, reward, terminated, _, info = env.step(lamp_place)
    assert terminated and info["success"] is True and reward == 1.0


def test_lamp_turns_off_again_and_cannot_be_taken():
    env, obs, info = make("look_at_obj_in_light", seed=7)
    plan = solution(info)
    use = _steps(plan, "use")[0]
    lamp = use[len("use ") :]
    spot = next(a for a in reversed(plan[: plan.index(use)]) if a.startswith("go to "))
    env2, *_ = make("look_at_obj_in_light", seed=7)
    play(env2, [spot])
    obs, *_, info = env2.step(f"take {lamp} from {spot[len('go to ') :]}")
    assert obs == "Nothing happens."
    assert env2.step(use)[0] == f"You turn on the {lamp}."
    assert env2.step(use)[0] == f"You turn off the {lamp}."


def test_invalid_actions_say_nothing_happens_and_use_a_turn():
    env, obs, info = make(seed=0)
    obs, reward, terminated, truncated, info = env.step("take apple 1 from fridge 1")
    assert obs == "Nothing happens."
    assert info["action_valid"] is False and info["turn"] == 1 and reward == 0.0
    obs, *_, info = env.step("dance wildly")
    assert obs.startswith("Nothing happens.") and "<answer>" in obs
    assert info["action_valid"] is False and info["turn"] == 2
    first = info["admissible_actions"][0]
    # Going where you already are is not admissible either.
    env.step(first)
    obs, *_, info = env.step(first)
    assert obs == "Nothing happens." and first not in info["admissible_actions"]


def test_reply_formats_bare_tagged_case_and_put_alias():
    env, obs, info = make("pick_and_place", seed=8)
    plan = solution(info)
    go = plan[0]
    obs, *_, info = env.step(f"<think>where is it?</think>  {go.upper()}.  ")
    assert info["action_valid"] and obs.startswith("You arrive at ")
    env, obs, info = make("pick_and_place", seed=8)
    for action in plan[:-1]:
        obs, *_, info = env.step(f"<answer>{action}</answer>")
        assert info["action_valid"], action
    obj, target = plan[-1][len("move ") :].split(" to ")
    obs, reward, terminated, _, info = env.step(f"<answer>put {obj} in/on {target}</answer>")
    assert terminated and obs == f"You move the {obj} to the {target}."


def test_look_and_examine_feedback():
    env, obs, info = make(seed=9)
    obs, *_ = env.step("look")
    assert obs.startswith("You are in the middle of a room. Looking quickly around you")
    obs, *_ = env.step("inventory")
    assert obs == "You are not carrying anything."
    go = info["admissible_actions"][0]
    place = go[len("go to ") :]
    arrive, *_ = env.step(go)
    assert env.step("look")[0] == f"You are facing the {place}. Next to it, you see nothing."
    assert env.step("examine " + place)[0] == arrive[len(f"You arrive at {place}. ") :]


def test_task_id_replays_the_same_task_in_a_fresh_env():
    env = gym.make(ENV_ID, difficulty="hard")
    obs, info = env.reset(seed=21)
    other = gym.make(ENV_ID)  # another level: the id carries everything
    obs2, info2 = other.reset(options={"task_id": info["task_id"]})
    assert obs2 == obs and info2["task_id"] == info["task_id"]
    assert info2["privileged"] == info["privileged"]
    assert info2["state_key"] == info["state_key"]
    obs3, info3 = env.reset(seed=22)
    assert info3["task_id"] != info["task_id"]


def test_bad_kwargs_and_options_are_clear_errors():
    with pytest.raises(ValueError, match="unknown task type"):
        gym.make(ENV_ID, task_types=["make_coffee"])
    with pytest.raises(ValueError, match="task_types must be a list"):
        gym.make(ENV_ID, task_types="pick_and_place")
    with pytest.raises(ValueError, match="num_receptacles"):
        gym.make(ENV_ID, num_receptacles=3)
    with pytest.raises(ValueError, match="num_distractors"):
        gym.make(ENV_ID, num_distractors=-1)
    with pytest.raises(ValueError, match="shaped"):
        gym.make(ENV_ID, shaped="yes")
    env = gym.make(ENV_ID)
    with pytest.raises(ValueError, match="unknown reset option"):
        env.reset(options={"level": 3})
    with pytest.raises(ValueError, match="not a Household task id"):
        env.reset(options={"task_id": "kitchen-7"})


def test_shaped_rewards_pay_documented_subgoals():
    env, obs, info = make("pick_clean_then_place", seed=10, difficulty="medium", shaped=True)
    rewards = {}
    for action in solution(info):
        obs, reward, terminated, _, info = env.step(action)
        rewards[action.split()[0]] = info["reward_components"]
        assert reward == pytest.approx(sum(info["reward_components"].values()))
    assert rewards["take"] == {"success": 0.0, "subgoal": 0.1}
    assert rewards["clean"] == {"success": 0.0, "subgoal": 0.1}
    assert rewards["move"] == {"success": 1.0, "subgoal": 0.0}
    env, obs, info = make("pick_clean_then_place", seed=10, difficulty="medium")
    obs, reward, *_, info = env.step(solution(info)[0])
    assert info["reward_components"] == {"success": 0.0}


def test_state_key_names_the_world_state_without_history():
    env, obs, info = make("pick_and_place", seed=11, difficulty="medium")
    start = info["state_key"]
    go = info["admissible_actions"][0]
    *_, info = env.step(go)
    moved = info["state_key"]
    assert moved != start and go[len("go to ") :] in moved
    for action in ("look", "inventory", "examine " + go[len("go to ") :], "nonsense"):
        *_, info = env.step(action)
        assert info["state_key"] == moved, action
    other, *_ = make("pick_and_place", seed=11, difficulty="medium")
    *_, other_info = other.step(go)
    assert other_info["state_key"] == moved  # the same state by another history


def test_snapshot_restore_mid_episode_replays_identically():
    env, obs, info = make(seed=12, difficulty="hard")
    plan = solution(info)
    half = len(plan) // 2
    play(env, plan[:half])
    snap = pickle.loads(pickle.dumps(env.snapshot()))
    rng = np.random.default_rng(0)
    replies = []
    for _ in range(10):
        acts = env._admissible()
        replies.append(acts[int(rng.integers(len(acts)))])
    replies += plan[half:]

    def run(target):
        out = []
        for reply in replies:
            step = target.step(reply)
            out.append(step)
            if step[2] or step[3]:
                break
        return out

    original = run(env)
    env.restore(snap)
    assert run(env) == original
    fresh, *_ = make(seed=99)
    fresh.restore(snap)
    assert run(fresh) == original


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_gymnasium_checker_passes(difficulty):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(gym.make(ENV_ID, difficulty=difficulty).unwrapped)
        warnings.filterwarnings("ignore", message=".*is different from the unwrapped version.*")
        check_env(gym.make(ENV_ID, difficulty=difficulty))


def _run_episode(env, agent, seed):
    obs, info = env.reset(seed=seed)
    agent.reset()
    while True:
        assert set(obs) <= _CHARS
        obs, reward, terminated, truncated, info = env.step(agent.act(obs, info))
        if terminated or truncated:
            assert set(obs) <= _CHARS
            return info


def test_oracle_solves_every_task_of_every_type_and_level():
    counts, solved, turns = Counter(), Counter(), []
    seeds = range(167)
    for difficulty in ("easy", "medium", "hard"):
        env = gym.make(ENV_ID, difficulty=difficulty)
        oracle = HouseholdOracle(env.unwrapped)
        for seed in seeds:
            obs, info = env.reset(seed=seed)
            task_type = info["privileged"]["task_type"]
            info = _run_episode(env, oracle, seed)
            counts[task_type] += 1
            solved[task_type] += info["success"]
            turns.append(info["turn"])
    # Pick-two is one type in six on hard only: give every type 40 more hard tasks.
    for task_type in TASK_TYPES:
        env = gym.make(ENV_ID, difficulty="hard", task_types=[task_type])
        oracle = HouseholdOracle(env.unwrapped)
        for seed in range(1000, 1040):
            info = _run_episode(env, oracle, seed)
            counts[task_type] += 1
            solved[task_type] += info["success"]
            turns.append(info["turn"])
    assert sum(counts.values()) >= 500 and set(counts) == set(TASK_TYPES)
    assert solved == counts  # every task of every type, each within its 50 turns
    assert max(turns) <= 50


def test_oracle_never_reads_privileged_info():
    env = gym.make(ENV_ID, difficulty="hard")
    oracle = HouseholdOracle(env.unwrapped)
    obs, info = env.reset(seed=31)
    while True:
        info = {k: v for k, v in info.items() if k != "privileged"}
        obs, _, terminated, truncated, info = env.step(oracle.act(obs, info))
        if terminated or truncated:
            break
    assert terminated


@pytest.mark.parametrize("difficulty,most_wins", [("easy", 10), ("medium", 5), ("hard", 5)])
def test_random_agent_gets_only_the_sparse_reward_and_rarely_wins(difficulty, most_wins):
    from envgym.agents import RandomAgent

    # Admissible commands are always valid; the reward is 1.0 on the turn the goal
    # is reached and 0.0 on every other turn (no shaping by default).
    env = gym.make(ENV_ID, difficulty=difficulty)
    agent = RandomAgent(seed=0)
    wins = 0
    for seed in range(100):
        obs, info = env.reset(seed=seed)
        while True:
            obs, reward, terminated, truncated, info = env.step(agent.act(obs, info))
            assert info["action_valid"]
            assert info["reward_components"] == {"success": 1.0 if terminated else 0.0}
            assert reward == (1.0 if terminated else 0.0)
            if terminated or truncated:
                break
        assert info["success"] is terminated
        wins += terminated
    # The oracle solves every task; random play finishes few within 50 turns.
    assert wins <= most_wins
    if difficulty == "easy":
        assert wins > 0  # but the goal is reachable by chance


@pytest.mark.parametrize(
    ("task_id", "message"),
    [
        ("pick_and_place-r999-d5-1", "receptacle count must be an integer from 6 to 60"),
        ("pick_and_place-r20-d999-1", "distractor count must be an integer from 0 to 80"),
        ("pick_and_place-r20-d5-" + "9" * 20, "seed must be an integer from 0 to 92233"),
        ("pick_and_place-r" + "9" * 5000 + "-d1-1", "not a Household task id"),
        (["pick_and_place-r20-d5-1"] * 100_000, "not a Household task id"),
    ],
)
def test_hostile_task_ids_are_refused_up_front(task_id, message):
    env = gym.make(ENV_ID)
    with pytest.raises(ValueError, match=message) as error:
        env.reset(options={"task_id": task_id})
    assert "info['task_id']" in str(error.value)
    assert len(str(error.value)) < 500  # a huge id is not echoed back whole


def test_hostile_kwargs_are_refused_at_construction():
    with pytest.raises(ValueError, match="num_receptacles must be an integer from 6 to 60"):
        gym.make(ENV_ID, num_receptacles=10**9)
    with pytest.raises(ValueError, match="num_distractors must be an integer from 0 to 80"):
        gym.make(ENV_ID, num_distractors=True)
    with pytest.raises(ValueError, match="max_turns must be an integer from 1 to 100000"):
        gym.make(ENV_ID, max_turns=10**12)
