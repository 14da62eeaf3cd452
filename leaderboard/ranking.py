"""Which entries rank, and in what order.

An entry ranks on its track (env id, difficulty, the installed env version
and code hash) when it is a baseline or a verified submission that ran on a
ticket's seeds, set no env argument besides the difficulty, and holds at least
`MIN_RANKED_EPISODES` episodes. Ranked entries are ordered by the lower bound
of their 95% success interval (Wilson), then of their return interval
(Student t): a lucky short run has a wide interval and a low bound, so it
cannot pass a long, steady one on its point estimate. Every other entry is
listed apart with the reason it does not rank.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from envgym.evaluation.tracks import MIN_RANKED_EPISODES, TRACK_SETTINGS
from envgym.leaderboard.models import Entry, as_entry

__all__ = [
    "Identity",
    "installed_identity",
    "is_current",
    "rank_entries",
    "unranked_reason",
]

#: (env version, env hash) of an env's installed code; None for an env not installed
Identity = Callable[[str], tuple[str, str] | None]


@functools.cache
def installed_identity(env_id: str) -> tuple[str, str] | None:
    """The installed (env version, env hash) of `env_id`, or None if it is not installed."""
    from envgym.evaluation.identity import env_hash, env_version

    try:
        return env_version(env_id), env_hash(env_id)
    except Exception:  # unknown id, code missing: nothing current to compare with
        return None


def is_current(entry: Entry, identity: Identity = installed_identity) -> bool:
    """Whether `entry` ran on the installed version and code of its env. Baselines
    are made from the installed code (the tests hold them to it)."""
    if entry.status == "baseline":
        return True
    installed = identity(str(entry.env_id))
    return installed is not None and installed == (entry.env_version, entry.env_hash)


def _bound(pair: Any) -> float:
    if isinstance(pair, list | tuple) and len(pair) == 2:
        try:
            low = float(pair[0])
        except (TypeError, ValueError):
            return -math.inf
        return low if math.isfinite(low) else -math.inf
    return -math.inf


def unranked_reason(entry: Entry, identity: Identity = installed_identity) -> str | None:
    """Why `entry` does not rank on its track, or None when it ranks."""
    baseline = entry.status == "baseline"
    if not baseline and not entry.verified:
        return "not verified"
    names = re.findall(r"(?:^|, )(\w+)=", str(entry.settings or ""))
    if any(name not in TRACK_SETTINGS for name in names):
        return "custom settings"
    if not is_current(entry, identity):
        return "previous version"
    if not baseline and not entry.ticketed:
        return "own seeds (no ticket)"
    episodes = entry.episodes
    if not isinstance(episodes, int) or episodes < MIN_RANKED_EPISODES:
        return f"provisional: {episodes} episodes, ranking needs {MIN_RANKED_EPISODES}"
    return None


def track_label(entry: Entry) -> str:
    """The entry's level and track settings: ``hard``, or ``hard [seat=1]``."""
    settings = entry.settings
    level = str(entry.difficulty)
    return f"{level} [{settings}]" if settings else level


def rank_key(entry: Entry) -> tuple[float, float, str]:
    """Lower bounds of success and return, highest first; then by id for a fixed order."""
    return (-_bound(entry.success_ci95), -_bound(entry.ci95), str(entry.id))


def rank_entries(
    entries: Sequence[Entry | Mapping[str, Any]], identity: Identity = installed_identity
) -> tuple[list[Entry], list[Entry]]:
    """(ranked, unranked): copies of `entries` (as `Entry`) with ``rank`` (1, 2,
    ... per track: env id and `track_label`) or ``unranked`` (the reason) set,
    ranked ones in rank order."""
    ranked: list[Entry] = []
    unranked: list[Entry] = []
    for given in entries:
        entry = as_entry(given)
        reason = unranked_reason(entry, identity)
        update = {"unranked": reason, "rank": None}
        (unranked if reason else ranked).append(entry.model_copy(update=update))
    ranked.sort(key=rank_key)
    places: dict[tuple[str, str], int] = {}
    for i, entry in enumerate(ranked):
        track = (entry.env_id, track_label(entry))
        places[track] = places.get(track, 0) + 1
        ranked[i] = entry.model_copy(update={"rank": places[track]})
    return ranked, unranked
