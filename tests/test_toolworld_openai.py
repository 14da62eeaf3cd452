"""The tool worlds played by the OpenAI-compatible agent with native tool calls.

A scripted chat server on 127.0.0.1 answers each conversation with the gold
dialogue of its task, turned into what a model server sends: the tool calls
as OpenAI ``tool_calls`` (the agent turns them into the ``<tool_call>`` text
the env reads, and sends the env's answer back as ``tool`` messages), the
messages to the user as plain content. ``envgym eval`` plays whole episodes
with it, and the results files it writes pass the leaderboard's verification.
"""

from __future__ import annotations

import json
from typing import Any

import gymnasium as gym
import pytest

import envgym  # noqa: F401 - registers the ids
from envgym.agents import make_agent
from envgym.cli import main as envgym_main
from envgym.parsing import parse_tool_calls
from envgym.serving import AppServer
from envgym.sockets import listening_socket

fastapi = pytest.importorskip("fastapi")
pytest.importorskip("httpx")

TOOL_WORLDS = ("envgym/Retail-v0", "envgym/Airline-v0")
LEVELS = ("easy", "medium", "hard")
EPISODES = 3


def gold_replies(env_id: str, level: str, seed: int) -> tuple[str, list[str]]:
    """(the user's opening, the oracle's replies) of one episode."""
    env = gym.make(env_id, difficulty=level)
    obs, info = env.reset(seed=seed)
    opening, oracle = obs, make_agent("oracle", env)
    replies, done = [], False
    while not done:
        replies.append(oracle.act(obs, info))
        obs, _, terminated, truncated, info = env.step(replies[-1])
        done = terminated or truncated
    assert info["success"], info["grade"]
    return opening, replies


def as_message(reply: str, turn: int) -> dict[str, Any]:
    """A reply of the gold dialogue as a chat-completion message."""
    if "<tool_call>" not in reply:
        return {"role": "assistant", "content": reply}
    calls, error = parse_tool_calls(reply)
    assert error is None
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": f"call_{turn}_{i}",
                "type": "function",
                "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
            }
            for i, call in enumerate(calls)
        ],
    }


class GoldServer:
    """Answers each conversation (known by its first user message) with its script."""

    def __init__(self, scripts: dict[str, list[str]]) -> None:
        self.scripts = scripts
        self.requests: list[dict[str, Any]] = []
        app = fastapi.FastAPI()
        app.post("/v1/chat/completions")(self.completions)
        self.server = AppServer(app, listening_socket())

    async def completions(self, request: fastapi.Request) -> Any:
        body = await request.json()
        self.requests.append(body)
        messages = body["messages"]
        first_user = next(m["content"] for m in messages if m["role"] == "user")
        turn = sum(m["role"] == "assistant" for m in messages)
        message = as_message(self.scripts[first_user][turn], turn)
        return {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "model": body["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5},
        }

    def __enter__(self) -> str:
        self.server.start()
        return self.server.url + "/v1"

    def __exit__(self, *exc: object) -> None:
        self.server.close()


@pytest.mark.parametrize("env_id", TOOL_WORLDS)
def test_envgym_eval_plays_tool_worlds_with_native_tool_calls_and_the_results_verify(
    env_id, tmp_path
):
    from envgym.evaluation import load_results, verify_submission

    scripts: dict[str, list[str]] = {}
    for level in LEVELS:
        for seed in range(EPISODES):
            opening, replies = gold_replies(env_id, level, seed)
            assert scripts.setdefault(opening, replies) == replies, "two tasks, one opening"
    with GoldServer(scripts) as url:
        code = envgym_main(
            [
                "eval",
                env_id,
                "--agent",
                f"openai:{url}#gold-model",
                "--episodes",
                str(EPISODES),
                "--difficulty",
                *LEVELS,
                "--out-dir",
                str(tmp_path),
            ]
        )
    assert code == 0
    files = sorted(tmp_path.glob("*.json"))
    assert len(files) == len(LEVELS)
    for path in files:
        results = load_results(path)
        assert results["summary"]["success_rate"] == 1.0, path.name
        assert any("<tool_call>" in a for e in results["episodes"] for a in e["actions"])
        verdict = verify_submission(results)
        assert verdict.accepted, verdict


def test_the_wire_carries_the_env_tools_and_tool_messages():
    """What the agent sends: the env's tools in every request, and after a tool
    call the env's answer as a ``tool`` message for that call's id."""
    env_id = TOOL_WORLDS[0]
    opening, replies = gold_replies(env_id, "medium", 0)
    env = gym.make(env_id, difficulty="medium")
    _, info = env.reset(seed=0)
    server = GoldServer({opening: replies})
    with server as url:
        agent = make_agent(f"openai:{url}#gold-model", env)
        obs, done = opening, False
        agent.reset()
        while not done:
            obs, _, terminated, truncated, info = env.step(agent.act(obs, info))
            done = terminated or truncated
        agent.close()
    assert info["success"]
    names = {t["function"]["name"] for t in info["tools"]}
    for body in server.requests:
        assert {t["function"]["name"] for t in body["tools"]} == names
    tool_turns = [
        (body["messages"][-2], body["messages"][-1])
        for body in server.requests
        if body["messages"][-1]["role"] == "tool"
    ]
    assert tool_turns, "the gold dialogue makes tool calls"
    for call_message, answer in tool_turns:
        ids = [c["id"] for c in call_message["tool_calls"]]
        assert answer["tool_call_id"] == ids[-1] or answer["tool_call_id"] in ids
        assert "<tool_response>" in answer["content"]
    sent = json.dumps(server.requests)
    assert "gold_actions" not in sent and "privileged" not in sent
