"""envgym envs through OpenEnv's own client and tooling (the openenv package).

``envgym serve ID`` already speaks OpenEnv's WebSocket protocol, so OpenEnv's
``GenericEnvClient`` plays it with dicts. This module adds the typed client an
OpenEnv user writes for an env, and the ``openenv.yaml`` its tooling reads::

    from envgym.integrations.openenv import EnvgymAction, EnvgymEnvClient

    # envgym serve envgym/Sokoban-v0 --port 8100
    with EnvgymEnvClient(base_url="http://127.0.0.1:8100").sync() as client:
        result = client.reset(seed=7)
        while not result.done:
            result = client.step(EnvgymAction(action="<answer>Up</answer>"))
        print(result.reward, result.observation.terminated, result.observation.info["success"])

- `EnvgymAction` (an OpenEnv ``Action``): ``action`` is the model's whole reply.
- `EnvgymObservation` (an OpenEnv ``Observation``): ``text`` (what the model
  reads), ``info`` (the env's info dict as JSON, without ``privileged`` unless
  the server was started with ``--send-privileged``), ``terminated`` and
  ``truncated`` kept apart (OpenEnv's ``done`` is either), ``reward`` (this
  step's), ``episode_id`` and ``turn``.
- `EnvgymState` (an OpenEnv ``State``): ``episode_id``, ``step_count``, the
  env id, whether an episode is running, how it ended and its return.
- `EnvgymEnvClient` (an OpenEnv ``EnvClient``): async by default, ``.sync()``
  for blocking calls, ``from_docker_image`` / ``from_env`` as OpenEnv provides.
  ``reset`` takes ``seed`` (the same task as ``gym.make(id).reset(seed=s)``)
  and ``options``.
- `openenv_manifest` / `write_openenv_manifest`: the ``openenv.yaml`` of an
  env directory (``openenv validate``, ``openenv build``, ``openenv push``
  read it); its ``app`` is this module's ``app``, ``envgym serve``'s server for
  the id in ``$ENVGYM_ENV_ID`` (the manifest's ``variables``).

Needs the openenv extra: ``pip install 'envgym[openenv]'``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
from pydantic import Field

import envgym  # noqa: F401 - registers the envgym ids with Gymnasium
from envgym.extras import missing_extra

try:
    from openenv.core.client_types import StepResult
    from openenv.core.env_client import EnvClient
    from openenv.core.env_server.types import Action, Observation, State
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise missing_extra("openenv", extra="openenv", purpose="envgym.integrations.openenv") from exc

__all__ = [
    "EnvgymAction",
    "EnvgymEnvClient",
    "EnvgymObservation",
    "EnvgymState",
    "openenv_manifest",
    "write_openenv_manifest",
]


class EnvgymAction(Action):
    """One turn: the model's whole reply, as ``env.step(reply)`` takes it."""

    action: str = Field(description="the model's reply (answer tags, tool calls, text)")


class EnvgymObservation(Observation):
    """What ``reset`` and ``step`` return: OpenEnv's ``done``/``reward``/``metadata``
    plus the env's text and info, and termination apart from truncation."""

    text: str = Field(description="what the model reads")
    info: dict[str, Any] = Field(default_factory=dict, description="the env's info dict")
    terminated: bool = False
    truncated: bool = False
    episode_id: str | None = None
    turn: int = 0


class EnvgymState(State):
    """The server's view of the session (``state()``)."""

    env_id: str = ""
    running: bool = False
    terminated: bool = False
    truncated: bool = False
    episode_return: float = 0.0


class EnvgymEnvClient(EnvClient[EnvgymAction, EnvgymObservation, EnvgymState]):
    """OpenEnv's client for an ``envgym serve`` server, with envgym's typed
    actions, observations and state; one client is one env session."""

    def _step_payload(self, action: EnvgymAction | str) -> dict[str, Any]:
        if isinstance(action, str):
            action = EnvgymAction(action=action)
        payload: dict[str, Any] = {"action": action.action}
        if action.metadata:
            payload["metadata"] = dict(action.metadata)
        return payload

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[EnvgymObservation]:
        observation = payload.get("observation") or {}
        meta = payload.get("metadata") or {}
        reward = payload.get("reward")
        done = bool(payload.get("done", False))
        parsed = EnvgymObservation(
            text=str(observation.get("text", "")),
            info=dict(observation.get("info") or {}),
            done=done,
            reward=reward,
            terminated=bool(meta.get("terminated", False)),
            truncated=bool(meta.get("truncated", False)),
            episode_id=meta.get("episode_id"),
            turn=int(meta.get("turn", 0)),
            metadata=dict(meta),
        )
        return StepResult(observation=parsed, reward=reward, done=done)

    def _parse_state(self, payload: dict[str, Any]) -> EnvgymState:
        return EnvgymState(**payload)


def openenv_manifest(
    env_id: str, *, port: int = 8000, name: str | None = None, description: str | None = None
) -> dict[str, Any]:
    """The ``openenv.yaml`` of an env directory serving `env_id` (OpenEnv's spec
    version 1: a FastAPI app on `port`, ``envgym serve``'s). `name` defaults to
    the id's name in lower case (``envgym/Sokoban-v0`` -> ``envgym-sokoban-v0``)."""
    spec = gym.spec(env_id)  # an unknown id fails here
    default_name = spec.id.replace("/", "-").lower()
    summary = description or (
        f"{spec.id} (envgym) over OpenEnv's WebSocket protocol: `envgym serve {spec.id}`"
    )
    return {
        "spec_version": 1,
        "name": name or default_name,
        "type": "space",
        "runtime": "fastapi",
        "app": "envgym.integrations.openenv:app",
        "port": int(port),
        "description": summary,
        "variables": {"ENVGYM_ENV_ID": spec.id},
    }


def __getattr__(name: str) -> Any:
    """``app``: the ASGI app of ``envgym serve $ENVGYM_ENV_ID`` (arguments as JSON in
    ``$ENVGYM_ENV_KWARGS``), what an ``openenv.yaml``'s ``app`` names for OpenEnv's
    tooling (uvicorn, ``openenv serve``); built when first read."""
    if name != "app":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import json
    import os

    from envgym.remote.config import ServerConfig
    from envgym.remote.server import EnvServer

    env_id = os.environ.get("ENVGYM_ENV_ID")
    if not env_id:
        raise RuntimeError("set ENVGYM_ENV_ID to the envgym id to serve (openenv.yaml's variables)")
    kwargs = json.loads(os.environ.get("ENVGYM_ENV_KWARGS") or "{}")
    app = EnvServer(ServerConfig(env_id=env_id, env_kwargs=kwargs)).app
    globals()["app"] = app
    return app


def write_openenv_manifest(directory: str | Path, env_id: str, **kwargs: Any) -> Path:
    """Write `openenv_manifest(env_id, **kwargs)` as ``DIRECTORY/openenv.yaml``; its path."""
    import yaml  # openenv-core's dependency

    path = Path(directory) / "openenv.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(openenv_manifest(env_id, **kwargs), sort_keys=False))
    return path
