"""The leaderboard server's edge: request and response models, the bearer-token
dependencies (`Submitter`, `RateLimitedSubmitter`), bounded body reading, rate
limits and the first check of an upload, before anything is stored
(`envgym.leaderboard.api` and `envgym.leaderboard.app` build the routes on them).
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections import defaultdict, deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, HTTPException, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel
from sqlalchemy.orm import Session

from envgym.evaluation.results_file import SCHEMA_VERSION, schema_problem
from envgym.evaluation.tracks import track_problem
from envgym.leaderboard.models import Entry, UploadHeader
from envgym.leaderboard.page import settings_text
from envgym.leaderboard.tokens import TokenCheck, check_token

__all__ = [
    "AuthLimits",
    "Credentials",
    "ErrorDetail",
    "RateLimitedSubmitter",
    "RateLimiter",
    "SessionDep",
    "Submitter",
    "SubmissionCreated",
    "SubmissionState",
    "TicketIssued",
    "TicketRequest",
    "identify",
    "parse_upload",
    "read_body",
]


class ErrorDetail(BaseModel):
    """The body of every error answer: what happened and what to do."""

    detail: str


class SubmissionCreated(BaseModel):
    id: int
    status: str
    #: True when this file was submitted before: the answer is that submission
    duplicate: bool = False


class TicketRequest(BaseModel):
    env_id: str
    difficulty: str | None = None
    episodes: int = 20
    #: track settings besides the difficulty, e.g. {"seat": 1} for a game's second seat
    settings: dict[str, Any] = {}


class TicketIssued(BaseModel):
    ticket: str
    env_id: str
    env_version: str
    difficulty: str
    settings: dict[str, Any]
    seed: int
    num_episodes: int
    expires_at: str | None


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
    entry: Entry | None


class RateLimiter:
    """At most `limit` requests per `window_s` seconds for each key (a sliding window)."""

    def __init__(self, limit: int, window_s: float = 60.0) -> None:
        self.limit = limit
        self.window_s = window_s
        self._seen: dict[Any, deque[float]] = defaultdict(deque)
        self._lock = threading.Lock()

    def retry_after(self, key: Any, count: bool = True) -> float:
        """0 if `key` may go now (and, with `count`, count it); else the seconds until it may."""
        now = time.monotonic()
        with self._lock:
            seen = self._seen[key]
            while seen and seen[0] <= now - self.window_s:
                seen.popleft()
            if len(seen) >= self.limit:
                return seen[0] + self.window_s - now
            if count:
                seen.append(now)
            if not seen:
                del self._seen[key]  # no memory kept for keys with nothing counted
            return 0.0


def error(status: int, detail: str, headers: dict[str, str] | None = None) -> HTTPException:
    return HTTPException(status_code=status, detail=detail, headers=headers)


#: ``Authorization: Bearer TOKEN``, read (and shown in the OpenAPI schema) by
#: FastAPI; a missing or malformed header gets this server's own 401 from
#: `identify`, which counts it as a failed authentication, hence no auto_error.
bearer_scheme = HTTPBearer(
    auto_error=False, description="a submitter's token (envgym submit --token TOKEN)"
)
Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(bearer_scheme)]


@dataclass(frozen=True)
class AuthLimits:
    """An app's rate limits (``app.state.auth_limits``): `requests` (uploads and
    tickets) per submitter, `failures` (failed authentications) per client address."""

    requests: RateLimiter
    failures: RateLimiter


async def identify(request: Request, credentials: Credentials) -> TokenCheck:
    """The caller's submitter, or 401/403; an address that keeps failing gets 429."""
    failures = request.app.state.auth_limits.failures
    address = request.client.host if request.client else "?"
    blocked = failures.retry_after(address, count=False)
    if blocked > 0:
        raise error(
            429,
            f"too many failed authentications from this address; try again in "
            f"{math.ceil(blocked)} s",
            {"Retry-After": str(math.ceil(blocked))},
        )
    token = credentials.credentials.strip() if credentials is not None else ""
    if not token:
        failures.retry_after(address)
        raise error(
            401,
            "no token: send 'Authorization: Bearer TOKEN' (envgym submit --token TOKEN); "
            "ask the leaderboard's operator for one",
            {"WWW-Authenticate": "Bearer"},
        )
    who = await run_in_threadpool(check_token, request.app.state.db, token)
    if who.state == "unknown":
        failures.retry_after(address)
        raise error(
            401,
            "unknown token; check --token, or ask the operator for a new one",
            {"WWW-Authenticate": "Bearer"},
        )
    if who.state == "revoked":
        raise error(403, f"the token of {who.name!r} was revoked; ask for a new one")
    return who


#: The route's caller, authenticated (`identify`).
Submitter = Annotated[TokenCheck, Depends(identify)]


async def rate_limited(request: Request, who: Submitter) -> TokenCheck:
    """`identify`, then the per-submitter rate of uploads and tickets (429 past it)."""
    requests = request.app.state.auth_limits.requests
    wait = requests.retry_after(who.submitter_id)
    if wait > 0:
        seconds = math.ceil(wait)
        raise error(
            429,
            f"more than {requests.limit} requests in {requests.window_s:g} s; "
            f"try again in {seconds} s",
            {"Retry-After": str(seconds)},
        )
    return who


#: The route's caller, authenticated and within the per-submitter rate.
RateLimitedSubmitter = Annotated[TokenCheck, Depends(rate_limited)]


async def read_body(request: Request, limit: int) -> bytes:
    """The body, refused with 413 as soon as it is known to pass `limit` bytes."""
    too_big = error(
        413,
        f"the body is over the {limit} byte limit; submit fewer episodes per file",
        {"Connection": "close"},
    )
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.isdigit():
            raise error(400, f"Content-Length {declared!r} is not a number")
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


def header_fields(header: UploadHeader) -> dict[str, Any]:
    """The `Submission` columns an upload's header fills, shown before and after
    verification (the workers decide whether any of it is true)."""
    return {
        "env_id": header.env_id[:200],
        "env_version": header.env_version,
        "env_hash": header.env_hash[:80] if header.env_hash else None,
        "difficulty": header.level,
        "agent": header.agent.name,
        "model": header.agent.model,
        "settings": settings_text(header.env_kwargs),
        "num_episodes": header.episode_count,
        "trials": header.trials,
        "seed": header.seed,
    }


def get_session(request: Request) -> Iterator[Session]:
    """The one database session dependency: a session for this request, closed after."""
    with request.app.state.db.sessions() as session:
        yield session


SessionDep = Annotated[Session, Depends(get_session)]


def parse_upload(body: bytes) -> UploadHeader:
    """The header of an uploaded results file, or 400 saying what is wrong: not
    JSON, not an object, an env this leaderboard does not have, a header (or
    first episode) off the results file's schema, or not a track's run (runs
    off the event loop)."""
    try:
        results = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise error(400, f"the body is not JSON ({exc}); upload a results file") from None
    if not isinstance(results, dict):
        raise error(400, "the body is not a JSON object; upload a results file")
    env_id = results.get("env_id")
    try:
        from envgym.registry import get_spec

        get_spec(env_id if isinstance(env_id, str) else "?")
    except KeyError:
        raise error(400, f"env_id {env_id!r} is not an env of this leaderboard") from None
    # The header and the first episode against the schema here; every episode in
    # the worker (a whole file is too much pure-Python work for the web process).
    episodes = results.get("episodes")
    sample = {**results, "episodes": episodes[:1]} if isinstance(episodes, list) else results
    problem = schema_problem(sample, (SCHEMA_VERSION,))
    if problem is not None:
        raise error(400, f"not a results file of this envgym: {problem}")
    header = UploadHeader.read(results)
    kwargs = results.get("env_kwargs", {})
    if isinstance(kwargs, dict):
        problem = track_problem(kwargs)
    else:
        problem = "env_kwargs is not an object"
    if problem is not None:
        raise error(400, f"not a track's run: {problem}")
    return header
