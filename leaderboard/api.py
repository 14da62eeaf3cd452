"""The leaderboard's JSON API: `router`, mounted under ``/api`` by
`envgym.leaderboard.app.create_app`.

- ``POST /api/tickets`` (bearer token): a ticket, the board's seeds for one
  ranked run (`envgym.leaderboard.tickets`).
- ``POST /api/submissions`` (bearer token): a results file as the JSON body,
  stored as ``pending`` and answered ``{id, status}`` at once; worker processes
  verify it (`envgym.leaderboard.worker`). The same file again answers the
  existing submission.
- ``GET /api/submissions/{id}``: an accepted submission's state for anyone; a
  pending or rejected one's (with the reason) for its submitter only.
- ``GET /api/results``: the accepted entries.

The token is checked by one dependency (`envgym.leaderboard.edge`:
`RateLimitedSubmitter` for uploads and tickets); each route's answer is a
pydantic model, and each error a status with ``{"detail": "..."}``
(`ErrorDetail`). What the app was configured with is ``app.state.settings``
(`ServerSettings`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, joinedload

from envgym.leaderboard.db import Database, Submission, iso_utc
from envgym.leaderboard.edge import (
    Credentials,
    ErrorDetail,
    RateLimitedSubmitter,
    SessionDep,
    SubmissionCreated,
    SubmissionState,
    TicketIssued,
    TicketRequest,
    error,
    header_fields,
    identify,
    parse_upload,
    read_body,
)
from envgym.leaderboard.models import Entry, UploadHeader
from envgym.leaderboard.tickets import TicketError, claim_ticket, issue_ticket
from envgym.leaderboard.worker import VerificationQueue

__all__ = ["ServerSettings", "accepted_entries", "router"]


@dataclass(frozen=True)
class ServerSettings:
    """What `create_app` was given, for the routes (``app.state.settings``)."""

    max_body_bytes: int
    quota_bytes: int
    ticket_ttl_s: float
    include_baselines: bool
    #: None: submissions are stored, not verified
    queue: VerificationQueue | None


def _settings(request: Request) -> ServerSettings:
    return request.app.state.settings


def _errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    return {status: {"model": ErrorDetail} for status in statuses}


router = APIRouter(prefix="/api", tags=["api"])


@router.post(
    "/tickets",
    status_code=201,
    response_model=TicketIssued,
    responses=_errors(400, 401, 403, 429),
)
async def create_ticket(
    request: Request, wanted: TicketRequest, who: RateLimitedSubmitter
) -> TicketIssued:
    assert who.submitter_id is not None
    try:
        issued = await run_in_threadpool(
            issue_ticket,
            request.app.state.db,
            who.submitter_id,
            wanted.env_id,
            wanted.difficulty,
            wanted.episodes,
            _settings(request).ticket_ttl_s,
            wanted.settings,
        )
    except TicketError as exc:
        raise error(400, str(exc)) from None
    return TicketIssued(**issued)


@router.post(
    "/submissions",
    status_code=202,
    response_model=SubmissionCreated,
    responses=_errors(400, 401, 403, 413, 429),
)
async def create_submission(request: Request, who: RateLimitedSubmitter) -> SubmissionCreated:
    settings = _settings(request)
    db = request.app.state.db
    body = await read_body(request, settings.max_body_bytes)
    header = await run_in_threadpool(parse_upload, body)
    submitter_id = who.submitter_id
    assert submitter_id is not None
    quota = settings.quota_bytes
    try:
        created = await run_in_threadpool(_store, db, submitter_id, body, header, quota)
    except TicketError as exc:
        raise error(400, str(exc)) from None
    except IntegrityError:  # the same file, stored by a concurrent request
        created = await run_in_threadpool(_store, db, submitter_id, body, header, quota)
    if settings.queue is not None and not created.duplicate:
        body_text = body.decode("utf-8")
        await run_in_threadpool(settings.queue.submit, created.id, submitter_id, body_text)
    return created


@router.get(
    "/submissions/{submission_id}",
    response_model=SubmissionState,
    responses=_errors(401, 403, 404, 429),
)
async def submission_state(
    submission_id: int, request: Request, credentials: Credentials
) -> SubmissionState:
    state = await run_in_threadpool(_submission_state, request.app.state.db, submission_id)
    if state is None or (
        state.status != "accepted" and not await _is_owner(request, credentials, state)
    ):
        # Pending and rejected files are their submitter's business only.
        raise error(404, f"no submission {submission_id}; check the id envgym submit gave")
    return state


async def _is_owner(request: Request, credentials: Credentials, state: SubmissionState) -> bool:
    # Only a submission that is not public asks who is calling: an accepted one's
    # state is anyone's, whatever token comes with the request.
    if not request.headers.get("authorization"):
        return False
    who = await identify(request, credentials)  # polling its own verdict costs no upload rate
    return who.name == state.submitter


@router.get("/results", response_model=list[Entry])
def results(session: SessionDep, env_id: str | None = None) -> list[Entry]:
    return accepted_entries(session, env_id)


def _store(
    db: Database, submitter_id: int, body: bytes, header: UploadHeader, quota_bytes: int
) -> SubmissionCreated:
    digest = hashlib.sha256(body).hexdigest()
    with db.session() as session:
        existing = session.scalar(select(Submission).where(Submission.body_sha256 == digest))
        if existing is not None:
            return SubmissionCreated(id=existing.id, status=existing.status, duplicate=True)
        used = session.scalar(
            select(func.coalesce(func.sum(Submission.body_bytes), 0)).where(
                Submission.submitter_id == submitter_id
            )
        )
        if int(used or 0) + len(body) > quota_bytes:
            raise error(
                413,
                f"this file would take you past your {quota_bytes} byte upload quota "
                f"({used} used); ask the operator for more",
            )
        ticket = claim_ticket(session, submitter_id, header)
        submission = Submission(
            submitter_id=submitter_id,
            status="pending",
            results_json=body.decode("utf-8"),
            body_sha256=digest,
            body_bytes=len(body),
            ticket_id=None if ticket is None else ticket.id,
            **header_fields(header),
        )
        session.add(submission)
        session.flush()
        if ticket is not None:
            ticket.submission_id = submission.id
        return SubmissionCreated(id=submission.id, status="pending")


def _submission_state(db: Database, submission_id: int) -> SubmissionState | None:
    with db.sessions() as session:
        submission = session.get(Submission, submission_id)
        if submission is None:
            return None
        entry = submission.entry()
        return SubmissionState(
            id=submission.id,
            status=submission.status,
            reason=submission.reason,
            episode=submission.episode,
            checked_episodes=submission.checked_episodes,
            env_id=submission.env_id,
            submitter=submission.submitter.name,
            created_at=entry.created_at,
            verified_at=iso_utc(submission.verified_at),
            entry=entry if submission.status == "accepted" else None,
        )


def accepted_entries(session: Session, env_id: str | None = None) -> list[Entry]:
    """The accepted submissions' entries (of `env_id` only, when given), oldest first."""
    query = (
        select(Submission)
        .where(Submission.status == "accepted")
        .options(joinedload(Submission.submitter))
        .order_by(Submission.id)
    )
    if env_id is not None:
        query = query.where(Submission.env_id == env_id)
    return [s.entry() for s in session.scalars(query)]
