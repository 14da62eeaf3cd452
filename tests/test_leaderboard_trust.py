"""The leaderboard against a submitter who wants a top row without earning it,
end to end on a real server (SQLite, and PostgreSQL as in
tests/test_leaderboard_server.py): seeds the board issues, runs off a track,
one lucky episode, the same file twice, other people's tickets, hidden
rejected files, guessed tokens and an upload quota.
"""

# The server fixtures are imported from test_leaderboard_server; tests take them
# as parameters, which ruff reads as redefinitions.
# ruff: noqa: F811
from __future__ import annotations

import datetime as _dt
import html
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("sqlalchemy")
httpx = pytest.importorskip("httpx")

from test_leaderboard_server import (  # noqa: E402
    db,  # noqa: F401  (fixtures)
    db_url,  # noqa: F401
    final_state,
    new_token,
    post,
    server,  # noqa: F401
    unique,
)

from envgym.cli import main  # noqa: E402
from envgym.evaluation import evaluate  # noqa: E402
from envgym.evaluation.tracks import TEST_SEEDS, check_training_seeds  # noqa: E402
from envgym.leaderboard.app import LeaderboardServer  # noqa: E402
from envgym.leaderboard.db import Database, Ticket  # noqa: E402

ENV_ID = "envgym/GuessNumber-v0"


def ticket(url: str, token: str, **wanted: Any) -> httpx.Response:
    body = {"env_id": ENV_ID, "difficulty": "easy", "episodes": 20, **wanted}
    headers = {"Authorization": f"Bearer {token}"}
    return httpx.post(f"{url}/api/tickets", json=body, headers=headers, timeout=60)


def ticketed_run(url: str, token: str, tmp_path: Path, capsys: Any, agent: str = "oracle") -> Path:
    """A ticket and `envgym eval --ticket` on it, as a user would: the results file."""
    ticket_file, out = tmp_path / f"ticket-{agent}.json", tmp_path / f"run-{agent}.json"
    board = ["--server", url, "--token", token]
    assert main(["leaderboard", "ticket", ENV_ID, "--difficulty", "easy", *board,
                 "--out", str(ticket_file)]) == 0  # fmt: skip
    assert main(["eval", ENV_ID, "--agent", agent, "--ticket", str(ticket_file),
                 "--out", str(out)]) == 0  # fmt: skip
    capsys.readouterr()
    return out


def entries(url: str) -> dict[int, dict[str, Any]]:
    return {e["id"]: e for e in httpx.get(f"{url}/api/results", timeout=30).json()}


def ranked_ids(url: str) -> list[str]:
    page = httpx.get(f"{url}/envs/GuessNumber-v0", timeout=30).text
    ranked = page.partition('<table id="unranked-')[0]
    return [part.split('"')[0] for part in ranked.split('data-entry-id="')[1:]]


def test_an_honest_ticketed_run_ranks_and_no_shortcut_ranks_above_it(
    server: Any, db: Database, tmp_path: Path, capsys: Any
) -> None:
    name, token = new_token(db, "honest")
    run_file = ticketed_run(server.url, token, tmp_path, capsys, agent="random")
    results = json.loads(run_file.read_text())
    assert results["seed"] in TEST_SEEDS and results["num_episodes"] == 20
    assert main(["submit", str(run_file), "--server", server.url, "--token", token]) == 0
    honest_id = max(i for i, e in entries(server.url).items() if e["submitter"] == name)
    honest = entries(server.url)[honest_id]
    assert honest["ticketed"] and honest["seed"] == results["seed"]
    assert str(honest_id) in ranked_ids(server.url)

    _, cheat = new_token(db, "cheat")
    # The luckiest of many windows of its own seeds: accepted, never ranked.
    own = evaluate(ENV_ID, "oracle", episodes=20, seed=400, env_kwargs={"difficulty": "easy"})
    one = evaluate(ENV_ID, "oracle", episodes=1, seed=7, env_kwargs={"difficulty": "easy"})
    ids = [post(server.url, cheat, r).json()["id"] for r in (own, one)]
    assert {final_state(server.url, i, cheat)["status"] for i in ids} == {"accepted"}
    ranked = ranked_ids(server.url)
    assert str(honest_id) in ranked and not {str(i) for i in ids} & set(ranked)
    page = httpx.get(f"{server.url}/envs/GuessNumber-v0", timeout=30).text
    assert "own seeds (no ticket)" in page

    # Trivialised settings are refused before anything is stored.
    easy_world = evaluate(ENV_ID, "random", episodes=2, seed=0,
                          env_kwargs={"difficulty": "easy", "max_turns": 50})  # fmt: skip
    refused = post(server.url, cheat, easy_world)
    assert refused.status_code == 400 and "max_turns" in refused.json()["detail"]

    # The same file twice is one submission.
    again = post(server.url, token, results)
    assert again.status_code == 202 and again.json() == {
        "id": honest_id, "status": "accepted", "duplicate": True}  # fmt: skip


def test_a_ticket_is_its_owners_once_on_its_track_and_seeds_until_it_expires(
    server: Any, db: Database, tmp_path: Path, capsys: Any
) -> None:
    _, alice = new_token(db, "alice")
    _, mallory = new_token(db, "mallory")
    run_file = ticketed_run(server.url, alice, tmp_path, capsys)
    results = json.loads(run_file.read_text())
    stolen = post(server.url, mallory, unique(results))
    assert stolen.status_code == 400 and "no such ticket of yours" in stolen.json()["detail"]
    moved = unique(results)
    moved["seed"] += 1
    assert "seed" in post(server.url, alice, moved).json()["detail"]
    assert post(server.url, alice, results).status_code == 202
    reused = post(server.url, alice, unique(results))
    assert reused.status_code == 400 and "was used by submission" in reused.json()["detail"]

    fresh = ticket(server.url, alice).json()
    with db.session() as session:
        row = session.query(Ticket).filter_by(code=fresh["ticket"]).one()
        row.expires_at = _dt.datetime.now(_dt.UTC) - _dt.timedelta(seconds=1)
    late = unique(results)
    late.update(ticket=fresh["ticket"], seed=fresh["seed"])
    assert "expired" in post(server.url, alice, late).json()["detail"]

    for wrong, word in (({"episodes": 1}, "episodes"), ({"difficulty": "impossible"}, "levels"),
                        ({"env_id": "envgym/Nope-v0"}, "env_id")):  # fmt: skip
        response = ticket(server.url, alice, **wrong)
        assert response.status_code == 400 and word in response.json()["detail"]
    index = httpx.get(f"{server.url}/", timeout=30).text
    assert 'id="submitters"' in index  # tickets issued against tickets submitted


def test_rejected_files_are_shown_to_their_submitter_only(
    server: Any, db: Database, tmp_path: Path, capsys: Any
) -> None:
    _, token = new_token(db, "forger")
    forged = unique(evaluate(ENV_ID, "random", episodes=2, seed=3))
    forged["episodes"][0]["success"] = True
    forged_id = post(server.url, token, forged).json()["id"]
    assert final_state(server.url, forged_id, token)["status"] == "rejected"
    public = httpx.get(f"{server.url}/api/submissions/{forged_id}", timeout=30)
    assert public.status_code == 404
    page = httpx.get(f"{server.url}/submissions/{forged_id}/episodes/0", timeout=30)
    assert page.status_code == 404 and "success" not in page.text.lower()
    _, other = new_token(db, "nosy")
    nosy = httpx.get(f"{server.url}/api/submissions/{forged_id}",
                     headers={"Authorization": f"Bearer {other}"}, timeout=30)  # fmt: skip
    assert nosy.status_code == 404


def test_guessing_tokens_is_throttled_per_address_and_uploads_have_a_quota(
    db_url: str, db: Database
) -> None:
    results = unique(evaluate(ENV_ID, "random", episodes=2, seed=0))
    with LeaderboardServer(db_url, workers=0, auth_failures=3, quota_bytes=6000) as small:
        codes = [post(small.url, f"guess-{i}", results).status_code for i in range(5)]
        assert codes[:3] == [401] * 3 and codes[3:] == [429, 429]
    with LeaderboardServer(db_url, workers=0, quota_bytes=len(json.dumps(results)) + 10) as small:
        _, token = new_token(db, "quota")
        assert post(small.url, token, results).status_code == 202
        over = post(small.url, token, unique(results))
        assert over.status_code == 413 and "quota" in over.json()["detail"]


def test_trainers_refuse_the_seeds_kept_for_tickets() -> None:
    """The reference trainers' rollouts (GRPO's and PPO's, and self-play's)
    refuse to play the seeds tickets are drawn from, before any generation."""
    from envgym.trainers.common.rollout import collect_rollouts
    from envgym.trainers.common.selfplay_rollout import play_games
    from envgym.vector import TextVectorEnv

    check_training_seeds(0, 10_000)
    with pytest.raises(ValueError, match="kept for leaderboard tests"):
        check_training_seeds(TEST_SEEDS[0] - 5, 10)
    with TextVectorEnv((ENV_ID, {}), 2) as envs, pytest.raises(ValueError, match="kept for"):
        collect_rollouts(envs, None, None, None, seed=TEST_SEEDS[0] + 123)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="kept for"):
        play_games([None], [{}], {}, None, None, seeds=[TEST_SEEDS[0]])  # type: ignore[arg-type]


def test_pages_never_step_an_env_and_name_oracle_replies(
    server: Any, db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server's pages come from what its workers stored: with every way of
    making an env broken in the web process, an accepted entry's trajectory
    still shows what the agent saw. The oracle's replies claimed as "gpt-5"
    are labelled as the oracle's; a rejected file's body is not kept."""
    import envgym.leaderboard.trajectory as trajectory

    _, token = new_token(db, "claims")
    oracle = evaluate(ENV_ID, "oracle", episodes=3, seed=11, env_kwargs={"difficulty": "easy"})
    oracle["agent"] = {"name": "my-agent", "model": "gpt-5"}
    accepted_id = post(server.url, token, oracle).json()["id"]
    assert final_state(server.url, accepted_id, token)["status"] == "accepted"

    def no_env(*_args: Any, **_kwargs: Any) -> Any:
        raise AssertionError("the web process made an env")

    monkeypatch.setattr(trajectory, "make_text_env", no_env)
    page = httpx.get(f"{server.url}/submissions/{accepted_id}/episodes/1", timeout=30)
    assert page.status_code == 200
    assert 'class="observation"' in page.text and "made an env" not in page.text
    assert html.escape(oracle["episodes"][1]["actions"][0]) in page.text
    assert entries(server.url)[accepted_id]["replies_label"] == "the env's oracle"
    env_page = httpx.get(f"{server.url}/envs/GuessNumber-v0", timeout=30).text
    assert "the env's oracle" in html.unescape(env_page)  # shown as text

    forged = unique(oracle)
    forged["episodes"][0]["rewards"][0] += 1.0
    forged["episodes"][0]["return"] += 1.0
    rejected_id = post(server.url, token, forged).json()["id"]
    assert final_state(server.url, rejected_id, token)["status"] == "rejected"
    from envgym.leaderboard.db import Submission

    with db.sessions() as session:
        assert session.get(Submission, rejected_id).results_json == ""


def test_a_games_second_seat_is_a_track_of_its_own(
    server: Any, db: Database, tmp_path: Path, capsys: Any
) -> None:
    """A ticket may name a game's seat (playing second is another task, so
    another track); no other setting rides on a ticket."""
    game = "envgym/TicTacToe-v0"
    _, token = new_token(db, "seat")
    board = ["--server", server.url, "--token", token]
    ticket_file, out = tmp_path / "seat.json", tmp_path / "seat-run.json"
    assert main(["leaderboard", "ticket", game, "--difficulty", "easy", "--kwarg", "seat=1",
                 *board, "--out", str(ticket_file)]) == 0  # fmt: skip
    assert json.loads(ticket_file.read_text())["settings"] == {"seat": 1}
    assert main(["eval", game, "--ticket", str(ticket_file), "--out", str(out)]) == 0
    results = json.loads(out.read_text())
    assert results["env_kwargs"] == {"difficulty": "easy", "seat": 1}
    assert main(["submit", str(out), *board]) == 0
    capsys.readouterr()
    page = httpx.get(f"{server.url}/envs/TicTacToe-v0", timeout=30).text
    ranked = page.partition('<table id="unranked-')[0]
    assert "[seat=1]" in ranked
    refused = ticket(server.url, token, env_id=game, settings={"opponent": "random"})
    assert refused.status_code == 400 and "opponent" in refused.json()["detail"]


def test_the_server_answers_others_while_an_upload_is_being_read(
    server: Any, db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Parsing and checking an upload runs off the event loop: while one upload
    is held in its parsing, the pages and the API still answer."""
    import threading

    import envgym.leaderboard.api as app_module  # the routes of the JSON API

    entered, release = threading.Event(), threading.Event()
    real = app_module.parse_upload

    def held(body: bytes) -> Any:
        entered.set()
        release.wait(60)
        return real(body)

    monkeypatch.setattr(app_module, "parse_upload", held)
    _, token = new_token(db, "slowbody")
    results = unique(evaluate(ENV_ID, "random", episodes=2, seed=5))
    upload = threading.Thread(target=post, args=(server.url, token, results))
    upload.start()
    try:
        assert entered.wait(30), "the upload never reached its parsing"
        assert httpx.get(f"{server.url}/api/results", timeout=10).status_code == 200
        assert httpx.get(f"{server.url}/", timeout=10).status_code == 200
    finally:
        release.set()
        upload.join(60)


def test_reading_never_waits_for_a_writer(db: Database) -> None:
    """Page views read while a verdict is being written: a read session takes
    no write lock (on SQLite, a reader that did would queue behind every
    writer and behind other readers, a second at a time)."""
    import threading

    from envgym.leaderboard.db import Submitter

    done = threading.Event()

    def read() -> None:
        with db.sessions() as session:
            session.query(Submitter).count()
        done.set()

    with db.session() as session:  # a writer holding its lock
        session.query(Submitter).count()
        reader = threading.Thread(target=read)
        reader.start()
        reader.join(10)
        assert done.is_set(), "a read waited for the writer's lock"
    reader.join()


def test_a_body_off_the_schema_is_refused_before_it_is_stored(server: Any, db: Database) -> None:
    from envgym.leaderboard.db import Submission

    _, token = new_token(db, "schema")
    headless = unique(evaluate(ENV_ID, "random", episodes=2, seed=9))
    del headless["seed"]
    with db.sessions() as session:
        before = session.query(Submission).count()
    refused = post(server.url, token, headless)
    assert refused.status_code == 400 and "seed" in refused.json()["detail"]
    with db.sessions() as session:
        assert session.query(Submission).count() == before
