"""Latency of sandbox sessions (`envgym.sandbox.Session`) on docker and bwrap.

For each backend, in one run so the rows compare:

- start: `open_session` from nothing (a container or bubblewrap started);
- reset (take): `SessionPool.take(files=...)` from a warm pool of 4 (a session
  ready, a small starting tree put in: what an env's reset, or its first
  command, costs; the pool refills between takes, untimed);
- exec: the round trip of ``true`` and of a typical command (``cd``, a file,
  an exported variable) in a warm session;
- snapshot, restore and fork of a small tree (fork: a fresh start, or from a pool),
  and of a task's tree: Terminal-v0's ``bisect-hard-0`` after its set-up (a
  git repository and 20 releases, 121 entries, 280 KB of tar);
- episodes/s: 4 threads each taking a session from a pool of 4, running 5
  commands and a snapshot (the grader's input), and closing it.

    python benchmarks/sessions.py [--backends docker,bwrap] [--runs 200] [--takes 30]
        [--episodes 40]
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time

from envgym.envs.terminal.families import make_task
from envgym.envs.terminal.grade import starting_tree
from envgym.sandbox import SessionLimits, SessionPool, open_session
from envgym.sandbox.session import tree_of

FILES = {f"data/file{i}.txt": f"line {i}\n" * 20 for i in range(10)}
EPISODE = [
    "ls data | wc -l",
    "cd data && export SEEN=1",
    "grep -l 'line 3' *.txt",
    "cat file1.txt | sort | uniq -c > ../counts.txt",
    "cd .. && wc -l counts.txt",
]


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(round(0.99 * (len(ordered) - 1))))]
    return statistics.median(ordered) * 1000, p99 * 1000


def timed(action, runs: int) -> list[float]:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        action()
        samples.append(time.perf_counter() - started)
    return samples


def task_rows(pool: SessionPool, runs: int, rows: dict) -> None:
    """Snapshot, restore and fork into ``pool`` of a real task's tree after set-up."""
    task = make_task("bisect", 0, "hard")
    with pool.take(files=starting_tree(task)) as session:
        done = session.exec(f"bash -e <<'SETUP_EOF'\n{task.setup}\nSETUP_EOF")
        if not done.ok:
            raise SystemExit(f"the set-up of {task.task_id} failed: {done.output[-300:]}")
        snap = session.snapshot()
        label = f"{task.task_id}, {len(snap.tree) // 1024} KB"
        rows[f"snapshot ({label})"] = percentiles(timed(session.snapshot, runs))
        rows[f"restore ({label})"] = percentiles(timed(lambda: session.restore(snap), runs))
        samples = []
        for _ in range(runs):
            pool.wait_ready()
            started = time.perf_counter()
            child = session.fork(pool)
            samples.append(time.perf_counter() - started)
            child.close()
        rows[f"fork into the pool ({label})"] = percentiles(samples)


def measure(backend: str, runs: int, takes: int, episodes: int) -> dict[str, tuple[float, float]]:
    limits = SessionLimits(timeout_s=30)
    tree = tree_of(FILES)
    rows: dict[str, tuple[float, float]] = {}
    rows["start (open_session)"] = percentiles(
        timed(lambda: open_session(backend, limits).close(), max(2, takes // 3))
    )
    with SessionPool(backend, limits, size=4) as pool:
        samples = []
        for _ in range(takes):
            pool.wait_ready()
            started = time.perf_counter()
            session = pool.take(files=tree)
            samples.append(time.perf_counter() - started)
            session.close()
        rows["reset: take (pool of 4, 10 files)"] = percentiles(samples)
        with pool.take(files=tree) as parent:
            samples = []
            for _ in range(max(2, takes // 3)):
                pool.wait_ready()
                started = time.perf_counter()
                child = parent.fork(pool)
                samples.append(time.perf_counter() - started)
                child.close()
        rows["fork into the pool (10 files)"] = percentiles(samples)
    with open_session(backend, limits, files=tree) as session:
        rows["exec `true`"] = percentiles(timed(lambda: session.exec("true"), runs))
        rows["exec typical command"] = percentiles(
            timed(lambda: session.exec("cd data && export X=1 && wc -l file1.txt"), runs)
        )
        snap = session.snapshot()
        rows["snapshot (10 files)"] = percentiles(timed(session.snapshot, runs // 4))
        rows["restore (10 files)"] = percentiles(timed(lambda: session.restore(snap), runs // 4))
        rows["fork (10 files)"] = percentiles(
            timed(lambda: session.fork().close(), max(2, runs // 20))
        )
    with SessionPool(backend, limits, size=4) as pool:
        task_rows(pool, max(2, takes // 3), rows)
    with SessionPool(backend, limits, size=4) as pool:
        pool.wait_ready()
        done = []
        lock = threading.Lock()

        def worker() -> None:
            while True:
                with lock:
                    if len(done) >= episodes:
                        return
                    done.append(1)
                session = pool.take(files=tree)
                for command in EPISODE:
                    session.exec(command)
                session.snapshot()
                session.close()

        started = time.perf_counter()
        threads = [threading.Thread(target=worker) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        rate = episodes / (time.perf_counter() - started)
        rows["episodes/s (pool of 4, 4 threads)"] = (rate, rate)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default="docker,bwrap")
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--takes", type=int, default=30)
    parser.add_argument("--episodes", type=int, default=40)
    args = parser.parse_args()
    results = {}
    for backend in args.backends.split(","):
        results[backend] = measure(backend, args.runs, args.takes, args.episodes)
    backends = list(results)
    print(f"| measure | {' | '.join(f'{b} p50 | {b} p99' for b in backends)} |")
    print(f"|---|{'---|---|' * len(backends)}")
    for row in results[backends[0]]:
        cells = []
        for backend in backends:
            p50, p99 = results[backend][row]
            if row.startswith("episodes"):
                cells += [f"{p50:.1f}", "-"]
            else:
                cells += [f"{p50:.1f} ms", f"{p99:.1f} ms"]
        print(f"| {row} | {' | '.join(cells)} |")


if __name__ == "__main__":
    main()
