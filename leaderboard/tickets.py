"""Tickets: the seeds of a ranked run, chosen by the board.

`issue_ticket` draws a fresh base seed from `envgym.evaluation.tracks.TEST_SEEDS`
for one submitter, one track (env id, installed version, difficulty) and a
fixed episode count, with an expiry; every ticket issued is kept, so the pages
can show how many tickets each submitter took against how many they
submitted. ``envgym eval --ticket`` runs exactly those seeds and names the
ticket in the results file; `claim_ticket` binds the upload to it, once: a
submitter can neither pick lucky seeds, nor keep the best of several runs
unseen (each ticket taken shows), nor stop a run when it looks good (the
episode count is the ticket's).
"""

from __future__ import annotations

import datetime as _dt
import secrets
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from envgym.evaluation.tracks import (
    MAX_TICKET_EPISODES,
    MIN_RANKED_EPISODES,
    TEST_SEEDS,
    TRACK_SETTINGS,
    track_problem,
)
from envgym.leaderboard.db import Database, Submitter, Ticket, iso_utc, utcnow
from envgym.leaderboard.models import UploadHeader

__all__ = [
    "DEFAULT_TICKET_TTL_S",
    "TicketError",
    "claim_ticket",
    "issue_ticket",
    "ticket_counts",
]

#: How long a ticket stays valid: a week.
DEFAULT_TICKET_TTL_S = 7 * 24 * 3600.0


class TicketError(ValueError):
    """A ticket cannot be issued or used as asked; the message says why."""


def _track(env_id: Any, difficulty: Any, settings: Any) -> tuple[str, str, str]:
    """(env id, installed version, difficulty), or `TicketError` naming what is wrong."""
    from envgym.evaluation.identity import env_version
    from envgym.evaluation.verify import scoring_kwargs
    from envgym.registry import get_spec

    if not isinstance(env_id, str):
        raise TicketError("env_id must be a registered env id such as envgym/Sokoban-v0")
    try:
        spec = get_spec(env_id)
    except KeyError as exc:
        raise TicketError(f"env_id: {exc.args[0]}") from None
    if difficulty is None:
        difficulty = spec.default_difficulty
    if difficulty not in spec.difficulties:
        raise TicketError(
            f"difficulty {difficulty!r}: {env_id} has the levels {', '.join(spec.difficulties)}"
        )
    if not isinstance(settings, dict):
        raise TicketError('settings must be an object such as {"seat": 1}')
    problem = track_problem(settings)
    if problem is None and "difficulty" in settings:
        problem = "the difficulty goes in difficulty, not in settings"
    if problem is None:
        unknown = sorted(set(settings) - set(scoring_kwargs(env_id)))
        if unknown:
            problem = f"{env_id} takes no {', '.join(unknown)} (tracks differ by {TRACK_SETTINGS})"
    if problem is not None:
        raise TicketError(f"settings: {problem}")
    return env_id, env_version(env_id), difficulty


def issue_ticket(
    db: Database,
    submitter_id: int,
    env_id: Any,
    difficulty: Any = None,
    episodes: Any = MIN_RANKED_EPISODES,
    ttl_s: float = DEFAULT_TICKET_TTL_S,
    settings: Any = None,
) -> dict[str, Any]:
    """A new ticket for `submitter_id` on a track (`settings`: its track settings,
    such as a game's seat), as the JSON the client keeps."""
    settings = {} if settings is None else settings
    env_id, version, difficulty = _track(env_id, difficulty, settings)
    if (
        isinstance(episodes, bool)
        or not isinstance(episodes, int)
        or not MIN_RANKED_EPISODES <= episodes <= MAX_TICKET_EPISODES
    ):
        raise TicketError(
            f"episodes {episodes!r}: a ticket covers {MIN_RANKED_EPISODES} to "
            f"{MAX_TICKET_EPISODES} episodes (fewer are not ranked)"
        )
    ticket = Ticket(
        code=secrets.token_urlsafe(24),
        submitter_id=submitter_id,
        env_id=env_id,
        env_version=version,
        difficulty=difficulty,
        settings=dict(settings) or None,
        # The whole run's seeds stay inside the kept range.
        seed=TEST_SEEDS[0] + secrets.randbelow(len(TEST_SEEDS) - episodes),
        num_episodes=episodes,
        expires_at=utcnow() + _dt.timedelta(seconds=ttl_s),
    )
    with db.session() as session:
        session.add(ticket)
    return {
        "ticket": ticket.code,
        "env_id": env_id,
        "env_version": version,
        "difficulty": difficulty,
        "settings": dict(settings),
        "seed": ticket.seed,
        "num_episodes": episodes,
        "expires_at": iso_utc(ticket.expires_at),
    }


def _expired(ticket: Ticket) -> bool:
    expires = ticket.expires_at
    if expires.tzinfo is None:  # SQLite gives back naive datetimes, stored in UTC
        expires = expires.replace(tzinfo=_dt.UTC)
    return expires <= utcnow()


def claim_ticket(session: Session, submitter_id: int, header: UploadHeader) -> Ticket | None:
    """The ticket an upload's `header` names, checked and locked for this upload
    (the caller sets its ``submission_id`` in the same transaction); None when
    the file names none (a run on its own seeds, stored but never ranked)."""
    if header.ticket is None:
        return None
    query = select(Ticket).where(Ticket.code == header.ticket).with_for_update()
    ticket = session.scalar(query)
    if ticket is None or ticket.submitter_id != submitter_id:
        raise TicketError(
            "ticket: no such ticket of yours; get one with envgym leaderboard ticket "
            "and run envgym eval --ticket"
        )
    if ticket.submission_id is not None:
        raise TicketError(
            f"ticket was used by submission {ticket.submission_id}; a ticket runs once, "
            "get a new one for a new run"
        )
    if _expired(ticket):
        raise TicketError(f"ticket expired at {iso_utc(ticket.expires_at)}; get a new one")
    wanted = {
        "env_id": ticket.env_id,
        "env_version": ticket.env_version,
        "difficulty": ticket.difficulty,
        "seed": ticket.seed,
        "num_episodes": ticket.num_episodes,
    }
    settings = {k: v for k, v in header.env_kwargs.items() if k != "difficulty"}
    if settings != (ticket.settings or {}):
        raise TicketError(
            f"env_kwargs set {settings} but the ticket is for {ticket.settings or {}}; run "
            "envgym eval --ticket with the ticket's file, unchanged"
        )
    for key, value in wanted.items():
        if getattr(header, key) != value:
            raise TicketError(
                f"{key} is {getattr(header, key)!r} but the ticket is for {value!r}; run "
                "envgym eval --ticket with the ticket's file, unchanged"
            )
    return ticket


def ticket_counts(session: Session) -> list[tuple[str, int, int]]:
    """(submitter name, tickets issued, tickets used), for submitters with tickets."""
    used = func.count(Ticket.submission_id)
    query = (
        select(Submitter.name, func.count(Ticket.id), used)
        .join(Ticket, Ticket.submitter_id == Submitter.id)
        .group_by(Submitter.name)
        .order_by(Submitter.name)
    )
    return [(name, int(issued), int(taken)) for name, issued, taken in session.execute(query)]
