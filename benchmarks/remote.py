"""Remote envs: what serving Sokoban over WebSocket costs, against in-process steps.

One run, one table. Sections (pick with ``--section``, default all):

- ``in-process``: ``gym.make`` Sokoban steps, the baseline every other row is
  compared with (``x in-proc`` is a row's p50 over the in-process p50).
- ``server``: one ``envgym serve`` process (started through the CLI) on TCP
  127.0.0.1 and one on a Unix socket; step round trips with 1 session through
  `RemoteEnv` (what a user runs), and 1, 32 and 256 concurrent sessions from
  an asyncio client in this process. Every session plays Sokoban with moves
  drawn from its own ``info["admissible_actions"]`` (draws made before
  timing) and resets when an episode ends; only step round trips are timed.
  ``errors`` counts error frames and failed sessions.
- ``container``: the same rows against ``envgym serve`` in a container of
  the runtime image, over its bind-mounted Unix socket (skipped, with the
  reason, when Docker or the image is missing).
- ``vector``: `TextVectorEnv` with 32 envs, sync against subprocess workers,
  on hard Sokoban (see ``benchmarks/vector.py``).
- ``fork``: fork over the wire, Sokoban and Household, one ``envgym serve``
  process each on TCP and on a Unix socket: round trips of ``snapshot``,
  ``restore`` and ``fork`` (n=1, from a handle and from the session's current
  state), attaching to a forked session (`RemoteEnv` connect + first step),
  and ``RemoteEnv.fork(1)`` plus a first step, against the in-process
  ``snapshot()`` + ``restore()``. Rounds interleave the cases; target: fork
  p50 under 1 ms on a Unix socket.
- ``openenv``: ``envgym serve`` (declared-fast steps on its event loop, and
  with ``--calls threads``) against OpenEnv's own server (openenv-core, a
  benchmark-only dependency; ``benchmarks/openenv_server.py``) in its default
  mode (``step`` on a thread) and its async mode (``step_async`` awaited on
  its loop), at 32 and 128 sessions (``--openenv-sessions``): each server its
  own process on TCP, started before the first round, the same client as
  ``server``; ``--rounds`` rounds (default 5), the servers' order rotating,
  medians reported, with each server process's CPU seconds per 1,000 steps
  (psutil) and the client's. Target: envgym at or above OpenEnv's async mode
  in steps/s and p99.

A new section is a function ``(args) -> list[Row]`` added to `SECTIONS`.

Targets: p50 round trip <= 0.5 ms with one session; 256 sessions without
errors; subprocess workers at least 1.6x sync. On a machine shared with other
jobs the numbers move from run to run; the client and the server share the
same cores here.

    python benchmarks/remote.py                 # everything
    python benchmarks/remote.py --quick         # fewer steps
    python benchmarks/remote.py --section server --sessions 1 32
    python benchmarks/remote.py --section openenv --rounds 5
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import gymnasium as gym
import numpy as np
from openenv_compare import Measured, openenv_report, openenv_servers

import envgym  # noqa: F401  (registers the ids)
from envgym.remote import RemoteEnv, ServerAddress, serve_in_subprocess

ENV_ID = "envgym/Sokoban-v0"


@dataclass
class Row:
    section: str
    case: str
    transport: str
    sessions: int
    latencies_ms: list[float]
    wall_s: float
    errors: int = 0

    @property
    def p50(self) -> float:
        return float(np.percentile(self.latencies_ms, 50))

    @property
    def p99(self) -> float:
        return float(np.percentile(self.latencies_ms, 99))

    @property
    def steps_per_s(self) -> float:
        return len(self.latencies_ms) / self.wall_s


def move(info: dict, u: float) -> str:
    moves = info["admissible_actions"]
    return f"<answer>{moves[int(u * len(moves))]}</answer>"


# ------------------------------------------------------------- in-process
def section_in_process(args: argparse.Namespace) -> list[Row]:
    env = gym.make(ENV_ID)
    draws = np.random.default_rng(0).random(args.steps)
    _, info = env.reset(seed=0)
    latencies, busy = [], 0.0
    for u in draws:
        action = move(info, u)
        start = time.perf_counter()
        _, _, terminated, truncated, info = env.step(action)
        elapsed = time.perf_counter() - start
        busy += elapsed
        latencies.append(elapsed * 1000)
        if terminated or truncated:
            _, info = env.reset()
    return [Row("in-process", "gym.make step", "-", 1, latencies, busy)]


# ----------------------------------------------------------------- server
def remote_env_steps(address: ServerAddress, steps: int) -> tuple[list[float], float, int]:
    """Round trips of `RemoteEnv.step` over one session."""
    draws = np.random.default_rng(1).random(steps)
    latencies, busy, errors = [], 0.0, 0
    with RemoteEnv(address) as env:
        _, info = env.reset(seed=0)
        for u in draws:
            action = move(info, u)
            start = time.perf_counter()
            try:
                _, _, terminated, truncated, info = env.step(action)
            except Exception:
                errors += 1
                _, info = env.reset()
                continue
            elapsed = time.perf_counter() - start
            busy += elapsed
            latencies.append(elapsed * 1000)
            if terminated or truncated:
                _, info = env.reset()
    return latencies, busy, errors


async def async_sessions(
    address: ServerAddress, sessions: int, steps_per_session: int, pid: int | None = None
) -> tuple[list[float], float, int, float]:
    """`sessions` concurrent sessions, each stepping back to back; (latencies, wall,
    errors, CPU seconds the server process `pid` spent while the clock ran (0.0
    without a pid)).

    Every session is open and reset before the clock starts.
    """
    from websockets.asyncio.client import connect, unix_connect

    latencies: list[float] = []
    errors = 0
    arrived = 0
    start = asyncio.Event()

    async def one(index: int) -> None:
        nonlocal errors, arrived
        draws = np.random.default_rng(100 + index).random(steps_per_session)
        options = {"compression": None, "open_timeout": 120, "max_size": None}
        waiting = True
        try:
            if address.uds is not None:
                opener = unix_connect(address.uds, address.ws_url, **options)
            else:
                opener = connect(address.ws_url, **options)
            async with opener as ws:

                async def ask(message: dict) -> dict:
                    nonlocal errors
                    await ws.send(json.dumps(message))
                    frame = json.loads(await ws.recv())
                    if frame["type"] == "error":
                        errors += 1
                    return frame["data"]

                data = await ask({"type": "reset", "data": {"seed": index}})
                arrived += 1
                waiting = False
                await start.wait()
                for u in draws:
                    action = move(data["observation"]["info"], u)
                    t0 = time.perf_counter()
                    data = await ask({"type": "step", "data": {"action": action}})
                    latencies.append((time.perf_counter() - t0) * 1000)
                    if "code" in data:
                        return
                    if data["done"]:
                        data = await ask({"type": "reset", "data": {}})
                await ws.send(json.dumps({"type": "close"}))
        except Exception:
            errors += 1
        finally:
            if waiting:
                arrived += 1

    tasks = [asyncio.create_task(one(i)) for i in range(sessions)]
    while arrived < sessions:
        await asyncio.sleep(0.01)
    cpu_before, client_before = _cpu_seconds(pid), time.process_time()
    start.set()
    begin = time.perf_counter()
    await asyncio.gather(*tasks)
    wall = time.perf_counter() - begin
    CLIENT_CPU.append(time.process_time() - client_before)
    return latencies, wall, errors, _cpu_seconds(pid) - cpu_before


#: the CPU seconds this process (the client) spent in each `async_sessions` run's timed part
CLIENT_CPU: list[float] = []


def _cpu_seconds(pid: int | None) -> float:
    """User plus system CPU seconds of process `pid` so far (0.0 for None)."""
    if pid is None:
        return 0.0
    import psutil

    times = psutil.Process(pid).cpu_times()
    return times.user + times.system


def server_rows(section: str, transport: str, address: ServerAddress, args) -> list[Row]:
    """One session through `RemoteEnv`, then each of ``args.sessions`` at once."""
    remote_env_steps(address, 200)  # warm up the server's code paths
    latencies, busy, errors = remote_env_steps(address, args.steps)
    rows = [Row(section, "RemoteEnv.step", transport, 1, latencies, busy, errors)]
    for sessions in args.sessions:
        per_session = max(args.steps // sessions, 10)
        latencies, wall, errors, _ = asyncio.run(async_sessions(address, sessions, per_session))
        rows.append(Row(section, "asyncio client", transport, sessions, latencies, wall, errors))
    refused = _health(address)["sessions_refused"]
    if refused:
        print(f"warning: the {section} {transport} server refused {refused} sessions")
    return rows


def section_server(args: argparse.Namespace) -> list[Row]:
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="envgym-bench-") as tmp:
        transports = {
            "tcp": {"port": 0},
            "uds": {"uds": str(Path(tmp) / "sokoban.sock")},
        }
        for transport, where in transports.items():
            most = max(args.sessions)
            with serve_in_subprocess(ENV_ID, max_sessions=max(most, 1), **where) as server:
                rows += server_rows("server", transport, server.address, args)
    return rows


# -------------------------------------------------------------- container
def section_container(args: argparse.Namespace) -> list[Row]:
    """The same rows against the env's server in a container (the runtime image,
    ``--network none``, 2 CPUs), over its bind-mounted Unix socket."""
    from envgym.remote.container import ContainerServer

    try:
        server = ContainerServer(ENV_ID, max_sessions=max(args.sessions), cpus=2.0)
    except Exception as exc:  # no daemon or no image: say so, measure the rest
        print(f"container section skipped: {exc}", file=sys.stderr)
        return []
    with server:
        return server_rows("container", "uds", server.address, args)


# ----------------------------------------------------------------- vector
def section_vector(args: argparse.Namespace) -> list[Row]:
    """TextVectorEnv, 32 envs, sync vs subprocess workers (benchmarks/vector.py)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from vector import CPU_HEAVY, compare

    result = compare(num_envs=32, steps=max(args.steps // 100, 20), repeats=5)
    env_id, kwargs = CPU_HEAVY
    print(
        f"vector ({env_id} {kwargs}, 32 envs): sync {result['sync']:,.0f} env steps/s, "
        f"subprocess {result['subprocess']:,.0f}: {result['ratio']:.2f}x, with prefetch "
        f"{result['prefetch_ratio']:.2f}x (this machine's 2-process ceiling: "
        f"{result['ceiling']:.2f}x)",
        file=sys.stderr,
    )
    VECTOR_RESULTS.append(result)
    return []


VECTOR_RESULTS: list[dict] = []


# ------------------------------------------------------------------- fork
FORK_ENVS = ("envgym/Sokoban-v0", "envgym/Household-v0")


def section_fork(args: argparse.Namespace) -> list[Row]:
    import pickle

    per_round, rounds = max(args.steps // 50, 20), 5
    serve_flags = ["--max-snapshots", "1000000", "--max-snapshot-bytes", str(2**40)]
    serve_flags += ["--snapshot-ttl", "120"]
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="envgym-bench-") as tmp:
        for env_id in FORK_ENVS:
            name = env_id.split("/")[1].split("-")[0]
            local, other = gym.make(env_id), gym.make(env_id)
            local.reset(seed=1)
            other.reset(seed=2)
            local.step(move(local.reset(seed=1)[1], 0.3))
            transports = {"tcp": {"port": 0}, "uds": {"uds": str(Path(tmp) / f"{name}.sock")}}
            for transport, where in transports.items():
                times: dict[str, list[float]] = {}
                with serve_in_subprocess(
                    env_id, max_sessions=per_round * 3 + 8, extra_args=serve_flags, **where
                ) as server:
                    env = RemoteEnv(server.address)
                    _, info = env.reset(seed=1)
                    _, _, _, _, info = env.step(move(info, 0.3))
                    first = move(info, 0.6)
                    for _ in range(rounds):
                        for case, op in _fork_cases(env, first, local, other, pickle).items():
                            for _ in range(per_round):
                                times.setdefault(case, []).append(op())
                    env.close()
                for case, secs in times.items():
                    where_ = "-" if case.startswith("in-process") else transport
                    latencies = [t * 1000 for t in secs]
                    rows.append(Row("fork", f"{name} {case}", where_, 1, latencies, sum(secs)))
    for r in rows:
        if r.transport == "uds" and r.case.endswith("fork(n=1) handle"):
            met = "met" if r.p50 < 1.0 else "NOT met"
            print(f"fork: {r.case} uds p50 {r.p50:.3f} ms (target < 1 ms): {met}", file=sys.stderr)
    # The in-process rows are the same on both transports; keep one of each.
    seen: set[str] = set()
    return [r for r in rows if r.transport != "-" or not (r.case in seen or seen.add(r.case))]


def _fork_cases(env: RemoteEnv, first: str, local, other, pickle) -> dict:
    """One timed call per case (seconds); each case is a closure over `env`."""
    handle = env._request({"type": "snapshot"}, expect="snapshot")["handle"]
    snap = env.snapshot()

    def timed(fn: Callable[[], object]) -> Callable[[], float]:
        def op() -> float:
            start = time.perf_counter()
            fn()
            return time.perf_counter() - start

        return op

    def attach() -> float:
        [token] = env._request({"type": "fork", "data": {"n": 1}}, expect="fork")["sessions"]
        start = time.perf_counter()
        forked = env._attached(token, "")
        forked.step(first)
        elapsed = time.perf_counter() - start
        forked.close()
        return elapsed

    def fork_and_step() -> float:
        start = time.perf_counter()
        [forked] = env.fork(1, snap)
        forked.step(first)
        elapsed = time.perf_counter() - start
        forked.close()
        return elapsed

    fork_handle = {"type": "fork", "data": {"n": 1, "handle": handle}}
    restore = {"type": "restore", "data": {"handle": handle}}
    return {
        "snapshot": timed(lambda: env._request({"type": "snapshot"}, expect="snapshot")),
        "restore": timed(lambda: env._request(restore, expect="state")),
        "fork(n=1) handle": _and_attach(env, fork_handle),
        "fork(n=1) current": _and_attach(env, {"type": "fork", "data": {"n": 1}}),
        "attach (connect + step)": attach,
        "RemoteEnv.fork(1) + step": fork_and_step,
        "in-process snapshot+restore (pickled)": timed(
            lambda: other.unwrapped.restore(pickle.loads(pickle.dumps(local.unwrapped.snapshot())))
        ),
    }


def _and_attach(env: RemoteEnv, message: dict) -> Callable[[], float]:
    """The fork round trip, timed; then the fork is attached to and closed (untimed),
    so pending forks do not pile up."""

    def op() -> float:
        start = time.perf_counter()
        reply = env._request(message, expect="fork")
        elapsed = time.perf_counter() - start
        env._attached(reply["sessions"][0], "").close()
        return elapsed

    return op


# ---------------------------------------------------------------- openenv
OPENENV_RESULTS: list[Measured] = []


def section_openenv(args: argparse.Namespace) -> list[Row]:
    """envgym serve (declared-fast steps on the loop, and every call on a thread)
    against OpenEnv's server (benchmarks/openenv_server.py) in its default (sync)
    and async-step modes: same env, same client, each its own process on TCP;
    servers take turns in every round (the order rotates), medians reported."""
    from envgym.remote.launcher import ServerProcess

    sessions = args.openenv_sessions
    commands = openenv_servers(ENV_ID, max(sessions))
    servers: dict[str, ServerProcess] = {}
    try:
        for name, argv in commands.items():
            servers[name] = ServerProcess(argv)
            asyncio.run(async_sessions(servers[name].address, 8, 50))  # warm up
        names = list(servers)
        for round_ in range(args.rounds):
            print(f"  openenv round {round_ + 1}/{args.rounds}", file=sys.stderr, flush=True)
            order = names[round_ % len(names) :] + names[: round_ % len(names)]
            for count in sessions:
                for name in order:
                    server = servers[name]
                    per_session = max(args.openenv_steps // count, 10)
                    latencies, wall, errors, cpu = asyncio.run(
                        async_sessions(server.address, count, per_session, server.process.pid)
                    )
                    row = Row("openenv", name, "tcp", count, latencies, wall, errors)
                    OPENENV_RESULTS.append(
                        Measured(
                            name,
                            count,
                            row.steps_per_s,
                            row.p50,
                            row.p99,
                            1000 * cpu / max(len(latencies), 1),
                            1000 * CLIENT_CPU[-1] / max(len(latencies), 1),
                            errors,
                        )
                    )
    finally:
        for server in servers.values():
            server.stop()
    return []


def _health(address: ServerAddress) -> dict:
    from envgym.remote.client import fetch_json

    return fetch_json(address, "/health")


SECTIONS: dict[str, Callable[[argparse.Namespace], list[Row]]] = {
    "in-process": section_in_process,
    "server": section_server,
    "container": section_container,
    "vector": section_vector,
    "fork": section_fork,
    "openenv": section_openenv,
}


# ------------------------------------------------------------------ report
def table(rows: list[Row]) -> str:
    base = next((r.p50 for r in rows if r.section == "in-process"), None)
    headers = "section case transport sessions p50-ms p99-ms steps/s x-in-proc errors".split()
    lines = [
        "| " + " | ".join(h.replace("-", " ") for h in headers) + " |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        ratio = f"{r.p50 / base:.1f}" if base else "-"
        lines.append(
            f"| {r.section} | {r.case} | {r.transport} | {r.sessions} | {r.p50:.3f} | "
            f"{r.p99:.3f} | {r.steps_per_s:,.0f} | {ratio} | {r.errors} |"
        )
    return "\n".join(lines)


def verdicts(rows: list[Row]) -> list[str]:
    out = []
    served = [r for r in rows if r.section in ("server", "container")]
    for r in served:
        where = f"{r.section} {r.transport}"
        if r.case == "RemoteEnv.step":
            met = "met" if r.p50 <= 0.5 else "NOT met"
            out.append(f"- {where}: RemoteEnv p50 {r.p50:.3f} ms (target <= 0.5 ms): {met}")
        elif r.sessions == 256:
            met = "met" if r.errors == 0 else "NOT met"
            out.append(f"- {where}: 256 sessions, {r.errors} errors (target 0): {met}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--section", action="append", choices=sorted(SECTIONS))
    parser.add_argument("--steps", type=int, default=5000, help="timed steps per row")
    parser.add_argument("--sessions", type=int, nargs="+", default=[1, 32, 256])
    parser.add_argument("--quick", action="store_true", help="1000 steps per row")
    parser.add_argument("--openenv-sessions", type=int, nargs="+", default=[32, 128], metavar="N")
    parser.add_argument(
        "--openenv-steps", type=int, default=12_800, help="timed steps per openenv row"
    )
    parser.add_argument("--rounds", type=int, default=5, help="openenv section rounds")
    args = parser.parse_args()
    if args.quick:
        args.steps = 1000
        args.openenv_steps = min(args.openenv_steps, 3200)
        args.rounds = min(args.rounds, 3)
    chosen = args.section or list(SECTIONS)
    rows: list[Row] = []
    for name in chosen:
        print(f"running {name} ...", file=sys.stderr, flush=True)
        rows += SECTIONS[name](args)
    print(
        f"# {ENV_ID} (easy) over WebSocket: Python {platform.python_version()}, "
        f"{platform.machine()}, load average {_load()}"
    )
    if rows:
        print()
        print(table(rows))
        print()
        print("\n".join(verdicts(rows)))
    if OPENENV_RESULTS:
        print()
        print("\n".join(openenv_report(ENV_ID, OPENENV_RESULTS)))
    for result in VECTOR_RESULTS:
        print(
            f"- TextVectorEnv, 32 envs: sync {result['sync']:,.0f} env steps/s, subprocess "
            f"{result['subprocess']:,.0f}: {result['ratio']:.2f}x, with prefetch "
            f"{result['prefetch_ratio']:.2f}x (target >= 1.6x; the machine's own 2-process "
            f"ceiling in this run: {result['ceiling']:.2f}x; see benchmarks/vector.py)"
        )


def _load() -> str:
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "n/a"


if __name__ == "__main__":
    main()
