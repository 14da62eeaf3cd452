"""The leaderboard server end to end: a real server on 127.0.0.1, real verification
in worker processes, against SQLite and (when ``ENVGYM_TEST_POSTGRES_URL`` is
set, as ``.ci/run`` does with ``scripts/postgres.sh``) PostgreSQL.

Without that variable the PostgreSQL half is skipped, unless
``ENVGYM_REQUIRE_POSTGRES=1``, which makes that a failure.
"""

from __future__ import annotations

import copy
import json
import socket
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from postgres_server import postgres_url

pytest.importorskip("sqlalchemy")
httpx = pytest.importorskip("httpx")

from sqlalchemy import func, select  # noqa: E402

from envgym.cli import main  # noqa: E402
from envgym.evaluation import evaluate  # noqa: E402
from envgym.leaderboard.app import LeaderboardServer  # noqa: E402
from envgym.leaderboard.db import Database, Submission, Submitter  # noqa: E402
from envgym.leaderboard.tokens import create_token, revoke_token  # noqa: E402

ENV_ID = "envgym/GuessNumber-v0"


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path_factory.mktemp('leaderboard') / 'lb.db'}"
    return postgres_url()


@pytest.fixture(scope="module")
def db(db_url: str) -> Any:
    database = Database(db_url)
    yield database
    database.close()


@pytest.fixture(scope="module")
def server(db_url: str) -> Any:
    with LeaderboardServer(db_url, workers=2) as running:
        yield running


@pytest.fixture(scope="module")
def results() -> dict[str, Any]:
    return evaluate(ENV_ID, "random", episodes=3, seed=0)


def new_token(db: Database, prefix: str = "tester") -> tuple[str, str]:
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"  # unique: the PostgreSQL database is reused
    return name, create_token(db, name)


def unique(results: dict[str, Any]) -> dict[str, Any]:
    """A copy of `results` that is a different file (the board answers the same
    file twice with its first submission): the agent's claimed model differs."""
    copied = copy.deepcopy(results)
    copied["agent"]["model"] = uuid.uuid4().hex
    return copied


def post(url: str, token: str | None, body: Any) -> httpx.Response:
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return httpx.post(f"{url}/api/submissions", content=content, headers=headers, timeout=60)


def final_state(
    url: str, submission_id: int, token: str | None = None, timeout_s: float = 120.0
) -> dict[str, Any]:
    """The submission's state once verified; `token`: its submitter's, which a
    pending or rejected submission needs to be seen at all."""
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    deadline = time.monotonic() + timeout_s
    while True:
        response = httpx.get(f"{url}/api/submissions/{submission_id}", headers=headers, timeout=30)
        state = response.json() if response.status_code == 200 else {"status": "hidden"}
        if state["status"] != "pending" or time.monotonic() > deadline:
            return state
        time.sleep(0.1)


def test_a_valid_file_is_accepted_and_listed(server: Any, db: Database, results: dict) -> None:
    _, token = new_token(db)
    results = unique(results)
    response = post(server.url, token, results)
    assert response.status_code == 202, response.text
    assert response.json()["status"] == "pending"
    submission_id = response.json()["id"]
    state = final_state(server.url, submission_id, token)
    assert state["status"] == "accepted", state
    assert state["reason"] is None and state["checked_episodes"] == 3
    listed = {e["id"]: e for e in httpx.get(f"{server.url}/api/results").json()}
    entry = listed[submission_id]
    assert entry["verified"] and entry["env_id"] == ENV_ID and entry["episodes"] == 3
    assert entry["success_rate"] == results["summary"]["success_rate"]
    page = httpx.get(f"{server.url}/submissions/{submission_id}/episodes/0")
    assert page.status_code == 200 and results["episodes"][0]["actions"][0] in page.text


def test_forged_files_are_rejected_with_the_reason(
    server: Any, db: Database, results: dict
) -> None:
    _, token = new_token(db)
    inflated = unique(results)
    inflated["summary"]["success_rate"] = 1.0
    altered = unique(results)
    # Moved between two turns: the return and the summary still add up.
    altered["episodes"][1]["rewards"][0] += 1.0
    altered["episodes"][1]["rewards"][1] -= 1.0
    ids = [post(server.url, token, forged).json()["id"] for forged in (inflated, altered)]
    inflated_state, altered_state = (final_state(server.url, i, token) for i in ids)
    assert inflated_state["status"] == "rejected"
    assert "success_rate" in inflated_state["reason"]
    assert altered_state["status"] == "rejected"
    assert altered_state["episode"] == 1 and "reward" in altered_state["reason"]
    listed = {e["id"] for e in httpx.get(f"{server.url}/api/results").json()}
    assert not listed & set(ids)  # kept, but not on the board


def test_tokens_missing_unknown_and_revoked(server: Any, db: Database, results: dict) -> None:
    missing = post(server.url, None, results)
    assert missing.status_code == 401 and "Bearer" in missing.json()["detail"]
    assert post(server.url, "not-a-token", results).status_code == 401
    name, token = new_token(db)
    revoke_token(db, name)
    revoked = post(server.url, token, results)
    assert revoked.status_code == 403 and "revoked" in revoked.json()["detail"]


def test_the_api_says_which_routes_need_a_token_and_what_they_answer(server: Any) -> None:
    """The OpenAPI description (``/docs`` reads it) marks the upload and ticket
    routes as bearer-token ones and names each JSON answer's model; a token
    in another scheme, or an empty one, is no token."""
    spec = httpx.get(f"{server.url}/openapi.json", timeout=30).json()
    assert spec["components"]["securitySchemes"]["HTTPBearer"]["scheme"] == "bearer"
    for path in ("/api/submissions", "/api/tickets"):
        route = spec["paths"][path]["post"]
        assert route["security"] == [{"HTTPBearer": []}], path
        assert {"401", "403", "429"} <= set(route["responses"]), path
    results = spec["paths"]["/api/results"]["get"]["responses"]["200"]["content"]
    assert results["application/json"]["schema"]["items"]["$ref"].endswith("/Entry")
    for header in ("Basic dXNlcjpwYXNz", "Token abc", "Bearer"):
        refused = httpx.post(
            f"{server.url}/api/submissions", content=b"{}", headers={"Authorization": header}
        )
        assert refused.status_code == 401 and "no token" in refused.json()["detail"], header
        assert refused.headers["www-authenticate"] == "Bearer"


def test_a_100_mb_body_is_refused_before_it_is_sent(server: Any, db: Database) -> None:
    _, token = new_token(db)
    host, port = server.url.removeprefix("http://").split(":")
    size = 100 * 1024 * 1024
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        head = (
            f"POST /api/submissions HTTP/1.1\r\nHost: {host}\r\n"
            f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {size}\r\n\r\n"
        )
        # Only the headers and 64 KiB of the 100 MB: the answer comes without the rest.
        sock.sendall(head.encode() + b"[" * 65536)
        reply = b""
        while b"\r\n\r\n" not in reply or not reply.rstrip().endswith(b"}"):
            chunk = sock.recv(65536)
            if not chunk:
                break
            reply += chunk
    status_line, _, rest = reply.partition(b"\r\n")
    assert b" 413 " in status_line, reply[:300]
    assert b"limit" in rest.split(b"\r\n\r\n", 1)[1]


def test_the_rate_limit_answers_429_with_retry_after(server: Any, db: Database) -> None:
    _, token = new_token(db)
    for _ in range(30):  # not JSON: refused after counting, and never stored
        assert post(server.url, token, b"not json").status_code == 400
    limited = post(server.url, token, b"not json")
    assert limited.status_code == 429
    assert 0 < int(limited.headers["Retry-After"]) <= 60


def test_50_concurrent_submissions_land_exactly_once(
    server: Any, db: Database, results: dict
) -> None:
    # Five submitters, ten each: under the per-token limit of 30 a minute.
    tokens = [new_token(db, "crowd") for _ in range(5)]
    jobs = [tokens[i % 5][1] for i in range(50)]
    with ThreadPoolExecutor(50) as pool:
        responses = list(pool.map(lambda t: post(server.url, t, unique(results)), jobs))
    assert [r.status_code for r in responses] == [202] * 50
    ids = [r.json()["id"] for r in responses]
    assert len(set(ids)) == 50
    states = [final_state(server.url, i, tokens[k % 5][1]) for k, i in enumerate(ids)]
    assert {s["status"] for s in states} == {"accepted"}
    names = [name for name, _ in tokens]
    with db.sessions() as session:
        count = session.scalar(
            select(func.count())
            .select_from(Submission)
            .join(Submitter)
            .where(Submitter.name.in_(names))
        )
    assert count == 50


def test_pending_submissions_are_verified_when_a_server_restarts(
    db_url: str, db: Database, results: dict
) -> None:
    _, token = new_token(db)
    with LeaderboardServer(db_url, workers=0) as storing_only:
        submission_id = post(storing_only.url, token, unique(results)).json()["id"]
        state = final_state(storing_only.url, submission_id, token, timeout_s=0)
        assert state["status"] == "pending"
    with LeaderboardServer(db_url, workers=1) as restarted:
        assert final_state(restarted.url, submission_id, token)["status"] == "accepted"


def test_the_cli_creates_tokens_and_submits(
    server: Any, db_url: str, results: dict, tmp_path: Any, capsys: pytest.CaptureFixture
) -> None:
    name = f"cli-{uuid.uuid4().hex[:8]}"
    assert main(["leaderboard", "token", "create", name, "--db", db_url]) == 0
    token = capsys.readouterr().out.strip()
    assert len(token) >= 40
    good = tmp_path / "good.json"
    good.write_text(json.dumps(unique(results)))
    forged = unique(results)
    forged["summary"]["mean_return"] = 99.0
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(forged))
    submit = ["submit", "--server", server.url, "--token", token]

    assert main([*submit, str(good)]) == 0
    assert "accepted" in capsys.readouterr().out
    assert main([*submit, str(bad)]) == 1
    assert "rejected" in (out := capsys.readouterr().out) and "mean_return" in out
    assert main([*submit, str(good), "--no-wait"]) == 0
    submission_id = int(capsys.readouterr().out.strip())
    assert final_state(server.url, submission_id, token)["status"] == "accepted"

    not_results = tmp_path / "notes.json"
    not_results.write_text('{"hello": 1}')
    assert main([*submit, str(not_results)]) == 2
    assert "missing" in capsys.readouterr().err
    assert main(["submit", str(good), "--server", "http://127.0.0.1:9", "--token", token]) == 2
    assert "cannot reach" in capsys.readouterr().err

    assert main(["leaderboard", "token", "revoke", name, "--db", db_url]) == 0
    assert main([*submit, str(good)]) == 2
    assert "revoked" in capsys.readouterr().err
