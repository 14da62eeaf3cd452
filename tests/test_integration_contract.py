"""The contract every trainer adapter keeps, checked the same way for each.

Each adapter of envgym.integrations (verifiers, OpenEnv, SkyRL, verl) plays,
with the framework's own classes (tests/integration_drivers.py), the same
scripted replies on a puzzle (Sokoban), a tool world (Retail) and a game
against its built-in opponent (TicTacToe): for two seeds a whole episode (the
oracle's replies, or the first legal move), and for one seed an episode cut by
the env's turn limit. For every adapter and id:

1. per-turn rewards, turns, the ending and success (and the task id and
   reward components where the adapter reports them) equal ``gym.make(id)``
   stepped with the same replies, turn for turn;
2. the seed's task is ``gym.make(id).reset(seed=s)``'s (its first observation
   and system prompt), and the two seeds give different tasks;
3. no value of the env's ``info["privileged"]`` (serialised) is in any text
   the model is shown, nor the key itself;
4. the episode cut by the turn limit is truncated, not terminated, and a
   whole one terminated, not truncated.
"""

from __future__ import annotations

import json
from typing import Any

import gymnasium as gym
import pytest
from integration_drivers import (
    DRIVERS,
    Record,
    envgym_play,
    privileged_texts,
    scripted_replies,
)

#: (id, gym.make arguments, two seeds with different first observations).
IDS = [
    ("envgym/Sokoban-v0", {"max_actions_per_turn": 1}, [3, 4]),
    ("envgym/Retail-v0", {"difficulty": "easy"}, [1, 2]),
    ("envgym/TicTacToe-v0", {}, [0, 1]),
]
CASES = [(adapter, *case) for adapter in DRIVERS for case in IDS]
CASE_IDS = [f"{adapter}-{case[0].split('/')[1]}" for adapter, *case in CASES]

_played: dict[tuple[str, str], dict[str, Any]] = {}


@pytest.fixture
def played(request, tmp_path_factory) -> dict[str, Any]:
    """The (adapter, id) case's episodes, played once per test session: the
    whole ones and the cut one, each with envgym's own play of its replies."""
    adapter, env_id, kwargs, seeds = request.param
    key = (adapter, env_id)
    if key not in _played:
        whole = [(seed, scripted_replies(env_id, kwargs, seed)) for seed in seeds]
        # The cut: the env's turn limit one turn before the first episode ends.
        seed, replies = whole[0]
        assert len(replies) >= 2
        cut_kwargs = {**kwargs, "max_turns": len(replies) - 1}
        cut = [(seed, replies[:-1])]
        drive = DRIVERS[adapter]
        _played[key] = {
            "env_id": env_id,
            "kwargs": kwargs,
            "whole": list(
                zip(
                    drive(env_id, kwargs, whole, tmp_path_factory.mktemp("whole")),
                    [envgym_play(env_id, kwargs, s, r) for s, r in whole],
                    strict=True,
                )
            ),
            "cut": list(
                zip(
                    drive(env_id, cut_kwargs, cut, tmp_path_factory.mktemp("cut")),
                    [envgym_play(env_id, cut_kwargs, s, r) for s, r in cut],
                    strict=True,
                )
            ),
        }
    return _played[key]


def assert_same_episode(got: Record, want: Record) -> None:
    assert got.seed == want.seed
    assert got.rewards == pytest.approx(want.rewards)
    assert got.turns == want.turns
    assert (got.terminated, got.truncated) == (want.terminated, want.truncated)
    assert got.success is want.success
    if got.task_id is not None:
        assert got.task_id == want.task_id
    if got.reward_components is not None:
        assert len(got.reward_components) == want.turns
        for mine, theirs in zip(got.reward_components, want.reward_components, strict=True):
            assert mine == pytest.approx(theirs)
            assert sum(mine.values()) == pytest.approx(sum(theirs.values()))


parametrize = pytest.mark.parametrize("played", CASES, ids=CASE_IDS, indirect=True)


@parametrize
def test_the_episode_equals_envgyms_own_play_turn_for_turn(played):
    for got, want in played["whole"] + played["cut"]:
        assert_same_episode(got, want)


@parametrize
def test_the_seed_gives_gym_makes_task_and_other_seeds_other_tasks(played):
    env_id, kwargs = played["env_id"], played["kwargs"]
    for got, _ in played["whole"]:
        obs, info = gym.make(env_id, **kwargs).reset(seed=got.seed)
        assert got.first == obs
        assert got.system_prompt == (info.get("system_prompt") or None)
        if got.task_id is not None:
            assert got.task_id == info["task_id"]
    (a, _), (b, _) = played["whole"]
    assert a.seed != b.seed and a.first != b.first


def leaks(got: Record, want: Record) -> list[str]:
    """The privileged data in what the model was shown: the key itself anywhere;
    any value the env holds at the reset (gold answers, solutions, the user's
    hidden data) in what it reads before its first reply; any structured value
    (a gold action list, a solution) in anything it reads, tool results included.
    (A plain value such as a user id may be found by the model through a tool.)"""
    text = "\n".join(got.shown)
    found = ["privileged"] if "privileged" in text else []
    prompt = "\n".join(got.prompt)
    found += [secret for secret in privileged_texts(want.privileged[0]) if secret in prompt]
    for info in want.privileged:
        structured = {k: v for k, v in info.items() if isinstance(v, dict | list) and v}
        found += [secret for secret in privileged_texts(structured) if secret in text]
    return found


@parametrize
def test_nothing_privileged_is_shown_to_the_model(played):
    for got, want in played["whole"] + played["cut"]:
        assert got.first in "\n".join(got.prompt)
        assert leaks(got, want) == []


def test_the_privileged_check_catches_a_server_that_sends_it():
    """The check above has teeth: ``envgym serve --send-privileged`` (meant for
    trainers) puts ``info["privileged"]`` in OpenEnv's observations."""
    env_id, kwargs, [seed, _] = IDS[1]
    replies = scripted_replies(env_id, kwargs, seed)[:2]
    [got] = DRIVERS["openenv"](env_id, kwargs, [(seed, replies)], send_privileged=True)
    want = envgym_play(env_id, kwargs, seed, replies)
    found = leaks(got, want)
    assert "privileged" in found
    assert json.dumps(want.privileged[0]["gold_actions"]) in found


@parametrize
def test_the_turn_limit_truncates_and_an_ending_terminates(played):
    [(got, want)] = played["cut"]
    assert want.truncated and not want.terminated  # the case is what it says
    assert got.truncated and not got.terminated
    assert got.turns == want.turns
    for got, want in played["whole"]:
        assert want.terminated and not want.truncated
        assert got.terminated and not got.truncated
