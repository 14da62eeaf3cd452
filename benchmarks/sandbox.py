"""Latency of a `print(1)` Python job in each way of running sandboxed code.

Measured in one run, so the ratios hold on a noisy machine:

- warm pooled docker runner (envgym's docker backend: jobs over the attached
  stdin/stdout of a running container), with today's runner (each job forked
  from a zygote that never reads a job) and with the previous runner (each
  job forked from the runner itself), the latter read from git at
  ``--previous-ref``;
- `docker exec` into a warm container of the same image;
- `docker run --rm` per job (same hardening flags);
- bwrap (envgym's bwrap backend: a persistent runner in bubblewrap), today's
  runner and the previous one;
- bwrap started per job (one bubblewrap process per job);
- process (rlimits only, no isolation);

then jobs/s through 4 sandboxes driven by 4 client threads, today's runner
and the previous one on each backend.

    python benchmarks/sandbox.py [--jobs 200] [--slow-jobs 30] [--quick]
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

from envgym.sandbox import Limits, make_sandbox
from envgym.sandbox.base import ISOLATED_RUNNER_ARGS
from envgym.sandbox.images import SANDBOX_IMAGE, docker_client

JOB = "print(1)"
ROOT = Path(__file__).resolve().parent.parent
#: The last commit whose runner forked each job from itself (one file, runner.py).
PREVIOUS_REF = "96c4b33"


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


def previous_runner(ref: str, folder: Path) -> Path:
    """The runner of commit ``ref``, from git, as ``folder/runner.py`` (readable
    by the bwrap sandbox's uid)."""
    source = subprocess.run(
        ["git", "show", f"{ref}:envgym/sandbox/runner.py"],
        cwd=ROOT,
        check=True,
        capture_output=True,
    ).stdout
    path = folder / "runner.py"
    path.write_bytes(source)
    folder.chmod(0o755)
    path.chmod(0o644)
    return path


@contextlib.contextmanager
def runner_files(path: Path | None) -> Iterator[None]:
    """bwrap sandboxes made inside run ``path`` (a one-file runner) instead of
    today's runner; None changes nothing."""
    import envgym.sandbox.bwrap as bwrap

    if path is None:
        yield
        return
    saved = bwrap.RUNNER_PATH, bwrap.RUNNER_FILES
    bwrap.RUNNER_PATH, bwrap.RUNNER_FILES = path, (path,)
    bwrap.staged_paths.cache_clear()
    try:
        yield
    finally:
        bwrap.RUNNER_PATH, bwrap.RUNNER_FILES = saved
        bwrap.staged_paths.cache_clear()


def sandbox_factory(backend: str, previous: Path | None) -> Callable[[], object]:
    """Makes an unstarted sandbox of ``backend`` with today's runner, or with
    the one-file runner ``previous``."""
    if backend == "docker" and previous is not None:
        from envgym.sandbox.docker import DockerSandbox

        class PreviousRunnerDocker(DockerSandbox):
            def container_kwargs(self) -> dict:
                kwargs = super().container_kwargs()
                mounted = "/opt/envgym/previous_runner.py"
                kwargs["volumes"] = {str(previous): {"bind": mounted, "mode": "ro"}}
                kwargs["command"] = ["python3", "-I", "-u", mounted, *ISOLATED_RUNNER_ARGS]
                return kwargs

        return lambda: PreviousRunnerDocker(Limits(), channel="attach")  # what it had

    def make():
        with warnings.catch_warnings(), runner_files(previous):
            warnings.simplefilter("ignore", RuntimeWarning)
            box = make_sandbox(backend, limits=Limits())
            box.start()  # the runner's files are chosen when bubblewrap starts
        return box

    return make


def bench_sandbox(backend: str, n: int, previous: Path | None = None) -> list[float]:
    box = sandbox_factory(backend, previous)()
    with box:
        return timed(lambda: check(box.run(JOB).stdout), n)


def pool_throughput(backend: str, size: int, jobs: int, previous: Path | None = None) -> float:
    """Jobs/s of ``size`` warm sandboxes, each driven by its own client thread."""
    make = sandbox_factory(backend, previous)
    boxes = [make() for _ in range(size)]
    try:
        for box in boxes:
            box.start()
            check(box.run(JOB).stdout)
        per_thread = jobs // size

        def client(box) -> None:
            for _ in range(per_thread):
                check(box.run(JOB).stdout)

        threads = [threading.Thread(target=client, args=(box,)) for box in boxes]
        t = time.perf_counter()
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        return per_thread * size / (time.perf_counter() - t)
    finally:
        for box in boxes:
            box.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=200, help="jobs per fast method")
    parser.add_argument("--slow-jobs", type=int, default=30, help="jobs for docker run/exec")
    parser.add_argument("--quick", action="store_true", help="few jobs, for a smoke run")
    parser.add_argument(
        "--previous-ref", default=PREVIOUS_REF, help="git commit of the previous runner"
    )
    args = parser.parse_args()
    previous = previous_runner(args.previous_ref, Path(tempfile.mkdtemp(prefix="envgym-prev-")))
    if args.quick:
        args.jobs, args.slow_jobs = 20, 5
    try:
        client = docker_client()
        client.images.get(SANDBOX_IMAGE)
        have_docker = True
    except Exception as exc:
        print(f"docker rows skipped: {exc}", file=sys.stderr)
        have_docker = False

    # Pools first: the `docker run --rm` rows leave containers being torn down
    # that would compete with whatever runs after them.
    pools = []
    for backend in (["docker"] if have_docker else []) + ["bwrap"]:
        print(f"measuring: pools on {backend}", file=sys.stderr, flush=True)
        now = pool_throughput(backend, 4, args.jobs * 2)
        before = pool_throughput(backend, 4, args.jobs * 2, previous)
        pools.append((backend, now, before))

    rows: list[tuple[str, list[float]]] = []
    plan = []
    if have_docker:
        plan += [
            ("docker, warm pooled runner (envgym)", lambda: bench_sandbox("docker", args.jobs)),
            (
                "docker, previous runner (forks jobs from itself)",
                lambda: bench_sandbox("docker", args.jobs, previous),
            ),
            ("docker exec into a warm container", lambda: bench_docker_exec(args.slow_jobs)),
            ("docker run --rm per job", lambda: bench_docker_run(args.slow_jobs)),
        ]
    plan += [
        ("bwrap, persistent runner (envgym)", lambda: bench_sandbox("bwrap", args.jobs)),
        (
            "bwrap, previous runner (forks jobs from itself)",
            lambda: bench_sandbox("bwrap", args.jobs, previous),
        ),
        ("bwrap started per job", lambda: bench_bwrap_per_job(args.slow_jobs)),
        ("process, rlimits only (no isolation)", lambda: bench_sandbox("process", args.jobs)),
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

    print("\n| 4 sandboxes, 4 client threads | today's runner, jobs/s | previous runner | ratio |")
    print("| --- | ---: | ---: | ---: |")
    for backend, now, before in pools:
        print(f"| {backend} | {now:.0f} | {before:.0f} | {now / before:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
