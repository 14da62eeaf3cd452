"""The ``docker`` backend: hardened containers, each holding a job runner.

A container is started once and serves jobs over its attached stdin/stdout,
so a job costs neither a container start nor a `docker exec`. Every container
runs with no network, a read-only root, size-limited tmpfs folders for the
work dir, ``/tmp`` and ``/dev/shm`` (the runner empties them, and removes IPC
objects, before each job), an unprivileged user, no capabilities,
no-new-privileges and pids, memory and CPU limits; the memory limit is the
container's cgroup, so it holds for a job's processes together. Each
container carries the ``envgym.sandbox`` label and its owner's pid.

Nothing is left running for long when the owner dies: the container is
started with ``auto_remove`` and stdin that closes with the owner's
connection, so the runner sees end-of-file, exits and the container is
removed; `envgym sandbox gc` (also run when a pool starts) removes any
labelled container whose owner on this host is gone.
"""

from __future__ import annotations

import os
import select
import socket
import struct

from envgym.sandbox.base import ISOLATED_RUNNER_ARGS, Limits, RunnerSandbox, SandboxError
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


class AttachChannel:
    """The attached stdin/stdout of a container. Docker multiplexes stdout
    and stderr on one socket in frames: an 8-byte header (stream, size)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._raw = bytearray()
        self.stderr = bytearray()

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read_chunk(self, timeout: float) -> bytes | None:
        while True:
            out = self._frames()
            if out:
                return out
            ready, _, _ = select.select([self.sock], [], [], timeout)
            if not ready:
                return None
            chunk = self.sock.recv(65536)
            if not chunk:
                return b""
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

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


class DockerSandbox(RunnerSandbox):
    backend = "docker"
    isolated = True

    def __init__(
        self, limits: Limits | None = None, image: str = SANDBOX_IMAGE, client=None
    ) -> None:
        super().__init__(limits)
        self.client = client or docker_client()
        problem = image_problem(self.client, image)
        if problem:
            raise SandboxError(problem)
        self.image = image
        self.container = None

    def container_kwargs(self) -> dict:
        limits = self.limits
        memory = f"{limits.memory_mb + RUNNER_MEMORY_MB}m"
        return {
            "image": self.image,
            "command": RUNNER_COMMAND,
            "stdin_open": True,
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
        }

    def _start_channel(self) -> AttachChannel:
        self.container = self.client.containers.create(**self.container_kwargs())
        attached = self.container.attach_socket(
            params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1}
        )
        self.container.start()
        # The wrapper from docker-py owns the raw socket; keep a reference.
        self._attached = attached
        return AttachChannel(attached._sock)

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
