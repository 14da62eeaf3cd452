"""OpenEnv's own server (openenv-core) serving an envgym env, for `benchmarks/remote.py`.

    python benchmarks/openenv_server.py sync  --port 0 [--env envgym/Sokoban-v0]
    python benchmarks/openenv_server.py async --uds /tmp/x.sock

`EnvgymEnvironment` wraps ``gym.make(id)`` in OpenEnv's ``Environment``
interface with envgym's typed action and observation
(`envgym.integrations.openenv`), so a client sends the same frames to this
server as to ``envgym serve``. ``sync``: OpenEnv's default mode (its server
runs ``step`` on the session's executor thread); ``async``: the env defines
``step_async``/``reset_async``, which OpenEnv's server awaits on its event loop
(the step runs inline, OpenEnv's fastest mode). Observation info leaves out
``info["privileged"]``, as ``envgym serve`` does. Served by uvicorn with the
same WebSocket settings as ``envgym serve`` (websockets-sansio, no deflate)
through `envgym.serving`, and prints ``envgym serve``'s ready line so that
`envgym.remote.launcher.ServerProcess` starts it. A benchmark tool: needs
openenv-core (the dev extra).
"""

from __future__ import annotations

import argparse
from typing import Any

import gymnasium as gym
from openenv.core.env_server.http_server import create_fastapi_app
from openenv.core.env_server.interfaces import Environment

import envgym  # noqa: F401  (registers the ids)
from envgym.integrations.openenv import EnvgymAction, EnvgymObservation, EnvgymState
from envgym.remote.address import ServerAddress
from envgym.remote.launcher import ready_line
from envgym.remote.protocol import public_info
from envgym.serving import app_server


class EnvgymEnvironment(Environment):
    """An envgym env as an OpenEnv ``Environment``; its calls run where OpenEnv puts them."""

    SUPPORTS_CONCURRENT_SESSIONS = True
    env_id = "envgym/Sokoban-v0"

    def __init__(self) -> None:
        super().__init__()
        self._env = gym.make(self.env_id, disable_env_checker=True)
        self._state = EnvgymState(env_id=self.env_id)

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, **_: Any
    ) -> EnvgymObservation:
        text, info = self._env.reset(seed=seed)
        self._state = EnvgymState(episode_id=episode_id, env_id=self.env_id, running=True)
        return EnvgymObservation(text=text, info=public_info(info), done=False, reward=0.0)

    def step(self, action: EnvgymAction, **_: Any) -> EnvgymObservation:  # type: ignore[override]
        text, reward, terminated, truncated, info = self._env.step(action.action)
        state = self._state
        state.step_count += 1
        state.episode_return += float(reward)
        state.running = not (terminated or truncated)
        return EnvgymObservation(
            text=text,
            info=public_info(info),
            done=bool(terminated or truncated),
            reward=float(reward),
            terminated=bool(terminated),
            truncated=bool(truncated),
            turn=state.step_count,
        )

    @property
    def state(self) -> EnvgymState:
        return self._state

    def close(self) -> None:
        self._env.close()


class AsyncEnvgymEnvironment(EnvgymEnvironment):
    """The same env with async calls: OpenEnv's server awaits them on its event loop."""

    async def reset_async(
        self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
    ) -> EnvgymObservation:
        return self.reset(seed=seed, episode_id=episode_id, **kwargs)

    async def step_async(self, action: EnvgymAction, **kwargs: Any) -> EnvgymObservation:  # type: ignore[override]
        return self.step(action, **kwargs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=("sync", "async"))
    parser.add_argument("--env", default=EnvgymEnvironment.env_id)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--uds")
    parser.add_argument("--max-sessions", type=int, default=256)
    args = parser.parse_args()
    env_cls = AsyncEnvgymEnvironment if args.mode == "async" else EnvgymEnvironment
    env_cls.env_id = args.env
    app = create_fastapi_app(
        env_cls, EnvgymAction, EnvgymObservation, max_concurrent_envs=args.max_sessions
    )
    name = f"openenv-{args.mode}"
    served = app_server(
        app,
        port=None if args.uds else args.port,
        uds=args.uds,
        on_ready=lambda url: print(ready_line(name, ServerAddress.parse(url)), flush=True),
        ws="websockets-sansio",
        ws_per_message_deflate=False,
        ws_ping_interval=20.0,
        ws_ping_timeout=20.0,
        lifespan="on",
    )
    served.run()


if __name__ == "__main__":
    main()
