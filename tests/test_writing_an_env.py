"""docs/writing-an-env.md and its env, envgym/GuessNumber-v0: the guide shows the
real code, the env is as small as it promises, and it plays as its manual says."""

from __future__ import annotations

import re
from pathlib import Path

import gymnasium as gym
import pytest

import envgym
from envgym.evaluation import evaluate

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "docs" / "writing-an-env.md"
ENV_FILE = ROOT / "envs" / "guess_number" / "guess_number.py"
ENV_ID = "envgym/GuessNumber-v0"


def test_every_python_block_of_the_guide_is_in_the_repo_as_shown():
    blocks = re.findall(r"```python\n(.*?)```", GUIDE.read_text(), flags=re.DOTALL)
    assert len(blocks) >= 5
    sources = ENV_FILE.read_text() + (ROOT / "envgym" / "registry.py").read_text()
    for block in blocks:
        assert block in sources, f"the guide shows code the repo does not have:\n{block}"


def test_the_guide_env_is_under_100_lines_and_listed():
    assert ENV_FILE.read_text().count("\n") < 100
    assert ENV_ID in [spec.id for spec in envgym.list_envs()]


def test_hints_narrow_the_range_and_the_secret_wins():
    env = gym.make(ENV_ID)
    obs, info = env.reset(options={"task_id": "100-42"})
    assert "1 to 100" in obs and info["state_key"] == "100-42:1-100"
    obs, reward, terminated, _, info = env.step("<answer>50</answer>")
    assert (obs, reward, terminated, info["state_key"]) == ("Lower.", 0.0, False, "100-42:1-49")
    obs, _, _, _, info = env.step("<think>up</think>\\boxed{10}")
    assert obs == "Higher." and info["state_key"] == "100-42:11-49"
    obs, reward, terminated, _, info = env.step("<answer>42</answer>")
    assert terminated and info["success"] and reward == 1.0
    assert info["reward_components"] == {"solved": 1.0}


def test_a_reply_without_a_number_is_feedback_and_a_penalty():
    env = gym.make(ENV_ID)
    env.reset(seed=0)
    obs, reward, terminated, _, info = env.step("<answer>fifty</answer>")
    assert not info["action_valid"] and reward == -0.1 and not terminated
    assert "whole number" in obs


def test_settings_override_the_preset_within_their_bounds():
    env = gym.make(ENV_ID, difficulty="hard", high=500)
    assert "1 to 500" in env.reset(seed=1)[0]
    assert env.unwrapped.max_turns == 25
    with pytest.raises(ValueError, match=r"high must be an integer from 2 to 1000000000 \(the"):
        gym.make(ENV_ID, high=1)
    with pytest.raises(TypeError, match="unknown setting"):
        gym.make(ENV_ID, hihg=10)
    for bad in ("100-0", "100-101", "1-1", "x" * 10_000):
        with pytest.raises(ValueError):
            env.reset(options={"task_id": bad})


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_the_oracle_always_wins_and_random_rarely(difficulty):
    oracle = evaluate(ENV_ID, "oracle", episodes=30, seed=0, env_kwargs={"difficulty": difficulty})
    assert oracle["summary"]["success_rate"] == 1.0
    random = evaluate(ENV_ID, "random", episodes=30, seed=0, env_kwargs={"difficulty": difficulty})
    assert random["summary"]["success_rate"] < 0.5
