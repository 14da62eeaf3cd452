"""envgym envs under verifiers' own eval runner (``envgym.integrations.verifiers``).

verifiers 0.4's ``run_eval`` plays `EnvgymEnv` episodes against the scripted
OpenAI-compatible server of tests/test_agents_openai.py on 127.0.0.1; the
server answers each conversation (known by its first user message, the env's
first observation) with replies worked out beforehand by stepping
``gym.make(id).reset(seed=s)`` (the oracle's, or the first legal move where a
game has no oracle). The rewards, turns, success and task of every episode
verifiers reports equal envgym's own for the same replies; the requests carry
the env's system prompt and tools and never its privileged data; an episode
cut by the env's turn limit is truncated, not terminated.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

import gymnasium as gym
import pytest

import envgym  # noqa: F401 - registers the ids
from envgym.agents import make_agent
from envgym.parsing import parse_tool_calls

pytest.importorskip("verifiers.v1")
fastapi = pytest.importorskip("fastapi")

import verifiers.v1 as vf  # noqa: E402
from test_agents_openai import MODEL, ScriptedServer  # noqa: E402
from verifiers.v1.cli.eval.runner import run_eval  # noqa: E402
from verifiers.v1.configs.cli.eval import EvalConfig  # noqa: E402

from envgym.integrations.verifiers import environment_config, load_environment  # noqa: E402

KEY_VAR = "ENVGYM_TEST_SCRIPTED_KEY"
# (id, gym.make arguments, seeds): a puzzle, a tool world, a game.
CASES = [
    ("envgym/Sokoban-v0", {"max_actions_per_turn": 1}, [3, 4]),
    ("envgym/Retail-v0", {"difficulty": "easy"}, [1]),
    ("envgym/TicTacToe-v0", {}, [0, 2]),  # seeds whose first boards differ
]
GROUP = 2  # rollouts per task


class Server(ScriptedServer):
    """The shared scripted server, its responses completed with the two fields
    verifiers' client checks (``created``, ``usage.total_tokens``)."""

    async def completions(self, request: fastapi.Request) -> Any:
        body = await super().completions(request)
        if isinstance(body, dict):
            usage = body["usage"]
            body["created"] = 0
            usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        return body


def envgym_episode(env_id: str, kwargs: dict[str, Any], seed: int) -> dict[str, Any]:
    """One episode stepped through envgym itself: the replies and what they got."""
    env = gym.make(env_id, **kwargs)
    obs, info = env.reset(seed=seed)
    first, task_id = obs, info["task_id"]
    try:
        agent = make_agent("oracle", env)
        agent.reset()
    except ValueError:  # no oracle (the games): the first legal move
        agent = None
    replies, rewards, done = [], [], False
    while not done:
        reply = (
            agent.act(obs, info)
            if agent is not None
            else f"<answer>{info['admissible_actions'][0]}</answer>"
        )
        replies.append(reply)
        obs, reward, terminated, truncated, info = env.step(reply)
        rewards.append(reward)
        done = terminated or truncated
    return {
        "first": first,
        "replies": replies,
        "rewards": rewards,
        "success": bool(info.get("success")),
        "task_id": task_id,
        "terminated": terminated,
        "truncated": truncated,
        "privileged": info.get("privileged"),
    }


def as_scripted(reply: str) -> Any:
    """A reply as the scripted server sends it: text, or its one tool call as a native call."""
    if "<tool_call>" not in reply:
        return reply
    calls, error = parse_tool_calls(reply)
    assert error is None and len(calls) == 1
    return {"tool": calls[0].name, "arguments": calls[0].arguments}


def evaluate(
    url: str, env_id: str, kwargs: dict[str, Any], seeds: list[int], tmp_path, **options: Any
) -> list:
    """verifiers' eval runner on `env_id`: its episodes."""
    os.environ.setdefault(KEY_VAR, "scripted")
    config = EvalConfig(
        env=environment_config(env_id, seeds=seeds, **options, **kwargs),
        model=MODEL,
        client=vf.EvalClientConfig(base_url=url, api_key_var=KEY_VAR),
        num_rollouts=GROUP,
        push=False,
        rich=None,
        output_dir=tmp_path,
    )
    return asyncio.run(run_eval(config))


@pytest.mark.parametrize(("env_id", "kwargs", "seeds"), CASES, ids=[c[0] for c in CASES])
def test_verifiers_eval_reports_envgyms_rewards_episode_for_episode(
    env_id, kwargs, seeds, tmp_path
):
    expected = {seed: envgym_episode(env_id, kwargs, seed) for seed in seeds}
    # The server knows a conversation by its first message: one per seed.
    assert len({e["first"] for e in expected.values()}) == len(seeds)
    scripts = {e["first"]: [as_scripted(r) for r in e["replies"]] for e in expected.values()}
    with Server(scripts) as url:
        episodes = evaluate(url, env_id, kwargs, seeds, tmp_path)
    assert len(episodes) == len(seeds) * GROUP
    seen = []
    for episode in episodes:
        assert episode.ok, episode.errors
        [trace] = episode.traces
        assert trace.ok, trace.errors
        record = trace.info["envgym"]
        seed = record["seed"]
        want = expected[seed]
        seen.append(seed)
        # The same task as gym.make(id).reset(seed=s), and envgym's rewards turn by turn.
        assert record["task_id"] == want["task_id"]
        assert record["rewards"] == pytest.approx(want["rewards"])
        assert trace.reward == pytest.approx(sum(want["rewards"]))
        assert trace.metrics["turns"] == len(want["replies"]) == trace.num_turns
        assert trace.metrics["success"] == float(want["success"])
        assert trace.metrics["terminated"] == float(want["terminated"])
        assert trace.metrics["truncated"] == float(want["truncated"])
        assert any(name.startswith("reward_components/") for name in trace.metrics)
        assert trace.stop_condition == ("env_terminated" if want["terminated"] else "max_turns")
    # Each group of rollouts plays its row's seed.
    assert sorted(seen) == sorted(seeds * GROUP)


def test_requests_carry_the_system_prompt_and_tools_and_nothing_privileged(tmp_path):
    env_id, kwargs, seeds = CASES[1]  # Retail: tools, a policy, privileged gold actions
    want = envgym_episode(env_id, kwargs, seeds[0])
    env = gym.make(env_id, **kwargs)
    _, info = env.reset(seed=seeds[0])
    scripts = {want["first"]: [as_scripted(r) for r in want["replies"]]}
    server = Server(scripts)
    with server as url:
        evaluate(url, env_id, kwargs, seeds, tmp_path)
    assert len(server.requests) == GROUP * len(want["replies"])
    gold = json.dumps(info["privileged"]["gold_actions"])
    for body in server.requests:
        assert body["messages"][0] == {"role": "system", "content": info["system_prompt"]}
        assert [t["function"]["name"] for t in body["tools"]] == [
            t["function"]["name"] for t in info["tools"]
        ]
        text = json.dumps(body)
        assert "privileged" not in text and "gold_actions" not in text and gold not in text
    # A tool call is answered by a tool message holding the env's observation.
    last = server.requests[-1]["messages"]
    assert any(m["role"] == "tool" and m["tool_call_id"].startswith("call_") for m in last)


def test_the_envs_turn_limit_truncates_and_does_not_terminate(tmp_path):
    env_id, kwargs = "envgym/Sokoban-v0", {"max_actions_per_turn": 1, "max_turns": 2}
    first = gym.make(env_id, **kwargs).reset(seed=5)[0]
    # Two malformed replies: no move, the episode runs out of turns.
    with Server({first: ["I am not sure.", "Still thinking."]}) as url:
        [episode, _] = evaluate(url, env_id, kwargs, [5], tmp_path)
    [trace] = episode.traces
    assert trace.metrics["truncated"] == 1.0 and trace.metrics["terminated"] == 0.0
    assert trace.stop_condition == "max_turns" and trace.is_truncated
    assert trace.metrics["success"] == 0.0 and trace.metrics["turns"] == 2


def test_a_cut_by_verifiers_own_turn_cap_is_neither_terminated_nor_truncated(tmp_path):
    env_id, kwargs = "envgym/Sokoban-v0", {"max_actions_per_turn": 1}
    env = gym.make(env_id, **kwargs)
    first = env.reset(seed=5)[0]
    reward, terminated, truncated = env.step("I am not sure.")[1:4]
    assert not (terminated or truncated)
    with Server({first: ["I am not sure.", "Still thinking."]}) as url:
        [episode, _] = evaluate(url, env_id, kwargs, [5], tmp_path, agent_max_turns=1)
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
