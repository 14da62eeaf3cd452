"""The ``docker`` backend: hardened containers, each holding a job runner.

A container is started once and serves jobs over a Unix socket, so a job
costs neither a container start nor a `docker exec`, and no job passes
through the Docker daemon: the host listens in a folder inside a private
(0700) one, which the daemon bind-mounts read-only into the container,
accepts its runner's connection, then closes the listener and removes the
folders before any job runs. Where the daemon cannot reach a local folder (a
remote ``DOCKER_HOST``, a daemon in a VM), the runner is reached through the
container's attached stdin/stdout instead; ``ENVGYM_DOCKER_CHANNEL``
(``socket`` or ``attach``) forces either. Every container runs with no
network, a read-only root, size-limited tmpfs folders for the work dir,
``/tmp`` and ``/dev/shm`` (the runner empties them, and removes IPC objects,
after each job), an unprivileged user, no capabilities, no-new-privileges
and pids, memory and CPU limits; the memory limit is the container's cgroup,
so it holds for a job's processes together. Each container carries the
``envgym.sandbox`` label and its owner's pid.

Nothing is left running for long when the owner dies: the container is
started with ``auto_remove`` and its runner's channel (the socket, or stdin)
closes with the owner, so the runner sees end-of-file, exits and the
container is removed; `envgym sandbox gc` (also run when a pool starts)
removes any labelled container whose owner on this host is gone.
"""

from __future__ import annotations

import os
import select
import shutil
import socket
import struct
import sys
import tempfile
import time
import warnings

from envgym.sandbox.base import (
    ISOLATED_RUNNER_ARGS,
    START_TIMEOUT_S,
    Limits,
    RunnerSandbox,
    SandboxError,
)
from envgym.sandbox.images import (
    CONTAINER_LABEL,
    OWNER_HOST_LABEL,
    OWNER_PID_LABEL,
    SANDBOX_IMAGE,
    docker_client,
    image_problem,
)

#: Memory the runner and its zygote need beside the job's.
RUNNER_MEMORY_MB = 160
#: CPU the runner and its zygote get beside the job's `Limits.cpus` (bwrap keeps
#: them out of its quota; a container's quota holds for all of it): without it
#: their work between jobs used the job's quota and a stream of short jobs
#: waited out the quota's period, 33 ms at the 99th percentile instead of 3.
RUNNER_CPUS = 0.5
#: The runner's command line in the container (the image's CMD says the same).
RUNNER_COMMAND = ["python3", "-I", "-u", "/opt/envgym/runner.py", *ISOLATED_RUNNER_ARGS]


#: Where the channel's folder is mounted in the container, and its socket's name.
CHANNEL_MOUNT = "/run/envgym"
CHANNEL_SOCKET = "runner.sock"
#: Forces the channel: "socket" or "attach" (default: socket where the daemon is local).
CHANNEL_ENV = "ENVGYM_DOCKER_CHANNEL"
CHANNELS = ("socket", "attach")
#: Set once a runner could not reach its socket: later sandboxes attach.
_socket_unreachable = False


def channel_kind(client) -> str:
    """The channel a new sandbox uses: ``$ENVGYM_DOCKER_CHANNEL``, else the
    socket where the daemon is this machine's (a local Unix socket on Linux)
    and it has not failed yet in this process, else attach."""
    forced = os.environ.get(CHANNEL_ENV, "").strip().lower()
    if forced:
        if forced not in CHANNELS:
            raise SandboxError(
                f"{CHANNEL_ENV}={forced!r} is not a channel: use one of {', '.join(CHANNELS)}"
            )
        return forced
    local = sys.platform == "linux" and client.api.base_url == "http+docker://localhost"
    return "socket" if local and not _socket_unreachable else "attach"


class _Unreachable(Exception):
    """The runner ended without connecting to the host's socket."""


class SocketChannel:
    """A connected stream socket to the runner."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read_chunk(self, timeout: float) -> bytes | None:
        ready, _, _ = select.select([self.sock], [], [], timeout)
        return self.sock.recv(65536) if ready else None

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


class AttachChannel(SocketChannel):
    """The attached stdin/stdout of a container. Docker multiplexes stdout
    and stderr on one socket in frames: an 8-byte header (stream, size)."""

    def __init__(self, sock: socket.socket) -> None:
        super().__init__(sock)
        self._raw = bytearray()
        self.stderr = bytearray()

    def read_chunk(self, timeout: float) -> bytes | None:
        while True:
            out = self._frames()
            if out:
                return out
            chunk = super().read_chunk(timeout)
            if not chunk:
                return chunk  # None on timeout, b"" at end of file
            self._raw += chunk

    def _frames(self) -> bytes:
        out = bytearray()
        while len(self._raw) >= 8:
            stream, size = self._raw[0], struct.unpack(">I", self._raw[4:8])[0]
            if len(self._raw) < 8 + size:
                break
            payload = self._raw[8 : 8 + size]
            del self._raw[: 8 + size]
            if stream == 2:
                self.stderr += payload[-4096:]
            else:
                out += payload
        return bytes(out)


class DockerSandbox(RunnerSandbox):
    backend = "docker"
    isolated = True

    def __init__(
        self,
        limits: Limits | None = None,
        image: str = SANDBOX_IMAGE,
        client=None,
        channel: str | None = None,
    ) -> None:
        super().__init__(limits)
        if channel is not None and channel not in CHANNELS:
            raise ValueError(f"channel={channel!r}: use one of {', '.join(CHANNELS)} or None")
        self.client = client or docker_client()
        problem = image_problem(self.client, image)
        if problem:
            raise SandboxError(problem)
        self.image = image
        #: "socket", "attach", or None: `channel_kind` decides at each start
        self.channel = channel
        self.container = None

    def container_kwargs(self, folder: str | None = None) -> dict:
        """The container's settings; with ``folder`` (a host folder holding
        the socket the host listens on), the runner connects to that socket
        instead of reading its stdin."""
        limits = self.limits
        memory = f"{limits.memory_mb + RUNNER_MEMORY_MB}m"
        socket_args = {}
        if folder is not None:
            socket_args = {
                "volumes": {folder: {"bind": CHANNEL_MOUNT, "mode": "ro"}},
                "command": [*RUNNER_COMMAND, "--connect", f"{CHANNEL_MOUNT}/{CHANNEL_SOCKET}"],
            }
        return {
            "image": self.image,
            "command": RUNNER_COMMAND,
            "stdin_open": folder is None,
            "auto_remove": True,
            "network_mode": "none",
            "read_only": True,
            "tmpfs": {
                "/work": f"rw,nosuid,nodev,size={limits.work_mb}m,mode=1777",
                "/tmp": f"rw,nosuid,nodev,size={limits.tmp_mb}m,mode=1777",
            },
            "shm_size": f"{limits.tmp_mb}m",
            "user": "65534:65534",
            "cap_drop": ["ALL"],
            "security_opt": ["no-new-privileges"],
            "pids_limit": limits.max_processes + 8,
            "mem_limit": memory,
            "memswap_limit": memory,
            "nano_cpus": int((limits.cpus + RUNNER_CPUS) * 1e9),
            "labels": {
                CONTAINER_LABEL: "1",
                OWNER_PID_LABEL: str(os.getpid()),
                OWNER_HOST_LABEL: socket.gethostname(),
            },
            **socket_args,
        }

    def _start_channel(self) -> SocketChannel:
        global _socket_unreachable
        if (self.channel or channel_kind(self.client)) == "socket":
            try:
                return self._start_socket()
            except _Unreachable as exc:
                if self.channel or os.environ.get(CHANNEL_ENV):
                    raise SandboxError(
                        f"the docker sandbox's runner could not reach its socket ({exc}); "
                        f"use channel='attach' or {CHANNEL_ENV}=attach"
                    ) from None
                _socket_unreachable = True
                warnings.warn(
                    f"docker sandboxes: the runner could not reach a socket in a host folder "
                    f"({exc}; a Docker daemon in a VM?), so jobs go through the daemon "
                    f"(attach), which is slower; set {CHANNEL_ENV}=attach to skip the try",
                    RuntimeWarning,
                    stacklevel=2,
                )
        return self._start_attached()

    def _start_attached(self) -> AttachChannel:
        self.container = self.client.containers.create(**self.container_kwargs())
        attached = self.container.attach_socket(
            params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1}
        )
        self.container.start()
        # The wrapper from docker-py owns the raw socket; keep a reference.
        self._attached = attached
        return AttachChannel(attached._sock)

    def _start_socket(self) -> SocketChannel:
        """Listen in a fresh folder, start the container with that folder
        mounted, accept its runner's connection, then remove the folder: no
        process started later (a job) finds a socket to connect to. The
        folder's parent is private (0700): only the daemon, which mounts it,
        and root reach the socket on the host."""
        private = tempfile.mkdtemp(prefix="envgym-channel-")
        try:
            folder = os.path.join(private, "channel")
            os.mkdir(folder)
            os.chmod(folder, 0o755)  # the runner is uid 65534 (or a remapped uid)
            path = os.path.join(folder, CHANNEL_SOCKET)
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
                listener.bind(path)
                os.chmod(path, 0o666)
                listener.listen(1)
                self.container = self.client.containers.create(**self.container_kwargs(folder))
                try:
                    self.container.start()
                    return SocketChannel(self._accept(listener))
                except BaseException:
                    self._stop()
                    raise
        finally:
            shutil.rmtree(private, ignore_errors=True)

    def _accept(self, listener: socket.socket) -> socket.socket:
        """The runner's connection; `_Unreachable` when the container ends
        without making one, `SandboxError` when it makes none in time."""
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            ready, _, _ = select.select([listener], [], [], 0.25)
            if ready:
                conn, _ = listener.accept()
                return conn
            try:
                self.container.reload()
                status = self.container.status
            except Exception:  # removed: it ran and ended
                status = "removed"
            if status not in ("created", "running"):
                raise _Unreachable(f"the container is {status}")
        raise SandboxError(
            f"the docker sandbox's runner did not connect in {START_TIMEOUT_S:.0f} s "
            f"({self._start_failure_hint()}); run `envgym sandbox doctor`"
        )

    def _start_failure_hint(self) -> str:
        try:
            return self.container.logs(tail=20).decode(errors="replace").strip() or "no output"
        except Exception as exc:
            return f"container gone: {type(exc).__name__}"

    def _stop(self) -> None:
        container, self.container = self.container, None
        if container is None:
            return
        try:
            container.remove(force=True)
        except Exception:
            pass  # already removed by auto_remove

    def throttled_periods(self) -> int | None:
        if self.container is None:
            return None
        try:
            stats = self.container.stats(stream=False)
            return int(stats["cpu_stats"]["throttling_data"]["throttled_periods"])
        except Exception:  # the container is gone, or the daemon does not say
            return None

    def _max_processes(self) -> int | None:
        # The container's pids limit bounds the job; RLIMIT_NPROC would count
        # uid 65534 across every container on the host.
        return None
