"""envgym envs under verifiers' own eval runner (``envgym.integrations.verifiers``).

verifiers 0.4's ``run_eval`` plays `EnvgymEnv` episodes against the scripted
OpenAI-compatible server of tests/test_agents_openai.py on 127.0.0.1; the
server answers each conversation (known by its first user message, the env's
first observation) with replies worked out beforehand by stepping
``gym.make(id).reset(seed=s)`` (the oracle's, or the first legal move where a
game has no oracle). The contract (rewards, turns, success and task equal to
envgym's own for the same replies, the system prompt, nothing privileged in
any request, an episode cut by the env's turn limit truncated, not
terminated) is checked for every adapter in tests/test_integration_contract.py
with tests/integration_drivers.py's ``play_verifiers``. Here: GRPO groups,
tools, verifiers' own turn cap, the task rows and the missing extra.
"""

from __future__ import annotations

import gymnasium as gym
import pytest
from integration_drivers import (
    as_scripted,
    envgym_play,
    scripted_replies,
    verifiers_server_class,
)
from integration_drivers import verifiers_eval as evaluate

import envgym  # noqa: F401 - registers the ids

pytest.importorskip("verifiers.v1")
pytest.importorskip("fastapi")

from envgym.integrations.verifiers import load_environment  # noqa: E402

#: The scripted server of tests/test_agents_openai.py, as verifiers' client reads it.
Server = verifiers_server_class()

GROUP = 2  # rollouts per task


def test_a_group_plays_its_rows_seed_and_requests_carry_the_tools(tmp_path):
    """verifiers' rollouts of a task (a GRPO group) all play the row's seed, and
    each request carries the env's tools; a tool call is answered by a tool
    message holding the env's observation. (Rewards, turns, the task, the
    system prompt and privileged data: tests/test_integration_contract.py.)"""
    env_id, kwargs, seed = "envgym/Retail-v0", {"difficulty": "easy"}, 1
    replies = scripted_replies(env_id, kwargs, seed)
    want = envgym_play(env_id, kwargs, seed, replies)
    _, info = gym.make(env_id, **kwargs).reset(seed=seed)
    server = Server({want.first: [as_scripted(r) for r in replies]})
    with server as url:
        episodes = evaluate(url, env_id, kwargs, [seed], tmp_path, num_rollouts=GROUP)
    assert len(episodes) == GROUP
    for episode in episodes:
        [trace] = episode.traces
        assert trace.info["envgym"]["seed"] == seed
        assert trace.info["envgym"]["rewards"] == pytest.approx(want.rewards)
    assert len(server.requests) == GROUP * len(replies)
    for body in server.requests:
        assert [t["function"]["name"] for t in body["tools"]] == [
            t["function"]["name"] for t in info["tools"]
        ]
    last = server.requests[-1]["messages"]
    assert any(m["role"] == "tool" and m["tool_call_id"].startswith("call_") for m in last)


def test_a_cut_by_verifiers_own_turn_cap_is_neither_terminated_nor_truncated(tmp_path):
    env_id, kwargs = "envgym/Sokoban-v0", {"max_actions_per_turn": 1}
    env = gym.make(env_id, **kwargs)
    first = env.reset(seed=5)[0]
    reward, terminated, truncated = env.step("I am not sure.")[1:4]
    assert not (terminated or truncated)
    with Server({first: ["I am not sure.", "Still thinking."]}) as url:
        [episode] = evaluate(url, env_id, kwargs, [5], tmp_path, agent_max_turns=1)
    [trace] = episode.traces
    assert trace.metrics["turns"] == 1 and trace.num_turns == 1
    assert trace.metrics["terminated"] == 0.0 and trace.metrics["truncated"] == 0.0
    assert trace.stop_condition == "max_turns"  # verifiers' own reason
    assert trace.info["envgym"]["rewards"] == [reward]


def test_load_environment_builds_seed_rows_and_refuses_unknown_ids():
    env = load_environment("envgym/FrozenLake-v0", seed_start=10, num_tasks=3)
    rows = list(env.taskset)
    assert [row.data.seed for row in rows] == [10, 11, 12]
    assert {row.data.env_id for row in rows} == {"envgym/FrozenLake-v0"}
    assert all(row.data.prompt is None for row in rows)
    with pytest.raises(gym.error.Error):
        list(load_environment("envgym/NoSuchEnv-v0", num_tasks=1).taskset)


def test_a_missing_verifiers_package_names_the_extra(monkeypatch):
    import importlib
    import sys

    from envgym.extras import MissingExtra

    monkeypatch.setitem(sys.modules, "verifiers.v1", None)
    monkeypatch.delitem(sys.modules, "envgym.integrations.verifiers", raising=False)
    with pytest.raises(MissingExtra, match=r"envgym\[verifiers\]"):
        importlib.import_module("envgym.integrations.verifiers")
