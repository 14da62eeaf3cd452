"""Verification on a budget: a hostile file cannot hold a worker for long, make
the verifier replay without end, or keep other submitters waiting
(`envgym.leaderboard.worker`, `envgym.evaluation.verify.MAX_TURNS_PER_FILE`).

Real worker processes and a real database: SQLite, and PostgreSQL when
``ENVGYM_TEST_POSTGRES_URL`` is set (skipped otherwise, unless
``ENVGYM_REQUIRE_POSTGRES=1``, which makes that a failure).

The queue is driven directly (as the server drives it). The slow file is a
track's run (it would pass the server's upload check too): a Code-v0 episode
whose every reply runs ``while True: pass``, so each turn's replay costs the
sandbox's whole timeout (10 s) and the file minutes. It needs a sandbox
(docker or bwrap, as CI provides).
"""

# The db_url fixture is imported from test_leaderboard_server; a test taking it as a
# parameter reads to ruff as a redefinition.
# ruff: noqa: F811
from __future__ import annotations

import copy
import json
import logging
import os
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("sqlalchemy")

from sandbox_backends import require_backend  # noqa: E402
from sqlalchemy import delete, select  # noqa: E402
from test_leaderboard_server import ENV_ID, db_url, new_token  # noqa: E402, F401
from test_verify_results import forge  # noqa: E402

import envgym.leaderboard  # noqa: E402
from envgym.evaluation import evaluate, summarize, verify_submission  # noqa: E402
from envgym.evaluation.verify import MAX_TURNS_PER_FILE  # noqa: E402
from envgym.leaderboard.db import Database, Submission, Submitter  # noqa: E402
from envgym.leaderboard.worker import VerificationQueue  # noqa: E402
from envgym.sandbox.backends import _bwrap_ready, _docker_ready  # noqa: E402

CODE = "envgym/Code-v0"
LOOP = "<python>\nwhile True:\n    pass\n</python>"
#: The budget the tests give one submission, in seconds.
BUDGET_S = 2.0
#: How far past the budget a killed verification may end: a generous bound that
#: still proves the kill (the slow file's replay alone takes minutes).
SLACK_S = 30.0
#: Names of the submitters these tests make start with this.
PREFIX = "budget"


@pytest.fixture(scope="module")
def db(db_url: str) -> Iterator[Database]:
    database = Database(db_url)
    yield database
    # Slow files left pending would hold up the next server on this database
    # (the PostgreSQL one is shared with the other test modules): remove them.
    with database.session() as session:
        ours = select(Submitter.id).where(Submitter.name.startswith(f"{PREFIX}-"))
        session.execute(
            delete(Submission).where(
                Submission.status == "pending", Submission.submitter_id.in_(ours)
            )
        )
    database.close()


@pytest.fixture(scope="module")
def honest() -> str:
    """Three random-agent GuessNumber episodes: verified in milliseconds."""
    return json.dumps(evaluate(ENV_ID, "random", episodes=3, seed=0))


@pytest.fixture(scope="module")
def loop_run() -> dict[str, Any]:
    """One Code-v0 episode whose replies all loop forever (the figures agree with
    them: only replaying it finds out how long it takes)."""
    if _docker_ready() and _bwrap_ready():
        require_backend("docker")  # skips, or fails where CI requires sandboxes
    results = evaluate(CODE, "random", episodes=1, seed=0)
    for episode in results["episodes"]:
        turns = episode["turns"]
        episode.update(actions=[LOOP] * turns, rewards=[0.0] * turns, success=False)
        episode.update(terminated=True, truncated=False, **{"return": 0.0})
    results["summary"] = summarize(results["episodes"])
    return results


def slow_file(loop_run: dict[str, Any], tag: int) -> str:
    """`loop_run` as a file of its own (`tag` names its claimed model)."""
    slow = copy.deepcopy(loop_run)
    slow["agent"]["model"] = f"slow-{tag}"
    return json.dumps(slow)


def new_submitter(db: Database) -> int:
    name, _ = new_token(db, PREFIX)
    with db.sessions() as session:
        return session.scalars(select(Submitter.id).where(Submitter.name == name)).one()


def upload(queue: VerificationQueue, submitter_id: int, text: str) -> int:
    """Store `text` as a pending submission, as the server does, and queue it."""
    with queue.db.session() as session:
        submission = Submission(
            submitter_id=submitter_id,
            status="pending",
            env_id=json.loads(text)["env_id"],
            results_json=text,
        )
        session.add(submission)
        session.flush()
        submission_id = submission.id
    queue.submit(submission_id, submitter_id, text)
    return submission_id


def status(db: Database, submission_id: int) -> Submission:
    with db.sessions() as session:
        submission = session.get(Submission, submission_id)
        assert submission is not None
        return submission


def verdict(db: Database, submission_id: int, timeout_s: float = 120.0) -> Submission:
    """The submission once it has a verdict (or as it is at the deadline)."""
    deadline = time.monotonic() + timeout_s
    while True:
        submission = status(db, submission_id)
        if submission.status != "pending" or time.monotonic() > deadline:
            return submission
        time.sleep(0.05)


def worker_pid(queue: VerificationQueue, submission_id: int, *, not_pid: int | None = None) -> int:
    """The pid of the worker verifying `submission_id` (other than `not_pid`), once it is."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        pid = queue.stats().in_flight.get(submission_id)
        if pid is not None and pid != not_pid:
            return pid
        time.sleep(0.01)
    pytest.fail(f"submission {submission_id} was never handed to a worker")


def process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@contextmanager
def verification_queue(db: Database, budget_s: float = BUDGET_S) -> Iterator[VerificationQueue]:
    queue = VerificationQueue(db, workers=1, budget_s=budget_s)
    try:
        yield queue
    finally:
        queue.close()


def test_a_file_too_slow_to_verify_is_killed_at_the_budget_and_the_worker_replaced(
    db: Database, honest: str, loop_run: dict, caplog: pytest.LogCaptureFixture
) -> None:
    who = new_submitter(db)
    caplog.set_level(logging.WARNING, logger="envgym.leaderboard")
    with verification_queue(db) as queue:
        slow_id = upload(queue, who, slow_file(loop_run, tag=101))
        slow_pid = worker_pid(queue, slow_id)
        started = time.monotonic()
        slow = verdict(db, slow_id)
        took = time.monotonic() - started
        assert slow.status == "rejected", slow.reason
        assert slow.reason.startswith("too slow to verify") and f"{BUDGET_S:g} s" in slow.reason
        assert "split the run" in slow.reason
        assert took < BUDGET_S + SLACK_S, f"the verdict took {took:.1f} s: no kill at the budget"
        assert not process_exists(slow_pid), "the worker past its budget still runs"
        assert any("budget" in r.getMessage() for r in caplog.records)

        # The replacement worker verifies the next honest file.
        honest_id = upload(queue, who, honest)
        accepted = verdict(db, honest_id)
        assert accepted.status == "accepted", accepted.reason
        assert queue.stats().timed_out == 1


def test_the_turn_cap_rejects_an_over_long_file_before_any_replay(
    db: Database, honest: str
) -> None:
    def lengthen(results: dict[str, Any]) -> None:
        # One episode of more replies than a file may hold, its figures kept consistent.
        replies = MAX_TURNS_PER_FILE + 1
        episode = results["episodes"][0]
        episode.update(actions=["<answer>1</answer>"] * replies, rewards=[0.0] * replies)
        episode.update(turns=replies, success=False)
        episode["return"] = 0.0

    over_long = forge(json.loads(honest), lengthen)
    verdict_here = verify_submission(over_long)
    assert not verdict_here.accepted and verdict_here.checked_episodes == 0
    assert f"{MAX_TURNS_PER_FILE:,}" in verdict_here.reason
    assert "split the run into several files" in verdict_here.reason

    with verification_queue(db) as queue:
        rejected = verdict(db, upload(queue, new_submitter(db), json.dumps(over_long)))
    assert rejected.status == "rejected" and rejected.reason == verdict_here.reason


def test_the_turn_cap_leaves_every_committed_baseline_a_wide_margin() -> None:
    folder = Path(envgym.leaderboard.__file__).parent / "baselines"
    files = sorted(folder.glob("*.json"))
    assert files
    most = max(sum(len(e["actions"]) for e in json.loads(f.read_text())["episodes"]) for f in files)
    # A baseline run of 50 times as many episodes would still fit.
    assert most * 50 <= MAX_TURNS_PER_FILE


def test_one_submitters_slow_files_do_not_hold_up_another_submitter(
    db: Database, honest: str, loop_run: dict
) -> None:
    hostile, patient = new_submitter(db), new_submitter(db)
    with verification_queue(db) as queue:
        slow_ids = [upload(queue, hostile, slow_file(loop_run, 200 + i)) for i in range(3)]
        honest_id = upload(queue, patient, honest)
        accepted = verdict(db, honest_id, timeout_s=60)
        assert accepted.status == "accepted", accepted.reason
        # Verified after the first slow file, before the second one could end.
        assert status(db, slow_ids[0]).status == "rejected"
        assert [status(db, i).status for i in slow_ids[1:]] == ["pending", "pending"]
    # Closing kills the replay in progress and leaves what was queued pending ...
    assert [status(db, i).status for i in slow_ids[1:]] == ["pending", "pending"]
    # ... for the next server to queue again.
    with verification_queue(db) as restarted:
        assert restarted.requeue_pending() >= 2
        stats = restarted.stats()
        queued = {*stats.in_flight, *(i for ids in stats.waiting.values() for i in ids)}
        assert set(slow_ids[1:]) <= queued


def test_a_worker_killed_from_outside_is_replaced_and_the_file_retried_once(
    db: Database, honest: str, loop_run: dict
) -> None:
    who = new_submitter(db)
    with verification_queue(db, budget_s=4.0) as queue:
        # Killed once: retried on a fresh worker, where it runs into the budget.
        once = upload(queue, who, slow_file(loop_run, tag=301))
        first = worker_pid(queue, once)
        os.kill(first, signal.SIGKILL)
        worker_pid(queue, once, not_pid=first)  # retried
        retried = verdict(db, once)
        assert retried.status == "rejected" and retried.reason.startswith("too slow to verify")

        # Killed twice: rejected with what happened, not retried forever.
        twice = upload(queue, who, slow_file(loop_run, tag=302))
        first = worker_pid(queue, twice)
        os.kill(first, signal.SIGKILL)
        os.kill(worker_pid(queue, twice, not_pid=first), signal.SIGKILL)
        died = verdict(db, twice)
        assert died.status == "rejected" and "died twice" in died.reason, died.reason
        assert queue.stats().worker_deaths == 3

        # The queue keeps working.
        accepted = verdict(db, upload(queue, who, honest))
        assert accepted.status == "accepted", accepted.reason
