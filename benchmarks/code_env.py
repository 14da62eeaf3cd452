"""Episodes per second of envgym/Code-v0 under RL load, against `docker exec`
and against the previous grader.

64 Code-v0 envs in one `TextVectorEnv` (threads, so every env shares one
pool), each episode a single-turn submission of the reference solution (what
the oracle sends), graded in the sandbox: one job that runs every public and
hidden test. Measured on a pool of 4 warm docker sandboxes and of 4 warm
bwrap sandboxes, and, in the same run:

- the very same grading jobs sent with `docker exec` into 4 warm containers of
  the sandbox image from 4 threads (how a peer without a persistent runner
  pays per job);
- grading jobs alone (no env around them) on 4 sandboxes from 4 threads,
  today's grader (the harness keeps the submission in processes of its own;
  jobs forked from a zygote) beside the previous one (the harness ran the
  submission in its own interpreter; jobs forked from the runner), whose
  harness and runner are read from git at ``--previous-ref``.

It also measures stdin/stdout grading (`grade_only`): the shipped ``stdio``
problems' reference programs graded on a pool of 4 sandboxes from 4 threads,
in cases per second, beside the function problems' grading (tests per second)
and beside stdin/stdout grading with one sandbox job per case instead of one
per submission, in interleaved rounds (the median is printed)::

    python benchmarks/code_env.py              # 256 episodes per row
    python benchmarks/code_env.py --episodes 64 --skip-docker
    python benchmarks/code_env.py --stdio-only --rounds 5
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import secrets
import statistics
import subprocess
import tempfile
import threading
import time
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import gymnasium as gym
from sandbox import PREVIOUS_REF, ROOT, previous_runner, sandbox_factory  # beside this file

import envgym  # noqa: F401  (registers the ids)
from envgym.envs.code import execution, stdio
from envgym.envs.code.problems import load_split
from envgym.sandbox import Limits, SandboxPool
from envgym.vector import TextVectorEnv

ENV_ID = "envgym/Code-v0"


def pooled(backend: str, num_envs: int, episodes: int, pool_size: int) -> float:
    """Episodes/s for `num_envs` vectorised envs on a pool of `pool_size`."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        pool = SandboxPool(size=pool_size, backend=backend)
    with pool:

        def make() -> gym.Env:
            return gym.make(ENV_ID, difficulty="easy", max_turns=1, sandbox_pool=pool)

        vec = TextVectorEnv(env_fns=[make] * num_envs, workers="remote")
        try:
            _, infos = vec.reset(seed=0)
            done = wins = 0
            start = time.perf_counter()
            while done < episodes:
                solutions = infos["privileged"]["solution"]
                replies = [f"<answer>\n```python\n{code}\n```\n</answer>" for code in solutions]
                _, rewards, terminated, truncated, infos = vec.step(replies)
                finished = terminated | truncated
                done += int(finished.sum())
                wins += int((rewards[finished] == 1.0).sum())
            elapsed = time.perf_counter() - start
        finally:
            vec.close()
    if wins != done:
        raise SystemExit(f"{backend}: the reference solution failed {done - wins} of {done}")
    return done / elapsed


def _spec(problem, timeout_s: float = 10.0) -> dict:
    return {
        "entry_point": problem.entry_point,
        "prompt": problem.prompt,
        "setup": problem.setup,
        "public": list(problem.public_tests),
        "hidden": list(problem.tests),
        "timeout_s": timeout_s,
    }


def grading_job(problem, code: str) -> str:
    """The grading job Code-v0 sends, as one program for `python3 -c` (the
    submission file and stdin are made by the program itself, since exec has
    neither; the tests then sit in the harness's memory before it forks, which
    only this emulation of a peer does)."""
    mark = "@@envgym-result-" + secrets.token_hex(16) + "@@"
    stdin = mark + "\n" + json.dumps(_spec(problem))
    harness = execution.HARNESS_PATH.read_text()
    return (
        "import io, os, sys, tempfile\n"
        "os.chdir(tempfile.mkdtemp())\n"
        f"open('submission.py', 'w').write({code!r})\n"
        f"sys.stdin = io.StringIO({stdin!r})\n"
        f"exec(compile({harness!r}, 'harness.py', 'exec'), {{'__name__': '__main__'}})\n"
    )


def previous_harness(ref: str) -> str:
    """The grading program of commit ``ref`` (``_HARNESS`` in its execution.py)."""
    source = subprocess.run(
        ["git", "show", f"{ref}:envs/code/execution.py"], cwd=ROOT, check=True, capture_output=True
    ).stdout.decode()
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "_HARNESS":
            return ast.literal_eval(node.value)
    raise SystemExit(f"{ref}: envs/code/execution.py has no _HARNESS")


Job = tuple[str, dict, str]  # code, files, stdin


def current_job(problem) -> Job:
    mark = "@@envgym-result-" + secrets.token_hex(16) + "@@"
    code, files = execution.harness_job()
    files = {**files, "submission.py": problem.solution}
    return code, files, mark + "\n" + json.dumps(_spec(problem))


def previous_job(harness: str) -> Callable[[object], Job]:
    def make(problem) -> Job:
        mark = "@@envgym-result-" + secrets.token_hex(16) + "@@"
        spec = {k: v for k, v in _spec(problem).items() if k in ("entry_point", "setup")}
        spec.update(public=list(problem.public_tests), hidden=list(problem.tests))
        files = {"submission.py": problem.solution, "tests.json": json.dumps(spec)}
        return harness, files, mark + "\n"

    return make


def jobs_per_second(boxes: list, per_thread: int, grade: Callable[[object, int], str]) -> float:
    """Jobs per second of one client thread per sandbox in ``boxes``, each
    calling ``grade(box, i)`` ``per_thread`` times; ``grade`` returns the job's
    output, which must say every test passed. Closes the sandboxes."""
    failures: list[str] = []

    def client(box, offset: int) -> None:
        try:
            for i in range(per_thread):
                out = grade(box, offset + i)
                if '"ok": true' not in out or '"ok": false' in out:
                    failures.append(out[-300:])
        except Exception as exc:  # a thread's exception would vanish otherwise
            failures.append(repr(exc))

    try:
        threads = [threading.Thread(target=client, args=(b, k * 7)) for k, b in enumerate(boxes)]
        start = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.perf_counter() - start
    finally:
        for box in boxes:
            box.close()
    if failures:
        raise SystemExit(f"{len(failures)} grading jobs failed, e.g. {failures[0]}")
    return per_thread * len(boxes) / elapsed


def direct(make_box: Callable[[], object], make_job, problems: list, episodes: int) -> float:
    """Grading jobs per second on 4 sandboxes from 4 client threads, each job
    checked to pass every test."""
    boxes = [make_box() for _ in range(4)]
    for box in boxes:
        box.start()

    def grade(box, i: int) -> str:
        code, files, stdin = make_job(problems[i % len(problems)])
        return box.run(code, files=files, stdin=stdin).stdout

    return jobs_per_second(boxes, episodes // len(boxes), grade)


def docker_exec(episodes: int, problems: list, containers: int) -> float:
    """The same grading jobs through `docker exec` into warm containers."""
    from envgym.sandbox.docker import DockerSandbox

    boxes = [DockerSandbox(Limits()) for _ in range(containers)]
    for box in boxes:
        box.run("pass")  # starts the container: warm, as the pool's are
    jobs = [grading_job(p, p.solution) for p in problems]

    def grade(box, i: int) -> str:
        out = box.container.exec_run(["python3", "-c", jobs[i % len(jobs)]])
        return out.output.decode(errors="replace")

    return jobs_per_second(boxes, episodes // containers, grade)


def _grade_function(pool, problem) -> int:
    grade, _ = execution.grade_submission(pool, problem, problem.solution, 10.0)
    if grade.hidden_passed != len(grade.hidden) or not all(grade.public):
        raise SystemExit(f"{problem.task_id}: the reference failed a test")
    return len(grade.public) + len(grade.hidden)


def _grade_program(pool, problem) -> int:
    limits = stdio.CaseLimits.of(problem, 2.0, 256)
    grade, _ = stdio.grade_stdio(pool, problem, problem.solution, 10.0, limits)
    if grade.hidden_passed != len(grade.hidden) or not all(grade.public):
        raise SystemExit(f"{problem.task_id}: the reference failed a case ({grade.details})")
    return len(grade.public) + len(grade.hidden)


def _grade_program_per_case(pool, problem) -> int:
    """The alternative design: one sandbox job per case (outputs still judged here)."""
    limits = stdio.CaseLimits.of(problem, 2.0, 256)
    cases = [*problem.public_io, *problem.hidden_io]
    for case in cases:
        one = stdio.grade_stdio(pool, _one_case(problem, case), problem.solution, 10.0, limits)[0]
        if not one.hidden_passed:
            raise SystemExit(f"{problem.task_id}: the reference failed a case")
    return len(cases)


def _one_case(problem, case):
    from dataclasses import replace

    return replace(problem, public_io=(), hidden_io=(case,))


def grade_only(backend: str, pool_size: int, rounds: int, submissions: int) -> list[tuple]:
    """Median cases (or tests) per second and submissions per second of each
    grader over `rounds` interleaved rounds, `submissions` per grader a round."""
    function_problems = [p for p in load_split("basic") if p.difficulty == "easy"]
    program_problems = list(load_split("stdio"))
    graders = {
        "stdio, one job per submission": (_grade_program, program_problems),
        "stdio, one job per case": (_grade_program_per_case, program_problems),
        "function tests (basic, easy)": (_grade_function, function_problems),
    }
    rates: dict[str, list[tuple[float, float]]] = {name: [] for name in graders}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        pool = SandboxPool(size=pool_size, backend=backend)
    with pool, ThreadPoolExecutor(max_workers=pool_size) as threads:
        for round_ in range(rounds):
            order = list(graders) if round_ % 2 == 0 else list(reversed(graders))
            for name in order:
                grade, problems = graders[name]
                picked = [problems[i % len(problems)] for i in range(submissions)]
                start = time.perf_counter()
                cases = sum(threads.map(lambda p, g=grade: g(pool, p), picked))
                elapsed = time.perf_counter() - start
                rates[name].append((cases / elapsed, submissions / elapsed))
    return [
        (
            backend,
            name,
            statistics.median(r[0] for r in runs),
            statistics.median(r[1] for r in runs),
        )
        for name, runs in rates.items()
    ]


def print_grade_only(rows: list[tuple], pool_size: int, rounds: int) -> None:
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"\nGrading alone on a pool of {pool_size}, {pool_size} client threads, median of "
        f"{rounds} interleaved rounds (load average {load}, {os.cpu_count()} CPUs)\n"
    )
    print("| backend | grader | cases or tests/s | submissions/s | vs one job per submission |")
    print("| --- | --- | ---: | ---: | ---: |")
    base = {b: r for b, n, r, _ in rows if n == "stdio, one job per submission"}
    for backend, name, rate, subs in rows:
        ratio = rate / base[backend]
        print(f"| {backend} | {name} | {rate:,.1f} | {subs:,.1f} | {ratio:.2f}x |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=256, help="episodes per row")
    parser.add_argument("--envs", type=int, default=64, help="envs in the vector env")
    parser.add_argument("--pool", type=int, default=4, help="sandboxes in the pool")
    parser.add_argument("--skip-docker", action="store_true", help="bwrap only")
    parser.add_argument(
        "--previous-ref", default=PREVIOUS_REF, help="git commit of the previous grader"
    )
    parser.add_argument("--stdio-only", action="store_true", help="only the grading table")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved grading rounds")
    parser.add_argument(
        "--submissions", type=int, default=24, help="submissions per grader per round"
    )
    args = parser.parse_args(argv)
    backends = ["bwrap"] if args.skip_docker else ["docker", "bwrap"]
    grading = [
        row
        for backend in backends
        for row in grade_only(backend, args.pool, args.rounds, args.submissions)
    ]
    if args.stdio_only:
        print_grade_only(grading, args.pool, args.rounds)
        return 0

    problems = [p for p in load_split("basic") if p.difficulty == "easy"]
    runner = previous_runner(args.previous_ref, Path(tempfile.mkdtemp(prefix="envgym-prev-")))
    old_job = previous_job(previous_harness(args.previous_ref))
    rows: list[tuple[str, float]] = []
    if not args.skip_docker:
        rows.append(("docker exec, 4 warm containers", docker_exec(args.episodes, problems, 4)))
    for backend in backends:
        rate = pooled(backend, args.envs, args.episodes, args.pool)
        rows.append((f"envgym pool of {args.pool}, {backend}", rate))
    for backend in backends:
        now = direct(sandbox_factory(backend, None), current_job, problems, args.episodes)
        rows.append((f"grading jobs alone, {backend}", now))
        then = direct(sandbox_factory(backend, runner), old_job, problems, args.episodes)
        rows.append((f"previous grader, {backend}", then))
    base = rows[0][1]
    print(f"{args.envs} Code-v0 envs (easy problems), {args.episodes} single-turn episodes "
          "per row, the reference solution graded by every test\n")  # fmt: skip
    print(f"| {'method':36} | episodes/s | vs {rows[0][0].split(',')[0]} |")
    print(f"| {'-' * 36} | ---: | ---: |")
    for name, rate in rows:
        print(f"| {name:36} | {rate:,.1f} | {rate / base:.1f}x |")
    print("\n| backend | grading jobs/s now | previous grader | now vs previous |")
    print("| --- | ---: | ---: | ---: |")
    for backend in backends:
        now = dict(rows)[f"grading jobs alone, {backend}"]
        then = dict(rows)[f"previous grader, {backend}"]
        print(f"| {backend} | {now:,.1f} | {then:,.1f} | {now / then:.2f}x |")
    print_grade_only(grading, args.pool, args.rounds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
