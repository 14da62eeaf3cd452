"""How fast the leaderboard verifies a submission, against how long it took to make,
and how long a hostile file can hold a verification worker.

Replay: for Sokoban, Household and Search (default sizes, easy), the oracle
plays 1,000 episodes through `envgym.evaluation.evaluate` (timed), and the
results file is then checked by `envgym.evaluation.verify_submission` (timed):
the schema, the env's identity, the seeds, the summary and a replay of every
episode. Both run in this process, one after the other, so the ratio holds on
a noisy machine.

Budget: a real server (`LeaderboardServer`, one verification worker, a
per-submission budget of ``--budget`` seconds) on a temporary SQLite file; each
file is uploaded over HTTP and timed until its verdict is in the database: the
Sokoban oracle's file (its time per episode against the in-process replay
above), a hostile file (a Code-v0 run whose every reply is ``while True:
pass``: each turn costs the sandbox's 10 s timeout, minutes a file; it must be
refused within the budget) and a file over `MAX_TURNS_PER_FILE` (refused
before any replay). The worker's start (an import of envgym) is paid before
the timings.

Pages: on the same kind of server, with the Sokoban oracle's file accepted,
``--viewers`` threads each fetch the index, Sokoban's page and episode pages
in turn; the latency of every request is recorded, first with the worker idle,
then while the hostile file verifies (till its budget kills it), in the same
run. The pages come from what the worker stored: no page view replays.

The hostile replay runs in the sandbox ``ENVGYM_SANDBOX`` names (default
``auto``); if none works here it is refused at once, for that reason.

    python benchmarks/leaderboard.py                 # 1,000 episodes per env
    python benchmarks/leaderboard.py --episodes 200  # quicker
    ENVGYM_SANDBOX=bwrap python benchmarks/leaderboard.py --only budget --budget 5
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import platform
import tempfile
import time
from pathlib import Path
from typing import Any

import envgym
from envgym.evaluation import evaluate, summarize, verify_submission
from envgym.evaluation.verify import MAX_TURNS_PER_FILE

ENVS = ("envgym/Sokoban-v0", "envgym/Household-v0", "envgym/Search-v0")
CODE = "envgym/Code-v0"
LOOP = "<python>\nwhile True:\n    pass\n</python>"


def measure(env_id: str, episodes: int) -> dict[str, float]:
    """Seconds to evaluate the oracle and to verify its results file."""
    # The first episode loads what the env shares per process (Search's index):
    # a warm-up run keeps that out of both timings.
    evaluate(env_id, "oracle", episodes=1, seed=10**6)
    start = time.perf_counter()
    results = evaluate(env_id, "oracle", episodes=episodes, seed=0)
    evaluated = time.perf_counter() - start
    start = time.perf_counter()
    verdict = verify_submission(results)
    verified = time.perf_counter() - start
    if not verdict.accepted:
        raise SystemExit(f"{env_id}: the oracle's own file was rejected: {verdict.reason}")
    return {
        "env": env_id,
        "episodes": episodes,
        "evaluate_s": evaluated,
        "verify_s": verified,
        "verified_per_s": episodes / verified,
        "verify_over_evaluate": verified / evaluated,
    }


def _hostile_file(episodes: int) -> dict[str, Any]:
    """A Code-v0 run (a track: no settings) whose every reply runs ``while True: pass``:
    each turn costs the sandbox's whole timeout (10 s) to replay. Only the replies
    are forged, and the file's own figures agree with them."""
    results = evaluate(CODE, "random", episodes=episodes, seed=0)  # replies that run nothing
    for episode in results["episodes"]:
        turns = episode["turns"]
        episode.update(actions=[LOOP] * turns, rewards=[0.0] * turns, success=False)
        episode.update(terminated=True, truncated=False)  # the last turn submits the loop
        episode["return"] = 0.0
    results["summary"] = summarize(results["episodes"])
    return results


def _over_cap_file(results: dict[str, Any]) -> dict[str, Any]:
    """`results` with its first episode made one reply longer than a file may hold."""
    over = copy.deepcopy(results)
    replies = MAX_TURNS_PER_FILE + 1
    episode = over["episodes"][0]
    episode.update(actions=["<answer>Up</answer>"] * replies, rewards=[0.0] * replies)
    episode.update(turns=replies, success=False)
    episode["return"] = 0.0
    over["summary"] = summarize(over["episodes"])
    return over


def _upload_to_verdict(
    url: str, token: str, db: Any, results: dict[str, Any]
) -> tuple[str, str | None, float]:
    """Upload `results` and wait for its verdict in `db`: (status, reason, seconds)."""
    import httpx

    from envgym.leaderboard.db import Submission

    body = json.dumps(results).encode()
    start = time.perf_counter()
    response = httpx.post(
        f"{url}/api/submissions",
        content=body,
        headers={"Authorization": f"Bearer {token}"},
        timeout=120,
    )
    if response.status_code != 202:
        raise SystemExit(f"the server refused the upload: {response.text}")
    submission_id = response.json()["id"]
    while True:
        with db.sessions() as session:
            submission = session.get(Submission, submission_id)
            if submission is not None and submission.status != "pending":
                return submission.status, submission.reason, time.perf_counter() - start
        time.sleep(0.02)


def measure_budget(budget_s: float, episodes: int) -> list[dict[str, Any]]:
    """Upload-to-verdict seconds of an honest, a hostile and an over-long file."""
    from envgym.leaderboard.app import LeaderboardServer
    from envgym.leaderboard.db import Database
    from envgym.leaderboard.tokens import create_token

    honest = evaluate(ENVS[0], "oracle", episodes=episodes, seed=0)
    start = time.perf_counter()
    verify_submission(honest)
    in_process = time.perf_counter() - start
    over_cap = _over_cap_file(honest)
    turns = sum(e["turns"] for e in over_cap["episodes"])
    files = [
        (f"{ENVS[0]} oracle, {episodes} episodes", honest),
        (f"{CODE}, 20 episodes of loops", _hostile_file(20)),
        (f"over the cap: {turns:,} turns", over_cap),
    ]
    warm_up = evaluate(ENVS[0], "oracle", episodes=1, seed=10**6)
    rows = []
    cache = os.environ.get("ENVGYM_CACHE")
    with tempfile.TemporaryDirectory() as folder:
        # The workers inherit it: whatever a replay caches goes with the folder.
        os.environ["ENVGYM_CACHE"] = str(Path(folder) / "cache")
        db = Database(f"sqlite:///{folder}/lb.db")
        token = create_token(db, "benchmark")
        with LeaderboardServer(db.url, workers=1, verify_budget_s=budget_s) as server:
            _upload_to_verdict(server.url, token, db, warm_up)  # the worker's start
            for label, results in files:
                status, reason, seconds = _upload_to_verdict(server.url, token, db, results)
                rows.append(
                    {
                        "file": label,
                        "verdict": status,
                        "reason": reason,
                        "upload_to_verdict_s": seconds,
                        "of_budget": seconds / budget_s,
                    }
                )
        db.close()
    if cache is None:
        del os.environ["ENVGYM_CACHE"]
    else:
        os.environ["ENVGYM_CACHE"] = cache
    rows[0]["per_episode_ms"] = 1000 * rows[0]["upload_to_verdict_s"] / episodes
    rows[0]["in_process_per_episode_ms"] = 1000 * in_process / episodes
    return rows


def _print_budget(rows: list[dict[str, Any]], budget_s: float) -> None:
    print(f"\nverification budget {budget_s:g} s, 1 worker: upload to verdict\n")
    header = f"{'file':40} {'verdict':>9} {'seconds':>9} {'of budget':>10}  reason"
    print(header)
    print("-" * (len(header) + 40))
    for row in rows:
        reason = (row["reason"] or "")[:44]
        print(
            f"{row['file']:40} {row['verdict']:>9} {row['upload_to_verdict_s']:>8.2f}s "
            f"{row['of_budget']:>9.2f}x  {reason}"
        )
    honest = rows[0]
    print(
        f"\nhonest file: {honest['per_episode_ms']:.2f} ms an episode through the server, "
        f"{honest['in_process_per_episode_ms']:.2f} ms replayed in this process "
        f"({honest['per_episode_ms'] / honest['in_process_per_episode_ms']:.2f}x)"
    )


def _views(url: str, viewers: int, per_viewer: int, episodes: int) -> list[float]:
    """Seconds of each of ``viewers x per_viewer`` page requests made at once."""
    from concurrent.futures import ThreadPoolExecutor

    import httpx

    paths = ["/", "/envs/Sokoban-v0"] + [f"/submissions/1/episodes/{i}" for i in range(8)]

    def viewer(k: int) -> list[float]:
        times = []
        with httpx.Client(base_url=url, timeout=120) as client:
            for j in range(per_viewer):
                path = paths[(k + j) % len(paths)]
                start = time.perf_counter()
                response = client.get(path)
                times.append(time.perf_counter() - start)
                if response.status_code != 200:
                    raise SystemExit(f"GET {path}: HTTP {response.status_code}")
        return times

    with ThreadPoolExecutor(viewers) as pool:
        return [t for part in pool.map(viewer, range(viewers)) for t in part]


def _quantiles(times: list[float]) -> dict[str, float]:
    ordered = sorted(times)
    return {
        "requests": len(ordered),
        "p50_ms": 1000 * ordered[len(ordered) // 2],
        "p99_ms": 1000 * ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))],
    }


def measure_pages(budget_s: float, episodes: int, viewers: int) -> dict[str, Any]:
    """Page latency under `viewers` concurrent readers, idle and while a hostile file verifies."""
    import threading

    from envgym.leaderboard.app import LeaderboardServer
    from envgym.leaderboard.db import Database
    from envgym.leaderboard.tokens import create_token

    honest = evaluate(ENVS[0], "oracle", episodes=episodes, seed=0)
    hostile = _hostile_file(20)
    with tempfile.TemporaryDirectory() as folder:
        db = Database(f"sqlite:///{folder}/lb.db")
        token = create_token(db, "benchmark")
        with LeaderboardServer(db.url, workers=1, verify_budget_s=budget_s) as server:
            status, _, _ = _upload_to_verdict(server.url, token, db, honest)
            if status != "accepted":
                raise SystemExit("the honest file was not accepted")
            _views(server.url, 1, 10, episodes)  # warm-up: env hashes, baselines read once
            idle = _views(server.url, viewers, 40, episodes)
            verdict: list[Any] = []
            verifying = threading.Thread(
                target=lambda: verdict.append(_upload_to_verdict(server.url, token, db, hostile))
            )
            verifying.start()
            time.sleep(0.5)  # the worker has the hostile file
            busy = _views(server.url, viewers, 40, episodes)
            verifying.join()
        db.close()
    return {
        "viewers": viewers,
        "idle": _quantiles(idle),
        "hostile_verifying": _quantiles(busy),
        "hostile_verdict": verdict[0][0] if verdict else None,
    }


def _print_pages(pages: dict[str, Any]) -> None:
    idle, busy = pages["idle"], pages["hostile_verifying"]
    print(f"\npages, {pages['viewers']} concurrent viewers (index, env page, episodes)\n")
    print(f"{'worker':28} {'requests':>9} {'p50':>9} {'p99':>9}")
    for label, q in (("idle", idle), ("verifying the hostile file", busy)):
        print(f"{label:28} {q['requests']:>9} {q['p50_ms']:>7.1f}ms {q['p99_ms']:>7.1f}ms")
    print(
        f"p99 while the hostile file verifies / idle: {busy['p99_ms'] / idle['p99_ms']:.2f}x "
        f"(the hostile file ended {pages['hostile_verdict']})"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=1000, help="episodes per env")
    parser.add_argument("--json", help="also write the numbers to this file")
    parser.add_argument(
        "--budget", type=float, default=10.0, help="seconds a submission may take (default: 10)"
    )
    parser.add_argument(
        "--only", choices=("replay", "budget", "pages"), help="run one of the three parts"
    )
    parser.add_argument("--viewers", type=int, default=16, help="concurrent page readers")
    args = parser.parse_args(argv)
    print(f"envgym {envgym.__version__}, Python {platform.python_version()}, {platform.machine()}")
    numbers: dict[str, Any] = {}
    if args.only in (None, "replay"):
        numbers["replay"] = _replay_table(args.episodes)
    if args.only in (None, "budget"):
        numbers["budget"] = measure_budget(args.budget, args.episodes)
        _print_budget(numbers["budget"], args.budget)
    if args.only in (None, "pages"):
        numbers["pages"] = measure_pages(args.budget, min(args.episodes, 200), args.viewers)
        _print_pages(numbers["pages"])
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(numbers, fh, indent=2)
    return 0


def _replay_table(episodes: int) -> list[dict[str, Any]]:
    rows = [measure(env_id, episodes) for env_id in ENVS]
    print(f"{episodes} oracle episodes per env; verification includes a full replay\n")
    header = f"{'env':22} {'evaluate':>10} {'verify':>10} {'verified/s':>11} {'verify/eval':>12}"
    print(header)
    print("-" * len(header))
    for row in rows:
        print(
            f"{row['env']:22} {row['evaluate_s']:>9.2f}s {row['verify_s']:>9.2f}s "
            f"{row['verified_per_s']:>11,.0f} {row['verify_over_evaluate']:>11.2f}x"
        )
    return rows


if __name__ == "__main__":
    raise SystemExit(main())
