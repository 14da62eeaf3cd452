"""``envgym mcp serve``: an env's tools as an MCP server (stdio or streamable HTTP)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from envgym.cli.arguments import (
    EXIT_OK,
    ID_HELP,
    UserError,
    add_env_options,
    command_group,
    env_kwargs,
    port,
    resolve_env_id,
)
from envgym.extras import MissingExtra


def add_commands(sub: Any) -> None:
    """Add ``mcp serve`` to the ``envgym`` subparsers `sub`."""
    group = command_group(sub, "mcp", help="serve an env's tools over MCP (Model Context Protocol)")
    p = group.add_parser(
        "serve",
        help="serve one env id as an MCP server",
        description="Serve one env id as an MCP server: its own tools (info['tools']) plus "
        "`reset` (seed, task_id) and `act` (a whole reply), the observation and system prompt "
        "as resources envgym://observation and envgym://system-prompt. Each MCP session gets "
        "its own env; info['privileged'] is never sent. stdio by default; --transport http "
        "serves streamable HTTP at /mcp on 127.0.0.1 or a Unix socket (owner-only).",
    )
    p.add_argument("env_id", metavar="ID", help=ID_HELP)
    p.add_argument(
        "--transport",
        choices=("stdio", "http"),
        default="stdio",
        help="stdio (one session, the client spawns this command) or http (default: stdio)",
    )
    p.add_argument(
        "--host", default="127.0.0.1", help="http: address to listen on (default: 127.0.0.1)"
    )
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--port", metavar="P", type=port, help="http: TCP port (default: 8000; 0 picks a free one)"
    )
    where.add_argument("--uds", metavar="PATH", help="http: listen on this Unix socket instead")
    add_env_options(p)
    p.set_defaults(handler=run_mcp_serve)


def run_mcp_serve(args: argparse.Namespace) -> int:
    """Serve until the client closes stdio, or until Ctrl+C / SIGTERM on HTTP."""
    if args.transport == "stdio" and (args.port is not None or args.uds is not None):
        raise UserError("--port and --uds are for --transport http; stdio needs neither")
    env_id = resolve_env_id(args.env_id)
    try:
        from envgym.remote.config import ServerStartError
        from envgym.remote.mcp import EnvMcpServer

        server = EnvMcpServer(env_id, env_kwargs(args))
    except MissingExtra as exc:
        raise UserError(str(exc)) from None
    except ServerStartError as exc:
        raise UserError(str(exc)) from None
    if args.transport == "stdio":
        server.run_stdio()
        return EXIT_OK
    from envgym.serving import app_server
    from envgym.sockets import ListenError

    def ready(address: str) -> None:
        # stdout is the protocol only on stdio; here it is the place to say where we listen.
        print(f"envgym mcp: serving {env_id} at {address}/mcp (Ctrl+C stops)", flush=True)

    try:
        app = server.http_app(host=args.host, uds=args.uds is not None)
        http = app_server(
            app,
            host=args.host,
            port=8000 if args.port is None else args.port,
            uds=args.uds,
            on_ready=ready,
        )
    except (MissingExtra, ListenError) as exc:
        raise UserError(str(exc)) from None
    http.run()
    print("envgym mcp: stopped", file=sys.stderr)
    return EXIT_OK
