"""OpenAIChatAgent against a real OpenAI-compatible server on 127.0.0.1.

The server is a small FastAPI app defined here that answers
``/v1/chat/completions`` with scripted replies: binary search for
GuessNumber (read from the conversation it is sent), the oracle's moves for
Sokoban, and for Search a ``search`` tool call then an answer. It fails one
request with HTTP 500, counts tokens its own way, and records every request,
so the tests check what went over the wire, the rewards the envs gave, the
retry and the token sums.
"""

from __future__ import annotations

import json
import re
from typing import Any

import gymnasium as gym
import pytest

import envgym  # noqa: F401 - registers the ids
from envgym.agents import AGENT_SPECS, is_batch_agent, make_agent, parse_agent_spec
from envgym.agents.openai_chat import ChatCompletionError, OpenAIChatAgent
from envgym.envs.guess_number import GuessNumberEnv
from envgym.envs.search.search import SEARCH_TOOL, SearchEnv
from envgym.envs.sokoban.sokoban import SokobanEnv
from envgym.serving import AppServer
from envgym.sockets import listening_socket

fastapi = pytest.importorskip("fastapi")
pytest.importorskip("httpx")

MODEL = "scripted-model"
SEARCH_KWARGS = {"num_docs": 2000}
SOKOBAN_KWARGS = {"max_actions_per_turn": 1}  # one move a turn: many turns


def _chars(messages: list[dict[str, Any]]) -> int:
    return sum(len(m.get("content") or "") for m in messages)


class ScriptedServer:
    """An OpenAI-compatible chat server with scripted replies.

    `scripts` maps a conversation's first user message to its replies, turn by
    turn: a string, or ``{"content": ..., "tool": name, "arguments": {...}}``
    for a tool call. A conversation not in `scripts` is a GuessNumber game,
    answered by binary search on the hints in the conversation. The first
    request for turn `fail_once[1]` of the conversation starting with
    `fail_once[0]` gets HTTP 500. Token counts: prompt = characters of the
    messages' content, completion = number of messages.
    """

    def __init__(
        self, scripts: dict[str, list[Any]], fail_once: tuple[str, int] | None = None
    ) -> None:
        self.scripts = scripts
        self.fail_once = fail_once
        self.requests: list[dict[str, Any]] = []
        self.failed: list[int] = []
        app = fastapi.FastAPI()
        app.post("/v1/chat/completions")(self.completions)
        self.server = AppServer(app, listening_socket())

    async def completions(self, request: fastapi.Request) -> Any:
        body = await request.json()
        index = len(self.requests)
        self.requests.append(body)
        messages = body["messages"]
        first_user = next(m["content"] for m in messages if m["role"] == "user")
        turn = sum(m["role"] == "assistant" for m in messages)
        if (first_user, turn) == self.fail_once:
            self.fail_once = None
            self.failed.append(index)
            return fastapi.responses.JSONResponse(
                {"error": {"message": "scripted failure"}}, status_code=500
            )
        if first_user in self.scripts:
            reply = self.scripts[first_user][turn]
        else:
            reply = _bisect(messages)
        if isinstance(reply, str):
            message = {"role": "assistant", "content": reply}
        else:
            call = {
                "id": f"call_{turn}",
                "type": "function",
                "function": {"name": reply["tool"], "arguments": json.dumps(reply["arguments"])},
            }
            message = {"role": "assistant", "content": reply.get("content"), "tool_calls": [call]}
        return {
            "id": f"chatcmpl-{index}",
            "object": "chat.completion",
            "model": body["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": _chars(messages), "completion_tokens": len(messages)},
        }

    def __enter__(self) -> str:
        self.server.start()
        return self.server.url + "/v1"

    def __exit__(self, *exc: object) -> None:
        self.server.close()


def _bisect(messages: list[dict[str, Any]]) -> str:
    """GuessNumber by binary search on the hints the conversation holds."""
    user = [m["content"] for m in messages if m["role"] == "user"]
    mine = [m["content"] for m in messages if m["role"] == "assistant"]
    low, high = 1, int(re.search(r"from 1 to (\d+)", user[0])[1])
    for guess_text, hint in zip(mine, user[1:], strict=True):
        guess = int(re.search(r"\d+", guess_text)[0])
        if hint.startswith("Higher"):
            low = guess + 1
        elif hint.startswith("Lower"):
            high = guess - 1
    return f"<answer>{(low + high) // 2}</answer>"


def _oracle_actions(env_id: str, seed: int, **kwargs: Any) -> tuple[str, list[str], list[float]]:
    """(first observation, the oracle's replies, the rewards they got) for one episode."""
    env = gym.make(env_id, **kwargs)
    obs, info = env.reset(seed=seed)
    first, oracle = obs, make_agent("oracle", env)
    oracle.reset()
    actions, rewards, done = [], [], False
    while not done:
        actions.append(oracle.act(obs, info))
        obs, reward, terminated, truncated, info = env.step(actions[-1])
        rewards.append(reward)
        done = terminated or truncated
    return first, actions, rewards


def _drive(agent: Any, plan: dict[int, list[tuple[gym.Env, int]]]) -> list[dict[str, Any]]:
    """Play every slot's episodes (env, seed) in turn, all slots through act_batch at
    once; one record per episode with its rewards, usage and conversation."""
    records, live = [], {}

    def start(slot: int) -> None:
        env, seed = plan[slot].pop(0)
        obs, info = env.reset(seed=seed)
        agent.reset_slot(slot)
        live[slot] = {"env": env, "seed": seed, "obs": obs, "info": info, "rewards": []}

    for slot in plan:
        start(slot)
    while live:
        slots = sorted(live)
        replies = agent.act_batch(
            slots, [live[s]["obs"] for s in slots], [live[s]["info"] for s in slots]
        )
        for slot, reply in zip(slots, replies, strict=True):
            assert isinstance(reply, str)
            state = live[slot]
            obs, reward, terminated, truncated, info = state["env"].step(reply)
            state.update(obs=obs, info=info)
            state["rewards"].append(reward)
            if terminated or truncated:
                records.append(
                    {
                        "slot": slot,
                        "env_id": state["env"].spec.id,
                        "seed": state["seed"],
                        "rewards": state["rewards"],
                        "success": bool(info.get("success")),
                        "usage": agent.usage(slot),
                        "history": agent.history(slot),
                    }
                )
                del live[slot]
                if plan[slot]:
                    start(slot)
    return records


@pytest.fixture(scope="module")
def search_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("search-cache")


def test_openai_agent_plays_three_envs_at_once_with_tools_and_a_retry(search_cache):
    search_kwargs = {**SEARCH_KWARGS, "cache_dir": str(search_cache)}
    scripts: dict[str, list[Any]] = {}
    oracle_rewards = {}
    for seed in (0, 1):
        first, actions, rewards = _oracle_actions("envgym/Sokoban-v0", seed, **SOKOBAN_KWARGS)
        scripts[first] = actions
        oracle_rewards[seed] = rewards
        board = first
    assert len(scripts) == 2  # two different boards, so the script tells them apart
    answers = {}
    for seed in (0, 1):
        env = gym.make("envgym/Search-v0", **search_kwargs)
        question, info = env.reset(seed=seed)
        answers[seed] = info["privileged"]["answers"][0]
        query = question.removeprefix("Question: ")
        final = f"<answer>{answers[seed]}</answer>" if seed == 0 else "<answer>nobody</answer>"
        scripts[question] = [
            {
                "content": "<think>I should look it up.</think>",
                "tool": "search",
                "arguments": {"query": query},
            },
            final,
        ]
    server = ScriptedServer(scripts, fail_once=(board, 1))  # seed 1's second turn
    with server as url:
        agent = make_agent(f"openai:{url}#{MODEL}", None, backoff_s=0.01)
        assert isinstance(agent, OpenAIChatAgent) and is_batch_agent(agent)
        guess = [gym.make("envgym/GuessNumber-v0") for _ in range(2)]
        plan = {
            0: [(guess[0], 0), (guess[0], 2)],  # two episodes in a slot: reset_slot between
            1: [(guess[1], 1), (guess[1], 3)],
            2: [(gym.make("envgym/Sokoban-v0", **SOKOBAN_KWARGS), 0)],
            3: [(gym.make("envgym/Sokoban-v0", **SOKOBAN_KWARGS), 1)],
            4: [(gym.make("envgym/Search-v0", **search_kwargs), 0)],
            5: [(gym.make("envgym/Search-v0", **search_kwargs), 1)],
        }
        records = _drive(agent, plan)
        agent.close()

    by_env: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        by_env.setdefault(record["env_id"], []).append(record)
    assert {k: len(v) for k, v in by_env.items()} == {
        "envgym/GuessNumber-v0": 4,
        "envgym/Sokoban-v0": 2,
        "envgym/Search-v0": 2,
    }
    # The rewards the envs gave: binary search wins every game, the oracle's moves
    # solve each board as they did locally, and the right answer scores 1.
    for record in by_env["envgym/GuessNumber-v0"]:
        assert record["success"] and record["rewards"][-1] == 1.0
        assert len(record["rewards"]) > 1  # multi-turn
    for record in by_env["envgym/Sokoban-v0"]:
        assert record["success"] and record["rewards"] == oracle_rewards[record["seed"]]
        assert len(record["rewards"]) > 1
    search = {r["seed"]: r for r in by_env["envgym/Search-v0"]}
    assert search[0]["rewards"] == [0.0, 1.0] and search[0]["success"]
    assert search[1]["rewards"] == [0.0, 0.0] and not search[1]["success"]

    # One request failed with 500 and was sent again, unchanged; every other request
    # was answered once.
    assert len(server.failed) == 1
    assert server.requests.count(server.requests[server.failed[0]]) == 2
    assert len(server.requests) == 1 + sum(len(r["rewards"]) for r in records)

    prompts = {SokobanEnv.system_prompt, SearchEnv.system_prompt, GuessNumberEnv.system_prompt}
    for body in server.requests:
        assert body["model"] == MODEL and body["temperature"] == 0.0
        system = body["messages"][0]
        assert system["role"] == "system" and system["content"] in prompts
        is_search = system["content"] == SearchEnv.system_prompt
        assert body.get("tools") == ([SEARCH_TOOL] if is_search else None)

    # Each turn's request was the conversation so far: it grows by the last reply and
    # the next observation; the Search tool call went as tool_calls and came back as a
    # tool message holding the retrieved documents.
    sent = [body["messages"] for body in server.requests]
    for record in records:
        history = record["history"]
        turns = [k for k, m in enumerate(history) if m["role"] == "assistant"]
        assert len(turns) == len(record["rewards"])
        for k in turns:
            assert history[:k] in sent
        assert record["usage"] == {
            "prompt_tokens": sum(_chars(history[:k]) for k in turns),
            "completion_tokens": sum(turns),
        }
    tool_turn = search[0]["history"]
    assert [m["role"] for m in tool_turn] == ["system", "user", "assistant", "tool", "assistant"]
    call = tool_turn[2]["tool_calls"][0]
    assert call["function"]["name"] == "search"
    assert json.loads(call["function"]["arguments"]) == {
        "query": tool_turn[1]["content"].removeprefix("Question: ")
    }
    assert tool_turn[3]["tool_call_id"] == call["id"]
    assert tool_turn[3]["content"].startswith("<information>Doc 1 (")
    assert tool_turn[4]["content"] == f"<answer>{answers[0]}</answer>"
    # Usage restarts with each episode: the second game in slot 0 counts only itself.
    slot0 = [r for r in records if r["slot"] == 0]
    assert len(slot0) == 2 and slot0[1]["usage"]["completion_tokens"] == sum(
        k for k, m in enumerate(slot0[1]["history"]) if m["role"] == "assistant"
    )


def test_a_tool_call_reply_is_the_text_the_env_reads(search_cache):
    scripts = {}
    env = gym.make("envgym/Search-v0", num_docs=2000, cache_dir=str(search_cache))
    question, info = env.reset(seed=5)
    scripts[question] = [{"content": None, "tool": "search", "arguments": {"query": "Eimshan"}}]
    with ScriptedServer(scripts) as url, OpenAIChatAgent(url, MODEL) as agent:
        agent.reset()
        reply = agent.act(question, info)
    assert reply == '<tool_call>{"name": "search", "arguments": {"query": "Eimshan"}}</tool_call>'
    obs, reward, *_, info = env.step(reply)
    assert info["action_valid"] and obs.startswith("<information>")


class FailingServer:
    """Answers every chat request with `status` and `body`; counts the requests."""

    def __init__(self, status: int, body: str) -> None:
        self.count = 0
        app = fastapi.FastAPI()

        @app.post("/v1/chat/completions")
        async def completions() -> Any:
            self.count += 1
            return fastapi.responses.PlainTextResponse(
                body, status_code=status, headers={"Retry-After": "0"}
            )

        self.server = AppServer(app, listening_socket())

    def __enter__(self) -> str:
        self.server.start()
        return self.server.url + "/v1"

    def __exit__(self, *exc: object) -> None:
        self.server.close()


def test_a_server_that_always_fails_gives_a_clear_error_after_the_retries():
    failing = FailingServer(503, "model overloaded, try later")
    with failing as url, OpenAIChatAgent(url, MODEL, max_retries=2, backoff_s=0.0) as agent:
        agent.reset()
        with pytest.raises(ChatCompletionError, match=r"failed 3 tries.*HTTP 503.*overloaded"):
            agent.act("Guess.", {"system_prompt": "Guess a number."})
        assert agent.history(0) == []  # the failed turn left no trace
    assert failing.count == 3


def test_a_client_error_is_not_retried():
    failing = FailingServer(404, "The model `nope` does not exist.")
    with failing as url, OpenAIChatAgent(url, "nope", max_retries=3, backoff_s=0.0) as agent:
        with pytest.raises(ChatCompletionError, match=r"HTTP 404.*does not exist.*model name"):
            agent.act_batch([0, 1], ["a", "b"], [{}, {}])
    assert failing.count == 2  # once per slot


def test_no_server_is_a_connection_error_after_the_retries():
    sock = listening_socket()
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    sock.close()  # nothing listens there now
    with OpenAIChatAgent(url, MODEL, max_retries=1, backoff_s=0.0) as agent:
        with pytest.raises(ChatCompletionError, match=r"failed 2 tries.*ConnectError") as caught:
            agent.act("hi", {})
    assert caught.value.status is None


@pytest.mark.parametrize(
    "spec, kind, target, model",
    [
        ("random", "random", None, None),
        (
            "openai:http://127.0.0.1:8000/v1#Qwen/Qwen3-8B",
            "openai",
            "http://127.0.0.1:8000/v1",
            "Qwen/Qwen3-8B",
        ),
        ("hf:/models/tiny", "hf", "/models/tiny", "/models/tiny"),
        ("vllm:/models/tiny", "vllm", "/models/tiny", "/models/tiny"),
    ],
)
def test_agent_specs_parse(spec, kind, target, model):
    parsed = parse_agent_spec(spec)
    assert (parsed.kind, parsed.target, parsed.model) == (kind, target, model)


@pytest.mark.parametrize(
    "spec",
    [
        "gpt4",
        "openai:http://127.0.0.1:8000/v1",
        "openai:127.0.0.1:8000#m",
        "openai:http://x#",
        "hf:",
        "vllm:  ",
    ],
)
def test_a_malformed_agent_spec_says_which_forms_work(spec):
    with pytest.raises(ValueError, match=r"openai:(URL#MODEL|http)|hf:PATH|vllm:PATH"):
        make_agent(spec, gym.make("envgym/GuessNumber-v0"))
    assert "openai:URL#MODEL" in AGENT_SPECS


def test_envgym_eval_with_an_openai_agent_records_tokens_and_verifies():
    """The CLI's batched eval and the one-env evaluate() both record each episode's
    token counts, and the file they write passes the leaderboard's verification."""
    from envgym.evaluation import evaluate, verify_submission
    from envgym.evaluation.batch import evaluate_many

    with ScriptedServer({}) as url:
        spec = f"openai:{url}#scripted-model"
        one = evaluate("envgym/GuessNumber-v0", spec, episodes=3, seed=5)
        many = evaluate_many([("envgym/GuessNumber-v0", {})], spec, episodes=3, seed=5)[0]
    for results in (one, many):
        assert results["agent"] == {"name": "openai", "model": "scripted-model"}
        assert results["summary"]["success_rate"] == 1.0
        for episode in results["episodes"]:
            usage = episode["usage"]
            # The server counts one completion token per message it was sent.
            assert usage["completion_tokens"] >= 2 * episode["turns"]
            assert usage["prompt_tokens"] > 0
        assert verify_submission(results).accepted
    assert [e["actions"] for e in one["episodes"]] == [e["actions"] for e in many["episodes"]]
    assert [e["usage"] for e in one["episodes"]] == [e["usage"] for e in many["episodes"]]
