"""The leaderboard's storage: submitters and their submissions, with SQLAlchemy 2.0.

A SQLite file by default (``sqlite:///leaderboard.db``; a plain path means
that too) or PostgreSQL by URL (``postgresql+psycopg://user:pw@host/db``).
`Database` makes the engine, creates the tables if they are missing, and hands
out sessions; `Submitter` and `Submission` are the two tables. Every
submission is kept, whatever its verdict: ``pending`` until a worker has
replayed it, then ``accepted`` (with the figures the server recomputed) or
``rejected`` (with the reason).
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal

from sqlalchemy import (
    JSON,
    BigInteger,
    DateTime,
    Float,
    ForeignKey,
    Integer,
    String,
    Text,
    create_engine,
    event,
    inspect,
    select,
)
from sqlalchemy import text as sql_text
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import ArgumentError
from sqlalchemy.orm import (
    DeclarativeBase,
    Mapped,
    Session,
    mapped_column,
    relationship,
    sessionmaker,
)

from envgym.leaderboard.models import Entry

__all__ = [
    "Base",
    "Database",
    "DatabaseError",
    "Status",
    "EpisodeView",
    "Submission",
    "Submitter",
    "Ticket",
    "database_url",
    "iso_utc",
    "utcnow",
]

Status = Literal["pending", "accepted", "rejected"]


class DatabaseError(ValueError):
    """A database URL that cannot be used; the message says what to pass instead."""


def utcnow() -> _dt.datetime:
    """Now, in UTC, with its time zone (stored as such in both databases)."""
    return _dt.datetime.now(_dt.UTC)


class Base(DeclarativeBase):
    pass


class Submitter(Base):
    """Someone allowed to submit; only the sha256 of their token is stored."""

    __tablename__ = "submitters"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(100), unique=True)
    #: hex sha256 of the token; indexed, since a request finds its submitter by it
    token_hash: Mapped[str] = mapped_column(String(64), unique=True, index=True)
    created_at: Mapped[_dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    revoked_at: Mapped[_dt.datetime | None] = mapped_column(DateTime(timezone=True))

    submissions: Mapped[list[Submission]] = relationship(back_populates="submitter")


class Ticket(Base):
    """Seeds the board issued to a submitter for one run on one track. A ranked
    submission names its ticket; each ticket is used at most once."""

    __tablename__ = "tickets"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    #: what the submitter quotes (random, so tickets cannot be guessed)
    code: Mapped[str] = mapped_column(String(64), unique=True, index=True)
    submitter_id: Mapped[int] = mapped_column(ForeignKey("submitters.id"), index=True)
    env_id: Mapped[str] = mapped_column(String(200))
    env_version: Mapped[str] = mapped_column(String(200))
    difficulty: Mapped[str] = mapped_column(String(100))
    #: the track settings besides the difficulty (a game's seat); None: none
    settings: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    seed: Mapped[int] = mapped_column(BigInteger)
    num_episodes: Mapped[int] = mapped_column(Integer)
    issued_at: Mapped[_dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    expires_at: Mapped[_dt.datetime] = mapped_column(DateTime(timezone=True))
    #: the submission that used it; None while unused
    submission_id: Mapped[int | None] = mapped_column(ForeignKey("submissions.id"))


class Submission(Base):
    """One uploaded results file and what verification made of it."""

    __tablename__ = "submissions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    submitter_id: Mapped[int] = mapped_column(ForeignKey("submitters.id"), index=True)
    status: Mapped[str] = mapped_column(String(16), default="pending", index=True)
    reason: Mapped[str | None] = mapped_column(Text)
    #: the episode index the reason concerns, when it concerns one
    episode: Mapped[int | None] = mapped_column(Integer)
    checked_episodes: Mapped[int | None] = mapped_column(Integer)
    # What the file's header says; shown for pending and rejected ones too.
    env_id: Mapped[str] = mapped_column(String(200), index=True)
    env_version: Mapped[str | None] = mapped_column(String(200))
    difficulty: Mapped[str | None] = mapped_column(String(100))
    agent: Mapped[str | None] = mapped_column(String(500))
    model: Mapped[str | None] = mapped_column(String(500))
    #: the env arguments besides the difficulty ("k=v, ..."), shown with the agent
    settings: Mapped[str | None] = mapped_column(String(500))
    num_episodes: Mapped[int | None] = mapped_column(Integer)
    env_hash: Mapped[str | None] = mapped_column(String(80))
    #: the base seed of the run
    seed: Mapped[int | None] = mapped_column(BigInteger)
    #: the ticket whose seeds the run used; None: the submitter's own seeds (never ranked)
    ticket_id: Mapped[int | None] = mapped_column(Integer)
    #: hex sha256 of the uploaded bytes: the same file twice is one submission
    body_sha256: Mapped[str | None] = mapped_column(String(64), unique=True)
    #: bytes of the upload, counted against the submitter's quota
    body_bytes: Mapped[int | None] = mapped_column(Integer)
    #: what the replies are when verification recognised them ("the env's oracle", ...)
    replies_label: Mapped[str | None] = mapped_column(String(200))
    # The figures the server recomputed from the replayed episodes; set on acceptance.
    success_rate: Mapped[float | None] = mapped_column(Float)
    success_ci95: Mapped[list[float] | None] = mapped_column(JSON)
    mean_return: Mapped[float | None] = mapped_column(Float)
    ci95: Mapped[list[float] | None] = mapped_column(JSON)
    #: runs of each seed, as the header says (None: one); verification checks it
    trials: Mapped[int | None] = mapped_column(Integer)
    #: pass^1 .. pass^trials recomputed from the replayed episodes, for runs of several trials
    pass_k: Mapped[dict[str, float] | None] = mapped_column(JSON)
    created_at: Mapped[_dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    verified_at: Mapped[_dt.datetime | None] = mapped_column(DateTime(timezone=True))
    #: the uploaded file, as sent (JSON text); trajectories are read from it
    results_json: Mapped[str] = mapped_column(Text, deferred=True)

    submitter: Mapped[Submitter] = relationship(back_populates="submissions")

    def entry(self) -> Entry:
        """This submission as a leaderboard entry (what the pages and the API show)."""
        return Entry(
            id=self.id,
            env_id=self.env_id,
            difficulty=self.difficulty,
            agent=self.agent,
            model=self.model,
            settings=self.settings,
            submitter=self.submitter.name,
            env_version=self.env_version,
            env_hash=self.env_hash,
            seed=self.seed,
            ticketed=self.ticket_id is not None,
            replies_label=self.replies_label,
            episodes=self.num_episodes,
            success_rate=self.success_rate,
            success_ci95=self.success_ci95,
            mean_return=self.mean_return,
            ci95=self.ci95,
            trials=self.trials,
            pass_k=self.pass_k,
            created_at=iso_utc(self.created_at),
            verified=self.status == "accepted",
            status=self.status,
        )


class EpisodeView(Base):
    """What the agent saw in one episode of an accepted submission, replayed once
    by its verification worker and bounded (`envgym.leaderboard.views`): the
    trajectory page is made from it, so the web process never steps an env."""

    __tablename__ = "episode_views"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    submission_id: Mapped[int] = mapped_column(ForeignKey("submissions.id"), index=True)
    episode: Mapped[int] = mapped_column(Integer)
    #: JSON: observations, rewards, system_prompt, note
    data: Mapped[str] = mapped_column(Text)


def iso_utc(moment: _dt.datetime | None) -> str | None:
    if moment is None:
        return None
    if moment.tzinfo is None:  # SQLite gives back naive datetimes; they were stored in UTC
        moment = moment.replace(tzinfo=_dt.UTC)
    return moment.isoformat(timespec="seconds")


def database_url(text: str) -> str:
    """`text` as a SQLAlchemy URL: a URL as it is, a plain path as a SQLite file.

    ``postgresql://`` (no driver) uses psycopg 3, the driver the extra installs.
    """
    if "://" not in text:
        return f"sqlite:///{text}"
    if text.startswith(("postgresql://", "postgres://")):
        return "postgresql+psycopg://" + text.split("://", 1)[1]
    return text


class Database:
    """An engine on `url` with the tables created, and sessions on it.

    SQLite files run in WAL mode with a generous busy timeout, so the request
    threads and the thread that writes verdicts do not trip over each other.
    `session` (a write) takes SQLite's write lock when it begins; `sessions`
    (reads) never do, so page views do not queue behind one another.
    """

    def __init__(self, url: str) -> None:
        self.url = database_url(url)
        try:
            parsed = make_url(self.url)
        except ArgumentError:
            raise DatabaseError(
                f"{url!r} is not a database URL; pass sqlite:///PATH, a file path or "
                "postgresql+psycopg://USER:PASSWORD@HOST/DB"
            ) from None
        self.engine = _make_engine(parsed.drivername, self.url)
        try:
            Base.metadata.create_all(self.engine)
            _add_missing_columns(self.engine)
        except Exception as exc:  # OperationalError, a missing driver, ...
            self.engine.dispose()
            raise DatabaseError(
                f"cannot open the database {parsed.render_as_string(hide_password=True)}: "
                f"{str(exc).splitlines()[0]}"
            ) from exc
        #: sessions for reading (never holding SQLite's write lock)
        self.sessions = sessionmaker(
            self.engine.execution_options(envgym_read_only=True), expire_on_commit=False
        )
        self._writes = sessionmaker(self.engine, expire_on_commit=False)

    @contextmanager
    def session(self) -> Iterator[Session]:
        """A session that commits when the block ends cleanly and rolls back otherwise."""
        with self._writes() as session, session.begin():
            yield session

    def pending(self) -> list[tuple[int, int]]:
        """(id, submitter id) of the submissions still waiting for a verdict, oldest first."""
        query = select(Submission.id, Submission.submitter_id).where(Submission.status == "pending")
        with self.sessions() as session:
            return [(i, s) for i, s in session.execute(query.order_by(Submission.id))]

    def close(self) -> None:
        self.engine.dispose()


def _make_engine(driver: str, url: str) -> Engine:
    if not driver.startswith("sqlite"):
        # pool_pre_ping: a server restarted under us costs one retry, not an error page
        return create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=20)
    engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})

    @event.listens_for(engine, "connect")
    def _sqlite_pragmas(connection: Any, _record: Any) -> None:
        # SQLAlchemy's own BEGIN (below) replaces pysqlite's, which starts a
        # transaction only at the first write and so can fail to upgrade a read.
        connection.isolation_level = None
        cursor = connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin_immediate(connection: Any) -> None:
        # A write takes the write lock up front (waiting up to the timeout for
        # it): a read-then-write transaction in WAL mode cannot wait for it
        # later. A read needs no lock: WAL readers never block.
        if connection.get_execution_options().get("envgym_read_only"):
            connection.exec_driver_sql("BEGIN")
        else:
            connection.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


def _add_missing_columns(engine: Engine) -> None:
    """Add the columns a database made by an older envgym lacks. Every column added
    since the first release is nullable, so old rows stay valid (NULL: not recorded)."""
    # One connection for looking and altering: SQLite locks the file against a second.
    with engine.begin() as connection:
        inspector = inspect(connection)
        for table in Base.metadata.sorted_tables:
            have = {column["name"] for column in inspector.get_columns(table.name)}
            for column in table.columns:
                if column.name in have or not column.nullable:
                    continue
                kind = column.type.compile(dialect=engine.dialect)
                connection.execute(
                    sql_text(f"ALTER TABLE {table.name} ADD COLUMN {column.name} {kind}")
                )
