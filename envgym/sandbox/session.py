"""Sessions: one sandbox kept for a whole episode, a shell that remembers.

::

    from envgym.sandbox import SessionLimits, open_session

    with open_session(backend="auto", limits=SessionLimits(cpu_s=120)) as s:
        s.exec("mkdir src && cd src && export GREETING=hi")
        r = s.exec("pwd; echo $GREETING")     # "/work/src\\nhi\\n"
        r.output, r.exit_code, r.timed_out, r.duration_s, r.truncated
        snap = s.snapshot()                    # snap.tree: a tar of /work; snap.state
        other = s.fork()                       # an independent copy of this session
        s.restore(snap)

Each `Session.exec` runs ``bash`` in the session's work directory ``/work``
(a size-limited tmpfs) as an unprivileged user, with no network and a
read-only system. What persists from one command to the next: the files, the
working directory and exported variables. What does not: shell options,
aliases, functions (unless exported with ``export -f``) and unexported
variables, and processes: when a command ends (or its time is up) every
process it left behind, ``nohup`` and ``setsid`` ones too, is killed, so
nothing runs between commands and nothing outlives the session. A command
that runs out of time keeps the working directory and variables from before it.

Limits (`SessionLimits`): per command, a time limit (the whole sandbox but
its server is killed, and the session goes on) and an output cap; for the
session, memory (all processes together: the container's cgroup on docker,
a cgroup on bwrap), disk (``work_mb`` for /work, ``tmp_mb`` for /tmp and
/dev/shm), processes at once, and CPU seconds over the whole session, after
which `exec` raises `SessionExhausted`.

The in-sandbox side is ``session_server.py`` (see there for the protocol),
started as the container's or bubblewrap's command on the same hardened
settings as the backends' job sandboxes (`DockerSandbox.container_kwargs`,
`BwrapSandbox.command`); the image and the job runner are unchanged.
"""

from __future__ import annotations

import base64
import io
import json
import os
import secrets
import tarfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from envgym.sandbox import backends, cgroup
from envgym.sandbox.base import Limits, SandboxError

__all__ = [
    "CommandResult",
    "Session",
    "SessionError",
    "SessionExhausted",
    "SessionLimits",
    "SessionSnapshot",
    "open_session",
    "tree_of",
]

SERVER_PATH = Path(__file__).with_name("session_server.py")
#: Seconds past a command's own limit that the host waits for its reply.
GRACE_S = 10.0
#: Seconds the host waits for a file operation, a snapshot or a restore.
OPERATION_TIMEOUT_S = 60.0


class SessionError(SandboxError):
    """The session's sandbox failed or cannot be trusted; it has been closed."""


class SessionExhausted(SessionError):
    """The session spent its CPU seconds; it runs no more commands."""


@dataclass(frozen=True)
class SessionLimits:
    """A session's limits. ``timeout_s`` and ``output_bytes`` hold per command
    (`Session.exec` may lower the time, never raise it); the rest hold for the
    whole session: ``memory_mb`` for its processes together, ``work_mb`` the
    size of /work, ``tmp_mb`` of /tmp and of /dev/shm, ``max_processes`` at
    once, ``cpu_s`` CPU seconds over the session (all its processes), ``cpus``
    the CPU quota at any moment."""

    timeout_s: float = 30.0
    output_bytes: int = 64 * 1024
    memory_mb: int = 512
    work_mb: int = 64
    tmp_mb: int = 16
    max_processes: int = 64
    cpu_s: float = 600.0
    cpus: float = 1.0

    def __post_init__(self) -> None:
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            if value <= 0:
                raise ValueError(f"session limit {name} must be positive, got {value}")

    def sandbox_limits(self) -> Limits:
        return Limits(
            timeout_s=self.timeout_s,
            memory_mb=self.memory_mb,
            work_mb=self.work_mb,
            tmp_mb=self.tmp_mb,
            max_output_bytes=self.output_bytes,
            max_processes=self.max_processes,
            cpus=self.cpus,
        )


@dataclass
class CommandResult:
    """What one command did. ``output`` is its stdout and stderr together, in
    the order written, cut at `SessionLimits.output_bytes` (``truncated``, and
    a marker at the end, say so). ``exit_code`` is bash's status; a negative
    one is the signal that killed it (-9 when the time limit did)."""

    output: str
    exit_code: int
    timed_out: bool = False
    duration_s: float = 0.0
    truncated: bool = False
    memory_exceeded: bool = False
    #: CPU seconds the session has used so far, this command included
    cpu_s_used: float = 0.0

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


@dataclass(frozen=True)
class SessionSnapshot:
    """A session's state: ``tree`` is a tar archive of the work directory's
    contents (member names relative to /work: what `envs.terminal.grade.
    run_checks` takes), ``state`` the shell's ``{"cwd": ..., "env": {...}}``."""

    tree: bytes
    state: dict = field(default_factory=dict)

    def to_bytes(self) -> bytes:
        """One byte string holding both (for storing a snapshot)."""
        head = json.dumps(self.state).encode()
        return len(head).to_bytes(8, "big") + head + self.tree

    @classmethod
    def from_bytes(cls, data: bytes) -> SessionSnapshot:
        size = int.from_bytes(data[:8], "big")
        return cls(tree=data[8 + size :], state=json.loads(data[8 : 8 + size]))


def tree_of(files: dict[str, str | bytes]) -> bytes:
    """A tar archive of ``files`` (relative name -> content), for `open_session`."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, content in sorted(files.items()):
            data = content.encode() if isinstance(content, str) else content
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _server_command(max_processes: int | None, file_mb: int) -> list[str]:
    code = SERVER_PATH.read_text()
    args = ["--file-mb", str(file_mb)]
    if max_processes:
        args += ["--max-processes", str(max_processes)]
    return ["-I", "-u", "-c", code, *args]


def _docker_box(limits: Limits):
    from envgym.sandbox.docker import CHANNEL_MOUNT, CHANNEL_SOCKET, DockerSandbox

    class DockerSessionBox(DockerSandbox):
        def container_kwargs(self, folder: str | None = None) -> dict:
            kwargs = super().container_kwargs(folder)
            command = ["python3", *_server_command(None, self.limits.work_mb)]
            if folder is not None:
                command += ["--connect", f"{CHANNEL_MOUNT}/{CHANNEL_SOCKET}"]
            # Programs the agent writes in /work and /tmp must run (docker's tmpfs is noexec).
            tmpfs = {path: f"{options},exec" for path, options in kwargs["tmpfs"].items()}
            # The agent owns its work directory, as on bwrap: git refuses a repository
            # in a folder owned by someone else ("dubious ownership").
            uid, _, gid = kwargs["user"].partition(":")
            tmpfs["/work"] += f",uid={uid},gid={gid or uid}"
            # The runner's share beside the jobs' quota, within what the machine has.
            nano_cpus = min(kwargs["nano_cpus"], (os.cpu_count() or 1) * 10**9)
            return {**kwargs, "command": command, "tmpfs": tmpfs, "nano_cpus": nano_cpus}

    return DockerSessionBox(limits)


def _bwrap_box(limits: Limits):
    from envgym.sandbox.base import ISOLATED_RUNNER_ARGS
    from envgym.sandbox.bwrap import RUNNER_SLACK_MB, BwrapSandbox

    class BwrapSessionBox(BwrapSandbox):
        def command(self, seccomp_fd: int | None = None) -> list[str]:
            command = super().command(seccomp_fd)
            tail = len(ISOLATED_RUNNER_ARGS) + 3  # -I -u runner.py and its arguments
            assert command[-tail - 1] == "/usr/bin/python3", command[-tail - 1 :]
            server = _server_command(self._max_processes(), self.limits.work_mb)
            return [*command[:-tail], *server]

        def _on_ready(self) -> None:
            # Unlike the job runner's, every process (the server too) is under the quota.
            if self.memory_mode != "cgroup":
                return
            memory = (self.limits.memory_mb + RUNNER_SLACK_MB) * 1024 * 1024
            try:
                self._cgroup = cgroup.SandboxCgroup(memory, self.limits.cpus)
                self._cgroup.add(cgroup.descendants(self._proc.pid))
            except OSError as exc:
                raise SandboxError(f"cannot put the bwrap session in a cgroup ({exc})") from None

    return BwrapSessionBox(limits)


class Session:
    """A started sandbox with a persistent shell; see the module's doc.
    Thread-safe (one operation at a time). Use `open_session` to make one."""

    def __init__(self, backend: str = "auto", limits: SessionLimits | None = None) -> None:
        self.limits = limits or SessionLimits()
        self.backend = backends.resolve_backend(backend)
        if self.backend == "process":
            raise ValueError(
                "sessions need an isolating backend: use 'docker' or 'bwrap' (or 'auto')"
            )
        make = _docker_box if self.backend == "docker" else _bwrap_box
        self._box = make(self.limits.sandbox_limits())
        backends._live.add(self._box)
        self._lock = threading.Lock()
        self._closed = False
        self.commands_run = 0

    # -- lifecycle ------------------------------------------------------------
    def start(self) -> Session:
        with self._lock:
            self._check_open()
            self._box.start()
        return self

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Stop the sandbox: its processes, its container or cgroup, its files."""
        self._closed = True
        box = getattr(self, "_box", None)
        if box is not None:
            box.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def _check_open(self) -> None:
        if self._closed:
            raise SessionError(f"this {self.backend} session is closed; open a new one")

    # -- the channel ----------------------------------------------------------
    def _call(self, request: dict, timeout_s: float) -> dict:
        """Send one request and read its reply; any failure closes the session."""
        with self._lock:
            self._check_open()
            box = self._box
            box.start()
            nonce = secrets.token_hex(16)
            try:
                box._channel.send((json.dumps({**request, "nonce": nonce}) + "\n").encode())
                reply = self._read_reply(nonce, time.monotonic() + timeout_s)
            except (EOFError, OSError, ValueError) as exc:
                self.close()
                raise SessionError(
                    f"the {self.backend} session's sandbox failed ({exc}); it was closed, "
                    "open a new session"
                ) from None
        if reply.get("broken") or reply.get("clean") is False:
            self.close()
            raise SessionError(
                f"the {self.backend} session could not be cleaned up "
                f"({reply.get('error', 'processes would not end')}); it was closed"
            )
        return reply

    def _read_reply(self, nonce: str, deadline: float) -> dict:
        reader = self._box._reader
        header = reader.read_line(deadline)
        if header is None:
            raise ValueError("no reply in time")
        got, _, size = header.decode(errors="replace").partition(" ")
        if got != nonce or not size.isdigit():
            raise ValueError("a reply without this request's nonce: the session cannot be trusted")
        size = int(size)
        while len(reader.buffer) < size:
            chunk = reader.channel.read_chunk(max(0.0, deadline - time.monotonic()))
            if chunk is None:
                raise ValueError("no reply in time")
            if chunk == b"":
                raise EOFError("the session's server closed its output")
            reader.buffer += chunk
        body = bytes(reader.buffer[:size])
        del reader.buffer[:size]
        if reader.buffer:
            raise ValueError("output past a reply: the session cannot be trusted")
        return json.loads(body)

    @staticmethod
    def _raise_for(reply: dict) -> None:
        if "error" in reply:
            raise ValueError(reply["error"])

    # -- commands -------------------------------------------------------------
    def exec(self, command: str, timeout_s: float | None = None) -> CommandResult:
        """Run ``command`` with bash in the session; see the module's doc."""
        if not isinstance(command, str):
            raise TypeError(f"command must be a str, got {type(command).__name__}")
        limit = self.limits.timeout_s
        timeout_s = limit if timeout_s is None else float(timeout_s)
        if not 0 < timeout_s <= limit:
            raise ValueError(
                f"timeout_s={timeout_s:g} is outside this session's limit of {limit:g} s; "
                "open the session with a larger SessionLimits.timeout_s"
            )
        request = {
            "op": "exec",
            "command": command,
            "timeout_s": timeout_s,
            "output_bytes": self.limits.output_bytes,
            "cpu_s": self.limits.cpu_s,
        }
        oom_before = self._box._oom_kills()  # bwrap's cgroup, read by the host
        reply = self._call(request, timeout_s + GRACE_S)
        oom_after = self._box._oom_kills()
        if reply.get("exhausted"):
            raise SessionExhausted(
                f"this session has used its {self.limits.cpu_s:g} CPU seconds "
                f"({reply['cpu_s_used']:.1f} s); it runs no more commands. Open a new session, "
                "or give it a larger SessionLimits.cpu_s"
            )
        self._raise_for(reply)
        self.commands_run += 1
        output = base64.b64decode(reply["output"]).decode("utf-8", errors="replace")
        truncated = reply["output_bytes"] > self.limits.output_bytes
        if truncated:
            output += (
                f"\n[envgym: output cut: the command wrote {reply['output_bytes']} bytes, "
                f"the first {self.limits.output_bytes} are shown]\n"
            )
        memory_exceeded = reply["memory_exceeded"] or (
            oom_before is not None and oom_after is not None and oom_after > oom_before
        )
        if memory_exceeded:
            output += (
                f"\n[envgym: a process was killed: the session's processes together used more "
                f"than its memory limit of {self.limits.memory_mb} MB]\n"
            )
        if reply.get("cpu_out"):
            output += (
                f"\n[envgym: the command was killed: the session used its "
                f"{self.limits.cpu_s:g} CPU seconds]\n"
            )
        if reply["timed_out"]:
            output += f"\n[envgym: the command ran out of time ({timeout_s:g} s) and was killed]\n"
        return CommandResult(
            output=output,
            exit_code=reply["exit_code"],
            timed_out=reply["timed_out"],
            duration_s=reply["duration_s"],
            truncated=truncated,
            memory_exceeded=memory_exceeded,
            cpu_s_used=reply["cpu_s_used"],
        )

    # -- files ----------------------------------------------------------------
    @staticmethod
    def _relative(path: str) -> str:
        if not isinstance(path, str) or not path:
            raise ValueError("a path must be a non-empty string")
        if path.startswith("/work/"):
            path = path[len("/work/") :]
        if path.startswith("/") or ".." in path.split("/"):
            raise ValueError(
                f"{path!r} is outside the work directory: give a path relative to /work "
                "(or under /work/) without '..'"
            )
        return path

    def write_file(self, path: str, data: str | bytes, mode: int | None = None) -> None:
        """Write ``data`` to ``path`` in the work directory (folders made as needed)."""
        if isinstance(data, str):
            data = data.encode()
        if not isinstance(data, bytes):
            raise TypeError(f"data must be str or bytes, not {type(data).__name__}")
        request = {"op": "write", "path": self._relative(path), "mode": mode}
        reply = self._call({**request, "b64": base64.b64encode(data).decode()}, OPERATION_TIMEOUT_S)
        self._raise_for(reply)

    def read_file(self, path: str, max_bytes: int = 1 << 20) -> bytes:
        """At most ``max_bytes`` of the file ``path`` in the work directory."""
        if max_bytes < 0:
            raise ValueError(f"max_bytes must be 0 or more, got {max_bytes}")
        request = {"op": "read", "path": self._relative(path), "max_bytes": int(max_bytes)}
        reply = self._call(request, OPERATION_TIMEOUT_S)
        self._raise_for(reply)
        return base64.b64decode(reply["b64"])

    # -- state ----------------------------------------------------------------
    def snapshot(self) -> SessionSnapshot:
        """The work directory (``.tree``, a tar) and the shell's cwd and exported
        variables (``.state``). /tmp, /dev/shm and processes are not in it."""
        reply = self._call({"op": "snapshot"}, OPERATION_TIMEOUT_S)
        self._raise_for(reply)
        state = {"cwd": reply["cwd"], "env": reply["env"]}
        return SessionSnapshot(tree=base64.b64decode(reply["tree"]), state=state)

    def restore(self, snapshot: SessionSnapshot | bytes) -> None:
        """Make the session what ``snapshot`` was: its work directory (emptied
        first; /tmp and /dev/shm emptied too) and shell state. Plain tar bytes
        restore the tree with a fresh shell state (cwd /work)."""
        if isinstance(snapshot, SessionSnapshot):
            tree, state = snapshot.tree, snapshot.state
        elif isinstance(snapshot, bytes | bytearray):
            tree, state = bytes(snapshot), None
        else:
            raise TypeError("restore takes a SessionSnapshot or the tar bytes of a tree")
        request = {"op": "restore", "tree": base64.b64encode(tree).decode(), "state": state}
        self._raise_for(self._call(request, OPERATION_TIMEOUT_S))

    def fork(self, pool=None) -> Session:
        """A new, started session holding this one's current files and shell state;
        from ``pool`` (a `SessionPool` of this backend) when given, which is faster."""
        if pool is not None and pool.backend != self.backend:
            raise ValueError(f"fork of a {self.backend} session into a {pool.backend} pool")
        snap = self.snapshot()
        other = pool.take() if pool is not None else open_session(self.backend, self.limits)
        try:
            other.restore(snap)
        except BaseException:
            other.close()
            raise
        return other


def open_session(
    backend: str = "auto",
    limits: SessionLimits | None = None,
    files: bytes | dict[str, str | bytes] | None = None,
) -> Session:
    """A started `Session` (``with`` closes it). ``files``: a tar archive of the
    work directory's starting contents, or a dict of relative name -> content."""
    session = Session(backend, limits)
    try:
        session.start()
        if files:
            session.restore(tree_of(files) if isinstance(files, dict) else files)
    except BaseException:
        session.close()
        raise
    return session
