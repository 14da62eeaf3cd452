"""``envgym serve``: one env id over WebSocket in OpenEnv's protocol, with the
session limits and guards a shared server needs."""

from __future__ import annotations

import argparse
from typing import Any

from envgym.cli.arguments import (
    EXIT_OK,
    ID_HELP,
    UserError,
    add_env_options,
    env_kwargs,
    int_at_least,
    non_negative_float,
    port,
    positive_float,
    positive_int,
    resolve_env_id,
)
from envgym.evaluation.inputs import json_object
from envgym.extras import missing_extra


def add_commands(sub: Any) -> None:
    """Add ``serve`` to the ``envgym`` subparsers `sub`."""
    p = sub.add_parser(
        "serve",
        help="serve an env over WebSocket at /ws (OpenEnv's protocol; RemoteEnv connects)",
        description="Serve one env id: each WebSocket connection at /ws is one env instance, "
        "in OpenEnv's message format, so envgym.remote.RemoteEnv and OpenEnv's GenericEnvClient "
        "both drive it. GET /health and GET /schema describe the server. Clients get each "
        "observation's info without info['privileged'] (gold answers, solutions) unless "
        "--send-privileged is given; a Unix socket is made owner-only (0600).",
    )
    p.add_argument("env_id", metavar="ID", help=ID_HELP)
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--port",
        metavar="P",
        type=port,
        help="TCP port (default: 8000; 0 picks a free one, printed at start)",
    )
    where.add_argument("--uds", metavar="PATH", help="listen on this Unix socket instead")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    p.add_argument(
        "--max-sessions",
        metavar="N",
        type=positive_int,
        default=256,
        help="sessions served at once; more are refused (default: 256)",
    )
    p.add_argument(
        "--idle-timeout",
        metavar="S",
        type=non_negative_float,
        default=3600.0,
        help="close a session that sends nothing for S seconds; 0: never (default: 3600)",
    )
    p.add_argument(
        "--exit-after",
        metavar="N",
        type=positive_int,
        help="stop once N sessions have been served and none is open (a server for one "
        "client that may die; default: serve until stopped)",
    )
    p.add_argument(
        "--kwargs",
        metavar="JSON",
        type=json_object,
        help='env arguments as one JSON object, e.g. \'{"difficulty": "hard"}\'',
    )
    add_env_options(p)
    p.add_argument(
        "--send-privileged",
        action="store_true",
        help="send info['privileged'] (gold answers, solutions, hidden state) to clients, for "
        "a trainer that needs it; serve it only where no one else can connect (default: left "
        "out)",
    )
    p.add_argument(
        "--call-timeout",
        metavar="S",
        type=non_negative_float,
        default=60.0,
        help="close a session whose env call (reset, step) takes longer than S seconds, with "
        "a CALL_TIMEOUT error; the call finishes in the background; 0: no limit (default: 60)",
    )
    p.add_argument(
        "--calls",
        choices=("auto", "threads"),
        default="auto",
        help="where env calls run: 'auto' steps envs that declare fast_calls (pure Python, "
        "bounded: Sokoban, the games) on the event loop and the rest on threads; 'threads' "
        "runs every call on a thread, so even a declared-fast env that hangs stalls only its "
        "own session (default: auto)",
    )
    p.add_argument(
        "--max-message-bytes",
        metavar="N",
        type=int_at_least(1024, "a message limit is >= 1024 bytes"),
        help="close a session that sends a message longer than N bytes (code 1009) "
        "(default: the env's longest action, JSON-escaped, plus 64 KiB)",
    )
    p.add_argument(
        "--ping-interval",
        metavar="S",
        type=non_negative_float,
        default=20.0,
        help="WebSocket keep-alive ping every S seconds; 0: none (default: 20)",
    )
    p.add_argument(
        "--ping-timeout",
        metavar="S",
        type=non_negative_float,
        default=20.0,
        help="drop a client that does not answer a ping within S seconds (default: 20)",
    )
    p.add_argument(
        "--max-snapshots",
        metavar="N",
        type=int_at_least(0, "must be 0 or more"),
        default=64,
        help="snapshot handles one session may hold at once; more are refused with "
        "SNAPSHOT_LIMIT; 0: no snapshots (default: 64)",
    )
    p.add_argument(
        "--max-snapshot-bytes",
        metavar="N",
        type=int_at_least(0, "must be 0 or more"),
        default=64 * 1024 * 1024,
        help="bytes (pickled) one session's snapshots may hold at once (default: 64 MiB)",
    )
    p.add_argument(
        "--snapshot-ttl",
        metavar="S",
        type=positive_float,
        default=600.0,
        help="seconds a snapshot handle, and a forked session not yet attached to, lives "
        "(default: 600)",
    )
    p.add_argument(
        "--log-level",
        choices=("critical", "error", "warning", "info", "debug"),
        default="warning",
        help="server log level (default: warning)",
    )
    p.set_defaults(handler=run_serve)


def run_serve(args: argparse.Namespace) -> int:
    try:
        # The remote extra (fastapi, uvicorn, websockets) may not be installed.
        from envgym.remote.launcher import ServerStartError, ready_line, serve
    except ImportError as exc:
        missing = missing_extra(exc.name or str(exc), extra="remote", purpose="`envgym serve`")
        raise UserError(str(missing)) from None
    env_id = resolve_env_id(args.env_id)
    kwargs = dict(args.kwargs or {})
    kwargs.update(env_kwargs(args))
    idle = args.idle_timeout or None
    call = args.call_timeout or None

    def ready(address: Any) -> None:
        print(ready_line(env_id, address), flush=True)
        idle_text = f"{idle:g} s" if idle else "off"
        call_text = f"{call:g} s" if call else "off"
        privileged = "sent" if args.send_privileged else "left out (--send-privileged sends it)"
        print(
            f"  up to {args.max_sessions} sessions, idle timeout {idle_text}, call timeout "
            f"{call_text}; info['privileged'] {privileged}; GET /health, GET /schema; Ctrl+C stops",
            flush=True,
        )

    try:
        serve(
            env_id,
            kwargs,
            host=args.host,
            port=8000 if args.port is None else args.port,
            uds=args.uds,
            max_sessions=args.max_sessions,
            idle_timeout_s=idle,
            send_privileged=args.send_privileged,
            call_timeout_s=call,
            max_message_bytes=args.max_message_bytes,
            ping_interval_s=args.ping_interval or None,
            ping_timeout_s=args.ping_timeout or None,
            exit_after_sessions=args.exit_after,
            max_snapshots=args.max_snapshots,
            max_snapshot_bytes=args.max_snapshot_bytes,
            snapshot_ttl_s=args.snapshot_ttl,
            calls=args.calls,
            log_level=args.log_level,
            on_ready=ready,
        )
    except (ServerStartError, ImportError) as exc:
        raise UserError(str(exc)) from None
    return EXIT_OK
