"""The job runner that lives inside a sandbox.

One runner process starts with its sandbox and serves jobs until stdin closes,
so a job pays neither for a container start nor for `docker exec`. It must run
on any Python 3.9+ with only the standard library: it is copied into the
sandbox image and bind-mounted into bubblewrap.

Protocol: one JSON object per line on stdin (a job), one JSON object per line
on stdout (its result). The runner writes nothing else to stdout. Each job:

1. the work directory and the scratch folders (``--scratch``: /tmp, /dev/shm,
   /dev/mqueue in an isolated sandbox) are emptied, System V IPC objects left
   by the last job are removed, and the job's files are written;
2. a child is forked into a new session with rlimits on memory, CPU time,
   file size, open files and (optionally) processes; Python jobs run in the
   forked interpreter (no interpreter start-up), bash jobs exec /bin/bash;
3. stdout and stderr are read up to a cap, then drained and dropped, and a
   marker says so; past the timeout the job's process group is killed;
4. with ``--isolated`` (a sandbox with its own PID namespace) every process
   but the runner is killed after the job, so nothing the job started lives
   on. Without it only the job's process group is killed: the host is shared.

Each reply repeats the job's ``nonce``, so the host can tell the runner's
reply from one a job forged. The runner is not dumpable: processes of the
same uid (the jobs) can neither open its file descriptors under /proc nor
ptrace it. Job processes ask the kernel to kill them first when the sandbox
runs out of memory (``oom_score_adj``), so the runner survives a memory bomb.
"""

from __future__ import annotations

import base64
import ctypes
import ctypes.util
import functools
import json
import os
import resource
import selectors
import shutil
import signal
import sys
import threading
import time
import traceback

TRUNCATION_MARKER = "\n[envgym: {stream} truncated: the job wrote more than {limit} bytes]\n"


def _empty_dir(path: str) -> None:
    for entry in os.scandir(path):
        try:
            if entry.is_dir(follow_symlinks=False):
                # A job may have made a folder read-only to survive the wipe.
                for root, dirs, _files in os.walk(entry.path):
                    for name in dirs:
                        os.chmod(os.path.join(root, name), 0o700)
                os.chmod(entry.path, 0o700)
                shutil.rmtree(entry.path)
            else:
                os.unlink(entry.path)
        except FileNotFoundError:
            pass


def _empty_scratch(folders: list[str]) -> None:
    for folder in folders:
        if folder.endswith("/mqueue"):
            # POSIX message queues cannot be folders; unlink removes each queue.
            for entry in _scandir(folder):
                try:
                    os.unlink(entry.path)
                except OSError:
                    pass
        elif os.path.isdir(folder):
            _empty_dir(folder)


def _scandir(folder: str) -> list:
    try:
        return list(os.scandir(folder))
    except OSError:
        return []


_IPC_RMID = 0


@functools.cache
def _libc():
    """The C library, loaded once (find_library runs ldconfig: too slow per job)."""
    for name in ("libc.so.6", ctypes.util.find_library("c")):
        try:
            return ctypes.CDLL(name, use_errno=True)
        except (OSError, TypeError):
            continue
    return None


def _remove_sysv_ipc() -> None:
    """Remove the System V shared memory, semaphores and message queues of this
    IPC namespace (the sandbox's own), so no job reads what the last one left."""
    libc = _libc()
    if libc is None:
        return
    for kind, remove in (
        ("shm", lambda i: libc.shmctl(i, _IPC_RMID, None)),
        ("sem", lambda i: libc.semctl(i, 0, _IPC_RMID)),
        ("msg", lambda i: libc.msgctl(i, _IPC_RMID, None)),
    ):
        try:
            with open(f"/proc/sysvipc/{kind}") as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if len(fields) > 1:
                remove(int(fields[1]))


#: Where a container sees its own cgroup's out-of-memory kill count (v2, v1).
_OOM_COUNTERS = ("/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control")


def oom_kill_count(path: str) -> int | None:
    """The ``oom_kill`` count in a cgroup's memory.events (v2) or
    memory.oom_control (v1) file; None where it cannot be read."""
    try:
        with open(path) as f:
            for line in f:
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
    except (OSError, ValueError):
        pass
    return None


def _oom_kills() -> int | None:
    for path in _OOM_COUNTERS:
        count = oom_kill_count(path)
        if count is not None:
            return count
    return None


def _not_dumpable() -> None:
    """Keep same-uid processes (the jobs) out of /proc/<runner>/fd and ptrace."""
    libc = _libc()
    if libc is not None:
        libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0


def _write_files(work: str, files: dict) -> str | None:
    for name, content in files.items():
        path = os.path.normpath(os.path.join(work, name))
        if os.path.isabs(name) or not path.startswith(work + os.sep):
            return f"file name {name!r} leaves the work directory; use a relative path"
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if isinstance(content, dict):
            with open(path, "wb") as f:
                f.write(base64.b64decode(content["b64"]))
        else:
            with open(path, "w", encoding="utf-8") as f:
                f.write(content)
    return None


def _limit(kind: int, value: int) -> None:
    try:
        resource.setrlimit(kind, (value, value))
    except (ValueError, OSError):
        # A hard limit already below ours (set by the sandbox) stays in force.
        soft, hard = resource.getrlimit(kind)
        if hard != resource.RLIM_INFINITY and hard < value:
            resource.setrlimit(kind, (hard, hard))


def _child(job: dict, work: str, stdin_r: int, out_w: int, err_w: int) -> None:
    """Runs in the forked child; never returns."""
    code = 1
    try:
        os.setsid()
        os.dup2(stdin_r, 0)
        os.dup2(out_w, 1)
        os.dup2(err_w, 2)
        os.closerange(3, 65536)
        os.chdir(work)
        try:
            # Raising one's own score needs no privilege: an out-of-memory kill
            # in the sandbox then takes the job, not the runner.
            with open("/proc/self/oom_score_adj", "w") as f:
                f.write("1000")
        except OSError:
            pass
        mb = 1024 * 1024
        _limit(resource.RLIMIT_AS, int(job["memory_mb"]) * mb)
        _limit(resource.RLIMIT_CPU, int(job["timeout_s"]) + 1)
        _limit(resource.RLIMIT_FSIZE, int(job["file_mb"]) * mb)
        _limit(resource.RLIMIT_NOFILE, 256)
        _limit(resource.RLIMIT_CORE, 0)
        if job.get("max_processes"):
            _limit(resource.RLIMIT_NPROC, int(job["max_processes"]))
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": work,
            "LANG": "C.UTF-8",
            "PYTHONDONTWRITEBYTECODE": "1",
            "OPENBLAS_NUM_THREADS": "1",
            "OMP_NUM_THREADS": "1",
            **job.get("env", {}),
        }
        if job["language"] == "bash":
            os.execve("/bin/bash", ["bash", "main.sh"], env)
        os.environ.clear()
        os.environ.update(env)
        sys.stdin = open(0, closefd=False)  # noqa: SIM115
        sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
        sys.argv = ["main.py"]
        sys.path[0] = work
        try:
            path = os.path.join(work, "main.py")
            with open(path, encoding="utf-8") as f:
                source = f.read()
            main_module = {"__name__": "__main__", "__file__": path, "__builtins__": __builtins__}
            sys.modules["__main__"] = type(sys)("__main__")
            sys.modules["__main__"].__dict__.update(main_module)
            exec(compile(source, path, "exec"), sys.modules["__main__"].__dict__)
            code = 0
        except SystemExit as exc:
            if exc.code is None:
                code = 0
            elif isinstance(exc.code, int):
                code = exc.code
            else:
                print(exc.code, file=sys.stderr)
                code = 1
        except BaseException:
            traceback.print_exc()
            code = 1
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:
                pass
    except BaseException:
        try:
            os.write(2, traceback.format_exc().encode())
        except BaseException:
            pass
    os._exit(code & 0xFF)


def _kill_everything_else() -> None:
    """Kill every process in this PID namespace except the runner (and PID 1)."""
    try:
        os.kill(-1, signal.SIGKILL)
    except ProcessLookupError:
        pass
    _reap()


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _other_processes() -> list[int]:
    me = os.getpid()
    pids = []
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) not in (me, 1):
            try:
                with open(f"/proc/{name}/stat") as f:
                    state = f.read().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if state not in ("Z", "X"):
                pids.append(int(name))
    return pids


def _feed_stdin(fd: int, data: bytes) -> None:
    """Write the job's stdin without blocking the runner on a job that never reads it."""
    if not data:
        os.close(fd)
        return

    def feed() -> None:
        try:
            _write_all(fd, data)
        except OSError:
            pass
        finally:
            os.close(fd)

    threading.Thread(target=feed, daemon=True).start()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def run_job(job: dict, work: str, isolated: bool, scratch: list[str]) -> dict:
    started = time.monotonic()
    _empty_dir(work)
    _empty_scratch(scratch)
    if isolated:
        _remove_sysv_ipc()
    oom_before = _oom_kills()
    files = dict(job.get("files") or {})
    main = "main.sh" if job["language"] == "bash" else "main.py"
    files[main] = job["code"]
    problem = _write_files(work, files)
    if problem:
        return {"error": problem}
    stdin_r, stdin_w = os.pipe()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:
        for fd in (stdin_w, out_r, err_r):
            os.close(fd)
        _child(job, work, stdin_r, out_w, err_w)
    for fd in (stdin_r, out_w, err_w):
        os.close(fd)
    _feed_stdin(stdin_w, (job.get("stdin") or "").encode())
    limit = int(job["max_output_bytes"])
    captured = {out_r: bytearray(), err_r: bytearray()}
    dropped = {out_r: 0, err_r: 0}
    sel = selectors.DefaultSelector()
    sel.register(out_r, selectors.EVENT_READ)
    sel.register(err_r, selectors.EVENT_READ)
    deadline = started + float(job["timeout_s"])
    timed_out = False
    status = None
    open_streams = 2
    while True:
        if status is None:
            done, st = os.waitpid(pid, os.WNOHANG)
            if done:
                status = st
                # Background children may hold the pipes open: stop waiting soon.
                deadline = min(deadline, time.monotonic() + 0.2)
        if open_streams == 0 and status is not None:
            break
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            if status is None:
                timed_out = True
            break
        for key, _ in sel.select(timeout=min(remaining, 0.05)):
            fd = key.fd
            chunk = os.read(fd, 65536)
            if not chunk:
                sel.unregister(fd)
                os.close(fd)
                open_streams -= 1
                continue
            room = limit - len(captured[fd])
            captured[fd] += chunk[:room] if room > 0 else b""
            dropped[fd] += max(0, len(chunk) - max(room, 0))
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    if status is None:
        _, status = os.waitpid(pid, 0)
    if isolated:
        _kill_everything_else()
    for key in list(sel.get_map().values()):
        os.close(key.fd)
    sel.close()
    result = {
        "stdout": captured[out_r].decode("utf-8", "replace"),
        "stderr": captured[err_r].decode("utf-8", "replace"),
        "timed_out": timed_out,
        "truncated": bool(dropped[out_r] or dropped[err_r]),
        "duration_s": time.monotonic() - started,
    }
    for fd, name in ((out_r, "stdout"), (err_r, "stderr")):
        if dropped[fd]:
            result[name] += TRUNCATION_MARKER.format(stream=name, limit=limit)
    if os.WIFSIGNALED(status):
        result["exit_code"] = -os.WTERMSIG(status)
    else:
        result["exit_code"] = os.WEXITSTATUS(status)
    if isolated:
        result["leftover_processes"] = len(_other_processes())
    oom_after = _oom_kills()
    if oom_before is not None and oom_after is not None:
        result["oom_kills"] = oom_after - oom_before
    return result


def main(argv: list[str]) -> int:
    work = "/work"
    isolated = False
    preload = False
    scratch: list[str] = []
    args = list(argv)
    while args:
        arg = args.pop(0)
        if arg == "--work":
            work = os.path.realpath(args.pop(0))
        elif arg == "--isolated":
            isolated = True
        elif arg == "--preload-numpy":
            preload = True
        elif arg == "--scratch":
            scratch.append(args.pop(0))
    if preload:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
        try:
            import numpy  # noqa: F401  (jobs that import it start instantly)
        except ImportError:
            pass
    # The job may kill us; a broken pipe to the host must end the runner quietly.
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    _not_dumpable()
    out = sys.stdout
    out.write(json.dumps({"ready": True, "pid": os.getpid()}) + "\n")
    out.flush()
    for line in sys.stdin:
        if not line.strip():
            continue
        nonce = None
        try:
            job = json.loads(line)
            nonce = job.pop("nonce", None)
            result = run_job(job, work, isolated, scratch)
        except Exception:
            result = {"error": "runner failed: " + traceback.format_exc(limit=3)}
        result["nonce"] = nonce
        out.write(json.dumps(result) + "\n")
        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
