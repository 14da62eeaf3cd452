"""Curriculum moves the env's difficulty with the agent's success rate."""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from envgym.core import TextEnv, Turn, quote_for_feedback
from envgym.wrappers import Curriculum

LEVELS = ("easy", "medium", "hard")


class EchoNumberEnv(TextEnv):
    """Say the secret number back; success iff the reply is exactly that number.

    The observation names the difficulty, and harder levels draw bigger numbers.
    A wrong reply is feedback, not the end: the episode is truncated after two turns.
    """

    default_max_turns = 2
    digits = {"easy": 1, "medium": 2, "hard": 3}

    def _new_task(self, options: dict[str, Any]) -> str:
        self.last_options = dict(options)
        self.secret = int(self.np_random.integers(10 ** self._digits()))
        self.task_id = f"{self.difficulty}-{self.secret}"
        return f"[{self.difficulty}] Reply with the number {self.secret}."

    def _digits(self) -> int:
        return self.digits[self.difficulty]

    def _act(self, action: str) -> Turn:
        if action.strip() == str(self.secret):
            return Turn("Correct.", {"correct": 1.0}, terminated=True, success=True)
        return Turn(f"Wrong: {quote_for_feedback(action)}. Try again.", {"correct": 0.0})


class IntScaleEnv(EchoNumberEnv):
    """The same task, also accepting an integer difficulty 1..9 (number of digits)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(difficulty=kwargs.pop("difficulty", 1), **kwargs)

    def _digits(self) -> int:
        return self.difficulty if isinstance(self.difficulty, int) else super()._digits()

    def _check_difficulty(self, difficulty: Any) -> Any:
        if isinstance(difficulty, int) and 1 <= difficulty <= 9:
            return difficulty
        return super()._check_difficulty(difficulty)


class ScriptedAgent:
    """Answers right or wrong for a whole episode, as `decide(level)` says at its start."""

    def __init__(self, decide: Callable[[str], bool]) -> None:
        self.decide = decide
        self.succeed = False

    def reset(self, level: str) -> None:
        self.succeed = self.decide(level)

    def act(self, observation: str) -> str:
        number = re.search(r"the number (\d+)", observation)
        return number.group(1) if self.succeed and number else "no idea"


def with_probability(p: dict[str, float], seed: int = 0) -> Callable[[str], bool]:
    rng = np.random.default_rng(seed)
    return lambda level: bool(rng.random() < p[level])


def from_list(outcomes: list[bool]) -> Callable[[str], bool]:
    it = iter(outcomes)
    return lambda level: next(it)


def play(env: Curriculum, agent: ScriptedAgent, episodes: int, seed: int = 0) -> list[str]:
    """Play episodes; return the level each was played at, read from its observation."""
    played = []
    for episode in range(episodes):
        obs, info = env.reset(seed=seed + episode)
        level = re.match(r"\[(\w+)\]", obs).group(1)
        # The wrapper's level is what the env was actually given.
        assert level == str(env.unwrapped.difficulty) == str(info["curriculum"]["level"])
        played.append(level)
        agent.reset(level)
        done = False
        while not done:
            obs, _, terminated, truncated, info = env.step(agent.act(obs))
            done = terminated or truncated
    return played


def test_perfect_agent_climbs_to_the_hardest_level_and_stays():
    env = Curriculum(EchoNumberEnv(), window=4)
    played = play(env, ScriptedAgent(lambda level: True), 30)
    assert played == ["easy"] * 4 + ["medium"] * 4 + ["hard"] * 22
    assert env.level == "hard"
    assert env.success_rate == 1.0
    assert env.episodes_at_level == 22


def test_failing_agent_drops_to_the_easiest_level_and_stays():
    env = Curriculum(EchoNumberEnv(), window=4, start="hard")
    # Every episode here ends by truncation (two wrong replies): that is a failure.
    played = play(env, ScriptedAgent(lambda level: False), 20)
    assert played == ["hard"] * 4 + ["medium"] * 4 + ["easy"] * 12
    assert env.level == "easy"
    assert env.success_rate == 0.0


def test_agent_that_cannot_do_hard_oscillates_between_medium_and_hard():
    env = Curriculum(EchoNumberEnv(), window=4)
    played = play(env, ScriptedAgent(lambda level: level != "hard"), 28)
    # Climbs, then fails a full window at hard, drops, recovers at medium, repeats.
    cycle = ["hard"] * 4 + ["medium"] * 4
    assert played == ["easy"] * 4 + ["medium"] * 4 + cycle * 2 + ["hard"] * 4
    assert set(played) <= set(LEVELS)


def test_noisy_agent_settles_between_medium_and_hard():
    p = {"easy": 0.95, "medium": 0.85, "hard": 0.1}
    env = Curriculum(EchoNumberEnv(), window=8)
    played = play(env, ScriptedAgent(with_probability(p, seed=3)), 300)
    assert set(played) <= set(LEVELS)
    after_first_hard = played[played.index("hard") :]
    assert set(after_first_hard) == {"medium", "hard"}
    switches = sum(a != b for a, b in zip(after_first_hard, after_first_hard[1:], strict=False))
    assert switches >= 10
    assert env.level in ("medium", "hard")


def test_rate_is_over_a_sliding_window_and_min_episodes_allows_early_moves():
    # window 4, promote at 0.75: F F S S is 0.5 (stay), F S S S is 0.75 (promote).
    env = Curriculum(EchoNumberEnv(), window=4, promote_at=0.75, demote_at=0.25)
    played = play(env, ScriptedAgent(from_list([False, False, True, True, True, True])), 6)
    assert played == ["easy"] * 5 + ["medium"]
    # Exactly at demote_at (1 of 4 is 0.25) moves down.
    env = Curriculum(EchoNumberEnv(), window=4, promote_at=0.75, demote_at=0.25, start="medium")
    played = play(env, ScriptedAgent(from_list([True, False, False, False, True])), 5)
    assert played == ["medium"] * 4 + ["easy"]

    early = Curriculum(EchoNumberEnv(), window=10, min_episodes=3)
    assert (
        play(early, ScriptedAgent(lambda level: True), 8)
        == ["easy"] * 3 + ["medium"] * 3 + ["hard"] * 2
    )


def test_explicit_integer_levels():
    env = Curriculum(IntScaleEnv(), levels=[1, 2, 3, 4], window=2)
    obs, _ = env.reset(seed=0)
    assert obs.startswith("[1]") and env.unwrapped.difficulty == 1
    played = play(env, ScriptedAgent(lambda level: True), 10)
    assert played == ["1", "1", "2", "2", "3", "3", "4", "4", "4", "4"]
    assert env.unwrapped.secret < 10_000


def test_levels_can_skip_the_envs_named_levels():
    env = Curriculum(EchoNumberEnv(), levels=["easy", "hard"], window=2)
    assert play(env, ScriptedAgent(lambda level: True), 4) == ["easy", "easy", "hard", "hard"]


def test_env_receives_the_level_and_info_reports_the_curriculum():
    env = Curriculum(EchoNumberEnv(), window=2)
    obs, info = env.reset(seed=0)
    assert obs.startswith("[easy]") and env.unwrapped.difficulty == "easy"
    assert info["curriculum"] == {"level": "easy", "success_rate": None, "episodes_at_level": 0}

    _, _, terminated, truncated, info = env.step("wrong")
    assert not (terminated or truncated)
    assert info["curriculum"] == {"level": "easy", "success_rate": None, "episodes_at_level": 0}
    _, _, _, truncated, info = env.step("wrong again")
    assert truncated and info["success"] is False
    assert info["curriculum"] == {"level": "easy", "success_rate": 0.0, "episodes_at_level": 1}

    for _ in range(2):
        env.reset()
        _, _, terminated, _, info = env.step(str(env.unwrapped.secret))
        assert terminated and info["success"] is True
    # Window [F, S] is 0.5, then [S, S] is 1.0: promoted, and the step that ended
    # the episode already shows the level the next reset will use.
    assert info["curriculum"] == {"level": "medium", "success_rate": None, "episodes_at_level": 0}
    assert env.unwrapped.difficulty == "easy"  # not until the next reset
    obs, _ = env.reset()
    assert obs.startswith("[medium]") and env.unwrapped.difficulty == "medium"


def test_user_supplied_difficulty_wins_for_that_reset_and_is_not_counted():
    env = Curriculum(EchoNumberEnv(), window=2)
    options = {"difficulty": "hard", "task_id": "t-1"}
    obs, info = env.reset(seed=0, options=options)
    assert obs.startswith("[hard]") and env.unwrapped.difficulty == "hard"
    assert env.unwrapped.last_options == options
    assert options == {"difficulty": "hard", "task_id": "t-1"}  # caller's dict untouched
    assert info["curriculum"]["level"] == "easy"
    env.step(str(env.unwrapped.secret))
    assert env.episodes_at_level == 0 and env.success_rate is None

    obs, _ = env.reset(options={"task_id": "t-2"})
    assert obs.startswith("[easy]")
    assert env.unwrapped.last_options == {"task_id": "t-2", "difficulty": "easy"}
    env.step(str(env.unwrapped.secret))
    assert env.episodes_at_level == 1


def test_state_dict_round_trips_through_json():
    agent = ScriptedAgent(lambda level: True)
    trained = Curriculum(EchoNumberEnv(), window=4)
    play(trained, agent, 6)  # 4 at easy, then 2 of the 4 needed at medium
    state = json.loads(json.dumps(trained.state_dict()))

    resumed = Curriculum(EchoNumberEnv(), window=4)
    resumed.load_state_dict(state)
    assert resumed.level == "medium"
    assert resumed.success_rate == 1.0
    assert resumed.episodes_at_level == 2
    assert resumed.state_dict() == trained.state_dict()
    # The restored window counts: two more successes promote, as they would have.
    assert play(resumed, agent, 3) == ["medium", "medium", "hard"]
    fresh = Curriculum(EchoNumberEnv(), window=4, start="medium")
    assert play(fresh, agent, 3) == ["medium"] * 3


def test_load_state_dict_rejects_a_mismatched_state():
    state = Curriculum(EchoNumberEnv(), window=4).state_dict()
    other = Curriculum(EchoNumberEnv(), levels=["easy", "hard"], window=4)
    with pytest.raises(ValueError, match="same levels"):
        other.load_state_dict(state)
    with pytest.raises(ValueError, match="state_dict"):
        other.load_state_dict({"level": "easy"})
    with pytest.raises(ValueError, match="not one of levels"):
        other.load_state_dict({**other.state_dict(), "level": "medium"})


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"promote_at": 0.5, "demote_at": 0.5}, "demote_at < promote_at"),
        ({"promote_at": 0.3, "demote_at": 0.6}, "demote_at < promote_at"),
        ({"demote_at": -0.1}, "demote_at must be a number from 0 to 1"),
        ({"promote_at": 1.5}, "promote_at must be a number from 0 to 1"),
        ({"promote_at": float("nan")}, "promote_at"),
        ({"promote_at": "high"}, "promote_at must be a number"),
        ({"window": 0}, "window must be an integer from 1 to 1000000 (episodes)"),
        ({"window": 2.5}, "window must be an integer from 1 to 1000000 (episodes)"),
        ({"min_episodes": 0}, "min_episodes"),
        ({"window": 4, "min_episodes": 5}, "min_episodes"),
        ({"start": "expert"}, "start='expert' is not one of levels"),
        ({"levels": []}, "levels is empty"),
        ({"levels": "easy"}, "levels must be a list"),
        ({"levels": ["easy", "hard", "easy"]}, "more than once"),
    ],
)
def test_bad_arguments_raise_value_error_saying_what_to_fix(kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        Curriculum(EchoNumberEnv(), **kwargs)


def test_env_without_difficulties_needs_explicit_levels():
    class Bare(gym.Env):
        observation_space = gym.spaces.Text(10)
        action_space = gym.spaces.Text(10)

    with pytest.raises(ValueError, match="pass the levels explicitly"):
        Curriculum(Bare())
    assert Curriculum(Bare(), levels=[1, 2]).level == 1


def test_passes_gymnasium_env_checker():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_env(Curriculum(EchoNumberEnv()))
        check_env(Curriculum(IntScaleEnv(), levels=[1, 2, 3], window=1, min_episodes=1))
