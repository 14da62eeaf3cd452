"""The Code env's stdin/stdout job: trusted code that runs a submitted program
once per case in a sandbox and reports what it printed, never whether that
was right.

The host sends this file as a sandbox job, the program as the file
``submission.py``, and on stdin a random marker line and the cases' inputs
and limits (never their expected outputs: those stay on the host, which
compares). The job is the driver process: not dumpable (the program cannot
read its memory or file descriptors) and a child subreaper (whatever the
program forks is reparented here and killed after its case).

For each case the driver writes the program to a new folder of a random name,
and runs ``python -I submission.py`` there in a new session: stdin a memory
file holding the case's input, stdout and stderr pipes that only the driver
reads, an address-space limit of the case's ``memory_mb`` and a CPU limit,
every other descriptor closed. It stops the program at the case's time limit
or when it prints more than the case's ``max_output`` bytes, then kills every
process left (the program's session, and every orphan reparented to the
driver), so nothing of one case runs into the next. ``-I`` keeps the
program's folder, the user's site folder and ``PYTHON*`` variables off the
import path, so a file one case writes cannot change how the next one runs.

After each case the driver writes one line to its stdout, which the program
never holds: the marker, then ``{"index": i, "exit": int | null, "signal":
int | null, "timed_out": bool, "output_limit": bool, "seconds": float,
"stdout": base64, "stderr": str}`` (the last ``STDERR_CHARS`` of stderr). A
first record of index -1 says whether the program compiles. Standard library
only: the sandbox has no envgym.
"""

from __future__ import annotations

import base64
import ctypes
import json
import os
import resource
import secrets
import select
import signal
import sys
import time

#: Characters of a case's stderr reported (its end, where a traceback ends).
STDERR_CHARS = 1000
#: Seconds kept back from the job's time limit to report the last results.
RESERVE_S = 0.3
#: Rounds of killing the processes a case left behind (each may have forked).
SWEEP_ROUNDS = 50
_PR_SET_DUMPABLE = 4
_PR_SET_CHILD_SUBREAPER = 36


def _prctl(option: int, value: int) -> None:
    try:
        ctypes.CDLL(None).prctl(option, value, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _children() -> list[int]:
    """The processes whose parent is this one (orphans reparent here)."""
    me, found = os.getpid(), []
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses.
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 1 and int(fields[1]) == me:
            found.append(int(name))
    return found


def _sweep(pgid: int) -> None:
    """Kill the case's session and every process reparented to the driver."""
    for _ in range(SWEEP_ROUNDS):
        try:
            os.killpg(pgid, signal.SIGKILL)
        except OSError:
            pass
        left = _children()
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
        if not left and not _children():
            return


def _child(folder: str, stdin_fd: int, out_w: int, err_w: int, case: dict) -> None:
    """In the forked child: limits, descriptors, then the program; never returns."""
    try:
        os.setsid()
        os.chdir(folder)
        for fd, target in ((stdin_fd, 0), (out_w, 1), (err_w, 2)):
            os.dup2(fd, target)
        os.closerange(3, 65536)
        _lower(resource.RLIMIT_AS, int(case["memory_mb"]) << 20)
        _lower(resource.RLIMIT_CPU, int(float(case["time_limit_s"])) + 1)
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": folder,
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "OPENBLAS_NUM_THREADS": "1",
            "OMP_NUM_THREADS": "1",
        }
        os.execve(sys.executable, [sys.executable, "-I", "submission.py"], env)
    except BaseException as exc:
        os.write(2, f"the program could not start: {exc}\n".encode())
    finally:
        os._exit(127)


def _lower(limit: int, value: int) -> None:
    """Set a resource limit to `value`, or to the hard limit if that is lower."""
    _, hard = resource.getrlimit(limit)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(limit, (value, value))


def run_case(source: bytes, case: dict, deadline: float) -> dict:
    """Run the program on one case; what it printed and how it ended."""
    folder = os.path.abspath(f"case-{secrets.token_hex(8)}")
    os.mkdir(folder, 0o700)
    with open(os.path.join(folder, "submission.py"), "wb") as f:
        f.write(source)
    stdin_fd = os.memfd_create("stdin")
    data = case["input"].encode("utf-8", errors="surrogateescape")
    view = memoryview(data)
    while view:
        view = view[os.write(stdin_fd, view) :]
    os.lseek(stdin_fd, 0, os.SEEK_SET)
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:
        _child(folder, stdin_fd, out_w, err_w, case)
    for fd in (stdin_fd, out_w, err_w):
        os.close(fd)
    stop = min(started + float(case["time_limit_s"]), deadline)
    limit = int(case["max_output"])
    out, err = bytearray(), bytearray()
    open_fds = {out_r, err_r}
    timed_out = output_limit = False
    while open_fds:
        wait = stop - time.monotonic()
        if wait <= 0:
            timed_out = True
            break
        ready, _, _ = select.select(list(open_fds), [], [], wait)
        for fd in ready:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                open_fds.discard(fd)
            elif fd == out_r:
                out += chunk
            else:
                err = (err + chunk)[-4 * STDERR_CHARS :]
        if len(out) > limit:
            output_limit = True
            break
    status = None
    if not (timed_out or output_limit):
        # Both pipes closed: the program ended, or closed them and lives on.
        left = stop - time.monotonic()
        while status is None and left > 0:
            done, status_code = os.waitpid(pid, os.WNOHANG)
            if done:
                status = status_code
                break
            time.sleep(min(0.002, left))
            left = stop - time.monotonic()
        timed_out = status is None
    seconds = time.monotonic() - started
    if status is None:
        try:
            os.kill(pid, signal.SIGKILL)
            _, status = os.waitpid(pid, 0)
        except ChildProcessError:
            status = None
    _sweep(pid)
    for fd in (out_r, err_r):
        os.close(fd)
    exited = status is not None and os.WIFEXITED(status)
    killed = status is not None and os.WIFSIGNALED(status)
    return {
        "index": case["index"],
        "exit": os.WEXITSTATUS(status) if exited else None,
        "signal": os.WTERMSIG(status) if killed else None,
        "timed_out": timed_out,
        "output_limit": output_limit,
        "seconds": round(seconds, 4),
        "stdout": base64.b64encode(bytes(out[:limit])).decode("ascii"),
        "stderr": err.decode("utf-8", errors="replace")[-STDERR_CHARS:],
    }


def main() -> None:
    started = time.monotonic()
    out = os.dup(1)
    mark = sys.stdin.readline().strip()
    spec = json.loads(sys.stdin.read())
    deadline = started + float(spec["timeout_s"]) - RESERVE_S

    def report(record: dict) -> None:
        os.write(out, f"\n{mark}{json.dumps(record)}\n".encode())

    with open("submission.py", "rb") as f:
        source = f.read()
    try:
        compile(source, "submission.py", "exec", dont_inherit=True)
        compiled = None
    except BaseException as exc:  # a SyntaxError, or the compiler's own limits
        compiled = f"{type(exc).__name__}: {exc}"[:400]
    report({"index": -1, "compiles": compiled is None, "error": compiled})
    if compiled is not None:
        return
    for case in spec["cases"]:
        if time.monotonic() >= deadline:
            break
        report(run_case(source, case, deadline))


if __name__ == "__main__":
    _prctl(_PR_SET_DUMPABLE, 0)
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    main()
