"""Verification off the request path: worker processes replay submissions, each on a budget.

The server stores an upload as ``pending`` and hands it to
`VerificationQueue.submit`; a worker process runs `verify_text`
(``envgym.evaluation.verify.verify_submission``, which replays every episode in
the installed env) and the verdict is written back: ``accepted`` with the
figures recomputed from the replayed episodes, or ``rejected`` with the reason
and the episode it concerns.

A file can be slow to replay on purpose (a code env's turns that each run to
the sandbox's timeout, a catalogue of a million products), so each submission
has a wall-clock budget (`DEFAULT_BUDGET_S`). Only killing its process stops a
replay, so the queue runs its own long-lived workers rather than a pool: each
imports envgym once and verifies one submission at a time over a pipe. A
submission past its budget is rejected as too slow to verify, and its worker
is killed and replaced (a sandbox it started goes too: a sandbox's runner exits
when its owner's pipes close). A worker that dies under
a submission (killed from outside, out of memory) gets it retried once on a
fresh worker; a second death rejects it.

The queue is fair: a submitter has at most one submission in verification,
and a free worker takes the oldest waiting submission of the submitter served
longest ago, so one submitter's slow files delay only their own.

Submissions still pending when a server stopped (queued, or in verification:
`VerificationQueue.close` kills the workers without a verdict) are queued
again when the next one starts (`VerificationQueue.requeue_pending`). Workers
are started with ``spawn``: the server runs threads (uvicorn's, the database
pool's), and forking a threaded process can copy a held lock.
"""

from __future__ import annotations

import contextlib
import json
import logging
import multiprocessing
import signal
import threading
from collections import deque
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any

from envgym.leaderboard.db import Database, EpisodeView, Submission, utcnow

__all__ = ["DEFAULT_BUDGET_S", "Outcome", "QueueStats", "VerificationQueue", "verify_text"]

log = logging.getLogger("envgym.leaderboard")

#: Seconds of wall-clock time one submission's verification may take.
DEFAULT_BUDGET_S = 300.0
#: Seconds a fresh worker may take to import envgym before it is given up on.
WORKER_START_S = 120.0
#: Longest wait, in seconds, between attempts to start a worker that keeps failing.
MAX_RESTART_DELAY_S = 60.0


@dataclass(frozen=True)
class Outcome:
    """What a worker made of one submission (picklable: it crosses processes)."""

    accepted: bool
    reason: str | None
    episode: int | None
    checked_episodes: int
    #: recomputed from the replayed episodes; only for accepted submissions
    summary: dict[str, Any] | None = None
    #: each episode's stored view (JSON) for its page, None past the bound; accepted only
    views: tuple[str | None, ...] = ()
    #: "the env's oracle" / "the random agent" when the replies are theirs
    replies_label: str | None = None


def verify_text(text: str) -> Outcome:
    """Verify one uploaded results file (JSON text); runs in a worker process."""
    try:
        results = json.loads(text)
    except json.JSONDecodeError as exc:  # the server checks this too; a file is never trusted
        return Outcome(False, f"not valid JSON: {exc}", None, 0)
    # Imported here: it pulls in every env, which only the workers need.
    from envgym.evaluation.summary import summarize
    from envgym.evaluation.verify import verify_submission
    from envgym.leaderboard.views import episode_views, replies_label

    verdict = verify_submission(results)
    if not verdict.accepted:
        return Outcome(False, verdict.reason, verdict.episode, verdict.checked_episodes)
    return Outcome(
        True,
        None,
        None,
        verdict.checked_episodes,
        summarize(results["episodes"]),
        tuple(episode_views(results)),
        replies_label(results),
    )


@dataclass(frozen=True)
class QueueStats:
    """A snapshot of a `VerificationQueue`."""

    #: submission id -> pid of the worker verifying it
    in_flight: dict[int, int]
    #: submitter id -> their waiting submission ids, oldest first
    waiting: dict[int, list[int]]
    #: submissions rejected for running past the budget, since the queue started
    timed_out: int
    #: workers that died under a submission (killed from outside, out of memory)
    worker_deaths: int


# ------------------------------------------------------------- the worker process
def _serve(conn: Connection) -> None:
    """A worker process: import envgym once, then verify each text the server sends."""
    # Ctrl-C in the server's terminal reaches this process too: the server
    # decides when workers stop (`VerificationQueue.close`), not the keyboard.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    import envgym.evaluation.verify  # noqa: F401 - paid once, before any budget runs

    conn.send(("ready", None))
    while True:
        try:
            text = conn.recv()
        except (EOFError, OSError):
            return  # the server is gone
        if text is None:
            return
        try:
            message: tuple[str, Any] = ("outcome", verify_text(text))
        except Exception as exc:
            message = ("error", f"{type(exc).__name__}: {exc}")
        conn.send(message)


class _Worker:
    """One worker process, seen from the server, and the pipe to it."""

    def __init__(self, context: Any) -> None:
        self.conn, child = context.Pipe()
        # Daemonic: an interpreter that exits without `close` terminates it
        # instead of waiting for it. (Replays start no multiprocessing children.)
        self.process = context.Process(
            target=_serve, args=(child,), name="envgym-verifier", daemon=True
        )
        self.process.start()
        child.close()
        self.pid: int = self.process.pid

    def receive(self, timeout_s: float) -> tuple[str, Any]:
        """The worker's next message, ``("timeout", None)`` or ``("died", exit code)``."""
        ready = wait([self.conn, self.process.sentinel], timeout_s)
        if not ready:
            return ("timeout", None)
        if self.conn in ready:
            with contextlib.suppress(EOFError, OSError):
                return self.conn.recv()
        self.process.join(5)
        return ("died", self.process.exitcode)

    def run(self, text: str, budget_s: float) -> tuple[str, Any]:
        """Verify `text`: ``("outcome", Outcome)``, ``("error", message)``,
        ``("timeout", None)`` (the worker is then killed) or ``("died", exit code)``."""
        try:
            self.conn.send(text)
        except (OSError, ValueError):  # it died while idle
            self.process.join(5)
            return ("died", self.process.exitcode)
        result = self.receive(budget_s)
        if result[0] == "timeout":
            self.kill()
        return result

    def kill(self) -> None:
        """Kill the worker (if it still runs) and wait for it to be gone."""
        self.process.kill()  # a no-op once it has exited
        self.process.join()
        self.conn.close()


# ------------------------------------------------------------- fair scheduling
@dataclass
class _Job:
    submission_id: int
    submitter_id: int
    #: the uploaded text; None: read it from the database when its turn comes
    text: str | None
    #: workers that died while verifying it
    deaths: int = 0


class _FairQueue:
    """Waiting jobs per submitter: at most one in flight per submitter, and a free
    worker serves the submitter served longest ago (never served: first)."""

    def __init__(self) -> None:
        self._ready = threading.Condition()
        self._waiting: dict[int, deque[_Job]] = {}
        self._busy: set[int] = set()  # submitters with a job in flight
        self._last_served: dict[int, int] = {}
        self._served = 0
        self._ids: set[int] = set()  # queued or in flight: never verified twice at once
        self.closed = False

    def put(self, job: _Job) -> None:
        with self._ready:
            if self.closed or job.submission_id in self._ids:
                return
            self._ids.add(job.submission_id)
            self._waiting.setdefault(job.submitter_id, deque()).append(job)
            self._ready.notify()

    def take(self) -> _Job | None:
        """The next job to verify, waiting for one; None once the queue is closed."""
        with self._ready:
            while not self.closed:
                free = [s for s in self._waiting if s not in self._busy]
                if free:
                    submitter = min(
                        free,
                        key=lambda s: (
                            self._last_served.get(s, -1),
                            self._waiting[s][0].submission_id,
                        ),
                    )
                    jobs = self._waiting[submitter]
                    job = jobs.popleft()
                    if not jobs:
                        del self._waiting[submitter]
                    self._busy.add(submitter)
                    self._last_served[submitter] = self._served
                    self._served += 1
                    return job
                self._ready.wait()
            return None

    def done(self, job: _Job, *, retry: bool = False) -> None:
        """`job` left its worker: finished, or (`retry`) first in line for another."""
        with self._ready:
            self._busy.discard(job.submitter_id)
            if retry and not self.closed:
                self._waiting.setdefault(job.submitter_id, deque()).appendleft(job)
            else:
                self._ids.discard(job.submission_id)
            self._ready.notify_all()

    def waiting(self) -> dict[int, list[int]]:
        with self._ready:
            return {s: [j.submission_id for j in jobs] for s, jobs in self._waiting.items()}

    def close(self) -> None:
        with self._ready:
            self.closed = True
            self._ready.notify_all()


# ------------------------------------------------------------- the queue
class VerificationQueue:
    """`workers` processes verifying submissions of `db`, one at a time each, each
    submission within `budget_s` seconds of wall-clock time."""

    def __init__(
        self, db: Database, workers: int = 2, *, budget_s: float = DEFAULT_BUDGET_S
    ) -> None:
        if workers < 1:
            raise ValueError(f"workers must be at least 1, not {workers}")
        if not budget_s > 0:
            raise ValueError(f"budget_s must be a positive number of seconds, not {budget_s}")
        self.db = db
        self.workers = workers
        self.budget_s = budget_s
        self._context = multiprocessing.get_context("spawn")
        self._jobs = _FairQueue()
        self._lock = threading.Lock()
        self._slots: list[threading.Thread] = []
        self._processes: dict[int, _Worker] = {}  # slot -> its worker
        self._in_flight: dict[int, int] = {}  # submission id -> worker pid
        self._stopping = threading.Event()
        self._timed_out = 0
        self._deaths = 0

    def submit(self, submission_id: int, submitter_id: int, text: str | None = None) -> None:
        """Queue submission `submission_id` of `submitter_id` (its text, else read from
        the database when its turn comes)."""
        if self._stopping.is_set():
            return  # left pending; the next server queues it again
        self._start_slots()
        self._jobs.put(_Job(submission_id, submitter_id, text))

    def requeue_pending(self) -> int:
        """Queue every submission left pending (by a server that stopped); return how many."""
        rows = self.db.pending()
        for submission_id, submitter_id in rows:
            self.submit(submission_id, submitter_id)
        if rows:
            log.info("re-queued %d pending submissions", len(rows))
        return len(rows)

    def stats(self) -> QueueStats:
        """What is being verified, by which worker, and who is waiting."""
        with self._lock:
            in_flight = dict(self._in_flight)
            timed_out, deaths = self._timed_out, self._deaths
        return QueueStats(in_flight, self._jobs.waiting(), timed_out, deaths)

    def close(self) -> None:
        """Stop the workers at once; queued and running submissions stay pending in the
        database (a replay in progress is killed, not waited for: it may take the budget)."""
        with self._lock:
            self._stopping.set()
            workers = list(self._processes.values())
            slots = list(self._slots)
        self._jobs.close()
        for worker in workers:
            worker.process.kill()  # its slot thread waits for it
        for slot in slots:
            slot.join(timeout=30)

    # -- one thread per worker: start it, feed it, replace it
    def _start_slots(self) -> None:
        with self._lock:
            if self._slots or self._stopping.is_set():
                return
            for index in range(self.workers):
                slot = threading.Thread(
                    target=self._run_slot, args=(index,), name=f"envgym-verify-{index}", daemon=True
                )
                self._slots.append(slot)
                slot.start()

    def _run_slot(self, index: int) -> None:
        delay = 1.0
        while not self._stopping.is_set():
            worker = self._start_worker(index)
            if worker is None:
                self._stopping.wait(delay)  # the machine may be out of memory: back off
                delay = min(delay * 2, MAX_RESTART_DELAY_S)
                continue
            delay = 1.0
            while (job := self._jobs.take()) is not None:
                try:
                    alive = self._verify(worker, job)
                except Exception:  # a bug or the database: never lose the slot over it
                    log.exception(
                        "verifying submission %d failed; it stays pending", job.submission_id
                    )
                    self._jobs.done(job)
                    alive = False
                if not alive:
                    break  # killed, dead or in doubt: start a fresh one
            worker.kill()
            with self._lock:
                self._processes.pop(index, None)

    def _start_worker(self, index: int) -> _Worker | None:
        with self._lock:  # `close` sees every worker started before it, and stops the rest
            if self._stopping.is_set():
                return None
            worker = _Worker(self._context)
            self._processes[index] = worker
        kind, value = worker.receive(WORKER_START_S)
        if kind == "ready":
            return worker
        worker.kill()
        if not self._stopping.is_set():
            log.error("a verification worker did not start (%s %s); trying again", kind, value)
        return None

    def _verify(self, worker: _Worker, job: _Job) -> bool:
        """Verify `job` on `worker` and record the verdict; False if the worker is gone."""
        text = job.text if job.text is not None else self._read_text(job.submission_id)
        if text is None:  # gone from the database, or no longer pending
            self._jobs.done(job)
            return True
        job.text = text
        with self._lock:
            self._in_flight[job.submission_id] = worker.pid
        try:
            kind, value = worker.run(text, self.budget_s)
        finally:
            with self._lock:
                self._in_flight.pop(job.submission_id, None)
        if self._stopping.is_set() and kind in ("timeout", "died"):
            self._jobs.done(job)  # killed by `close`: it stays pending
            return False
        if kind == "outcome":
            outcome = value
        elif kind == "error":
            log.error("verifying submission %d failed: %s", job.submission_id, value)
            outcome = Outcome(
                False,
                f"the verifier failed on this file ({value}); check that it was written by "
                "`envgym eval` with this envgym version",
                None,
                0,
            )
        elif kind == "timeout":
            with self._lock:
                self._timed_out += 1
            log.warning(
                "submission %d ran past its %g s verification budget; killed worker %d",
                job.submission_id,
                self.budget_s,
                worker.pid,
            )
            outcome = Outcome(
                False,
                f"too slow to verify: replaying this file took longer than the "
                f"{self.budget_s:g} s one submission may take; split the run into several "
                "files of fewer episodes (consecutive seeds) and submit each",
                None,
                0,
            )
        else:  # died: killed from outside, out of memory
            job.deaths += 1
            with self._lock:
                self._deaths += 1
            if job.deaths == 1:
                log.warning(
                    "verification worker %d died (exit code %s) verifying submission %d; "
                    "retrying it on a fresh worker",
                    worker.pid,
                    value,
                    job.submission_id,
                )
                self._jobs.done(job, retry=True)
                return False
            log.error(
                "verification worker %d died (exit code %s) verifying submission %d again; "
                "rejecting it",
                worker.pid,
                value,
                job.submission_id,
            )
            outcome = Outcome(
                False,
                "the verifier's worker process died twice while replaying this file (killed "
                "or out of memory); split the run into several files of fewer episodes "
                "(consecutive seeds) and submit each",
                None,
                0,
            )
        try:
            _write_outcome(self.db, job.submission_id, outcome)
        except Exception:  # the database went away; the next server re-queues it
            log.exception("could not record the verdict of submission %d", job.submission_id)
        self._jobs.done(job)
        return kind in ("outcome", "error")

    def _read_text(self, submission_id: int) -> str | None:
        """The text of a submission still pending (another server may have verified it)."""
        with self.db.sessions() as session:
            submission = session.get(Submission, submission_id)
            if submission is None or submission.status != "pending":
                return None
            return submission.results_json


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
        if not outcome.accepted:
            submission.results_json = ""  # a rejected file keeps its header and reason only
        submission.replies_label = outcome.replies_label
        for index, view in enumerate(outcome.views):
            if view is not None:
                session.add(EpisodeView(submission_id=submission_id, episode=index, data=view))
        if outcome.summary is not None:
            summary = outcome.summary
            submission.num_episodes = int(summary["episodes"])
            submission.success_rate = float(summary["success_rate"])
            submission.mean_return = float(summary["mean_return"])
            submission.ci95 = [float(x) for x in summary["ci95"]]
            if summary.get("success_ci95") is not None:
                submission.success_ci95 = [float(x) for x in summary["success_ci95"]]
            pass_k = summary.get("pass_k")
            # What the replayed episodes hold: a run of one trial has no pass^k.
            submission.trials = len(pass_k) if pass_k else 1
            submission.pass_k = {k: float(v) for k, v in pass_k.items()} if pass_k else None
