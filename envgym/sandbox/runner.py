"""The job runner that lives inside a sandbox.

One runner process starts with its sandbox and serves jobs until stdin closes,
so a job pays neither for a container start nor for `docker exec`. It must run
on any Python 3.9+ with only the standard library: it and `jobs.py` (the
zygote and the job processes) are copied into the sandbox image and
bind-mounted into bubblewrap, side by side in /opt/envgym.

Protocol: one JSON object per line on stdin (a job), one JSON object per line
on stdout (its result). The runner writes nothing else to stdout. With
``--connect PATH`` the same lines go over a Unix socket that the host
listens on instead (a docker container's runner: its attached stdin and
stdout would pass every job through the Docker daemon); the runner connects
after it has forked the zygote, so no job process ever holds the socket.

Three kinds of process:

- the runner reads jobs, writes each job's files, collects its output and
  replies; in an isolated sandbox it is PID 1;
- the zygote is forked from the runner before the runner reads any job. It
  forks one job process per job when the runner asks, ahead of the job's
  arrival. It never reads a job, so a job process, a copy of the zygote,
  holds no other job's code, files, stdin or results in its memory;
- a job process reads its own spec (code, language, limits) from a pipe that
  only it holds, then runs the job: Python in the forked interpreter (no
  start-up cost), bash by exec.

Each job:

1. its files are written to the emptied work directory and its spec is sent
   to the job process waiting for it, which starts a new session under
   rlimits on memory, CPU time, file size, open files and (optionally)
   processes;
2. stdout and stderr are read up to a cap, then drained and dropped, and a
   marker says so; past the timeout the job's process group is killed; the
   zygote reports the exit status;
3. with ``--isolated`` (a sandbox with its own PID namespace) every process
   but the runner and the zygote is killed after the job (the zygote sends
   the signal: ``kill(-1)`` spares the sender and PID 1, the runner), so
   nothing the job started lives on. Without it only the job's process group
   is killed: the host is shared;
4. the work directory and the scratch folders (``--scratch``: /tmp, /dev/shm,
   /dev/mqueue in an isolated sandbox) are emptied and System V IPC objects
   removed. Emptying is bounded (entries, depth, time): a job that leaves a
   tree too deep, too large or too odd to delete gets ``"replace": true`` in
   its result, and the host replaces the sandbox before the next job rather
   than let that job see the leftovers.

Each reply repeats the job's ``nonce``, so the host can tell the runner's
reply from one a job forged. The runner and the zygote are not dumpable:
processes of the same uid (the jobs) can neither open their file descriptors
under /proc nor ptrace them. Job processes ask the kernel to kill them first
when the sandbox runs out of memory (``oom_score_adj``).
"""

from __future__ import annotations

import base64
import json
import os
import select
import signal
import sys
import threading
import time
import traceback

# A script, never imported: jobs.py sits beside it, in envgym/sandbox/ or /opt/envgym.
sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
from jobs import (  # noqa: E402
    ZYGOTE_TIMEOUT_S,
    Zygote,
    ZygoteGone,
    clear_folder,
    not_dumpable,
    oom_kills,
    remove_sysv_ipc,
)

TRUNCATION_MARKER = "\n[envgym: {stream} truncated: the job wrote more than {limit} bytes]\n"


def _folder_is_empty(folder: str) -> bool:
    try:
        with os.scandir(folder) as entries:
            return next(entries, None) is None
    except OSError:
        return False


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


# ---------------------------------------------------------------- the runner
def _reap(zygote_pid: int) -> bool:
    """Reap the zombies reparented to the runner; False if one was the zygote."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return True
        if pid == 0:
            return True
        if pid == zygote_pid:
            return False


def _other_processes(keep: set[int]) -> list[int]:
    """Live processes of this PID namespace besides ``keep`` and PID 1."""
    pids = []
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) not in keep and name != "1":
            try:
                with open(f"/proc/{name}/stat") as f:
                    state = f.read().rsplit(")", 1)[1].split()[0]
            except (OSError, IndexError):
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


class Runner:
    """Serves jobs: one `run` per job line."""

    def __init__(self, work: str, isolated: bool, scratch: list[str]) -> None:
        self.work = work
        self.isolated = isolated
        self.scratch = scratch
        self.zygote = Zygote(work, isolated)
        #: set when the zygote is found dead during a job (an earlier job killed it)
        self.zygote_lost = False
        #: job processes killed after their job but perhaps not yet gone: pid -> pidfd
        self.dying: dict[int, int] = {}
        #: the sandbox's out-of-memory kill count after the last job
        self.oom_kills = oom_kills()

    def _still_dying(self) -> set[int]:
        """The killed job processes not yet gone (a pidfd names one process, so
        a pid reused since is not mistaken for it)."""
        for pid, pidfd in list(self.dying.items()):
            if select.select([pidfd], [], [], 0)[0]:  # readable: it has exited
                os.close(pidfd)
                del self.dying[pid]
        return set(self.dying)

    def clean_folders(self) -> bool:
        """Empty the work dir and the scratch folders; False if one would not empty."""
        ok = clear_folder(self.work)
        for folder in self.scratch:
            if os.path.isdir(folder):
                ok = clear_folder(folder) and ok
        if self.isolated:
            remove_sysv_ipc()
        return ok

    def run(self, job: dict) -> dict:
        started = time.monotonic()
        if not _folder_is_empty(self.work):
            return {"error": "the sandbox's work directory is not empty", "retry": True}
        oom_before = self.oom_kills  # read after the last job: nothing ran since
        files = dict(job.get("files") or {})
        files["main.sh" if job["language"] == "bash" else "main.py"] = job["code"]
        try:
            problem = _write_files(self.work, files)
        except OSError as exc:
            self.clean_folders()
            return {"error": f"cannot write the job's files ({exc.strerror})", "retry": True}
        if problem:
            self.clean_folders()
            return {"error": problem}
        self.zygote.exits.clear()  # earlier jobs' processes, reported late
        try:
            pid, (spec_w, stdin_w, out_r, err_r, status_r) = self.zygote.take()
        except ZygoteGone as exc:  # the last job killed it: this one never started
            self.clean_folders()
            return {"error": f"the sandbox cannot start jobs: {exc}", "retry": True, "gone": True}
        try:
            self.dying[pid] = os.pidfd_open(pid)
        except OSError:
            pass  # already gone
        spec = {key: job[key] for key in ("language", "memory_mb", "timeout_s", "file_mb")}
        spec.update(max_processes=job.get("max_processes"), env=job.get("env", {}))
        try:
            _write_all(spec_w, json.dumps(spec).encode())
        except OSError:
            pass  # it died since take(): the job ends at once and the zygote says how
        os.close(spec_w)
        _feed_stdin(stdin_w, (job.get("stdin") or "").encode())
        deadline = started + float(job["timeout_s"])
        result = self._collect(pid, (out_r, err_r, status_r), deadline, job)
        if self.zygote_lost:
            # The job's result stands; the sandbox cannot start another job.
            result.update(replace=True, gone=True)
            result["duration_s"] = time.monotonic() - started
            return result
        replace = False
        dying = self._still_dying()
        if self.isolated:
            # Job processes killed with their group run nothing more, though the
            # kernel may still be taking them down; the next job's process waits
            # for its spec (take() checks it was not tampered with).
            keep = {os.getpid(), self.zygote.pid, *dying, *self.zygote.waiting()}
            if _other_processes(keep):
                self.zygote.clean()
            if not _reap(self.zygote.pid):
                raise ZygoteGone("the zygote died")
            leftovers = len(_other_processes(keep))
            result["leftover_processes"] = leftovers
            replace = leftovers > 0
        if not self.clean_folders():
            replace = True
        if replace:
            result["replace"] = True
        result["duration_s"] = time.monotonic() - started
        self.oom_kills = oom_after = oom_kills()
        if oom_before is not None and oom_after is not None:
            result["oom_kills"] = oom_after - oom_before
        return result

    def _exit_status(self, pid: int) -> int:
        """The job process's wait status, as the zygote reports it; without a
        zygote, the runner's own wait (as PID 1 it inherits the orphan)."""
        if not self.zygote_lost:
            try:
                deadline = time.monotonic() + ZYGOTE_TIMEOUT_S
                while pid not in self.zygote.exits:
                    self.zygote.receive(deadline)
                return self.zygote.exits.pop(pid)
            except ZygoteGone:
                self.zygote_lost = True
        try:
            return os.waitpid(pid, 0)[1]
        except ChildProcessError:
            raise ZygoteGone("the zygote died during the job") from None

    def _collect(self, pid: int, fds: tuple[int, int, int], deadline: float, job: dict) -> dict:
        """Read the job's output until it has ended (or the deadline), then kill
        its group. The exit code comes from the status pipe when the job process
        wrote one, else from the zygote."""
        out_r, err_r, status_r = fds
        limit = int(job["max_output_bytes"])
        captured = {out_r: bytearray(), err_r: bytearray()}
        dropped = {out_r: 0, err_r: 0}
        status = bytearray()  # "+" once the job process has its spec, then its exit code
        status_closed = False
        code = None
        poller = select.poll()  # no kernel object to make and close per job
        for fd in (*fds, self.zygote.control.fileno()):
            poller.register(fd, select.POLLIN)
        timed_out = False
        open_streams = 2
        zygote = self.zygote
        control = zygote.control.fileno()
        while True:
            ended = (
                code is not None
                or pid in zygote.exits
                or (self.zygote_lost and status_closed and open_streams == 0)
            )
            if ended:
                if open_streams == 0:
                    break
                # Background children may hold the pipes open: stop waiting soon.
                deadline = min(deadline, time.monotonic() + 0.2)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                timed_out = not ended
                break
            for fd, _ in poller.poll(remaining * 1000):
                if fd == control:
                    try:
                        zygote.receive(time.monotonic() + 1.0)
                    except ZygoteGone:  # the last job killed it; this job runs on
                        poller.unregister(control)
                        self.zygote_lost = True
                    continue
                chunk = os.read(fd, 65536)
                if fd == status_r:
                    status += chunk[:9]
                    if not chunk:
                        poller.unregister(fd)
                        status_closed = True
                        digits = status[1:]
                        if status[:1] == b"+" and digits.isdigit() and int(digits) < 256:
                            code = int(digits)
                    continue
                if not chunk:
                    poller.unregister(fd)
                    open_streams -= 1
                    continue
                room = limit - len(captured[fd])
                captured[fd] += chunk[:room] if room > 0 else b""
                dropped[fd] += max(0, len(chunk) - max(room, 0))
        if not status and not status_closed and select.select([status_r], [], [], 0)[0]:
            status += os.read(status_r, 9)  # the start mark, written but not yet read
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if status[:1] != b"+":
            # Killed or stopped before it read its spec (by the last job, which
            # could signal it): this job never started.
            for fd in fds:
                os.close(fd)
            return {
                "error": "the sandbox cannot start jobs: its job process died "
                "before the job reached it",
                "retry": True,
            }
        if code is None or timed_out:
            raw = self._exit_status(pid)
            code = -os.WTERMSIG(raw) if os.WIFSIGNALED(raw) else os.WEXITSTATUS(raw)
        for fd in fds:
            os.close(fd)
        result = {
            "stdout": captured[out_r].decode("utf-8", "replace"),
            "stderr": captured[err_r].decode("utf-8", "replace"),
            "timed_out": timed_out,
            "truncated": bool(dropped[out_r] or dropped[err_r]),
            "exit_code": code,
        }
        for fd, name in ((out_r, "stdout"), (err_r, "stderr")):
            if dropped[fd]:
                result[name] += TRUNCATION_MARKER.format(stream=name, limit=limit)
        return result


def main(argv: list[str]) -> int:
    work = "/work"
    isolated = False
    scratch: list[str] = []
    connect = None
    args = list(argv)
    while args:
        arg = args.pop(0)
        if arg == "--work":
            work = os.path.realpath(args.pop(0))
        elif arg == "--isolated":
            isolated = True
        elif arg == "--scratch":
            scratch.append(args.pop(0))
        elif arg == "--connect":
            connect = args.pop(0)
    # A write to a job's pipe that the job closed is an error to handle, not a
    # reason to die; a host that went away ends the loop below.
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    not_dumpable()
    # Forked before any job is read: the zygote's memory never holds one.
    runner = Runner(work, isolated, scratch)
    inp, out = sys.stdin, sys.stdout
    if connect:  # after the zygote's fork: only the runner holds the socket
        import socket

        channel = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        channel.connect(connect)
        inp = channel.makefile("r", encoding="utf-8", newline="\n")
        out = channel.makefile("w", encoding="utf-8", newline="\n")
    if not _reply(out, {"ready": True, "pid": os.getpid()}):
        return 0
    for line in inp:
        if not line.strip():
            continue
        nonce = None
        gone = False
        try:
            job = json.loads(line)
            nonce = job.pop("nonce", None)
            result = runner.run(job)
            gone = bool(result.pop("gone", False))
        except ZygoteGone as exc:
            result = {"error": f"runner failed: {exc}"}
            gone = True
        except Exception:
            result = {"error": "runner failed: " + traceback.format_exc(limit=3)}
        result["nonce"] = nonce
        if not _reply(out, result) or gone:
            return 1
    return 0


def _reply(out, message: dict) -> bool:
    """Write one line to the host; False when the host has gone."""
    try:
        out.write(json.dumps(message) + "\n")
        out.flush()
    except OSError:  # a broken pipe, or a socket the host closed or reset
        return False
    return True


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
