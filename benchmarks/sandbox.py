"""Latency of a `print(1)` Python job in each way of running sandboxed code.

Measured in one run, so the ratios hold on a noisy machine:

- warm pooled docker runner (envgym's docker backend: jobs over the attached
  stdin/stdout of a running container);
- `docker exec` into a warm container of the same image;
- `docker run --rm` per job (same hardening flags);
- bwrap (envgym's bwrap backend: a persistent runner in bubblewrap);
- bwrap started per job (one bubblewrap process per job);
- process (rlimits only, no isolation);

then jobs/s through a SandboxPool of 4 with 4 client threads.

    python benchmarks/sandbox.py [--jobs 200] [--slow-jobs 30] [--quick]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import threading
import time
import warnings

from envgym.sandbox import Limits, SandboxPool, make_sandbox
from envgym.sandbox.images import SANDBOX_IMAGE, docker_client

JOB = "print(1)"


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(round(0.99 * (len(ordered) - 1))))]
    return statistics.median(ordered) * 1000, p99 * 1000


def timed(fn, n: int) -> list[float]:
    fn()  # warm-up
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def check(stdout: str | bytes) -> None:
    text = stdout.decode() if isinstance(stdout, bytes) else stdout
    if text.strip() != "1":
        raise RuntimeError(f"job printed {text!r}, expected 1")


def bench_backend(backend: str, n: int) -> list[float]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        box = make_sandbox(backend, limits=Limits())
    with box:
        return timed(lambda: check(box.run(JOB).stdout), n)


def bench_docker_exec(n: int) -> list[float]:
    from envgym.sandbox.docker import DockerSandbox

    box = DockerSandbox(Limits())
    with box:
        container = box.container
        return timed(lambda: check(container.exec_run(["python3", "-c", JOB]).output), n)


def bench_docker_run(n: int) -> list[float]:
    from envgym.sandbox.docker import DockerSandbox

    kwargs = DockerSandbox(Limits()).container_kwargs()
    client = docker_client()
    for key in ("command", "stdin_open", "auto_remove", "labels"):
        kwargs.pop(key)
    image = kwargs.pop("image")

    def once() -> None:
        out = client.containers.run(image, ["python3", "-c", JOB], remove=True, **kwargs)
        check(out)

    return timed(once, n)


def bench_bwrap_per_job(n: int) -> list[float]:
    from envgym.sandbox.bwrap import BwrapSandbox

    command = BwrapSandbox(Limits()).command()
    # Same namespaces and mounts, but python3 runs the job and exits.
    command = command[: command.index("/usr/bin/python3")] + ["/usr/bin/python3", "-c", JOB]
    return timed(lambda: check(subprocess.run(command, capture_output=True).stdout), n)


def pool_throughput(backend: str, size: int, jobs: int) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        pool = SandboxPool(size=size, backend=backend)
    with pool:
        per_thread = jobs // size

        def client() -> None:
            for _ in range(per_thread):
                check(pool.run(JOB).stdout)

        threads = [threading.Thread(target=client) for _ in range(size)]
        t = time.perf_counter()
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        return per_thread * size / (time.perf_counter() - t)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=200, help="jobs per fast method")
    parser.add_argument("--slow-jobs", type=int, default=30, help="jobs for docker run/exec")
    parser.add_argument("--quick", action="store_true", help="few jobs, for a smoke run")
    args = parser.parse_args()
    if args.quick:
        args.jobs, args.slow_jobs = 20, 5
    try:
        client = docker_client()
        client.images.get(SANDBOX_IMAGE)
        have_docker = True
    except Exception as exc:
        print(f"docker rows skipped: {exc}", file=sys.stderr)
        have_docker = False

    rows: list[tuple[str, list[float]]] = []
    plan = []
    if have_docker:
        plan += [
            ("docker, warm pooled runner (envgym)", lambda: bench_backend("docker", args.jobs)),
            ("docker exec into a warm container", lambda: bench_docker_exec(args.slow_jobs)),
            ("docker run --rm per job", lambda: bench_docker_run(args.slow_jobs)),
        ]
    plan += [
        ("bwrap, persistent runner (envgym)", lambda: bench_backend("bwrap", args.jobs)),
        ("bwrap started per job", lambda: bench_bwrap_per_job(args.slow_jobs)),
        ("process, rlimits only (no isolation)", lambda: bench_backend("process", args.jobs)),
    ]
    for name, fn in plan:
        print(f"measuring: {name}", file=sys.stderr, flush=True)
        rows.append((name, fn()))

    base = percentiles(rows[0][1])[0]
    print(f"\n`print(1)` job latency, {time.strftime('%Y-%m-%d')}\n")
    print("| method | jobs | p50 ms | p99 ms | p50 vs first row |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, samples in rows:
        p50, p99 = percentiles(samples)
        print(f"| {name} | {len(samples)} | {p50:.1f} | {p99:.1f} | {p50 / base:.1f}x |")

    print("\n| pool of 4, 4 client threads | jobs/s |")
    print("| --- | ---: |")
    for backend in (["docker"] if have_docker else []) + ["bwrap"]:
        rate = pool_throughput(backend, 4, args.jobs)
        print(f"| {backend} | {rate:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
