"""``envgym leaderboard serve|token create|token revoke`` (run a leaderboard) and
``envgym submit`` (send it a results file and wait for the verdict).

    envgym leaderboard serve --db lb.db --port 8500 --workers 4
    envgym leaderboard token create alice --db lb.db     prints alice's token, once
    envgym leaderboard token revoke alice --db lb.db
    envgym leaderboard ticket envgym/Sokoban-v0 --difficulty easy --episodes 20 \
        --server http://127.0.0.1:8500 --token T --out ticket.json
    envgym eval envgym/Sokoban-v0 --agent A --ticket ticket.json --out results.json
    envgym submit results.json --server http://127.0.0.1:8500 --token T

A ranked run plays seeds the board chose: ``ticket`` asks the server for them
(a fresh random base seed bound to your token, the track and an episode
count, with an expiry) and ``eval --ticket`` runs exactly those.

`envgym submit` exits 0 when the file is accepted, 1 when it is rejected (the
reason printed) and 2 when it could not be submitted (no server there, a bad
token, a file that is not a results file: checked here before sending).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

from envgym.cli.arguments import (
    EXIT_FAILED,
    EXIT_OK,
    UserError,
    command_group,
    non_negative_float,
    parse_kwarg,
    port,
    positive_float,
)
from envgym.extras import MissingExtra, missing_extra
from envgym.sockets import http_client

DEFAULT_DB = "leaderboard.db"
TOKEN_ENV = "ENVGYM_LEADERBOARD_TOKEN"


def add_commands(sub: Any) -> None:
    """Add ``leaderboard`` and ``submit`` to the ``envgym`` subparsers `sub`."""
    board_sub = command_group(
        sub, "leaderboard", help="run a leaderboard server and manage its tokens"
    )

    p = board_sub.add_parser(
        "serve",
        help="serve the leaderboard (127.0.0.1 or a Unix socket)",
        description="Accept results files from token holders, verify each by replaying it "
        "in worker processes, and serve the verified scores as web pages and JSON.",
    )
    _db_option(p)
    where = p.add_mutually_exclusive_group()
    where.add_argument("--port", metavar="P", type=port, help="default: 8500")
    where.add_argument("--uds", metavar="PATH", help="listen on this Unix socket instead")
    p.add_argument(
        "--workers",
        metavar="N",
        type=int,
        default=2,
        help="verification processes (default: 2; 0 stores submissions unverified)",
    )
    p.add_argument(
        "--max-body-mb",
        metavar="MB",
        type=non_negative_float,
        default=32.0,
        help="largest results file accepted, in MiB (default: 32)",
    )
    p.add_argument(
        "--rate-limit",
        metavar="N",
        type=int,
        default=30,
        help="submissions and tickets per token per minute (default: 30)",
    )
    p.add_argument(
        "--verify-budget",
        metavar="S",
        type=positive_float,
        default=300.0,
        help="seconds one file's verification may take before it is rejected as too slow "
        "(default: 300)",
    )
    p.add_argument(
        "--quota-mb",
        metavar="MB",
        type=positive_float,
        default=1024.0,
        help="MiB each submitter may upload in all (default: 1024)",
    )
    p.add_argument(
        "--ticket-days",
        metavar="D",
        type=positive_float,
        default=7.0,
        help="days a ticket stays valid (default: 7)",
    )
    p.set_defaults(handler=run_serve)

    p = board_sub.add_parser(
        "export",
        help="write the leaderboard as static HTML (the committed baselines and/or a database)",
        description="Write the leaderboard's pages (the overall view, one page per env with "
        "its table and plot, and trajectories) as static HTML files that open from disk.",
    )
    p.add_argument("--out", metavar="DIR", required=True, help="folder to write the pages into")
    p.add_argument("--db", metavar="URL", help="a leaderboard database: its accepted submissions")
    p.add_argument(
        "--baselines",
        metavar="DIR",
        nargs="?",
        const=True,
        default=False,
        help="baseline results files: the random and oracle baselines envgym ships, or the "
        "folder DIR that envgym baselines --out-dir DIR wrote",
    )
    p.add_argument(
        "--all-episodes", action="store_true", help="a trajectory page for every episode"
    )
    p.set_defaults(handler=run_export)

    p = board_sub.add_parser(
        "ticket",
        help="ask a leaderboard for the seeds of one ranked run (a ticket)",
        description="Ask the server for a ticket: seeds the board chose for one run of ID at "
        "one difficulty, bound to your token. Run them with envgym eval --ticket FILE.",
    )
    p.add_argument("env_id", metavar="ID", help="the env id, e.g. envgym/Sokoban-v0")
    p.add_argument("--difficulty", metavar="LEVEL", help="default: the env's default level")
    p.add_argument(
        "--episodes", metavar="N", type=int, default=20, help="episodes of the run (default 20)"
    )
    p.add_argument(
        "--kwarg",
        action="append",
        type=parse_kwarg,
        metavar="KEY=VALUE",
        help="a track setting besides the difficulty: a game's seat (seat=1 plays second)",
    )
    _server_options(p)
    p.add_argument("--out", metavar="FILE", help="write the ticket here (default: stdout)")
    p.set_defaults(handler=run_ticket)

    token_sub = command_group(
        board_sub, "token", help="create or revoke a submitter's token", metavar="ACTION"
    )
    p = token_sub.add_parser("create", help="make submitter NAME and print their token once")
    p.add_argument("name", metavar="NAME")
    _db_option(p)
    p.set_defaults(handler=run_token_create)
    p = token_sub.add_parser("revoke", help="stop submitter NAME's token from working")
    p.add_argument("name", metavar="NAME")
    _db_option(p)
    p.set_defaults(handler=run_token_revoke)

    p = sub.add_parser(
        "submit",
        help="send a results file to a leaderboard and wait for its verdict",
        description="Check a results file here, upload it, and wait while the server "
        "replays it. Exit status: 0 accepted, 1 rejected (the reason is printed), "
        "2 not submitted.",
    )
    p.add_argument("file", metavar="FILE", help="a results file from `envgym eval --out`")
    _server_options(p)
    p.add_argument(
        "--no-wait", action="store_true", help="print the submission id and exit at once"
    )
    p.add_argument(
        "--timeout",
        metavar="S",
        type=non_negative_float,
        default=3600.0,
        help="seconds to wait for the verdict (default: 3600)",
    )
    p.set_defaults(handler=run_submit)


def _server_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--server", metavar="URL", required=True, help="http://HOST:PORT or unix:PATH")
    p.add_argument(
        "--token",
        metavar="T",
        default=os.environ.get(TOKEN_ENV),
        help=f"your submitter token (default: ${TOKEN_ENV})",
    )


def _db_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--db",
        metavar="URL",
        default=DEFAULT_DB,
        help=f"sqlite:///PATH, a file path or postgresql+psycopg://... (default: {DEFAULT_DB})",
    )


def _database(url: str) -> Any:
    try:
        from envgym.leaderboard.db import Database, DatabaseError
    except ImportError as exc:
        raise _missing_leaderboard(exc) from None
    try:
        return Database(url)
    except DatabaseError as exc:
        raise UserError(str(exc)) from None


def _missing_leaderboard(exc: ImportError) -> UserError:
    """The error for a leaderboard command whose packages are not installed."""
    missing = missing_extra(exc.name or str(exc), extra="leaderboard", purpose="the leaderboard")
    return UserError(str(missing))


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def run_serve(args: argparse.Namespace) -> int:
    """`envgym leaderboard serve`: print the address, serve until Ctrl-C."""
    if args.workers < 0 or args.rate_limit < 1:
        raise UserError("--workers must be >= 0 and --rate-limit >= 1")
    try:
        from envgym.leaderboard.app import DEFAULT_PORT, serve
        from envgym.leaderboard.db import DatabaseError
    except ImportError as exc:
        raise _missing_leaderboard(exc) from None

    def ready(address: str) -> None:
        shown = f"{address}/" if address.startswith("http") else address
        print(f"serving the leaderboard on {shown}", flush=True)
        print(
            "submit with: envgym submit FILE --server ADDRESS --token T; Ctrl-C stops", flush=True
        )

    port_ = args.port if args.port is not None or args.uds else DEFAULT_PORT
    try:
        serve(
            args.db,
            port=port_,
            uds=args.uds,
            on_ready=ready,
            workers=args.workers,
            max_body_bytes=int(args.max_body_mb * 1024 * 1024),
            rate_limit=args.rate_limit,
            verify_budget_s=args.verify_budget,
            quota_bytes=int(args.quota_mb * 1024 * 1024),
            ticket_ttl_s=args.ticket_days * 86400.0,
        )
    except KeyboardInterrupt:
        pass
    except (OSError, DatabaseError) as exc:  # the port is taken, the database cannot open
        raise UserError(str(exc)) from None
    _say("leaderboard stopped")
    return EXIT_OK


def run_token_create(args: argparse.Namespace) -> int:
    from envgym.leaderboard.tokens import TokenError, create_token

    db = _database(args.db)
    try:
        token = create_token(db, args.name)
    except TokenError as exc:
        raise UserError(str(exc)) from None
    finally:
        db.close()
    print(token)
    _say(f"token for {args.name.strip()!r}: shown this once; only its hash is stored")
    return EXIT_OK


def run_token_revoke(args: argparse.Namespace) -> int:
    from envgym.leaderboard.tokens import TokenError, revoke_token

    db = _database(args.db)
    try:
        revoke_token(db, args.name)
    except TokenError as exc:
        raise UserError(str(exc)) from None
    finally:
        db.close()
    _say(f"revoked the token of {args.name!r}")
    return EXIT_OK


def run_export(args: argparse.Namespace) -> int:
    from envgym.leaderboard.export import export_command

    try:
        export_command(
            args.out, db_url=args.db, baselines=args.baselines, all_episodes=args.all_episodes
        )
    except ValueError as exc:
        raise UserError(str(exc)) from None
    return EXIT_OK


# ------------------------------------------------------------- submit
def _client(server: str, timeout: float = 60.0) -> Any:
    if not server.startswith(("http://", "https://", "unix:")):
        raise UserError(f"--server {server!r}: give http://HOST:PORT or unix:PATH")
    try:
        return http_client(server, timeout=timeout, extra="leaderboard", purpose="envgym submit")
    except MissingExtra as exc:
        raise UserError(str(exc)) from None


def _detail(response: Any) -> str:
    try:
        return str(response.json()["detail"])
    except (ValueError, KeyError, TypeError):
        return response.text[:200] or response.reason_phrase


def _request(client: Any, method: str, path: str, server: str, **kwargs: Any) -> Any:
    import httpx

    try:
        return client.request(method, path, **kwargs)
    except httpx.TransportError as exc:
        raise UserError(
            f"cannot reach the leaderboard at {server} ({exc or type(exc).__name__}); "
            "check --server and that the server is running"
        ) from None


def run_ticket(args: argparse.Namespace) -> int:
    """`envgym leaderboard ticket`: ask the server for a ticket and keep it in a file."""
    if not args.token:
        raise UserError(f"no token: pass --token T or set ${TOKEN_ENV}")
    wanted = {
        "env_id": args.env_id,
        "difficulty": args.difficulty,
        "episodes": args.episodes,
        "settings": dict(args.kwarg or []),
    }
    headers = {"Authorization": f"Bearer {args.token}"}
    with _client(args.server) as client:
        response = _request(
            client, "POST", "/api/tickets", args.server, json=wanted, headers=headers
        )
    if response.status_code != 201:
        raise UserError(f"no ticket (HTTP {response.status_code}): {_detail(response)}")
    ticket = json.dumps(response.json(), indent=2) + "\n"
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(ticket)
        _say(f"wrote {args.out}; run it with envgym eval {args.env_id} --ticket {args.out}")
    else:
        sys.stdout.write(ticket)
    return EXIT_OK


def run_submit(args: argparse.Namespace) -> int:
    """`envgym submit`: validate, upload, then wait for the verdict with a spinner."""
    from envgym.evaluation import load_results

    if not args.token:
        raise UserError(f"no token: pass --token T or set ${TOKEN_ENV}")
    results = load_results(args.file)  # ResultsFileError (exit 2) names the wrong field
    body = json.dumps(results).encode("utf-8")
    headers = {"Authorization": f"Bearer {args.token}", "Content-Type": "application/json"}
    with _client(args.server) as client:
        response = _request(
            client, "POST", "/api/submissions", args.server, content=body, headers=headers
        )
        if response.status_code not in (200, 201, 202):
            hint = {401: "bad token", 403: "token revoked", 413: "file too large"}.get(
                response.status_code, f"HTTP {response.status_code}"
            )
            raise UserError(f"not submitted ({hint}): {_detail(response)}")
        submission_id = response.json()["id"]
        if args.no_wait:
            print(submission_id)
            _say(f"submitted as {submission_id}; see {args.server}/api/submissions/{submission_id}")
            return EXIT_OK
        state = _wait(client, args.server, submission_id, args.timeout, headers)
    return _report(state, submission_id)


def _wait(
    client: Any, server: str, submission_id: int, timeout_s: float, headers: dict[str, str]
) -> dict[str, Any]:
    from rich.console import Console

    deadline = time.monotonic() + timeout_s
    delay = 0.2
    with Console(stderr=True).status(f"submission {submission_id}: verifying (replaying)..."):
        while True:
            response = _request(
                client, "GET", f"/api/submissions/{submission_id}", server, headers=headers
            )
            if response.status_code != 200:
                raise UserError(f"cannot read submission {submission_id}: {_detail(response)}")
            state = response.json()
            if state["status"] != "pending":
                return state
            if time.monotonic() >= deadline:
                raise UserError(
                    f"submission {submission_id} still pending after {timeout_s:g} s; "
                    f"check later at {server}/api/submissions/{submission_id}"
                )
            time.sleep(delay)
            delay = min(delay * 1.5, 2.0)  # quick for small files, gentle for long ones


def _report(state: dict[str, Any], submission_id: int) -> int:
    if state["status"] == "accepted":
        entry = state.get("entry") or {}
        rate = entry.get("success_rate")
        shown = (
            f"success {rate:.1%}, mean return {entry.get('mean_return'):.3g}"
            if rate is not None
            else ""
        )
        pass_k = entry.get("pass_k")
        if shown and isinstance(pass_k, dict) and pass_k:
            ks = sorted(pass_k, key=int)
            shown += f", pass^1..{ks[-1]} " + "/".join(f"{pass_k[k]:.2f}" for k in ks)
        print(f"submission {submission_id} accepted: {shown}".rstrip(": "))
        return EXIT_OK
    where = f" (episode {state['episode']})" if state.get("episode") is not None else ""
    print(f"submission {submission_id} rejected{where}: {state.get('reason')}")
    return EXIT_FAILED
