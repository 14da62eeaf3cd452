"""The leaderboard's HTTP server: submissions in, verdicts and pages out.

`create_app` builds the FastAPI app on a `Database`:

- ``POST /api/submissions`` (``Authorization: Bearer TOKEN``): a results file
  as the JSON body. 401 without a known token, 403 with a revoked one, 413
  over the size limit (refused from ``Content-Length`` before any of the body
  is read, or as soon as a streamed body passes it), 429 with ``Retry-After``
  past the per-token rate. Stored as ``pending`` and answered ``{id, status}``
  at once; worker processes verify it (`envgym.leaderboard.worker`).
- ``GET /api/submissions/{id}``: its status, and the reason and episode when
  it was rejected. ``GET /api/results``: the accepted entries.
- ``GET /``, ``/envs/{slug}``, ``/submissions/{id}/episodes/{i}``: the pages of
  `envgym.leaderboard.page`, over the accepted submissions and the committed
  baselines.

Errors are a status and a JSON body ``{"detail": "..."}`` that says what to
fix. `serve` runs the app until Ctrl-C; `LeaderboardServer` runs it on a
background thread (tests, notebooks).
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections import defaultdict, deque
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any

from fastapi import Depends, FastAPI, HTTPException, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, RedirectResponse
from pydantic import BaseModel
from sqlalchemy import select
from sqlalchemy.orm import Session, joinedload, undefer

from envgym.leaderboard.baselines import load_baseline_entries, load_baseline_results
from envgym.leaderboard.db import Database, Submission, iso_utc
from envgym.leaderboard.page import env_slug, render_env, render_index, settings_text
from envgym.leaderboard.tokens import check_token
from envgym.leaderboard.trajectory import render_trajectory
from envgym.leaderboard.worker import VerificationQueue
from envgym.serving import AppServer, BackgroundServer, socket_url
from envgym.sockets import listening_socket

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_PORT",
    "LeaderboardServer",
    "RateLimiter",
    "create_app",
    "serve",
]

DEFAULT_PORT = 8500
DEFAULT_MAX_BODY_BYTES = 32 * 1024 * 1024
#: Pages forbid every outside resource and script (they need neither).
_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"


# ------------------------------------------------------------- the edge
class SubmissionCreated(BaseModel):
    id: int
    status: str


class SubmissionState(BaseModel):
    id: int
    status: str
    reason: str | None
    episode: int | None
    checked_episodes: int | None
    env_id: str
    submitter: str
    created_at: str | None
    verified_at: str | None
    entry: dict[str, Any] | None


class RateLimiter:
    """At most `limit` requests per `window_s` seconds for each key (a sliding window)."""

    def __init__(self, limit: int, window_s: float = 60.0) -> None:
        self.limit = limit
        self.window_s = window_s
        self._seen: dict[Any, deque[float]] = defaultdict(deque)
        self._lock = threading.Lock()

    def retry_after(self, key: Any) -> float:
        """0 if `key` may go now (and count it); else the seconds until it may."""
        now = time.monotonic()
        with self._lock:
            seen = self._seen[key]
            while seen and seen[0] <= now - self.window_s:
                seen.popleft()
            if len(seen) >= self.limit:
                return seen[0] + self.window_s - now
            seen.append(now)
            return 0.0


def _error(status: int, detail: str, headers: dict[str, str] | None = None) -> HTTPException:
    return HTTPException(status_code=status, detail=detail, headers=headers)


def _bearer(request: Request) -> str:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise _error(
            401,
            "no token: send 'Authorization: Bearer TOKEN' (envgym submit --token TOKEN); "
            "ask the leaderboard's operator for one",
            {"WWW-Authenticate": "Bearer"},
        )
    return token.strip()


async def _read_body(request: Request, limit: int) -> bytes:
    """The body, refused with 413 as soon as it is known to pass `limit` bytes."""
    too_big = _error(
        413,
        f"the body is over the {limit} byte limit; submit fewer episodes per file",
        {"Connection": "close"},
    )
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.isdigit():
            raise _error(400, f"Content-Length {declared!r} is not a number")
        if int(declared) > limit:
            raise too_big  # before reading any of it
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():  # a chunked body announces no length; count it
        size += len(chunk)
        if size > limit:
            raise too_big
        chunks.append(chunk)
    return b"".join(chunks)


def _header_fields(results: dict[str, Any]) -> dict[str, Any]:
    """What a submission's header says, for display before and after verification.

    Only types are checked here; the workers decide whether any of it is true.
    """

    def text(value: Any) -> str | None:
        return value[:500] if isinstance(value, str) else None

    agent = results.get("agent") if isinstance(results.get("agent"), dict) else {}
    episodes = results.get("episodes")
    kwargs = results.get("env_kwargs") if isinstance(results.get("env_kwargs"), dict) else {}
    return {
        "env_id": text(results.get("env_id")) or "?",
        "env_version": text(results.get("env_version")),
        "difficulty": text(results.get("difficulty")) or text(kwargs.get("difficulty")),
        "agent": text(agent.get("name")),
        "model": text(agent.get("model")),
        "settings": settings_text(kwargs),
        "num_episodes": len(episodes) if isinstance(episodes, list) else None,
    }


def get_session(request: Request) -> Iterator[Session]:
    """The one database session dependency: a session for this request, closed after."""
    with request.app.state.db.sessions() as session:
        yield session


SessionDep = Annotated[Session, Depends(get_session)]


# ------------------------------------------------------------- the app
def create_app(
    db: Database,
    *,
    workers: int = 2,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    rate_limit: int = 30,
    rate_window_s: float = 60.0,
    include_baselines: bool = True,
) -> FastAPI:
    """The leaderboard app on `db`, verifying with `workers` processes.

    ``workers=0`` stores submissions without verifying them (they stay pending
    until a server with workers starts on the same database). `rate_limit`
    submissions per `rate_window_s` seconds are allowed per token.
    `include_baselines` adds the committed baselines to the pages.
    """
    limiter = RateLimiter(rate_limit, rate_window_s)
    queue = VerificationQueue(db, workers) if workers > 0 else None

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        if queue is not None:
            await run_in_threadpool(queue.requeue_pending)
        yield
        if queue is not None:
            await run_in_threadpool(queue.close)
        db.close()

    app = FastAPI(title="envgym leaderboard", lifespan=lifespan)
    app.state.db = db

    @app.post("/api/submissions", status_code=202)
    async def create_submission(request: Request) -> SubmissionCreated:
        token = _bearer(request)
        who = await run_in_threadpool(check_token, db, token)
        if who.state == "unknown":
            raise _error(
                401,
                "unknown token; check --token, or ask the operator for a new one",
                {"WWW-Authenticate": "Bearer"},
            )
        if who.state == "revoked":
            raise _error(403, f"the token of {who.name!r} was revoked; ask for a new one")
        wait = limiter.retry_after(who.submitter_id)
        if wait > 0:
            seconds = math.ceil(wait)
            raise _error(
                429,
                f"more than {rate_limit} submissions in {rate_window_s:g} s; "
                f"try again in {seconds} s",
                {"Retry-After": str(seconds)},
            )
        body = await _read_body(request, max_body_bytes)
        try:
            text = body.decode("utf-8")
            results = json.loads(text)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise _error(400, f"the body is not JSON ({exc}); upload a results file") from None
        if not isinstance(results, dict):
            raise _error(400, "the body is not a JSON object; upload a results file")
        submitter_id = who.submitter_id
        assert submitter_id is not None
        submission_id = await run_in_threadpool(_store, db, submitter_id, text, results)
        if queue is not None:
            await run_in_threadpool(queue.submit, submission_id, text)
        return SubmissionCreated(id=submission_id, status="pending")

    @app.get("/api/submissions/{submission_id}")
    def submission_state(submission_id: int, session: SessionDep) -> SubmissionState:
        submission = session.get(Submission, submission_id)
        if submission is None:
            raise _error(404, f"no submission {submission_id}; check the id envgym submit gave")
        entry = submission.entry()
        return SubmissionState(
            id=submission.id,
            status=submission.status,
            reason=submission.reason,
            episode=submission.episode,
            checked_episodes=submission.checked_episodes,
            env_id=submission.env_id,
            submitter=submission.submitter.name,
            created_at=entry["created_at"],
            verified_at=iso_utc(submission.verified_at),
            entry=entry if submission.status == "accepted" else None,
        )

    @app.get("/api/results")
    def results(session: SessionDep, env_id: str | None = None) -> list[dict[str, Any]]:
        return _accepted_entries(session, env_id)

    _add_pages(app, include_baselines)
    return app


def _store(db: Database, submitter_id: int, text: str, results: dict[str, Any]) -> int:
    with db.session() as session:
        submission = Submission(
            submitter_id=submitter_id,
            status="pending",
            results_json=text,
            **_header_fields(results),
        )
        session.add(submission)
        session.flush()
        return submission.id


def _accepted_entries(session: Session, env_id: str | None = None) -> list[dict[str, Any]]:
    query = (
        select(Submission)
        .where(Submission.status == "accepted")
        .options(joinedload(Submission.submitter))
        .order_by(Submission.id)
    )
    if env_id is not None:
        query = query.where(Submission.env_id == env_id)
    return [s.entry() for s in session.scalars(query)]


# ------------------------------------------------------------- the pages
def _baselines() -> tuple[list[dict[str, Any]], Callable[[str], dict[str, Any] | None]]:
    return load_baseline_entries(), lambda entry_id: load_baseline_results().get(entry_id)


def _html(text: str) -> HTMLResponse:
    return HTMLResponse(text, headers={"Content-Security-Policy": _CSP})


def _add_pages(app: FastAPI, include_baselines: bool) -> None:
    def entries(session: Session) -> list[dict[str, Any]]:
        baseline_entries = _baselines()[0] if include_baselines else []
        return baseline_entries + _accepted_entries(session)

    @app.get("/", response_class=HTMLResponse)
    def index(session: SessionDep) -> HTMLResponse:
        return _html(render_index(entries(session)))

    @app.get("/envs/{slug}", response_class=HTMLResponse)
    def env_page(
        slug: str,
        session: SessionDep,
        sort: Annotated[str, Query()] = "success",
        order: Annotated[str, Query()] = "desc",
    ) -> HTMLResponse:
        every = entries(session)
        slugs = {env_slug(i): i for i in sorted({str(e["env_id"]) for e in every})}
        if slug not in slugs:
            raise _error(404, f"no entries for env {slug!r}; see / for the envs with entries")
        return _html(render_env(slugs[slug], every, sort, order))

    @app.get("/env/{env_id:path}")
    def env_by_id(env_id: str) -> RedirectResponse:
        return RedirectResponse(f"/envs/{env_slug(env_id)}")

    @app.get("/submissions/{entry_id}/episodes/{index}", response_class=HTMLResponse)
    def trajectory(entry_id: str, index: int, session: SessionDep) -> HTMLResponse:
        results, meta = _entry_results(session, entry_id, include_baselines)
        episodes = results.get("episodes")
        if not isinstance(episodes, list) or not 0 <= index < len(episodes):
            count = len(episodes) if isinstance(episodes, list) else 0
            raise _error(404, f"entry {entry_id} has {count} episodes; pick 0 to {count - 1}")
        return _html(
            render_trajectory(
                meta,
                episodes[index],
                index,
                entry_id=entry_id,
                episode_count=len(episodes),
                # Replaying runs the submitted env_kwargs; only verified files are safe to.
                replay=meta.get("status") in ("accepted", "baseline"),
            )
        )


def _entry_results(
    session: Session, entry_id: str, include_baselines: bool
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(results file, meta) of a stored submission or a committed baseline."""
    if entry_id.isdigit():
        submission = session.get(
            Submission, int(entry_id), options=[undefer(Submission.results_json)]
        )
        if submission is not None:
            results = json.loads(submission.results_json)
            return results, {**_results_header(results), **submission.entry()}
    elif include_baselines:
        results = _baselines()[1](entry_id)
        if results is not None:
            return results, {**_results_header(results), "status": "baseline", "id": entry_id}
    raise _error(404, f"no entry {entry_id!r}; open one from the leaderboard's tables")


def _results_header(results: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in results.items() if key != "episodes"}


# ------------------------------------------------------------- serving
def _app_server(
    db_url: str,
    *,
    host: str = "127.0.0.1",
    port: int | None = DEFAULT_PORT,
    uds: str | Path | None = None,
    on_ready: Callable[[str], None] | None = None,
    log_level: str = "warning",
    **app_options: Any,
) -> AppServer:
    app = create_app(Database(db_url), **app_options)
    sock = listening_socket(host, port, uds)
    address = socket_url(sock)
    return AppServer(
        app,
        sock,
        on_ready=None if on_ready is None else (lambda: on_ready(address)),
        log_level=log_level,
        # Headers only: a body is read by the route, which counts it against the limit.
        h11_max_incomplete_event_size=64 * 1024,
    )


def serve(
    db_url: str,
    *,
    port: int | None = DEFAULT_PORT,
    uds: str | Path | None = None,
    on_ready: Callable[[str], None] | None = None,
    **app_options: Any,
) -> None:
    """Serve the leaderboard on `db_url` until Ctrl-C or SIGTERM; `on_ready(address)`
    is called once it accepts connections. `app_options` go to `create_app`."""
    _app_server(db_url, port=port, uds=uds, on_ready=on_ready, **app_options).run()


class LeaderboardServer(BackgroundServer):
    """The leaderboard on a background thread of this process; a context manager.

    with LeaderboardServer("sqlite:///lb.db", workers=2) as server:
        httpx.get(server.url + "/api/results")
    """

    thread_name = "envgym-leaderboard"

    def __init__(
        self,
        db_url: str,
        *,
        port: int | None = 0,
        uds: str | Path | None = None,
        **app_options: Any,
    ) -> None:
        server = _app_server(db_url, port=None if uds else port, uds=uds, **app_options)
        super().__init__(server, uds)
