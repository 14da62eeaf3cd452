"""The leaderboard's typed records: a leaderboard entry, and the header of an
uploaded results file as the server reads it.

`Entry` is what every page, the JSON API (``GET /api/results``, the entry in
``GET /api/submissions/{id}``), the static export and the ranking see, whether
it comes from a verified submission (`Submission.entry`) or a committed
baseline (`entry_from_results`). `UploadHeader` is the part of a results file
the server reads before verification (to store, check the track and claim a
ticket); the file as a whole is checked by the verifier against the results
file's JSON Schema (`envgym/schemas/results.schema.json`), its one definition.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["Entry", "UploadAgent", "UploadHeader", "as_entry"]


class Entry(BaseModel):
    """One row of the leaderboard: a verified submission or a committed baseline."""

    model_config = ConfigDict(extra="ignore")

    #: a submission's number, or a baseline's file stem
    id: int | str
    env_id: str
    difficulty: str | None = None
    #: the agent and model as their submitter claimed them
    agent: str | None = None
    model: str | None = None
    #: the env arguments besides the difficulty, ``k=v, ...`` (a game's seat)
    settings: str | None = None
    submitter: str | None = None
    episodes: int | None = None
    success_rate: float | None = None
    success_ci95: list[float] | None = None
    mean_return: float | None = None
    ci95: list[float] | None = None
    #: runs of each seed (``envgym eval --trials``); None or 1: one each
    trials: int | None = None
    #: pass^1 .. pass^trials (``{"1": ..., "2": ...}``) of a run of several trials
    pass_k: dict[str, float] | None = None
    created_at: str | None = None
    #: replayed and accepted by this server
    verified: bool = False
    #: "accepted", "baseline", "pending" or "rejected"
    status: str = "accepted"
    env_version: str | None = None
    env_hash: str | None = None
    #: the run's first seed
    seed: int | None = None
    #: the run played the seeds of a ticket the board issued
    ticketed: bool = False
    #: "the env's oracle" / "the random agent" when verification recognised the replies
    replies_label: str | None = None
    #: set by `envgym.leaderboard.ranking.rank_entries`: the place on its track...
    rank: int | None = None
    #: ...or why it does not rank
    unranked: str | None = None


def as_entry(entry: Entry | Mapping[str, Any]) -> Entry:
    """`entry` as an `Entry` (a mapping is validated; unknown keys are ignored)."""
    return entry if isinstance(entry, Entry) else Entry.model_validate(dict(entry))


class UploadAgent(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: str | None = None
    model: str | None = None

    @field_validator("name", "model", mode="before")
    @classmethod
    def _text(cls, value: Any) -> str | None:
        return value[:500] if isinstance(value, str) else None


class UploadHeader(BaseModel):
    """What the server reads of an upload before verification. Only types are
    checked here, leniently (a wrong type reads as missing): the worker's
    verification decides whether any of it is true."""

    model_config = ConfigDict(extra="ignore")

    env_id: str
    env_version: str | None = None
    env_hash: str | None = None
    env_kwargs: dict[str, Any] = Field(default_factory=dict)
    difficulty: str | None = None
    seed: int | None = None
    num_episodes: int | None = None
    trials: int | None = None
    agent: UploadAgent = Field(default_factory=UploadAgent)
    ticket: str | None = None
    #: how many episodes the file holds
    episode_count: int | None = None

    @field_validator("env_version", "env_hash", "difficulty", "ticket", mode="before")
    @classmethod
    def _short_text(cls, value: Any) -> str | None:
        return value[:500] if isinstance(value, str) else None

    @field_validator("seed", "num_episodes", "trials", mode="before")
    @classmethod
    def _whole(cls, value: Any) -> int | None:
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    @field_validator("env_kwargs", mode="before")
    @classmethod
    def _object(cls, value: Any) -> dict[str, Any]:
        return value if isinstance(value, dict) else {}

    @field_validator("agent", mode="before")
    @classmethod
    def _agent(cls, value: Any) -> Any:
        return value if isinstance(value, dict) else {}

    @classmethod
    def read(cls, results: Mapping[str, Any]) -> UploadHeader:
        """The header of a parsed upload (its ``env_id`` checked to be a string)."""
        episodes = results.get("episodes")
        return cls.model_validate(
            {
                **{k: v for k, v in results.items() if k != "episodes"},
                "episode_count": len(episodes) if isinstance(episodes, list) else None,
            }
        )

    @property
    def level(self) -> str | None:
        """The difficulty the header names, else the one in env_kwargs."""
        kwargs_level = self.env_kwargs.get("difficulty")
        return self.difficulty or (kwargs_level if isinstance(kwargs_level, str) else None)
