"""Verification off the request path: worker processes replay submissions.

`VerificationQueue` owns a process pool. The server stores an upload as
``pending`` and hands its id and text to `VerificationQueue.submit`; a worker
process runs `verify_text` (``envgym.evaluation.verify.verify_submission``,
which replays every episode in the installed env), and the verdict is written
back from the pool's result thread: ``accepted`` with the figures recomputed
from the replayed episodes, or ``rejected`` with the reason and the episode it
concerns. Submissions still pending when a server stopped are queued again
when the next one starts (`VerificationQueue.requeue_pending`).

Workers are started with ``spawn``: the server runs threads (uvicorn's, the
database pool's), and forking a threaded process can copy a held lock.
"""

from __future__ import annotations

import json
import logging
import multiprocessing
import threading
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any

from envgym.leaderboard.db import Database, Submission, utcnow

__all__ = ["Outcome", "VerificationQueue", "verify_text"]

log = logging.getLogger("envgym.leaderboard")


@dataclass(frozen=True)
class Outcome:
    """What a worker made of one submission (picklable: it crosses processes)."""

    accepted: bool
    reason: str | None
    episode: int | None
    checked_episodes: int
    #: recomputed from the replayed episodes; only for accepted submissions
    summary: dict[str, Any] | None = None


def verify_text(text: str) -> Outcome:
    """Verify one uploaded results file (JSON text); runs in a worker process."""
    try:
        results = json.loads(text)
    except json.JSONDecodeError as exc:  # the server checks this too; a file is never trusted
        return Outcome(False, f"not valid JSON: {exc}", None, 0)
    # Imported here: it pulls in every env, which only the workers need.
    from envgym.evaluation.summary import summarize
    from envgym.evaluation.verify import verify_submission

    verdict = verify_submission(results)
    summary = summarize(results["episodes"]) if verdict.accepted else None
    return Outcome(
        verdict.accepted, verdict.reason, verdict.episode, verdict.checked_episodes, summary
    )


class VerificationQueue:
    """A pool of `workers` processes verifying submissions of `db`, one at a time each."""

    def __init__(self, db: Database, workers: int = 2) -> None:
        if workers < 1:
            raise ValueError(f"workers must be at least 1, not {workers}")
        self.db = db
        self.workers = workers
        self._lock = threading.Lock()
        self._pool: ProcessPoolExecutor | None = None
        self._closed = False

    def _executor(self) -> ProcessPoolExecutor:
        with self._lock:
            if self._pool is None:
                context = multiprocessing.get_context("spawn")
                self._pool = ProcessPoolExecutor(self.workers, mp_context=context)
            return self._pool

    def submit(self, submission_id: int, text: str | None = None) -> None:
        """Queue submission `submission_id` (its text, else read from the database)."""
        if self._closed:
            return  # left pending; the next server queues it again
        if text is None:
            text = self._read_text(submission_id)
            if text is None:
                return
        try:
            future = self._executor().submit(verify_text, text)
        except (BrokenProcessPool, RuntimeError):  # a worker died; start a fresh pool
            self._reset_pool()
            if self._closed:
                return
            future = self._executor().submit(verify_text, text)
        future.add_done_callback(lambda done: self._record(submission_id, text, done))

    def requeue_pending(self) -> int:
        """Queue every submission left pending (by a server that stopped); return how many."""
        ids = self.db.pending_ids()
        for submission_id in ids:
            self.submit(submission_id)
        if ids:
            log.info("re-queued %d pending submissions", len(ids))
        return len(ids)

    def close(self) -> None:
        """Stop the workers; queued and running submissions stay pending in the database."""
        self._closed = True
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)

    def _reset_pool(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    def _read_text(self, submission_id: int) -> str | None:
        with self.db.sessions() as session:
            submission = session.get(Submission, submission_id)
            return None if submission is None else submission.results_json

    def _record(self, submission_id: int, text: str, future: Future[Outcome]) -> None:
        """Write a finished verification back (runs on the pool's result thread)."""
        if future.cancelled():
            return  # the server is stopping; it stays pending
        exc = future.exception()
        if isinstance(exc, BrokenProcessPool):
            # A worker died (killed, out of memory) with this one or a neighbour in
            # hand: retry on a fresh pool unless the server is stopping.
            if not self._closed:
                log.warning("a verification worker died; retrying submission %d", submission_id)
                self._reset_pool()
                threading.Thread(target=self.submit, args=(submission_id, text)).start()
            return
        if exc is not None:
            log.error("verifying submission %d failed", submission_id, exc_info=exc)
            outcome = Outcome(
                False,
                f"the verifier failed on this file ({type(exc).__name__}: {exc}); "
                "check that it was written by `envgym eval` with this envgym version",
                None,
                0,
            )
        else:
            outcome = future.result()
        try:
            _write_outcome(self.db, submission_id, outcome)
        except Exception:  # the database went away; the next server re-queues it
            log.exception("could not record the verdict of submission %d", submission_id)


def _write_outcome(db: Database, submission_id: int, outcome: Outcome) -> None:
    with db.session() as session:
        submission = session.get(Submission, submission_id)
        if submission is None or submission.status != "pending":
            return
        submission.status = "accepted" if outcome.accepted else "rejected"
        submission.reason = outcome.reason
        submission.episode = outcome.episode
        submission.checked_episodes = outcome.checked_episodes
        submission.verified_at = utcnow()
        if outcome.summary is not None:
            summary = outcome.summary
            submission.num_episodes = int(summary["episodes"])
            submission.success_rate = float(summary["success_rate"])
            submission.mean_return = float(summary["mean_return"])
            submission.ci95 = [float(x) for x in summary["ci95"]]
            if summary.get("success_ci95") is not None:
                submission.success_ci95 = [float(x) for x in summary["success_ci95"]]
