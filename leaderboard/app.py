"""The leaderboard's HTTP server: submissions in, verdicts and pages out.

`create_app` builds the FastAPI app on a `Database` from two routers:

- `envgym.leaderboard.api.router`, the JSON API under ``/api``:
  ``POST /api/tickets`` (``Authorization: Bearer TOKEN``; body ``{env_id,
  difficulty, episodes}``): a ticket, the board's seeds for one ranked run.
  ``POST /api/submissions`` (``Authorization: Bearer TOKEN``): a results file
  as the JSON body. 401 without a known token (429 for an address past the
  failed-authentication rate), 403 with a revoked one, 413 over the size
  limit (refused from ``Content-Length`` before any of the body is read, or as
  soon as a streamed body passes it) or over the submitter's byte quota, 429
  with ``Retry-After`` past the per-token rate, 400 for a body that is not a
  results file of a registered env on a track (only the difficulty set) or
  names a ticket it may not use. The body is parsed off the event loop and
  checked before anything is stored. ``GET /api/submissions/{id}``: an
  accepted submission's state for anyone; a pending or rejected one's (with
  the reason) for its submitter only. ``GET /api/results``: the accepted entries.
- `pages`, here: ``GET /``, ``/envs/{slug}``, ``/submissions/{id}/episodes/{i}``:
  the pages of `envgym.leaderboard.page`, over the accepted submissions and the
  committed baselines; only those have trajectory pages.

Errors are a status and a JSON body ``{"detail": "..."}`` that says what to
fix. `serve` runs the app until Ctrl-C; `LeaderboardServer` runs it on a
background thread (tests, notebooks).
"""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, FastAPI, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, RedirectResponse
from sqlalchemy import select
from sqlalchemy.orm import Session

from envgym.leaderboard.api import ServerSettings, accepted_entries
from envgym.leaderboard.api import router as api_router
from envgym.leaderboard.baselines import load_baseline_entries, load_baseline_results
from envgym.leaderboard.db import Database, EpisodeView, Submission
from envgym.leaderboard.edge import AuthLimits, RateLimiter, SessionDep, error
from envgym.leaderboard.models import Entry
from envgym.leaderboard.page import env_slug, render_env, render_index
from envgym.leaderboard.tickets import DEFAULT_TICKET_TTL_S, ticket_counts
from envgym.leaderboard.trajectory import (
    ReplayedObservations,
    render_trajectory,
    replay_observations,
)
from envgym.leaderboard.worker import DEFAULT_BUDGET_S, VerificationQueue
from envgym.serving import AppServer, BackgroundServer, app_server

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_PORT",
    "LeaderboardServer",
    "RateLimiter",
    "create_app",
    "pages",
    "serve",
]

DEFAULT_PORT = 8500
DEFAULT_MAX_BODY_BYTES = 32 * 1024 * 1024
#: Bytes one submitter may upload in all (every file counts, whatever its verdict).
DEFAULT_QUOTA_BYTES = 1024 * 1024 * 1024
#: Pages forbid every outside resource and script (they need neither).
_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"


# ------------------------------------------------------------- the app
def create_app(
    db: Database,
    *,
    workers: int = 2,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    quota_bytes: int = DEFAULT_QUOTA_BYTES,
    rate_limit: int = 30,
    rate_window_s: float = 60.0,
    auth_failures: int = 20,
    ticket_ttl_s: float = DEFAULT_TICKET_TTL_S,
    include_baselines: bool = True,
    verify_budget_s: float = DEFAULT_BUDGET_S,
) -> FastAPI:
    """The leaderboard app on `db`, verifying with `workers` processes.

    ``workers=0`` stores submissions without verifying them (they stay pending
    until a server with workers starts on the same database). `rate_limit`
    submissions (and tickets) per `rate_window_s` seconds are allowed per
    token, `auth_failures` failed authentications per window per client
    address, `quota_bytes` uploaded bytes per submitter. Tickets expire after
    `ticket_ttl_s` seconds. `include_baselines` adds the committed baselines
    to the pages. A submission whose verification takes longer than
    `verify_budget_s` seconds is rejected as too slow to verify.
    """
    queue = VerificationQueue(db, workers, budget_s=verify_budget_s) if workers > 0 else None

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
    app.state.auth_limits = AuthLimits(
        requests=RateLimiter(rate_limit, rate_window_s),
        failures=RateLimiter(auth_failures, rate_window_s),
    )
    app.state.settings = ServerSettings(
        max_body_bytes=max_body_bytes,
        quota_bytes=quota_bytes,
        ticket_ttl_s=ticket_ttl_s,
        include_baselines=include_baselines,
        queue=queue,
    )
    app.include_router(api_router)
    app.include_router(pages)
    return app


# ------------------------------------------------------------- the pages
def _baselines() -> tuple[list[Entry], Callable[[str], dict[str, Any] | None]]:
    return load_baseline_entries(), lambda entry_id: load_baseline_results().get(entry_id)


def _html(text: str) -> HTMLResponse:
    return HTMLResponse(text, headers={"Content-Security-Policy": _CSP})


pages = APIRouter(tags=["pages"])


def _entries(request: Request, session: Session) -> list[Entry]:
    include_baselines = request.app.state.settings.include_baselines
    return (_baselines()[0] if include_baselines else []) + accepted_entries(session)


@pages.get("/", response_class=HTMLResponse)
def index(request: Request, session: SessionDep) -> HTMLResponse:
    return _html(render_index(_entries(request, session), submitters=ticket_counts(session)))


@pages.get("/envs/{slug}", response_class=HTMLResponse)
def env_page(
    slug: str,
    request: Request,
    session: SessionDep,
    sort: Annotated[str, Query()] = "rank",
    order: Annotated[str, Query()] = "desc",
) -> HTMLResponse:
    every = _entries(request, session)
    slugs = {env_slug(i): i for i in sorted({e.env_id for e in every})}
    if slug not in slugs:
        raise error(404, f"no entries for env {slug!r}; see / for the envs with entries")
    return _html(render_env(slugs[slug], every, sort, order))


@pages.get("/env/{env_id:path}")
def env_by_id(env_id: str) -> RedirectResponse:
    return RedirectResponse(f"/envs/{env_slug(env_id)}")


@pages.get("/submissions/{entry_id}/episodes/{index}", response_class=HTMLResponse)
def trajectory(entry_id: str, index: int, request: Request, session: SessionDep) -> HTMLResponse:
    include_baselines = request.app.state.settings.include_baselines
    episode, meta, count, seen = _episode(session, entry_id, index, include_baselines)
    return _html(
        render_trajectory(meta, episode, index, entry_id=entry_id, episode_count=count, seen=seen)
    )


def _episode(
    session: Session, entry_id: str, index: int, include_baselines: bool
) -> tuple[dict[str, Any], dict[str, Any], int, ReplayedObservations]:
    """(episode, meta, episode count, what the agent saw) of an accepted submission
    (from the view its verification worker stored: nothing is replayed or parsed
    here but one bounded row) or of a committed baseline (replayed, once: envgym's
    own files)."""
    if entry_id.isdigit():
        submission = session.get(Submission, int(entry_id))
        # Pending and rejected files are never shown: a forgery's "success" is not news.
        if submission is not None and submission.status == "accepted":
            count = submission.num_episodes or 0
            if not 0 <= index < count:
                raise error(404, f"entry {entry_id} has {count} episodes; pick 0 to {count - 1}")
            view = session.scalar(
                select(EpisodeView.data).where(
                    EpisodeView.submission_id == submission.id, EpisodeView.episode == index
                )
            )
            if view is None:
                note = "this episode's page was not stored (the entry's size bound)"
                return {}, submission.entry().model_dump(), count, ReplayedObservations(note=note)
            stored = json.loads(view)
            return (
                stored["episode"],
                submission.entry().model_dump(),
                count,
                ReplayedObservations.from_view(stored),
            )
    elif include_baselines:
        results = _baselines()[1](entry_id)
        if results is not None:
            episodes = results["episodes"]
            if not 0 <= index < len(episodes):
                count = len(episodes)
                raise error(404, f"entry {entry_id} has {count} episodes; pick 0 to {count - 1}")
            meta = {**_results_header(results), "status": "baseline", "id": entry_id}
            return episodes[index], meta, len(episodes), _baseline_view(entry_id, index)
    raise error(404, f"no entry {entry_id!r}; open one from the leaderboard's tables")


@functools.lru_cache(maxsize=512)
def _baseline_view(entry_id: str, index: int) -> ReplayedObservations:
    results = load_baseline_results()[entry_id]
    return replay_observations(results, results["episodes"][index])


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
    return app_server(
        app,
        host=host,
        port=port,
        uds=uds,
        on_ready=on_ready,
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
