"""OpenEnv's own client on a real ``envgym serve`` (envgym.integrations.openenv).

`EnvgymEnvClient`, an OpenEnv ``EnvClient`` with envgym's typed action,
observation and state, plays a puzzle, a tool world and a game on a server
served by ``envgym serve``'s server on 127.0.0.1; every episode's rewards, turns,
task and success equal those of ``gym.make(id)`` stepped with the same replies
(``envgym serve``'s server, in a thread, and the command itself in a subprocess).
The observation keeps termination apart from truncation and carries no
privileged data; OpenEnv's runtime validator and its manifest reader accept
what this module provides (except the two endpoints envgym's server lacks).
"""

from __future__ import annotations

import asyncio
from typing import Any

import gymnasium as gym
import pytest

import envgym  # noqa: F401 - registers the ids
from envgym.agents import make_agent

pytest.importorskip("openenv")
pytest.importorskip("uvicorn")

from envgym.integrations.openenv import (  # noqa: E402
    EnvgymAction,
    EnvgymEnvClient,
    EnvgymObservation,
    EnvgymState,
    openenv_manifest,
    write_openenv_manifest,
)
from envgym.remote import serve_in_background, serve_in_subprocess  # noqa: E402

CASES = [
    ("envgym/Sokoban-v0", {"max_actions_per_turn": 1}, [3, 4]),
    ("envgym/Retail-v0", {"difficulty": "easy"}, [1]),
    ("envgym/TicTacToe-v0", {}, [0, 2]),
]


def local_episode(env_id: str, kwargs: dict[str, Any], seed: int) -> dict[str, Any]:
    """The replies of one episode (the oracle's, else the first legal move) and what
    ``gym.make`` gave them."""
    env = gym.make(env_id, **kwargs)
    obs, info = env.reset(seed=seed)
    first, task_id = obs, info["task_id"]
    try:
        agent = make_agent("oracle", env)
        agent.reset()
    except ValueError:
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
        "task_id": task_id,
        "replies": replies,
        "rewards": rewards,
        "success": bool(info.get("success")),
        "terminated": terminated,
        "truncated": truncated,
    }


@pytest.mark.parametrize(("env_id", "kwargs", "seeds"), CASES, ids=[c[0] for c in CASES])
def test_openenv_typed_client_matches_envgym_episode_for_episode(env_id, kwargs, seeds):
    # envgym serve's server in a thread here (the next test starts the command itself).
    with serve_in_background(env_id, kwargs) as address:
        with EnvgymEnvClient(base_url=address.base_url).sync() as client:
            for seed in seeds:
                want = local_episode(env_id, kwargs, seed)
                result = client.reset(seed=seed)
                obs = result.observation
                assert isinstance(obs, EnvgymObservation)
                assert obs.text == want["first"] and obs.info["task_id"] == want["task_id"]
                assert "privileged" not in obs.info
                assert result.done is False and obs.turn == 0
                rewards = []
                for reply in want["replies"]:
                    assert not result.done
                    result = client.step(EnvgymAction(action=reply))
                    rewards.append(result.reward)
                    assert "privileged" not in result.observation.info
                obs = result.observation
                assert result.done is True
                assert rewards == pytest.approx(want["rewards"])
                assert obs.turn == len(want["replies"])
                assert obs.info["success"] is want["success"]
                assert (obs.terminated, obs.truncated) == (want["terminated"], want["truncated"])
                state = client.state()
                assert isinstance(state, EnvgymState)
                assert state.env_id == env_id and state.step_count == len(want["replies"])
                assert state.episode_return == pytest.approx(sum(want["rewards"]))


def test_the_turn_limit_is_truncation_and_openenvs_validator_accepts_the_server():
    from openenv.cli._validation import validate_running_environment

    env_id, kwargs = "envgym/Sokoban-v0", {"max_turns": 2}

    async def play() -> list[EnvgymObservation]:
        async with EnvgymEnvClient(base_url=server.address.base_url) as client:
            seen = [(await client.reset(seed=5)).observation]
            for _ in range(2):
                seen.append((await client.step(EnvgymAction(action="not a move"))).observation)
            return seen

    with serve_in_subprocess(env_id, kwargs, port=0) as server:
        first, middle, last = asyncio.run(play())
        report = validate_running_environment(server.address.base_url)
    assert not first.done and not middle.done
    assert last.done and last.truncated and not last.terminated
    assert last.info["action_valid"] is False
    failed = set(report["summary"]["failed_criteria"])
    # The WebSocket session, /health, /schema and the OpenAPI document pass; envgym's
    # server has no /metadata or MCP endpoint (yet).
    assert failed <= {"metadata_endpoint", "mcp_endpoint"}, report


def test_openenv_manifest(tmp_path):
    import yaml

    path = write_openenv_manifest(tmp_path / "sokoban", "envgym/Sokoban-v0", port=8100)
    manifest = yaml.safe_load(path.read_text())
    assert manifest == openenv_manifest("envgym/Sokoban-v0", port=8100)
    assert manifest["name"] == "envgym-sokoban-v0" and manifest["port"] == 8100
    assert manifest["variables"] == {"ENVGYM_ENV_ID": "envgym/Sokoban-v0"}
    with pytest.raises(gym.error.Error):
        openenv_manifest("envgym/NoSuchEnv-v0")


def test_the_manifests_app_is_envgym_serves_server(monkeypatch):
    import envgym.integrations.openenv as module

    monkeypatch.setenv("ENVGYM_ENV_ID", "envgym/FrozenLake-v0")
    monkeypatch.setenv("ENVGYM_ENV_KWARGS", '{"difficulty": "easy"}')
    monkeypatch.delitem(module.__dict__, "app", raising=False)
    try:
        app = module.app  # built on first read, as uvicorn reads it
        paths = {route.path for route in app.routes if hasattr(route, "path")}
        assert {"/ws", "/schema", "/health"} <= paths
    finally:
        module.__dict__.pop("app", None)
    monkeypatch.delenv("ENVGYM_ENV_ID")
    with pytest.raises(RuntimeError, match="ENVGYM_ENV_ID"):
        module.app  # noqa: B018
