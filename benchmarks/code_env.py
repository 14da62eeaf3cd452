"""Episodes per second of envgym/Code-v0 under RL load, against `docker exec`.

64 Code-v0 envs in one `TextVectorEnv` (threads, so every env shares one
pool), each episode a single-turn submission of the reference solution (what
the oracle sends), graded in the sandbox: one job that loads the submission
and runs every public and hidden test. Measured on a pool of 4 warm docker
sandboxes and of 4 warm bwrap sandboxes, and, in the same run, the very same
grading jobs sent with `docker exec` into 4 warm containers of the sandbox
image from 4 threads (how a peer without a persistent runner pays per job).

    python benchmarks/code_env.py              # 256 episodes per row
    python benchmarks/code_env.py --episodes 64 --skip-docker
"""

from __future__ import annotations

import argparse
import json
import secrets
import threading
import time
import warnings

import gymnasium as gym

import envgym  # noqa: F401  (registers the ids)
from envgym.envs.code import execution
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


def grading_job(problem, code: str) -> str:
    """The grading job Code-v0 sends, as one program for `python3 -c` (files and
    the marker are written by the program itself, since exec has no files)."""
    spec = {"entry_point": problem.entry_point, "setup": problem.setup,
            "public": list(problem.public_tests), "hidden": list(problem.tests)}  # fmt: skip
    mark = "@@envgym-result-" + secrets.token_hex(16) + "@@"
    return (
        "import io, os, sys, tempfile\n"
        "os.chdir(tempfile.mkdtemp())\n"
        f"open('submission.py', 'w').write({code!r})\n"
        f"open('tests.json', 'w').write({json.dumps(spec)!r})\n"
        f"sys.stdin = io.StringIO({mark + chr(10)!r})\n" + execution._HARNESS
    )


def docker_exec(episodes: int, problems: list, containers: int) -> float:
    """The same grading jobs through `docker exec` into warm containers."""
    from envgym.sandbox.docker import DockerSandbox

    boxes = [DockerSandbox(Limits()) for _ in range(containers)]
    try:
        for box in boxes:
            box.run("pass")  # starts the container: warm, as the pool's are
        jobs = [grading_job(p, p.solution) for p in problems]
        per_thread = episodes // containers
        failures: list[str] = []

        def client(box: DockerSandbox, offset: int) -> None:
            try:
                for i in range(per_thread):
                    job = jobs[(offset + i) % len(jobs)]
                    out = box.container.exec_run(["python3", "-c", job])
                    if b'"ok": true' not in out.output or b'"ok": false' in out.output:
                        failures.append(out.output.decode(errors="replace")[-300:])
            except Exception as exc:  # a thread's exception would vanish otherwise
                failures.append(repr(exc))

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
        raise SystemExit(f"docker exec: {len(failures)} jobs failed, e.g. {failures[0]}")
    return per_thread * containers / elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=256, help="episodes per row")
    parser.add_argument("--envs", type=int, default=64, help="envs in the vector env")
    parser.add_argument("--pool", type=int, default=4, help="sandboxes in the pool")
    parser.add_argument("--skip-docker", action="store_true", help="bwrap only")
    args = parser.parse_args(argv)

    problems = [p for p in load_split("basic") if p.difficulty == "easy"]
    rows: list[tuple[str, float]] = []
    if not args.skip_docker:
        rows.append(("docker exec, 4 warm containers", docker_exec(args.episodes, problems, 4)))
        rate = pooled("docker", args.envs, args.episodes, args.pool)
        rows.append((f"envgym pool of {args.pool}, docker", rate))
    rate = pooled("bwrap", args.envs, args.episodes, args.pool)
    rows.append((f"envgym pool of {args.pool}, bwrap", rate))
    base = rows[0][1]
    print(f"{args.envs} Code-v0 envs (easy problems), {args.episodes} single-turn episodes "
          "per row, the reference solution graded by every test\n")  # fmt: skip
    print(f"| {'method':36} | episodes/s | vs {rows[0][0].split(',')[0]} |")
    print(f"| {'-' * 36} | ---: | ---: |")
    for name, rate in rows:
        print(f"| {name:36} | {rate:,.1f} | {rate / base:.1f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
