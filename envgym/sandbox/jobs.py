"""What runs in a sandbox beside the runner's loop (`runner.py`): the zygote
that forks job processes, what a job process does, and what the runner
empties and counts after each job.

The zygote is forked from the runner before the runner reads any job. It
forks one job process per job when the runner asks (`Zygote.spawn`), ahead of
the job. It never reads a job, so a job process, a copy of the zygote, holds
no other job's code, files, stdin or results in its memory. It imports
nothing for the jobs: numpy preloaded here made every fork and exit slower
(0.7 ms a job on a 2-core VM, and more CPU than one core's quota for a stream
of short jobs) to spare the few jobs that import it about 0.1 s. A job process reads its
own spec (code, language, limits) from a pipe only it holds, starts a new
session under rlimits and runs the job: Python in the forked interpreter (no
start-up cost), bash by exec. Asked to ``clean``, the zygote kills every
other process of the sandbox (``kill(-1)`` spares the sender and PID 1, the
runner). Like the runner it needs Python 3.9+ and the standard library only:
inside a sandbox both files sit in /opt/envgym.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import fcntl
import functools
import gc
import json
import os
import resource
import select
import selectors
import signal
import socket
import sys
import time
import traceback

#: Bounds on emptying a folder after a job; past any of them the sandbox is replaced.
CLEAN_MAX_ENTRIES = 10_000
CLEAN_MAX_DEPTH = 64
CLEAN_MAX_SECONDS = 1.0
#: How long the runner waits for the zygote before it gives the sandbox up.
ZYGOTE_TIMEOUT_S = 30.0
#: What the runner reads from the zygote in one message (a few words).
_MESSAGE_BYTES = 256


# ---------------------------------------------------------------- emptying folders
def clear_folder(folder: str) -> bool:
    """Remove everything inside ``folder`` (not the folder itself); False when
    something could not be removed or the tree passes `CLEAN_MAX_ENTRIES`,
    `CLEAN_MAX_DEPTH` or `CLEAN_MAX_SECONDS`. Folders are made writable and
    searchable before they are listed, so a job cannot lock its files in."""
    deadline = time.monotonic() + CLEAN_MAX_SECONDS
    seen = 0
    stack = [(folder, 0, False)]
    try:
        while stack:
            path, depth, listed = stack.pop()
            if listed:
                if path != folder:
                    os.rmdir(path)
                continue
            if depth > CLEAN_MAX_DEPTH:
                return False
            if path != folder:
                os.chmod(path, 0o700)
            with os.scandir(path) as entries:
                found = list(entries)
            stack.append((path, depth, True))
            for entry in found:
                seen += 1
                if seen > CLEAN_MAX_ENTRIES or time.monotonic() > deadline:
                    return False
                if entry.is_dir(follow_symlinks=False):
                    stack.append((entry.path, depth + 1, False))
                else:
                    os.unlink(entry.path)
    except OSError:
        return False
    return True


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


def remove_sysv_ipc() -> None:
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


@functools.cache
def _oom_counter() -> str | None:
    """Which of `_OOM_COUNTERS` this sandbox can read (looked up once)."""
    return next((path for path in _OOM_COUNTERS if oom_kill_count(path) is not None), None)


def oom_kills() -> int | None:
    """The sandbox cgroup's out-of-memory kill count, where it can be read here."""
    path = _oom_counter()
    return None if path is None else oom_kill_count(path)


def not_dumpable() -> None:
    """Keep same-uid processes (the jobs) out of /proc/<pid>/fd and ptrace."""
    libc = _libc()
    if libc is not None:
        libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0


def _limit(kind: int, value: int) -> None:
    try:
        resource.setrlimit(kind, (value, value))
    except (ValueError, OSError):
        # A hard limit already below ours (set by the sandbox) stays in force.
        soft, hard = resource.getrlimit(kind)
        if hard != resource.RLIM_INFINITY and hard < value:
            resource.setrlimit(kind, (hard, hard))


def _read_all(fd: int) -> bytes:
    chunks = []
    while True:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


# ---------------------------------------------------------------- the job process
#: The job process's descriptors besides 0-2: its spec (read) and its status (write).
_SPEC_FD, _STATUS_FD = 3, 4


def _job_process(work: str, fds: dict[str, int]) -> None:
    """Runs in a process forked from the zygote; never returns. Makes ready
    what needs no job, waits for the spec on its own pipe, then runs the job.
    It marks its start on the status pipe ("+"); when a Python job ends it
    closes its output, writes its exit code there and exits, so the runner
    need not wait for the kernel to tear the process down; any other end (a
    signal, ``os._exit``, bash) the runner learns from the zygote. A process
    that dies without the mark never ran its job: the job is retried."""
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        for signum in (signal.SIGCHLD, signal.SIGPIPE, signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, signal.SIG_DFL)
        os.setsid()
        # Out of the way first (a pipe may sit on a target number), then in place.
        names = ("stdin", "stdout", "stderr", "spec", "status")
        moved = [fcntl.fcntl(fds[name], fcntl.F_DUPFD, 64) for name in names]
        for fd, target in zip(moved, (0, 1, 2, _SPEC_FD, _STATUS_FD), strict=True):
            os.dup2(fd, target)
        # The zygote's socket and every other pipe end go before any job code runs.
        os.closerange(_STATUS_FD + 1, 65536)
        os.set_inheritable(_STATUS_FD, False)
        try:
            # Raising one's own score needs no privilege: an out-of-memory kill
            # in the sandbox then takes the job, not the runner.
            with open("/proc/self/oom_score_adj", "w") as f:
                f.write("1000")
        except OSError:
            pass
        job = json.loads(_read_all(_SPEC_FD))  # the job starts here
        os.close(_SPEC_FD)
        os.write(_STATUS_FD, b"+")  # tells the runner this job started
        mb = 1024 * 1024
        _limit(resource.RLIMIT_AS, int(job["memory_mb"]) * mb)
        _limit(resource.RLIMIT_CPU, int(job["timeout_s"]) + 1)
        _limit(resource.RLIMIT_FSIZE, int(job["file_mb"]) * mb)
        if job.get("max_processes"):
            _limit(resource.RLIMIT_NPROC, int(job["max_processes"]))
        os.environ.update(job.get("env") or {})
        if job["language"] == "bash":
            os.execve("/bin/bash", ["bash", "main.sh"], dict(os.environ))
        try:
            path = os.path.join(work, "main.py")
            with open(path, encoding="utf-8") as f:
                source = f.read()
            module = type(sys)("__main__")
            module.__dict__.update({"__file__": path, "__builtins__": __builtins__})
            sys.modules["__main__"] = module
            exec(compile(source, path, "exec"), module.__dict__)
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
        for fd in (0, 1, 2):
            try:
                os.close(fd)
            except OSError:
                pass
        os.write(_STATUS_FD, str(code & 0xFF).encode())
    except BaseException:
        try:
            os.write(2, traceback.format_exc().encode())
        except BaseException:
            pass
    os._exit(code & 0xFF)


#: Standard-library modules imported once in the zygote, for the jobs that use
#: them (Code-v0's grading harness among them): a copy of an imported module
#: costs a job nothing, an import a millisecond or more.
PRELOADED = ("ast", "base64", "struct")


def _prepare_jobs(work: str) -> None:
    """What every job process starts with, set once in the zygote (a job copies
    it instead of building it): the work dir as its folder, its environment,
    its streams on descriptors 0-2 (the job's own pipes once it has moved them
    there), the limits that never change and a few imported modules."""
    for name in PRELOADED:
        __import__(name)
    os.chdir(work)
    os.environ.clear()
    os.environ.update(
        {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": work,
            "LANG": "C.UTF-8",
            "PYTHONDONTWRITEBYTECODE": "1",
            "OPENBLAS_NUM_THREADS": "1",
            "OMP_NUM_THREADS": "1",
        }
    )
    sys.stdin = open(0, closefd=False)  # noqa: SIM115
    sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
    sys.argv = ["main.py"]
    sys.path[0] = work
    _limit(resource.RLIMIT_NOFILE, 256)
    _limit(resource.RLIMIT_CORE, 0)


# ---------------------------------------------------------------- the zygote
def _zygote(control: socket.socket, work: str, isolated: bool) -> None:
    """Runs in the process forked from the runner at start-up; never returns.

    Messages from the runner: ``spawn`` (fork a job process; answer
    ``spawned PID`` with the runner's ends of its pipes) and ``clean`` (kill
    every other process of the sandbox; answer ``cleaned``). The zygote sends
    ``exit PID STATUS`` when a job process ends. It reads nothing else."""
    try:
        # The runner's channel to the host is no business of the zygote's.
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)
        os.dup2(null, 1)
        os.close(null)
        _prepare_jobs(work)
        # Jobs copy this process: objects that exist now are never collected,
        # so a job's garbage collector does not touch (and copy) their pages.
        gc.freeze()
        wake_r, wake_w = os.pipe()
        os.set_blocking(wake_w, False)
        signal.set_wakeup_fd(wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        children: set[int] = set()

        def reap() -> None:
            while True:
                try:
                    pid, status = os.waitpid(-1, os.WNOHANG)
                except ChildProcessError:
                    return
                if pid == 0:
                    return
                children.discard(pid)
                control.send(f"exit {pid} {status}".encode())

        control.send(b"ready")
        sel = selectors.DefaultSelector()
        sel.register(control, selectors.EVENT_READ)
        sel.register(wake_r, selectors.EVENT_READ)
        while True:
            for key, _ in sel.select():
                if key.fd == wake_r:
                    os.read(wake_r, 512)
                    reap()
                    continue
                try:
                    message = control.recv(_MESSAGE_BYTES)
                except ConnectionResetError:
                    message = b""
                if not message:  # the runner is gone: so is the sandbox
                    os._exit(0)
                if message == b"spawn":
                    pipes = {
                        name: os.pipe() for name in ("spec", "stdin", "stdout", "stderr", "status")
                    }
                    # The job's ends: it reads spec and stdin, writes the rest.
                    theirs = {n: p[0] if n in ("spec", "stdin") else p[1] for n, p in pipes.items()}
                    pid = os.fork()
                    if pid == 0:
                        _job_process(work, theirs)
                    children.add(pid)
                    ours = [p[1] if n in ("spec", "stdin") else p[0] for n, p in pipes.items()]
                    socket.send_fds(control, [f"spawned {pid}".encode()], ours)
                    for pair in pipes.values():
                        for fd in pair:
                            os.close(fd)
                elif message == b"clean":
                    if isolated:
                        try:
                            os.kill(-1, signal.SIGKILL)  # spares this process and PID 1
                        except ProcessLookupError:
                            pass
                    for pid in list(children):
                        try:
                            _, status = os.waitpid(pid, 0)
                        except ChildProcessError:
                            children.discard(pid)
                            continue
                        children.discard(pid)
                        control.send(f"exit {pid} {status}".encode())
                    control.send(b"cleaned")
    except BaseException:
        try:
            os.write(2, traceback.format_exc().encode())
        except BaseException:
            pass
    os._exit(1)


def _waiting(pid: int) -> bool:
    """Whether a job process made ahead still waits, untouched, for its spec."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("S", "R")
    except (OSError, IndexError):
        return False


def discard(pid: int, fds: list[int]) -> None:
    """Kill a job process and close the runner's ends of its pipes."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
    for fd in fds:
        os.close(fd)


class ZygoteGone(RuntimeError):
    """The zygote died or stopped answering: the sandbox must be replaced."""


class Zygote:
    """The runner's side of the zygote: job processes on request, their exits."""

    def __init__(self, work: str, isolated: bool) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.pid = os.fork()
        if self.pid == 0:
            ours.close()
            _zygote(theirs, work, isolated)
        theirs.close()
        self.control = ours
        self.exits: dict[int, int] = {}
        self.ready: list[tuple[int, list[int]]] = []  # spawned, unused job processes
        self.pending = 0  # spawns asked for, not yet answered
        deadline = time.monotonic() + ZYGOTE_TIMEOUT_S
        self._wait_for(b"ready", deadline)
        # The first job process exists before the runner says it is ready, so
        # the host's cgroup takes it in with the zygote.
        self.spawn()
        while not self.ready:
            self.receive(deadline)

    def spawn(self) -> None:
        """Ask for the next job process unless one is ready or coming (it is
        made while the runner does other work)."""
        if not self.ready and not self.pending:
            self._send(b"spawn")
            self.pending += 1

    def _send(self, message: bytes) -> None:
        try:
            self.control.send(message)
        except OSError as exc:
            raise ZygoteGone(f"the zygote is gone ({exc})") from None

    def take(self) -> tuple[int, list[int]]:
        """A job process waiting for its spec, and the runner's ends of its
        pipes: spec (write), stdin (write), stdout, stderr and status (read).
        The next one is asked for at once, so its fork overlaps this job. A
        waiting process that the last job stopped or killed (it could signal
        it, though not read it) is discarded for a fresh one."""
        deadline = time.monotonic() + ZYGOTE_TIMEOUT_S
        while True:
            self.spawn()
            while not self.ready:
                self.receive(deadline)
            pid, fds = self.ready.pop(0)
            if _waiting(pid):
                self.spawn()
                return pid, fds
            discard(pid, fds)

    def waiting(self) -> set[int]:
        """The job processes made ahead and not yet taken."""
        return {pid for pid, _ in self.ready}

    def receive(self, deadline: float) -> bytes:
        """One message from the zygote (recording what it says), or
        `ZygoteGone` when it is gone or silent past ``deadline``."""
        wait = deadline - time.monotonic()
        if wait <= 0 or not select_readable(self.control, wait):
            raise ZygoteGone("the zygote stopped answering")
        try:
            message, fds, _, _ = socket.recv_fds(self.control, _MESSAGE_BYTES, 5)
        except OSError as exc:  # reset: it was killed with our messages unread
            raise ZygoteGone(f"the zygote is gone ({exc})") from None
        if not message:
            raise ZygoteGone("the zygote exited")
        words = message.split()
        if words[0] == b"spawned":
            self.pending -= 1
            self.ready.append((int(words[1]), fds))
        elif words[0] == b"exit":
            self.exits[int(words[1])] = int(words[2])
        return message

    def _wait_for(self, message: bytes, deadline: float) -> None:
        while self.receive(deadline) != message:
            pass

    def clean(self) -> None:
        """Kill every process but the runner and the zygote (isolated sandboxes);
        a job process made in advance goes too."""
        self._send(b"clean")
        self._wait_for(b"cleaned", time.monotonic() + ZYGOTE_TIMEOUT_S)
        for pid, fds in self.ready:
            discard(pid, fds)
        self.ready.clear()
        self.exits.clear()


def select_readable(sock: socket.socket, timeout: float) -> bool:
    return bool(select.select([sock], [], [], timeout)[0])
