"""The in-sandbox side of a `envgym.sandbox.session.Session`: a shell server.

Never imported by envgym: the host reads this file's text and starts it as
``python3 -I -u -c <text> [--connect PATH] ...`` as the container's (or
bubblewrap's) command, so sessions need neither an image rebuild nor a
change to the job runner. It runs on any Python 3.9+ with only the standard
library, as PID 1 of the sandbox's PID namespace (it refuses to start
otherwise: ``kill(-1)`` must reach only the sandbox).

Protocol: the host writes one JSON object per line (a request with a
``nonce``); the server answers each with a header line ``<nonce> <length>``
and then ``length`` bytes of JSON. A command's output travels inside that
JSON, so nothing a command prints can end its reply early or change its exit
status; commands never hold the server's channel (their stdin is /dev/null,
their stdout and stderr a pipe the server reads), and the server is not
dumpable, so a command cannot open its descriptors under /proc either.

Each command is a fresh ``bash`` started in the session's working directory
with the session's exported variables; an EXIT trap writes the new working
directory and ``env -0`` to a pipe on descriptor 199, which becomes the state
of the next command. When the shell exits (or its time is up) every other
process of the sandbox is killed and reaped, so nothing a command leaves in
the background lives on, and the CPU time of all of them is counted
(``RUSAGE_CHILDREN``) against the session's CPU budget; while a command runs,
its live processes' CPU time is summed from /proc every 0.1 s, and the
command is killed when the session's total reaches the budget.
"""

import base64
import io
import json
import os
import resource
import select
import shutil
import signal
import stat
import sys
import tarfile
import time

WORK = "/work"
SCRATCH = ("/tmp", "/dev/shm")
STATE_FD = 199
MAX_STATE = 256 * 1024
#: The kernel's limit on one environment string (MAX_ARG_STRLEN).
MAX_VARIABLE = 128 * 1024
#: The kernel's CPU accounting ends a process at its RLIMIT_CPU a little short of it.
CPU_SLACK_S = 0.05
#: How often the CPU time of a running command's processes is summed (seconds).
CPU_POLL_S = 0.1
TICKS = os.sysconf("SC_CLK_TCK")
INITIAL_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "HOME": WORK,
    "SHELL": "/bin/bash",
    "TERM": "dumb",
    "USER": "nobody",
}
DROPPED_VARS = ("_", "SHLVL")
# The EXIT trap writes the working directory and the exported variables, with
# builtins only (no fork), each ending in a NUL.
WRAPPER = (
    'trap \'__envgym_rc=$?; { printf "%s\\0" "$PWD"; for __envgym_v in $(compgen -e); do '
    'printf "%s=%s\\0" "$__envgym_v" "${!__envgym_v}"; done; } >&199 2>/dev/null; '
    'exit $__envgym_rc\' EXIT; __envgym_cmd=$1; set --; eval "$__envgym_cmd"'
)
OOM_COUNTERS = ("/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control")


def set_dumpable(value):
    """PR_SET_DUMPABLE: 0 keeps same-uid processes out of /proc/<pid>/fd and ptrace."""
    import ctypes

    try:
        ctypes.CDLL(None, use_errno=True).prctl(4, value, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def oom_kills():
    for path in OOM_COUNTERS:
        try:
            with open(path) as f:
                for line in f:
                    key, _, value = line.partition(" ")
                    if key == "oom_kill":
                        return int(value)
        except (OSError, ValueError):
            continue
    return None


def cpu_used():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def live_cpu():
    """CPU seconds of the processes alive now (and of the children they reaped)."""
    total = 0
    for name in os.listdir("/proc"):
        if name.isdigit() and name != "1":
            try:
                with open(f"/proc/{name}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                total += sum(int(value) for value in fields[11:15])  # utime stime cutime cstime
            except (OSError, IndexError, ValueError):
                pass
    return total / TICKS


def kill_all(limit_s=5.0):
    """Kill and reap every process but this one (PID 1); False if some would not go."""
    deadline = time.monotonic() + limit_s
    while True:
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.001)


def inside(path):
    """The real path of ``path`` (relative to the work dir) when it stays inside it."""
    if not isinstance(path, str) or not path or "\0" in path:
        raise ValueError("a path must be a non-empty string")
    full = os.path.realpath(os.path.join(WORK, path))
    if full != WORK and not full.startswith(WORK + os.sep):
        raise ValueError(f"{path!r} is outside the work directory {WORK}")
    return full


def empty_folder(folder):
    def retry(function, path, _):
        try:
            os.chmod(os.path.dirname(path), 0o700)
            if os.path.isdir(path) and not os.path.islink(path):
                os.chmod(path, 0o700)
                shutil.rmtree(path)
            else:
                os.unlink(path)
        except OSError:
            pass

    try:
        os.chmod(folder, 0o755 if folder == WORK else 0o1777)  # undo a chmod of the folder
    except OSError:
        pass  # not ours (docker's tmpfs is root's, mode 1777)
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        path = os.path.join(folder, name)
        if os.path.isdir(path) and not os.path.islink(path):
            try:
                os.chmod(path, 0o700)
            except OSError:
                pass
            shutil.rmtree(path, onerror=retry)
        else:
            try:
                os.unlink(path)
            except OSError:
                pass


class Server:
    def __init__(self, rfile, write, max_processes, file_mb):
        self.rfile, self.write = rfile, write
        self.max_processes, self.file_mb = max_processes, file_mb
        self.cwd, self.env = WORK, dict(INITIAL_ENV)

    def reply(self, nonce, body):
        data = json.dumps(body).encode()
        self.write(f"{nonce} {len(data)}\n".encode() + data)

    def serve(self):
        self.write(b'{"ready": true}\n')
        for line in iter(self.rfile.readline, b""):
            request = json.loads(line)
            nonce = str(request.get("nonce", ""))
            try:
                body = getattr(self, "op_" + request["op"])(request)
            except Exception as exc:  # the request failed, the server goes on
                body = {"error": f"{type(exc).__name__}: {exc}"}
            self.reply(nonce, body)

    # -- operations ---------------------------------------------------------
    def op_exec(self, request):
        used = cpu_used()
        budget = float(request["cpu_s"])
        if used >= budget - CPU_SLACK_S:
            return {"exhausted": True, "cpu_s_used": used}
        cap = int(request["output_bytes"])
        started = time.monotonic()
        deadline = started + float(request["timeout_s"])
        oom_before = oom_kills()
        out_r, out_w = os.pipe()
        state_r, state_w = os.pipe()
        pid = self.spawn(request["command"], out_w, state_w, budget - used)
        os.close(out_w)
        os.close(state_w)
        try:
            pidfd = os.pidfd_open(pid)
        except (AttributeError, OSError):
            pidfd = None
        out, state, total = bytearray(), bytearray(), 0
        open_fds = [out_r, state_r]
        status, timed_out, cpu_out, clean = None, False, False, None
        next_cpu_check = started + CPU_POLL_S
        while True:
            if status is None:
                now = time.monotonic()
                remaining = deadline - now
                if now >= next_cpu_check:
                    next_cpu_check = now + CPU_POLL_S
                    cpu_out = cpu_used() + live_cpu() >= budget
                if remaining <= 0 or cpu_out:
                    timed_out, clean = not cpu_out, kill_all()
                    try:
                        status = os.waitpid(pid, 0)[1]
                    except ChildProcessError:
                        status = 9  # reaped by kill_all
                    continue
                remaining = min(remaining, next_cpu_check - now)
                if pidfd is None:
                    done, raw = os.waitpid(pid, os.WNOHANG)
                    status = raw if done else None
                    wait, timeout = open_fds, min(remaining, 0.002)
                else:
                    wait, timeout = [*open_fds, pidfd], remaining
            else:
                if clean is None:
                    clean = kill_all()  # what it left in the background; their pipes close
                if not open_fds:
                    break
                wait, timeout = open_fds, 1.0
            if status is not None and pidfd is None and clean is None:
                continue
            ready, _, _ = select.select(wait, [], [], timeout)
            if not ready and status is not None:
                break  # every writer is dead, so nothing more can come
            for fd in ready:
                if fd == pidfd:
                    status = os.waitpid(pid, 0)[1]
                    continue
                chunk = os.read(fd, 65536)
                if not chunk:
                    open_fds.remove(fd)
                    os.close(fd)
                elif fd == out_r:
                    total += len(chunk)
                    if len(out) < cap:
                        out += chunk[: cap - len(out)]
                elif len(state) <= MAX_STATE:
                    state += chunk
        for fd in open_fds:
            os.close(fd)
        if pidfd is not None:
            os.close(pidfd)
        if not (timed_out or cpu_out):
            self.take_state(bytes(state))
        oom_after = oom_kills()
        return {
            "output": base64.b64encode(bytes(out)).decode(),
            "output_bytes": total,
            "exit_code": -9 if timed_out or cpu_out else os.waitstatus_to_exitcode(status),
            "timed_out": timed_out,
            "cpu_out": cpu_out,
            "duration_s": time.monotonic() - started,
            "cpu_s_used": cpu_used(),
            "memory_exceeded": bool(
                oom_before is not None and oom_after is not None and oom_after > oom_before
            ),
            "clean": clean,
        }

    def spawn(self, command, out_w, state_w, cpu_left):
        devnull = os.open("/dev/null", os.O_RDONLY)
        cwd = self.cwd if os.path.isdir(self.cwd) else WORK
        argv = ["/bin/bash", "--noprofile", "--norc", "-c", WRAPPER, "bash", command]
        env = {**self.env, "PWD": cwd}
        pid = os.fork()
        if pid == 0:  # the command's shell
            try:
                os.setsid()
                os.dup2(devnull, 0)
                os.dup2(out_w, 1)
                os.dup2(out_w, 2)
                os.dup2(state_w, STATE_FD)
                set_dumpable(1)  # (exec would too) so this process may raise its own score
                try:
                    with open("/proc/self/oom_score_adj", "w") as f:
                        f.write("1000")  # an out-of-memory kill takes a command, not the server
                except OSError:
                    pass
                limits = [
                    (resource.RLIMIT_CPU, max(1, int(cpu_left + 0.999))),
                    (resource.RLIMIT_CORE, 0),
                    (resource.RLIMIT_FSIZE, self.file_mb * 1024 * 1024),
                ]
                if self.max_processes:
                    limits.append((resource.RLIMIT_NPROC, self.max_processes))
                for kind, value in limits:
                    resource.setrlimit(kind, (value, value))
                signal.signal(signal.SIGPIPE, signal.SIG_DFL)
                os.chdir(cwd)
                os.execve(argv[0], argv, env)
            except BaseException as exc:
                os.write(2, f"envgym: the command could not start: {exc!r}\n".encode())
            finally:
                os._exit(127)
        os.close(devnull)
        return pid

    def take_state(self, raw):
        if not raw or len(raw) > MAX_STATE:
            return  # the trap did not run (or was replaced): keep the last state
        parts = raw.split(b"\0")
        cwd = parts[0].decode(errors="replace")
        env = {}
        for item in parts[1:]:
            key, sep, value = item.decode(errors="replace").partition("=")
            if len(item) >= MAX_VARIABLE:
                continue  # exec would refuse the next command (E2BIG) for good
            if sep and key and key not in DROPPED_VARS and not key.startswith("__envgym"):
                env[key] = value
        self.cwd = cwd if os.path.isabs(cwd) else WORK
        self.env = env

    def op_write(self, request):
        full = inside(request["path"])
        if full == WORK:
            raise ValueError("write_file needs a file name, not the work directory")
        os.makedirs(os.path.dirname(full), exist_ok=True)
        fd = os.open(full, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(fd, "wb") as f:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise ValueError(f"{request['path']!r} is not a regular file")
            f.write(base64.b64decode(request["b64"]))
        if request.get("mode") is not None:
            os.chmod(full, int(request["mode"]) & 0o777)
        return {"ok": True}

    def op_read(self, request):
        full = inside(request["path"])
        fd = os.open(full, os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise ValueError(f"{request['path']!r} is not a regular file")
            data = f.read(int(request["max_bytes"]))
        return {"b64": base64.b64encode(data).decode(), "size": os.path.getsize(full)}

    def op_snapshot(self, request):
        kill_all()
        buffer = io.BytesIO()  # in memory: a full /tmp must not stop a snapshot
        work_mode = stat.S_IMODE(os.stat(WORK).st_mode)
        with tarfile.open(fileobj=buffer, mode="w") as tar:
            with _Readable(WORK, work_mode, stat.S_IRUSR | stat.S_IXUSR):
                for name in sorted(os.listdir(WORK)):
                    _add(tar, os.path.join(WORK, name), name)
        tree = base64.b64encode(buffer.getvalue()).decode()
        return {"tree": tree, "cwd": self.cwd, "env": self.env}

    def op_restore(self, request):
        if not kill_all():
            return {"error": "processes of the session would not end", "broken": True}
        for folder in (WORK, *SCRATCH):
            empty_folder(folder)
        if os.listdir(WORK):
            return {"error": "the work directory could not be emptied", "broken": True}
        folders = []
        with tarfile.open(fileobj=io.BytesIO(base64.b64decode(request["tree"]))) as tar:
            for member in tar.getmembers():
                mode = _extract(tar, member)
                if mode is not None:
                    folders.append((os.path.join(WORK, member.name), mode))
        for path, mode in reversed(folders):  # deepest first, once their files are in
            os.chmod(path, mode)
        state = request.get("state") or {}
        self.cwd = str(state.get("cwd") or WORK)
        self.env = {str(k): str(v) for k, v in (state.get("env") or INITIAL_ENV).items()}
        return {"ok": True}


class _Readable:
    """Lets this (owning) process read ``path`` whatever its mode, then puts the mode back."""

    def __init__(self, path, mode, needs):
        self.path, self.mode, self.needs = path, mode, needs

    def __enter__(self):
        if self.mode & self.needs != self.needs:
            os.chmod(self.path, self.mode | self.needs)

    def __exit__(self, *exc):
        if self.mode & self.needs != self.needs:
            os.chmod(self.path, self.mode)


def _add(tar, path, arcname):
    """Add ``path`` to a snapshot: files, folders and links (no devices, fifos,
    sockets), with their modes, even those the agent made unreadable."""
    info = tar.gettarinfo(path, arcname)
    if not (info.isreg() or info.isdir() or info.issym() or info.islnk()):
        return
    info.uname = info.gname = ""
    mode = stat.S_IMODE(os.lstat(path).st_mode)
    if info.isreg():
        with _Readable(path, mode, stat.S_IRUSR), open(path, "rb") as f:
            tar.addfile(info, f)
    elif info.isdir():
        tar.addfile(info)
        with _Readable(path, mode, stat.S_IRUSR | stat.S_IXUSR):
            for name in sorted(os.listdir(path)):
                _add(tar, os.path.join(path, name), arcname + "/" + name)
    else:
        tar.addfile(info)


def _extract(tar, member):
    """Extract one member inside the work dir (or skip it); a folder's mode is
    returned to be set once its contents are in."""
    name = member.name.lstrip("/")
    while name.startswith("./"):
        name = name[2:]
    if not name or name == "." or ".." in name.split("/"):
        return None
    if not (member.isreg() or member.isdir() or member.issym() or member.islnk()):
        return None
    real = os.path.realpath(os.path.dirname(os.path.join(WORK, name)))
    if real != WORK and not real.startswith(WORK + os.sep):
        return None
    if member.islnk() and (member.linkname.startswith("/") or ".." in member.linkname.split("/")):
        return None
    member.name = name
    mode = member.mode & 0o777
    member.mode = (mode | 0o700) if member.isdir() else mode
    tar.extract(member, WORK, set_attrs=not member.issym())
    return mode if member.isdir() else None


def main(argv):
    if os.getpid() != 1:
        sys.exit("the session server must be PID 1 of its own PID namespace")
    set_dumpable(0)
    max_processes = file_mb = 0
    connect = None
    args = list(argv)
    while args:
        flag, value = args.pop(0), args.pop(0)
        if flag == "--connect":
            connect = value
        elif flag == "--max-processes":
            max_processes = int(value)
        elif flag == "--file-mb":
            file_mb = int(value)
    os.chdir(WORK)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    if connect:
        import socket

        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(connect)
        Server(sock.makefile("rb"), sock.sendall, max_processes, file_mb).serve()
    else:
        out = sys.stdout.buffer

        def write(data):
            out.write(data)
            out.flush()

        Server(sys.stdin.buffer, write, max_processes, file_mb).serve()


if __name__ == "__main__":
    main(sys.argv[1:])
