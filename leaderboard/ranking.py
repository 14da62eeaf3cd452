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
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from envgym.evaluation.tracks import MIN_RANKED_EPISODES

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


def is_current(entry: Mapping[str, Any], identity: Identity = installed_identity) -> bool:
    """Whether `entry` ran on the installed version and code of its env. Baselines
    are made from the installed code (the tests hold them to it)."""
    if entry.get("status") == "baseline":
        return True
    installed = identity(str(entry.get("env_id")))
    return installed is not None and installed == (entry.get("env_version"), entry.get("env_hash"))


def _bound(pair: Any) -> float:
    if isinstance(pair, list | tuple) and len(pair) == 2:
        try:
            low = float(pair[0])
        except (TypeError, ValueError):
            return -math.inf
        return low if math.isfinite(low) else -math.inf
    return -math.inf


def unranked_reason(
    entry: Mapping[str, Any], identity: Identity = installed_identity
) -> str | None:
    """Why `entry` does not rank on its track, or None when it ranks."""
    baseline = entry.get("status") == "baseline"
    if not baseline and not entry.get("verified"):
        return "not verified"
    if entry.get("settings"):
        return "custom settings"
    if not is_current(entry, identity):
        return "previous version"
    if not baseline and not entry.get("ticketed"):
        return "own seeds (no ticket)"
    episodes = entry.get("episodes")
    if not isinstance(episodes, int) or episodes < MIN_RANKED_EPISODES:
        return f"provisional: {episodes} episodes, ranking needs {MIN_RANKED_EPISODES}"
    return None


def rank_key(entry: Mapping[str, Any]) -> tuple[float, float, str]:
    """Lower bounds of success and return, highest first; then by id for a fixed order."""
    return (-_bound(entry.get("success_ci95")), -_bound(entry.get("ci95")), str(entry.get("id")))


def rank_entries(
    entries: Sequence[Mapping[str, Any]], identity: Identity = installed_identity
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(ranked, unranked): copies of `entries` with ``rank`` (1, 2, ... per track:
    env id and difficulty) or ``unranked`` (the reason) added, ranked ones in rank
    order."""
    ranked: list[dict[str, Any]] = []
    unranked: list[dict[str, Any]] = []
    for entry in entries:
        reason = unranked_reason(entry, identity)
        (unranked if reason else ranked).append({**entry, "unranked": reason, "rank": None})
    ranked.sort(key=rank_key)
    places: dict[tuple[str, str], int] = {}
    for entry in ranked:
        track = (str(entry.get("env_id")), str(entry.get("difficulty")))
        places[track] = entry["rank"] = places.get(track, 0) + 1
    return ranked, unranked
