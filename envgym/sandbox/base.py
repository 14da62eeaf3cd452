"""What every sandbox backend shares: the job result, the protocol, and the
host side of the runner that lives inside each sandbox (see runner.py)."""

from __future__ import annotations

import base64
import json
import os
import secrets
import selectors
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

RUNNER_PATH = Path(__file__).with_name("runner.py")
#: What a sandbox holds of envgym, side by side: the runner and its job processes.
RUNNER_FILES = (RUNNER_PATH, RUNNER_PATH.with_name("jobs.py"))
LANGUAGES = ("python", "bash")
#: The runner's arguments in an isolating sandbox (docker, bwrap): its work dir,
#: the scratch folders it empties before each job, and its own PID namespace.
ISOLATED_RUNNER_ARGS = (
    "--work",
    "/work",
    "--scratch",
    "/tmp",
    "--scratch",
    "/dev/shm",
    "--scratch",
    "/dev/mqueue",
    "--isolated",
)

#: How long past a job's own timeout the host waits for the runner's answer
#: before it declares the sandbox dead and replaces it.
GRACE_S = 5.0
#: How long a new sandbox may take to say it is ready.
START_TIMEOUT_S = 60.0
#: Appended to the stderr of a job the kernel killed for using too much memory.
MEMORY_EXCEEDED = (
    "\n[envgym: the job was killed: its processes together used more than the sandbox's "
    "memory limit of {memory_mb} MB]\n"
)


#: The start of `ExecResult.error` for a job the sandbox's state kept from
#: starting (its work dir not empty, its files not writable); `run` retries it
#: once on a fresh sandbox.
_NOT_STARTED = "the job did not start"


class SandboxError(RuntimeError):
    """A sandbox could not be started or used; the message says what to do."""


@dataclass
class ExecResult:
    """What a job did. ``error`` is set when the sandbox itself failed (the
    job may not have run); the sandbox has then been replaced."""

    stdout: str
    stderr: str
    exit_code: int
    timed_out: bool = False
    duration_s: float = 0.0
    truncated: bool = False
    error: str | None = None
    backend: str = ""
    #: the kernel killed a process of the job because the job's processes
    #: together went over the sandbox's memory limit (the stderr says so too)
    memory_exceeded: bool = False

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out and self.error is None


@dataclass(frozen=True)
class Limits:
    """Limits applied to every job. ``memory_mb`` and ``timeout_s`` can be
    lowered per job, never raised; the others are fixed when the sandbox starts.

    ``memory_mb`` holds for all of a job's processes together (a cgroup on
    docker and bwrap; files the job writes to its tmpfs folders count too), and
    a per-job ``memory_mb`` also caps each process's address space. ``work_mb``
    is the size of the work dir, ``tmp_mb`` of ``/tmp`` and of ``/dev/shm``
    each; all three are emptied before every job.
    """

    timeout_s: float = 10.0
    memory_mb: int = 512
    work_mb: int = 64
    tmp_mb: int = 16
    max_output_bytes: int = 1 << 20
    max_processes: int = 64
    cpus: float = 1.0

    def __post_init__(self) -> None:
        names = ("timeout_s", "memory_mb", "work_mb", "tmp_mb", "max_output_bytes", "max_processes")
        for name in names:
            if getattr(self, name) <= 0:
                raise ValueError(
                    f"sandbox limit {name} must be positive, got {getattr(self, name)}"
                )


@runtime_checkable
class Sandbox(Protocol):
    backend: str
    isolated: bool

    def run(
        self,
        code: str,
        language: str = "python",
        files: dict[str, str | bytes] | None = None,
        stdin: str | None = None,
        timeout_s: float | None = None,
        memory_mb: int | None = None,
    ) -> ExecResult: ...

    def close(self) -> None: ...


class RunnerChannel(Protocol):
    """A byte stream to a runner: the runner's stdin and stdout."""

    def send(self, data: bytes) -> None: ...

    def read_chunk(self, timeout: float) -> bytes | None:
        """Up to some bytes of the runner's stdout; b"" at EOF, None on timeout."""

    def close(self) -> None: ...


@dataclass
class _LineReader:
    channel: RunnerChannel
    buffer: bytearray = field(default_factory=bytearray)

    def read_line(self, deadline: float) -> bytes | None:
        while True:
            newline = self.buffer.find(b"\n")
            if newline >= 0:
                line = bytes(self.buffer[:newline])
                del self.buffer[: newline + 1]
                return line
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            chunk = self.channel.read_chunk(remaining)
            if chunk is None:
                return None
            if chunk == b"":
                raise EOFError("the sandbox's runner closed its output")
            self.buffer += chunk


def _parse_reply(line: bytes) -> dict | None:
    try:
        reply = json.loads(line)
    except ValueError:
        return None
    return reply if isinstance(reply, dict) else None


class PipeChannel:
    """A runner started as a local child process (process and bwrap backends)."""

    def __init__(self, proc) -> None:  # subprocess.Popen
        self.proc = proc
        self._selector = selectors.DefaultSelector()
        self._selector.register(proc.stdout, selectors.EVENT_READ)

    def send(self, data: bytes) -> None:
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def read_chunk(self, timeout: float) -> bytes | None:
        if not self._selector.select(timeout):
            return None
        return os.read(self.proc.stdout.fileno(), 65536)

    def close(self) -> None:
        self._selector.close()
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                stream.close()
            except OSError:
                pass
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


class RunnerSandbox:
    """A sandbox whose jobs go to a runner over a channel. Subclasses start
    the runner (``_start_channel``) and tear it down (``_stop``). A runner
    that dies, stops answering or leaves processes behind is replaced."""

    backend = ""
    isolated = True

    def __init__(self, limits: Limits | None = None) -> None:
        self.limits = limits or Limits()
        self._channel: RunnerChannel | None = None
        self._reader: _LineReader | None = None
        self._lock = threading.Lock()
        self._closed = False
        self._last_nonce: str | None = None
        self.jobs_run = 0
        self.restarts = 0

    # -- subclass hooks ----------------------------------------------------
    def _start_channel(self) -> RunnerChannel:
        raise NotImplementedError

    def _stop(self) -> None:
        """Tear down whatever ``_start_channel`` started (beyond the channel)."""

    def _on_ready(self) -> None:
        """Called once the runner said it is ready, before the first job."""

    def _oom_kills(self) -> int | None:
        """Out-of-memory kills in this sandbox so far, where the host can count them."""
        return None

    def throttled_periods(self) -> int | None:
        """How many CPU-quota periods held this sandbox back so far (``Limits.cpus``
        at work), or None where the host cannot tell."""
        return None

    # -- lifecycle ---------------------------------------------------------
    def start(self) -> None:
        with self._lock:
            self._ensure_started()

    def _ensure_started(self) -> None:
        if self._closed:
            raise SandboxError(f"this {self.backend} sandbox is closed; open a new one")
        if self._channel is not None:
            return
        channel = self._start_channel()
        reader = _LineReader(channel)
        try:
            line = reader.read_line(time.monotonic() + START_TIMEOUT_S)
        except EOFError:
            line = b""
        if not line or not json.loads(line).get("ready"):
            channel.close()
            self._stop()
            raise SandboxError(
                f"the {self.backend} sandbox's runner did not start "
                f"({self._start_failure_hint()}); run `envgym sandbox doctor`"
            )
        try:
            self._on_ready()
        except BaseException:
            channel.close()
            self._stop()
            raise
        self._channel, self._reader = channel, reader

    def _start_failure_hint(self) -> str:
        return "no ready message"

    def _discard(self) -> None:
        if self._channel is not None:
            self._channel.close()
        self._channel = self._reader = None
        self._last_nonce = None
        self._stop()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._discard()

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            if not self._closed:
                self.close()
        except Exception:
            pass

    # -- jobs --------------------------------------------------------------
    def run(
        self,
        code: str,
        language: str = "python",
        files: dict[str, str | bytes] | None = None,
        stdin: str | None = None,
        timeout_s: float | None = None,
        memory_mb: int | None = None,
    ) -> ExecResult:
        job = self._job(code, language, files, stdin, timeout_s, memory_mb)
        with self._lock:
            result = self._run_locked(job)
            if result.error is not None and result.error.startswith(_NOT_STARTED):
                # The sandbox's own state kept the job from starting: once more, on a fresh one.
                result = self._run_locked(job)
            return result

    def _run_locked(self, job: dict) -> ExecResult:
        self._ensure_started()
        nonce = job["nonce"] = secrets.token_hex(16)
        started = time.monotonic()
        deadline = started + job["timeout_s"] + GRACE_S
        oom_before = self._oom_kills()
        suspect = False
        try:
            self._channel.send((json.dumps(job) + "\n").encode())
            while True:
                line = self._reader.read_line(deadline)
                if line is None:
                    return self._failed("the sandbox stopped answering", started)
                reply = _parse_reply(line)
                last = self._last_nonce
                if reply is None or last is None or reply.get("nonce") != last:
                    break
                # The last job's real reply, late behind one that job forged with
                # its nonce: skip it, and replace the sandbox after this job.
                suspect = True
        except (EOFError, OSError, ValueError) as exc:
            return self._failed(f"the sandbox died during the job ({exc})", started)
        if reply is None or reply.get("nonce") != nonce:
            # Only a job can have written this: the runner echoes every job's nonce.
            return self._failed(
                "the sandbox's runner sent a reply without this job's nonce (the job "
                "wrote to the runner's output), so the sandbox cannot be trusted",
                started,
            )
        self._last_nonce = nonce
        self.jobs_run += 1
        oom_after = self._oom_kills()
        if "error" in reply and "stdout" not in reply:
            if reply.get("retry"):
                self._replace()
                return self._failed_result(f"{_NOT_STARTED}: {reply['error']}", started)
            if str(reply["error"]).startswith("runner failed"):
                return self._failed(str(reply["error"]), started)
            raise ValueError(reply["error"])
        if (
            suspect
            or reply.get("replace")
            or reply.get("leftover_processes")
            or self._reader.buffer
        ):
            # Processes it could not clear, folders it could not empty, or output
            # past its reply: never reuse it.
            self._replace()
        result = ExecResult(
            stdout=reply["stdout"],
            stderr=reply["stderr"],
            exit_code=reply["exit_code"],
            timed_out=reply["timed_out"],
            duration_s=reply["duration_s"],
            truncated=reply["truncated"],
            backend=self.backend,
        )
        killed = reply.get("oom_kills") or (
            oom_before is not None and oom_after is not None and oom_after > oom_before
        )
        if killed:
            result.memory_exceeded = True
            result.stderr += MEMORY_EXCEEDED.format(memory_mb=self.limits.memory_mb)
        return result

    def _failed(self, why: str, started: float) -> ExecResult:
        self._replace()
        return self._failed_result(why + "; it was replaced with a fresh one", started)

    def _failed_result(self, why: str, started: float) -> ExecResult:
        return ExecResult(
            stdout="",
            stderr="",
            exit_code=-9,
            duration_s=time.monotonic() - started,
            error=why,
            backend=self.backend,
        )

    def _replace(self) -> None:
        self.restarts += 1
        self._discard()

    def _job(self, code, language, files, stdin, timeout_s, memory_mb) -> dict:
        if language not in LANGUAGES:
            raise ValueError(f"language must be one of {LANGUAGES}, got {language!r}")
        if not isinstance(code, str):
            raise TypeError(f"code must be a str, got {type(code).__name__}")
        timeout_s = self.limits.timeout_s if timeout_s is None else float(timeout_s)
        if not 0 < timeout_s <= self.limits.timeout_s:
            raise ValueError(
                f"timeout_s={timeout_s:g} is outside this sandbox's limit of "
                f"{self.limits.timeout_s:g} s; open the sandbox with a larger timeout_s"
            )
        memory_mb = self.limits.memory_mb if memory_mb is None else int(memory_mb)
        if not 0 < memory_mb <= self.limits.memory_mb:
            raise ValueError(
                f"memory_mb={memory_mb} is outside this sandbox's limit of "
                f"{self.limits.memory_mb} MB; open the sandbox with a larger memory_mb"
            )
        encoded = {}
        for name, content in (files or {}).items():
            if isinstance(content, bytes):
                content = {"b64": base64.b64encode(content).decode()}
            elif not isinstance(content, str):
                raise TypeError(f"file {name!r} must be str or bytes, not {type(content).__name__}")
            encoded[str(name)] = content
        return {
            "language": language,
            "code": code,
            "files": encoded,
            "stdin": stdin,
            "timeout_s": timeout_s,
            "memory_mb": memory_mb,
            "file_mb": self.limits.work_mb,
            "max_output_bytes": self.limits.max_output_bytes,
            "max_processes": self._max_processes(),
        }

    def _max_processes(self) -> int | None:
        return self.limits.max_processes
