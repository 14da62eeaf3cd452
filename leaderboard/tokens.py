"""Submitter tokens: made, revoked and checked; only their sha256 is ever stored.

A token is 32 random bytes (URL-safe base64, 43 characters) shown once when it
is made (``envgym leaderboard token create NAME``). The database keeps its
sha256, so a copy of the database lets no one submit. A revoked submitter
keeps their past submissions; their token stops working.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import Literal

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from envgym.leaderboard.db import Database, Submitter, utcnow

__all__ = [
    "TokenCheck",
    "TokenError",
    "check_token",
    "create_token",
    "hash_token",
    "revoke_token",
]

_NAME_MAX = 100


class TokenError(ValueError):
    """A token cannot be made or revoked as asked; the message says why."""


@dataclass(frozen=True)
class TokenCheck:
    """Who a token belongs to, and whether it may submit."""

    state: Literal["ok", "unknown", "revoked"]
    submitter_id: int | None = None
    name: str | None = None


def hash_token(token: str) -> str:
    """The hex sha256 of `token`, as stored."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def create_token(db: Database, name: str) -> str:
    """Make submitter `name` and return their new token (the only time it is seen).

    A revoked submitter of that name gets a fresh token; an active one is an error.
    """
    name = name.strip()
    if not name or len(name) > _NAME_MAX:
        raise TokenError(f"a submitter name has 1 to {_NAME_MAX} characters, not {len(name)}")
    token = secrets.token_urlsafe(32)
    while token.startswith("-"):  # a leading "-" reads as an option on a command line
        token = secrets.token_urlsafe(32)
    try:
        _store_token(db, name, token)
    except IntegrityError:  # made by someone else between our look and our write
        raise TokenError(f"submitter {name!r} was just created elsewhere; try again") from None
    return token


def _store_token(db: Database, name: str, token: str) -> None:
    with db.session() as session:
        submitter = session.scalar(select(Submitter).where(Submitter.name == name))
        if submitter is not None and submitter.revoked_at is None:
            raise TokenError(
                f"submitter {name!r} already has a token; revoke it first "
                f"(envgym leaderboard token revoke {name}) to issue a new one"
            )
        if submitter is None:
            session.add(Submitter(name=name, token_hash=hash_token(token)))
        else:
            submitter.token_hash = hash_token(token)
            submitter.revoked_at = None
            submitter.created_at = utcnow()


def revoke_token(db: Database, name: str) -> None:
    """Stop submitter `name`'s token from working; `TokenError` if there is no such one."""
    with db.session() as session:
        submitter = session.scalar(select(Submitter).where(Submitter.name == name))
        if submitter is None:
            raise TokenError(f"no submitter named {name!r}; see who exists in the database")
        if submitter.revoked_at is None:
            submitter.revoked_at = utcnow()


def check_token(db: Database, token: str) -> TokenCheck:
    """Whose `token` is, and whether it was revoked."""
    digest = hash_token(token)
    with db.sessions() as session:
        submitter = session.scalar(select(Submitter).where(Submitter.token_hash == digest))
        # The lookup went by the digest's index; compare in constant time all the same,
        # so nothing downstream of it ever branches on a partial match.
        if submitter is None or not hmac.compare_digest(submitter.token_hash, digest):
            return TokenCheck("unknown")
        state = "revoked" if submitter.revoked_at is not None else "ok"
        return TokenCheck(state, submitter.id, submitter.name)
