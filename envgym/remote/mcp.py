"""Any envgym env's tools as an MCP server (the official ``mcp`` SDK).

Each MCP session (one stdio connection, one streamable-HTTP session) gets its
own env instance. The tools it lists:

- ``reset(seed, task_id?)``: start an episode; returns the first observation.
- the env's own tools (``info["tools"]``: Search-v0's ``search``, Code-v0's
  ``run_python``, ...) with their names, descriptions and JSON-schema inputs.
  A call becomes the env's own reply text,
  ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``, and is stepped.
- ``act(reply)``: any whole reply (a move, a final answer), so envs without
  tools (Sokoban, the games) are served too.

A step's result is the observation text, with ``reward``, ``terminated``,
``truncated`` and the info (without ``info["privileged"]``, which is never
sent) as structured content. The current observation and the system prompt
are the resources ``envgym://observation`` and ``envgym://system-prompt``.

Bad input (an unknown tool, arguments that do not match the schema, a step
before ``reset``) is answered with a tool error that says what to do; the
session goes on.
"""

from __future__ import annotations

import json
import threading
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from envgym.extras import require, require_all
from envgym.remote.config import ServerStartError
from envgym.remote.protocol import public_info, to_jsonable
from envgym.remote.sessions import make_env

__all__ = ["OBSERVATION_URI", "SYSTEM_PROMPT_URI", "EnvMcpServer"]

OBSERVATION_URI = "envgym://observation"
SYSTEM_PROMPT_URI = "envgym://system-prompt"

#: The tools every served env has, besides its own.
RESET_TOOL = {
    "name": "reset",
    "description": "Start a new episode of this env. The same seed gives the same task. "
    "Returns the first observation.",
    "parameters": {
        "type": "object",
        "properties": {
            "seed": {"type": "integer", "minimum": 0, "description": "the episode's seed"},
            "task_id": {
                "type": "string",
                "description": "replay a task by the id in a previous info['task_id']",
            },
        },
        "required": ["seed"],
        "additionalProperties": False,
    },
}
ACT_TOOL = {
    "name": "act",
    "description": "Send one whole reply to the env, in the format its system prompt names "
    "(a move, a final answer, tool tags). Returns the next observation.",
    "parameters": {
        "type": "object",
        "properties": {"reply": {"type": "string", "description": "the whole reply text"}},
        "required": ["reply"],
        "additionalProperties": False,
    },
}


def _connection(ctx: Any) -> Any:
    """The client connection a request came on: the key of its env.

    The SDK (2.3) hands each request a new ``ServerSession``; the connection
    behind it is the one object that lives as long as the MCP session.
    """
    return ctx.session._connection


class ToolError(ValueError):
    """A tool call the session cannot run; the message says what to do."""


@dataclass
class EnvSession:
    """One MCP session's env and where its episode stands."""

    env: gym.Env
    observation: str | None = None
    system_prompt: str = ""
    done: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)


class EnvMcpServer:
    """Serves env `env_id` made with `env_kwargs`: `server` is the SDK's low-level
    ``mcp.server.lowlevel.Server``. A bad id or bad arguments raise
    `ServerStartError` here, before anything listens."""

    def __init__(self, env_id: str, env_kwargs: Mapping[str, Any] | None = None) -> None:
        require_all(["mcp", "jsonschema"], extra="mcp", purpose="`envgym mcp serve`")
        self.env_id = env_id
        self.env_kwargs = dict(env_kwargs or {})
        probe = make_env(env_id, self.env_kwargs)
        try:
            _, info = probe.reset(seed=0)
            env_tools = [t["function"] if "function" in t else t for t in info.get("tools", [])]
        except Exception as exc:
            raise ServerStartError(f"{env_id} cannot start an episode: {exc}") from None
        finally:
            probe.close()
        taken = {RESET_TOOL["name"], ACT_TOOL["name"]}
        self.env_tool_names = [t["name"] for t in env_tools if t["name"] not in taken]
        self.schemas = {t["name"]: t for t in [RESET_TOOL, *env_tools, ACT_TOOL]}
        # One env per connection; an ended session's env is closed with it.
        self._sessions: weakref.WeakKeyDictionary[Any, EnvSession] = weakref.WeakKeyDictionary()
        self.server = self._build_server()

    def _build_server(self) -> Any:
        from jsonschema import Draft202012Validator
        from mcp.server.lowlevel import Server

        self._validators = {
            n: Draft202012Validator(s["parameters"]) for n, s in self.schemas.items()
        }
        return Server(
            f"envgym {self.env_id}",
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_list_resources=self._list_resources,
            on_read_resource=self._read_resource,
        )

    # -- the MCP handlers -------------------------------------------------

    async def _list_tools(self, ctx: Any, params: Any) -> Any:
        import mcp_types as types

        tools = [
            types.Tool(name=n, description=s.get("description", ""), input_schema=s["parameters"])
            for n, s in self.schemas.items()
        ]
        return types.ListToolsResult(tools=tools)

    async def _call_tool(self, ctx: Any, params: Any) -> Any:
        import anyio
        import mcp_types as types

        name, arguments = params.name, dict(params.arguments or {})
        try:
            self._check_arguments(name, arguments)
            session = self._session(ctx)
            result = await anyio.to_thread.run_sync(self._run_tool, session, name, arguments)
        except ToolError as exc:
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=str(exc))], is_error=True
            )
        text, structured = result
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)], structured_content=structured
        )

    async def _list_resources(self, ctx: Any, params: Any) -> Any:
        import mcp_types as types

        return types.ListResourcesResult(
            resources=[
                types.Resource(
                    name="observation",
                    uri=OBSERVATION_URI,
                    description="the env's current observation",
                    mime_type="text/plain",
                ),
                types.Resource(
                    name="system-prompt",
                    uri=SYSTEM_PROMPT_URI,
                    description="the action format, for a chat template",
                    mime_type="text/plain",
                ),
            ]
        )

    async def _read_resource(self, ctx: Any, params: Any) -> Any:
        import mcp_types as types
        from mcp.shared.exceptions import MCPError

        uri = str(params.uri)
        session = self._sessions.get(_connection(ctx))
        if uri not in (OBSERVATION_URI, SYSTEM_PROMPT_URI):
            raise MCPError(
                types.INVALID_PARAMS,
                f"unknown resource {uri!r}; there are {OBSERVATION_URI} and {SYSTEM_PROMPT_URI}",
            )
        if session is None or session.observation is None:
            raise MCPError(types.INVALID_PARAMS, "no episode yet: call the reset tool first")
        text = session.observation if uri == OBSERVATION_URI else session.system_prompt
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, mime_type="text/plain", text=text)]
        )

    # -- the env side -----------------------------------------------------

    def _check_arguments(self, name: str, arguments: dict[str, Any]) -> None:
        if name not in self.schemas:
            raise ToolError(
                f"unknown tool {name!r}; this env's tools are {', '.join(self.schemas)}"
            )
        problems = sorted(self._validators[name].iter_errors(arguments), key=lambda e: e.path)
        if problems:
            where = "/".join(str(p) for p in problems[0].absolute_path) or "arguments"
            raise ToolError(
                f"bad arguments for {name}: {where}: {problems[0].message}; "
                f"the schema is {json.dumps(self.schemas[name]['parameters'])}"
            )

    def _session(self, ctx: Any) -> EnvSession:
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        if ctx.session.protocol_version in MODERN_PROTOCOL_VERSIONS:
            # Without the handshake each request is a connection of its own, so
            # an episode could not outlive one call.
            raise ToolError(
                f"protocol version {ctx.session.protocol_version} has no sessions, and an "
                "episode lives in one; connect with initialize (an earlier protocol version)"
            )
        connection = _connection(ctx)
        session = self._sessions.get(connection)
        if session is None:
            env = make_env(self.env_id, self.env_kwargs, checked=False)
            session = EnvSession(env)
            self._sessions[connection] = session
            weakref.finalize(connection, env.close)
        return session

    def _run_tool(
        self, session: EnvSession, name: str, arguments: dict[str, Any]
    ) -> tuple[str, dict[str, Any]]:
        with session.lock:
            if name == "reset":
                options = {"task_id": arguments["task_id"]} if "task_id" in arguments else None
                try:
                    obs, info = session.env.reset(seed=arguments["seed"], options=options)
                except ValueError as exc:
                    raise ToolError(f"reset refused: {exc}") from None
                session.observation, session.done = obs, False
                session.system_prompt = str(info.get("system_prompt", ""))
                return obs, {"info": to_jsonable(public_info(info))}
            if session.observation is None:
                raise ToolError("no episode yet: call the reset tool (with a seed) first")
            if session.done:
                raise ToolError("the episode has ended: call the reset tool to start another")
            if name == "act":
                reply = arguments["reply"]
            else:
                call = {"name": name, "arguments": arguments}
                reply = f"<tool_call>{json.dumps(call)}</tool_call>"
            obs, reward, terminated, truncated, info = session.env.step(reply)
            session.observation, session.done = obs, bool(terminated or truncated)
            return obs, {
                "reward": float(reward),
                "terminated": bool(terminated),
                "truncated": bool(truncated),
                "info": to_jsonable(public_info(info)),
            }

    # -- transports -------------------------------------------------------

    def run_stdio(self) -> None:
        """Serve one session on this process's stdin and stdout until it closes."""
        import anyio
        from mcp.server.stdio import stdio_server

        async def main() -> None:
            async with stdio_server() as (read, write):
                await self.server.run(read, write, self.server.create_initialization_options())

        anyio.run(main)

    def http_app(self, host: str = "127.0.0.1", uds: bool = False) -> Any:
        """The streamable-HTTP app (endpoint ``/mcp``). DNS-rebinding protection
        stays on for TCP; on a Unix socket (owner-only) it is off, since clients
        there send no port in their Host header."""
        require("uvicorn", extra="mcp", purpose="`envgym mcp serve --transport http`")
        from mcp.server.transport_security import TransportSecuritySettings

        security = TransportSecuritySettings(enable_dns_rebinding_protection=False) if uds else None
        return self.server.streamable_http_app(host=host, transport_security=security)
