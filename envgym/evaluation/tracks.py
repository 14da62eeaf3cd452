"""Leaderboard tracks and the seeds kept for testing.

A track is one env at one level as its preset defines it: (env id, env
version, difficulty), and for a game the seat the agent plays
(`TRACK_SETTINGS`: playing first and playing second are two tracks), with no
other setting. A ranked leaderboard run is a run on a track, on seeds the
board issued (a ticket), with at least `MIN_RANKED_EPISODES` episodes.
Settings that change the task (sizes, holes, turns, opponents, corpora,
timeouts...) are therefore never the submitter's: a run that sets any of them
is not a track's run.

The board draws a ticket's base seed from `TEST_SEEDS`, a range no training
run may use: `check_training_seeds` refuses it (the reference trainers call
it), so a model is never trained on the seeds it is ranked on.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "MIN_RANKED_EPISODES",
    "MAX_TICKET_EPISODES",
    "TEST_SEEDS",
    "TRACK_SETTINGS",
    "check_training_seeds",
    "is_test_seed",
    "track_problem",
]

#: Seeds kept for leaderboard tickets: 2**40 .. 2**41 - 1.
TEST_SEEDS = range(2**40, 2**41)
#: Below this many episodes a run is shown as provisional and not ranked.
MIN_RANKED_EPISODES = 20
#: The most episodes one ticket (and so one ranked file) covers.
MAX_TICKET_EPISODES = 1000
#: Settings that pick one of a level's tracks instead of changing its task: the
#: seat of a game (first or second to play). Each value is its own track.
TRACK_SETTINGS = ("seat",)


def is_test_seed(seed: int) -> bool:
    """Whether `seed` lies in the range kept for leaderboard tickets."""
    return seed in TEST_SEEDS


def check_training_seeds(first: int, count: int = 1, *, what: str = "training") -> None:
    """Raise ValueError if seeds ``first .. first + count - 1`` touch `TEST_SEEDS`."""
    last = first + max(count, 1) - 1
    if first <= TEST_SEEDS[-1] and last >= TEST_SEEDS[0]:
        raise ValueError(
            f"{what} seeds {first} .. {last} reach the seeds kept for leaderboard tests "
            f"({TEST_SEEDS[0]} .. {TEST_SEEDS[-1]}); start below {TEST_SEEDS[0] - count}"
        )


def track_problem(env_kwargs: Mapping[str, Any] | None) -> str | None:
    """Why a run made with `env_kwargs` is not a track's run, or None if it is.

    A track fixes every setting but the difficulty and the `TRACK_SETTINGS`
    (whole numbers): the rest are the preset's.
    """
    kwargs = env_kwargs or {}
    extra = sorted(k for k in kwargs if k != "difficulty" and k not in TRACK_SETTINGS)
    if extra:
        return (
            f"env_kwargs sets {', '.join(extra)}; a ranked run sets only the difficulty (and "
            "a game's seat): the level's own settings are the track's, so re-run envgym eval "
            "without them"
        )
    for name in TRACK_SETTINGS:
        value = kwargs.get(name)
        if name in kwargs and (isinstance(value, bool) or not isinstance(value, int)):
            return f"env_kwargs.{name} is {value!r}; it picks a track by a whole number"
    return None
