"""`envgym mcp serve`: the official MCP SDK's own client drives a served env over
stdio and streamable HTTP (TCP and a Unix socket), and gets what playing the env
directly gives, without its privileged data."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import gymnasium as gym
import pytest

import envgym  # noqa: F401  (registers the ids)
from envgym.sandbox.bwrap import bwrap_binary

pytest.importorskip("mcp")

from mcp.client.session import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402

SERVE = [sys.executable, "-m", "envgym", "mcp", "serve"]


@asynccontextmanager
async def over_stdio(env_id: str, *flags: str, env: dict[str, str] | None = None) -> AsyncIterator:
    params = StdioServerParameters(command=SERVE[0], args=[*SERVE[1:], env_id, *flags], env=env)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


@asynccontextmanager
async def over_http(url: str, uds: str | None = None) -> AsyncIterator:
    import httpx2

    transport = None if uds is None else httpx2.AsyncHTTPTransport(uds=uds)
    async with (
        httpx2.AsyncClient(transport=transport, timeout=30) as http,
        streamable_http_client(url, http_client=http) as (read, write, *_),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


@pytest.fixture(scope="module")
def http_server() -> Iterator[str]:
    """`envgym mcp serve envgym/GuessNumber-v0 --transport http --port 0`; its URL."""
    proc = subprocess.Popen(
        [*SERVE, "envgym/GuessNumber-v0", "--transport", "http", "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline()
        match = re.search(r"at (http://\S+/mcp)", line)
        assert match, f"no ready line: {line!r}"
        yield match.group(1)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def text_of(result: Any) -> str:
    return "".join(c.text for c in result.content)


def oracle_replies(seed: int) -> tuple[list[str], list[float], list[str]]:
    """GuessNumber-v0 played directly: a first guess, then the secret; the replies,
    rewards and observations."""
    env = gym.make("envgym/GuessNumber-v0")
    _, info = env.reset(seed=seed)
    secret = info["privileged"]["secret"]
    replies = [f"<answer>{g}</answer>" for g in dict.fromkeys([50, secret])]
    rewards, observations = [], []
    for reply in replies:
        obs, reward, *_ = env.step(reply)
        rewards.append(float(reward))
        observations.append(obs)
    return replies, rewards, observations


async def play(session: ClientSession, seed: int, replies: list[str]) -> tuple[list, list, Any]:
    await session.call_tool("reset", {"seed": seed})
    rewards, observations, last = [], [], None
    for reply in replies:
        last = await session.call_tool("act", {"reply": reply})
        assert not last.is_error, text_of(last)
        rewards.append(last.structured_content["reward"])
        observations.append(text_of(last))
    return rewards, observations, last


def test_stdio_lists_the_env_tools_with_their_schemas() -> None:
    async def main() -> None:
        env = gym.make("envgym/Search-v0")
        _, info = env.reset(seed=0)
        [search] = [t["function"] for t in info["tools"]]
        async with over_stdio("envgym/Search-v0") as session:
            tools = {t.name: t for t in (await session.list_tools()).tools}
        assert set(tools) == {"reset", "search", "act"}
        assert tools["search"].description == search["description"]
        assert tools["search"].input_schema == search["parameters"]
        async with over_stdio("envgym/Code-v0") as session:
            names = {t.name for t in (await session.list_tools()).tools}
        assert names == {"reset", "run_python", "act"}

    anyio.run(main)


def test_stdio_oracle_episode_matches_the_env_played_directly() -> None:
    replies, rewards, observations = oracle_replies(seed=1)

    async def main() -> None:
        async with over_stdio("envgym/GuessNumber-v0") as session:
            got_rewards, got_observations, last = await play(session, 1, replies)
            assert got_rewards == rewards
            assert got_observations == observations
            assert last.structured_content["terminated"] is True
            assert last.structured_content["info"]["success"] is True
            resource = await session.read_resource("envgym://observation")
            assert resource.contents[0].text == observations[-1]
            prompt = await session.read_resource("envgym://system-prompt")
            assert "<answer>" in prompt.contents[0].text

    anyio.run(main)
    assert rewards[-1] > 0


def test_search_tool_call_steps_the_env_as_its_tool_call_text() -> None:
    env = gym.make("envgym/Search-v0")
    env.reset(seed=2)
    call = {"name": "search", "arguments": {"query": "capital"}}
    direct = env.step(f"<tool_call>{json.dumps(call)}</tool_call>")[0]

    async def main() -> None:
        async with over_stdio("envgym/Search-v0") as session:
            await session.call_tool("reset", {"seed": 2})
            result = await session.call_tool("search", {"query": "capital"})
            assert text_of(result) == direct
            assert result.structured_content["info"]["cost"]["retrievals"] == 1

    anyio.run(main)


def test_bad_input_gets_a_clear_error_and_the_session_goes_on() -> None:
    async def main() -> None:
        async with over_stdio("envgym/Search-v0") as session:
            before = await session.call_tool("search", {"query": "x"})
            assert before.is_error and "call the reset tool" in text_of(before)
            await session.call_tool("reset", {"seed": 0})
            unknown = await session.call_tool("browse", {"url": "x"})
            assert unknown.is_error and "unknown tool 'browse'" in text_of(unknown)
            assert "reset, search, act" in text_of(unknown)
            bad = await session.call_tool("search", {"query": 3})
            assert bad.is_error and "bad arguments for search: query" in text_of(bad)
            bad_seed = await session.call_tool("reset", {"seed": "seven"})
            assert bad_seed.is_error and "bad arguments for reset: seed" in text_of(bad_seed)
            bad_task = await session.call_tool("reset", {"seed": 0, "task_id": "nope"})
            assert bad_task.is_error and "reset refused" in text_of(bad_task)
            with pytest.raises(MCPError, match="unknown resource"):
                await session.read_resource("envgym://nope")
            # The episode was left where it was: a search still works.
            ok = await session.call_tool("search", {"query": "capital"})
            assert not ok.is_error and "<information>" in text_of(ok)

    anyio.run(main)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["envgym/Nope-v0"], "Nope-v0"),
        (["envgym/GuessNumber-v0", "--kwarg", "high=-4"], "high"),
        (["envgym/GuessNumber-v0", "--port", "9"], "--transport http"),
    ],
)
def test_bad_command_line_exits_with_one_line(args: list[str], message: str) -> None:
    done = subprocess.run([*SERVE, *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert message in done.stderr and "Traceback" not in done.stderr


def test_http_oracle_episode_and_two_independent_sessions(http_server: str) -> None:
    replies, rewards, observations = oracle_replies(seed=1)

    async def main() -> None:
        async with over_http(http_server) as one, over_http(http_server) as two:
            first = await one.call_tool("reset", {"seed": 1})
            await two.call_tool("reset", {"seed": 1})
            await two.call_tool("act", {"reply": "<answer>50</answer>"})
            # `one` has not moved: its observation is still the first one.
            now = await one.read_resource("envgym://observation")
            assert now.contents[0].text == text_of(first)
            got_rewards, got_observations, _ = await play(one, 1, replies)
            assert (got_rewards, got_observations) == (rewards, observations)
            other = await two.read_resource("envgym://observation")
            assert other.contents[0].text == observations[0]

    anyio.run(main)


def test_http_on_a_unix_socket(tmp_path: Path) -> None:
    uds = str(tmp_path / "mcp.sock")
    proc = subprocess.Popen(
        [*SERVE, "GuessNumber-v0", "--transport", "http", "--uds", uds],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert "unix:" in proc.stdout.readline()
        assert oct(Path(uds).stat().st_mode & 0o777) == oct(0o600)
        replies, rewards, _ = oracle_replies(seed=4)

        async def main() -> None:
            async with over_http("http://localhost/mcp", uds=uds) as session:
                got, _, _ = await play(session, 4, replies)
                assert got == rewards

        anyio.run(main)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.mark.skipif(bwrap_binary() is None, reason="Code-v0 runs code in bubblewrap here")
def test_privileged_data_is_never_sent() -> None:
    """Play a Code-v0 episode through MCP (tools, resources, a run, a wrong
    submission) and look for its hidden tests and solution in all it received."""
    env = gym.make("envgym/Code-v0")
    _, info = env.reset(seed=1)
    env.close()
    privileged = info["privileged"]
    public = set(privileged["public_tests"])
    hidden = [t for t in privileged["tests"] if t not in public]
    secrets = [*hidden, privileged["solution"].strip()]
    assert hidden and secrets

    async def main() -> list[str]:
        seen = []
        async with over_stdio("envgym/Code-v0", env={"ENVGYM_SANDBOX": "bwrap"}) as session:
            seen.append((await session.list_tools()).model_dump_json())
            seen.append((await session.list_resources()).model_dump_json())
            seen.append((await session.call_tool("reset", {"seed": 1})).model_dump_json())
            run = await session.call_tool("run_python", {"code": "print(6 * 7)"})
            assert "42" in text_of(run)
            seen.append(run.model_dump_json())
            for uri in ("envgym://observation", "envgym://system-prompt"):
                seen.append((await session.read_resource(uri)).model_dump_json())
            wrong = "<answer>def keys_at_least(scores, threshold):\n    return []</answer>"
            done = await session.call_tool("act", {"reply": wrong})
            assert done.structured_content["terminated"] is True
            seen.append(done.model_dump_json())
            seen.append((await session.read_resource("envgym://observation")).model_dump_json())
        return seen

    received = "\n".join(anyio.run(main))
    # model_dump_json escapes quotes; compare against both spellings.
    for secret in secrets:
        assert secret not in received
        assert json.dumps(secret)[1:-1] not in received
    assert "privileged" not in received


@pytest.mark.parametrize(
    ("env_id", "reply"),
    [("envgym/Sokoban-v0", "<answer>Up</answer>"), ("envgym/TicTacToe-v0", "<answer>5</answer>")],
)
def test_envs_without_tools_are_played_with_act(env_id: str, reply: str) -> None:
    env = gym.make(env_id)
    first, _ = env.reset(seed=3)
    obs, reward, *_ = env.step(reply)

    async def main() -> None:
        async with over_stdio(env_id) as session:
            assert {t.name for t in (await session.list_tools()).tools} == {"reset", "act"}
            assert text_of(await session.call_tool("reset", {"seed": 3})) == first
            result = await session.call_tool("act", {"reply": reply})
            assert (text_of(result), result.structured_content["reward"]) == (obs, reward)

    anyio.run(main)


@pytest.mark.parametrize("env_id", ["envgym/Retail-v0", "envgym/Airline-v0"])
def test_a_tool_world_oracle_episode_through_mcp(env_id: str) -> None:
    """A tool world's own tools are MCP tools; the gold dialogue played through
    them (messages to the simulated user through `act`) gets what playing the
    env directly gets, and the user's hidden task is never sent."""
    from envgym.agents import make_agent
    from envgym.parsing import parse_tool_calls

    env = gym.make(env_id, difficulty="hard")
    obs, info = env.reset(seed=5)
    oracle, replies, rewards, observations, done = make_agent("oracle", env), [], [], [], False
    while not done:
        replies.append(oracle.act(obs, info))
        obs, reward, terminated, truncated, info = env.step(replies[-1])
        rewards.append(float(reward))
        observations.append(obs)
        done = terminated or truncated
    assert info["success"]
    tool_names = {t["function"]["name"] for t in info["tools"]}

    async def main() -> list[str]:
        seen = []
        async with over_stdio(env_id, "--difficulty", "hard") as session:
            listed = (await session.list_tools()).tools
            assert {t.name for t in listed} == tool_names | {"reset", "act"}
            seen.append((await session.call_tool("reset", {"seed": 5})).model_dump_json())
            got_rewards, got_observations = [], []
            for reply in replies:
                calls, _ = parse_tool_calls(reply)
                if "<tool_call>" in reply and len(calls) == 1:
                    result = await session.call_tool(calls[0].name, calls[0].arguments)
                else:
                    result = await session.call_tool("act", {"reply": reply})
                assert not result.is_error, text_of(result)
                got_rewards.append(result.structured_content["reward"])
                got_observations.append(text_of(result))
                seen.append(result.model_dump_json())
            assert got_rewards == rewards
            assert got_observations == observations
            assert result.structured_content["info"]["success"] is True
        return seen

    received = "\n".join(anyio.run(main))
    assert "privileged" not in received and "gold_actions" not in received
