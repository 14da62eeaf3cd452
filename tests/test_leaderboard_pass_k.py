"""pass^k on the leaderboard, end to end on a real server: a ticket's seeds run
with ``envgym eval --trials 3`` are verified, ranked, and shown with pass^1 ..
pass^3 on the API, the env page and the static export; a single-trial run on
the same board shows as before, and a file that forges its pass^k is rejected.
"""

# The server fixtures are imported from test_leaderboard_server; tests take them
# as parameters, which ruff reads as redefinitions.
# ruff: noqa: F811
from __future__ import annotations

import copy
import json
import re
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
)

from envgym.cli import main  # noqa: E402
from envgym.evaluation import evaluate  # noqa: E402
from envgym.leaderboard.db import Database  # noqa: E402
from envgym.leaderboard.export import export_command  # noqa: E402

ENV_ID = "envgym/TicTacToe-v0"  # the random agent wins some easy games: pass^k falls with k
PAGE = "/envs/TicTacToe-v0"


def _row(page: str, entry_id: Any) -> str:
    """The table row of entry `entry_id` on an env page."""
    start = page.index(f'data-entry-id="{entry_id}"')
    return page[start : page.index("</tr>", start)]


def test_a_ticketed_run_of_three_trials_shows_pass_k(
    server: Any, db: Database, db_url: str, tmp_path: Path, capsys: Any
) -> None:
    name, token = new_token(db, "reliable")
    board = ["--server", server.url, "--token", token]
    ticket_file, out = tmp_path / "ticket.json", tmp_path / "run.json"
    assert main(["leaderboard", "ticket", ENV_ID, "--difficulty", "easy", *board,
                 "--out", str(ticket_file)]) == 0  # fmt: skip
    # The ticket fixes the seeds; the trials are the submitter's to choose.
    assert main(["eval", ENV_ID, "--agent", "random", "--ticket", str(ticket_file),
                 "--trials", "3", "--out", str(out)]) == 0  # fmt: skip
    results = json.loads(out.read_text())
    claimed = results["summary"]["pass_k"]
    assert results["trials"] == 3 and len(results["episodes"]) == 60
    assert claimed["1"] > claimed["3"]
    assert main(["submit", str(out), *board]) == 0
    shown = "/".join(f"{claimed[k]:.2f}" for k in ("1", "2", "3"))
    assert f"pass^1..3 {shown}" in capsys.readouterr().out

    listed = {e["id"]: e for e in httpx.get(f"{server.url}/api/results", timeout=30).json()}
    entry_id = max(i for i, e in listed.items() if e["submitter"] == name)
    entry = listed[entry_id]
    assert entry["verified"] and entry["ticketed"] and entry["episodes"] == 60
    assert entry["trials"] == 3
    assert entry["replies_label"] == "the random agent"  # its replies, trial by trial
    assert entry["pass_k"] == pytest.approx(claimed)
    state = httpx.get(f"{server.url}/api/submissions/{entry_id}", timeout=30).json()
    assert state["entry"]["pass_k"] == pytest.approx(claimed)

    page = httpx.get(server.url + PAGE, timeout=30).text
    ranked = page.partition('<table id="unranked-')[0]
    assert f'data-entry-id="{entry_id}"' in ranked  # 20 ticket seeds: it ranks like any run
    row = _row(page, entry_id)
    assert f"pass^1..3 {shown}" in row
    seed = results["seed"]
    assert f"{seed}..{seed + 19}" in row and "x 3 trials" in row

    trajectory = httpx.get(f"{server.url}/submissions/{entry_id}/episodes/4", timeout=30).text
    assert re.search(r"<dt>seed</dt>\s*<dd>" + str(seed + 1), trajectory)
    assert re.search(r"<dt>trial</dt>\s*<dd>1</dd>", trajectory)

    # A run of one trial on the same board shows as it always did.
    single = evaluate(ENV_ID, "random", episodes=2, seed=5, env_kwargs={"difficulty": "easy"})
    single_id = post(server.url, token, single).json()["id"]
    assert final_state(server.url, single_id, token)["status"] == "accepted"
    single_entry = httpx.get(f"{server.url}/api/submissions/{single_id}", timeout=30).json()
    assert single_entry["entry"]["pass_k"] is None
    row = _row(httpx.get(server.url + PAGE, timeout=30).text, single_id)
    assert "pass^" not in row and " trials<" not in row and "5..6" in row

    # The static export shows the same.
    written = export_command(tmp_path / "site", db_url=db_url)
    page = next(p for p in written if p.name == "TicTacToe-v0.html").read_text()
    assert f"pass^1..3 {shown}" in _row(page, entry_id)


def test_a_submission_that_forges_its_pass_k_is_rejected(server: Any, db: Database) -> None:
    _, token = new_token(db, "forger")
    results = evaluate(ENV_ID, "random", episodes=4, seed=60, trials=3,
                       env_kwargs={"difficulty": "easy"})  # fmt: skip
    assert results["summary"]["pass_k"]["3"] < 1.0
    forged = copy.deepcopy(results)
    forged["summary"]["pass_k"] = {"1": 1.0, "2": 1.0, "3": 1.0}
    state = final_state(server.url, post(server.url, token, forged).json()["id"], token)
    assert state["status"] == "rejected" and "summary.pass_k" in state["reason"]

    dropped = copy.deepcopy(results)
    del dropped["episodes"][4]  # seed 61's trial 1
    state = final_state(server.url, post(server.url, token, dropped).json()["id"], token)
    assert state["status"] == "rejected" and "trial 1 of seed 61 is missing" in state["reason"]
