"""envgym/ReasoningGym-v0: every installed reasoning-gym generator plays a seeded episode
through gym.make with the oracle scoring 1; wrong answers, hedges and hostile answers
(code for the scorers that eval, sympy bombs) earn nothing; retries; determinism."""

from __future__ import annotations

import os
import subprocess
import sys

import gymnasium as gym
import pytest

import envgym  # noqa: F401  (registers the ids)
from envgym.agents import make_agent

pytest.importorskip("reasoning_gym")
from envgym.envs.reasoning_gym import tasks  # noqa: E402

ID = "envgym/ReasoningGym-v0"
TASKS = tasks.task_names()


def _play_oracle(task: str, seed: int) -> tuple[float, dict]:
    env = gym.make(ID, task=task)
    oracle = make_agent("oracle", env)
    obs, info = env.reset(seed=seed)
    obs, reward, terminated, truncated, info = env.step(oracle.act(obs, info))
    assert terminated and not truncated  # one turn
    return reward, info


@pytest.mark.parametrize("task", TASKS)
def test_every_generator_plays_one_seeded_episode_and_the_oracle_scores_1(task):
    reward, info = _play_oracle(task, seed=7)
    if task in tasks.NO_GOLD_ANSWER:  # the entry carries no answer: nothing to send
        assert reward < 1 and not info["success"], tasks.NO_GOLD_ANSWER[task]
    else:
        assert reward == 1.0 and info["success"] and info["action_valid"], info
        assert info["grade"]["score"] == pytest.approx(1.0)


def test_the_task_list_is_the_installed_registry_less_composite():
    from reasoning_gym.factory import DATASETS

    assert set(TASKS) == set(DATASETS) - {"composite"}
    assert len(TASKS) >= 100
    listed = [name for names in tasks.categories().values() for name in names]
    assert sorted(listed) == TASKS


def test_same_seed_same_question_and_the_entry_is_reasoning_gyms_own():
    import reasoning_gym

    env = gym.make(ID, task="basic_arithmetic")
    first, info = env.reset(seed=5)
    again, info_again = env.reset(seed=5)
    other, info_other = env.reset(seed=6)
    assert first == again and info["task_id"] == info_again["task_id"]
    assert info["task_id"] != info_other["task_id"]
    index = int(info["task_id"].rpartition("-")[2])
    entry = reasoning_gym.create_dataset("basic_arithmetic", seed=index, size=1)[0]
    assert first.startswith(entry["question"])
    replay, replay_info = env.reset(options={"task_id": info["task_id"]})
    assert replay == first and replay_info["privileged"]["answer"] == entry["answer"]
    assert entry["answer"] not in first.split(entry["question"])[1]


def test_a_wrong_answer_scores_0_and_the_gold_answer_stays_privileged():
    env = gym.make(ID, task="leg_counting")
    obs, info = env.reset(seed=1)
    gold = info["privileged"]["answer"]
    obs, reward, terminated, _, info = env.step(f"<answer>{int(gold) + 1}</answer>")
    assert reward == 0.0 and terminated and not info["success"]
    assert gold not in obs.replace(str(int(gold) + 1), "")


def test_multi_turn_feedback_says_wrong_never_the_answer_then_the_right_answer_wins():
    env = gym.make(ID, task="gcd", max_turns=3)
    obs, info = env.reset(seed=2)
    gold = info["privileged"]["answer"]
    wrong = str(int(gold) + 1000)
    obs, reward, terminated, truncated, info = env.step(f"\\boxed{{{wrong}}}")
    assert reward == 0.0 and not terminated and not truncated
    assert "not right" in obs and "Try again" in obs and gold not in obs.replace(wrong, "")
    obs, reward, terminated, _, info = env.step(f"<answer>{gold}</answer>")
    assert reward == 1.0 and terminated and info["success"]


def test_several_answers_hedges_and_question_echoes_earn_nothing():
    env = gym.make(ID, task="syllogism", partial_credit=True)
    obs, info = env.reset(seed=3)
    gold = info["privileged"]["answer"]
    question = obs.split("\n\nGive one final answer")[0]
    for reply in (
        "<answer>Yes</answer><answer>No</answer>",
        "\\boxed{Yes} \\boxed{No}",
        "<answer><answer>Yes</answer></answer>",
        "<answer>Yes No</answer>",  # the base scorer pays len(gold)/len(answer) for this
        f"<answer>{question} {gold}</answer>",
    ):
        env.reset(seed=3)
        _, reward, _, _, info = env.step(reply)
        assert reward <= 0 and not info["success"], reply


def test_partial_credit_pays_the_scorers_fraction_only_when_asked():
    # word_sorting pays the share of words in their right place.
    for partial in (False, True):
        env = gym.make(ID, task="word_sorting", partial_credit=partial)
        obs, info = env.reset(seed=4)
        words = info["privileged"]["answer"].split(", ")
        swapped = ", ".join([words[1], words[0], *words[2:]])
        _, reward, terminated, _, info = env.step(f"<answer>{swapped}</answer>")
        assert terminated and 0 < info["grade"]["score"] < 1 and not info["success"]
        assert reward == (info["grade"]["score"] if partial else 0.0)


@pytest.mark.parametrize(
    "task,answer",
    [
        ("spiral_matrix", "__import__('os').system('touch {marker}')"),
        ("binary_matrix", "[__import__('os').system('touch {marker}')]"),
        ("countdown", "__import__('os').system('touch {marker}')"),
        ("polynomial_multiplication", "x.__class__"),
        ("countdown", "9**9**9**9"),
        ("puzzle24", "((9**99)**99)**99"),
        ("simple_integration", "factorial(10**8)"),
        ("coin_flip", "1e999999999"),
        ("rubiks_cube", "R999999999"),
    ],
)
def test_hostile_answers_never_run_and_never_score(task, answer, tmp_path):
    marker = tmp_path / "pwned"
    env = gym.make(ID, task=task)
    env.reset(seed=0)
    _, reward, _, _, info = env.step(f"<answer>{answer.format(marker=marker)}</answer>")
    assert reward <= 0 and not info["success"]
    assert not os.path.exists(marker)


def test_an_expression_scorer_still_reads_plain_expressions():
    env = gym.make(ID, task="intermediate_integration")
    for seed in range(5):
        obs, info = env.reset(seed=seed)
        gold = info["privileged"]["answer"]
        assert tasks.unsafe_expression(gold) is None, gold
        _, reward, *_ = env.step(f"<answer>{gold}</answer>")
        assert reward == 1.0


def test_unknown_tasks_and_config_keys_name_the_close_ones():
    with pytest.raises(ValueError, match="leg_counting"):
        gym.make(ID, task="leg_countin")
    with pytest.raises(ValueError, match="max_animals"):
        gym.make(ID, task="leg_counting", task_config={"max_animal": 5})
    with pytest.raises(ValueError, match="seed and size are the env's"):
        gym.make(ID, task="leg_counting", task_config={"seed": 5})
    with pytest.raises(ValueError, match="composite"):
        gym.make(ID, task="composite")
    with pytest.raises(ValueError, match="refused"):
        gym.make(ID, task="leg_counting", task_config={"min_animals": 9, "max_animals": 2})
    env = gym.make(ID, task="leg_counting", task_config={"min_animals": 2, "max_animals": 2})
    obs, _ = env.reset(seed=0)
    assert "legs" in obs
    with pytest.raises(ValueError, match="leg_counting-42"):
        env.reset(options={"task_id": "gcd-42"})


def test_envgym_info_lists_the_tasks_by_category(capsys):
    from envgym.cli import main

    assert main(["info", ID]) == 0
    out = capsys.readouterr().out
    assert "## Tasks (reasoning-gym" in out and "* arithmetic (" in out
    assert all(name in out for name in TASKS)


def test_non_ascii_questions_come_escaped_and_either_spelling_of_the_answer_scores():
    env = gym.make(ID, task="prime_factorization")
    for seed in range(8):
        obs, info = env.reset(seed=seed)
        gold = info["privileged"]["answer"]
        if "\u00d7" in gold:
            break
    assert "\\xd7" in obs and obs.isascii() and "Python escapes" in obs
    escaped = gold.encode("ascii", "backslashreplace").decode("ascii")
    for answer in (gold, escaped):
        env.reset(seed=seed)
        assert env.step(f"<answer>{answer}</answer>")[1] == 1.0


def test_without_reasoning_gym_make_names_the_reasoning_extra():
    # A fresh interpreter where reasoning_gym cannot be imported, as on an install without it.
    code = (
        "import sys; sys.modules['reasoning_gym'] = None\n"
        "import gymnasium as gym, envgym\n"
        "try:\n"
        "    gym.make('envgym/ReasoningGym-v0')\n"
        "except ImportError as exc:\n"
        "    print(type(exc).__name__, exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "MissingExtra" in out.stdout and "pip install 'envgym[reasoning]'" in out.stdout
