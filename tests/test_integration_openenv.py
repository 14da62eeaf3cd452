"""OpenEnv's own client on a real ``envgym serve`` (envgym.integrations.openenv).

The contract (rewards, turns and task equal to ``gym.make(id)``'s, nothing
privileged in the observations, truncation kept apart from termination) is
checked for every adapter in tests/test_integration_contract.py, where
`EnvgymEnvClient`, an OpenEnv ``EnvClient`` with envgym's typed action,
observation and state, plays a puzzle, a tool world and a game on
``envgym serve``'s server in a thread. Here: the ``envgym serve`` command itself
in a subprocess, played by the async client, passes OpenEnv's runtime
validator (except the MCP endpoint, which `envgym mcp serve` serves apart) and
its `/metadata` reads as OpenEnv's ``EnvironmentMetadata``, and OpenEnv's
manifest reader accepts what this module writes.
"""

from __future__ import annotations

import asyncio

import gymnasium as gym
import pytest

import envgym  # noqa: F401 - registers the ids

pytest.importorskip("openenv")
pytest.importorskip("uvicorn")

from envgym.integrations.openenv import (  # noqa: E402
    EnvgymAction,
    EnvgymEnvClient,
    EnvgymObservation,
    openenv_manifest,
    write_openenv_manifest,
)
from envgym.remote import serve_in_subprocess  # noqa: E402


def test_the_async_client_plays_envgym_serve_and_openenvs_validator_accepts_it():
    import httpx
    from openenv.cli._validation import validate_running_environment
    from openenv.core.env_server.types import EnvironmentMetadata

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
        reply = httpx.get(f"{server.address.base_url}/metadata").json()
    assert not first.done and not middle.done and last.done  # the turn limit, 2
    assert last.turn == 2 and last.info["action_valid"] is False
    failed = set(report["summary"]["failed_criteria"])
    # The WebSocket session, /health, /schema, /metadata and the OpenAPI document
    # pass; envgym's server has no MCP endpoint (`envgym mcp serve` is its own server).
    assert failed <= {"mcp_endpoint"}, report
    metadata = EnvironmentMetadata.model_validate(reply)
    assert metadata.name == env_id and "box" in metadata.description
    assert "## Rewards" in metadata.readme_content  # the env's manual


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
