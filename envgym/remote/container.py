"""Envs in containers: ``gym.make(id, backend="docker")``.

The env's server (``envgym serve ID --uds /sock/env.sock``) runs in a
container of the runtime image, hardened like a sandbox (no network, read-only
root, unprivileged user, no capabilities, pids/memory/CPU limits), and speaks
over a Unix socket in a folder bind-mounted from the host. The caller gets a
`DockerEnv`, a `RemoteEnv` on that socket; closing it removes the container.
`ContainerServer` is the container on its own, for many sessions (a vector
env's ``remote`` workers, or a benchmark).

Only the host user who started it can connect: the socket folder is 0o700 and
the socket 0o600, both owned by the container's user. That user is the host
user's own uid (`container_user`), or, when the host process is root, a uid
no host account uses (`SERVER_UID`; the folder is handed to it and root
connects anyway; not 65534, which host daemons run as), so the server never
runs as root. Because no one else can connect, `DockerEnv` (``gym.make(id,
backend="docker")``) serves ``info["privileged"]`` like the local env gives
it; a `ContainerServer` leaves it out unless asked (``send_privileged=True``).

Containers carry the sandbox label, so `envgym sandbox gc` removes any that a
killed process left behind.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import time
from typing import Any

from envgym.arguments import check_int
from envgym.remote.address import RemoteSnapshot, ServerAddress
from envgym.remote.client import RemoteEnv, ServerUnreachable, wait_for_server
from envgym.remote.image import RUNTIME_IMAGE, runtime_image_problem
from envgym.remote.launcher import serve_command
from envgym.sandbox.base import SandboxError
from envgym.sandbox.images import (
    CONTAINER_LABEL,
    OWNER_HOST_LABEL,
    OWNER_PID_LABEL,
    docker_client,
)

#: The container's uid and gid when the host process is root: one no host
#: account uses, so no host process but root's can reach the socket.
SERVER_UID = 630_000


def container_user(uid: int, gid: int) -> tuple[int, int]:
    """The uid:gid the server runs as: the host user's own, never root's.

    Root becomes `SERVER_UID`; a root group (0) becomes `SERVER_UID` too,
    which changes nothing on the socket folder (its owner's uid matches).
    """
    if uid == 0:
        return SERVER_UID, SERVER_UID
    return uid, SERVER_UID if gid == 0 else gid


def make_socket_dir(user: tuple[int, int]) -> str:
    """A fresh host folder for the server's socket, mode 0o700, that `user` can write.

    A root host process hands it to `user`; anyone else owns it already (the
    same uid).
    """
    path = tempfile.mkdtemp(prefix="envgym-env-")  # 0o700, ours
    try:
        if os.getuid() == 0:
            os.chown(path, *user)
        os.chmod(path, 0o700)
    except BaseException:
        shutil.rmtree(path, ignore_errors=True)
        raise
    return path


class ContainerServer:
    """``envgym serve`` for one env id in its own container, on a Unix socket in a
    host folder bind-mounted at ``/sock``. `address` is what `RemoteEnv` and
    `TextVectorEnv(workers="remote")` take; `close()` removes the container.

    Args:
        env_id: a registered envgym id.
        env_kwargs: the env's constructor kwargs (JSON-serialisable).
        max_sessions: concurrent sessions the server accepts.
        exit_after_sessions: the server stops (and the container with it) once
            this many sessions have ended; None: it serves until `close()`.
        idle_timeout_s: the server's ``--idle-timeout`` (None: its default; 0: never).
        send_privileged: send ``info["privileged"]`` to clients (``--send-privileged``);
            only the host user who made the container can connect.
        call_timeout_s: the server's ``--call-timeout`` (None: its default; 0: none).
        memory_mb, cpus: the container's limits.
        startup_timeout_s: how long the server may take to answer.
    """

    def __init__(
        self,
        env_id: str,
        env_kwargs: dict[str, Any] | None = None,
        *,
        max_sessions: int = 1,
        exit_after_sessions: int | None = None,
        idle_timeout_s: float | None = None,
        send_privileged: bool = False,
        call_timeout_s: float | None = None,
        memory_mb: int = 1024,
        cpus: float = 1.0,
        startup_timeout_s: float = 60.0,
        image: str = RUNTIME_IMAGE,
    ) -> None:
        self.container = None
        self._socket_dir: str | None = None
        client = docker_client()
        problem = runtime_image_problem(client, image)
        if problem:
            raise SandboxError(problem)
        # The server must create its socket here, and no one else may reach it.
        user = container_user(os.getuid(), os.getgid())
        self._socket_dir = make_socket_dir(user)
        memory = f"{memory_mb}m"
        argv = serve_command(
            env_id,
            env_kwargs,
            uds="/sock/env.sock",
            max_sessions=max_sessions,
            exit_after_sessions=exit_after_sessions,
            idle_timeout_s=idle_timeout_s,
            send_privileged=send_privileged,
            call_timeout_s=call_timeout_s,
        )
        self.container = client.containers.run(
            image,
            ["python3", "-m", "envgym", *argv],
            detach=True,
            # Not auto_remove: a server that fails at start must leave its logs to report.
            network_mode="none",
            read_only=True,
            tmpfs={"/tmp": "rw,nosuid,nodev,size=64m,mode=1777"},
            volumes={self._socket_dir: {"bind": "/sock", "mode": "rw"}},
            environment={"HOME": "/tmp"},
            user=f"{user[0]}:{user[1]}",
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            pids_limit=256,
            mem_limit=memory,
            memswap_limit=memory,
            nano_cpus=int(cpus * 1e9),
            labels={
                CONTAINER_LABEL: "1",
                OWNER_PID_LABEL: str(os.getpid()),
                OWNER_HOST_LABEL: socket.gethostname(),
            },
        )
        self.socket_path = os.path.join(self._socket_dir, "env.sock")
        try:
            self._wait_until_serving(startup_timeout_s)
        except BaseException:
            self.close()
            raise
        self.address = ServerAddress(uds=self.socket_path)

    def _wait_until_serving(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while not os.path.exists(self.socket_path):
            self.container.reload()
            if self.container.status not in ("created", "running"):
                raise SandboxError(f"the env's container exited at start:\n{self.logs()}")
            if time.monotonic() > deadline:
                raise SandboxError(
                    f"the env's server did not start within {timeout_s:g} s:\n{self.logs()}"
                )
            time.sleep(0.02)
        try:
            left = max(1.0, deadline - time.monotonic())
            wait_for_server(f"unix:{self.socket_path}", timeout_s=left)
        except ServerUnreachable as exc:
            raise SandboxError(f"{exc}\n{self.logs()}") from None

    def logs(self) -> str:
        """The last lines the server wrote."""
        try:
            return self.container.logs(tail=30).decode(errors="replace")
        except Exception:
            return "(the container is gone; no logs)"

    def close(self) -> None:
        container, self.container = self.container, None
        if container is not None:
            try:
                container.remove(force=True)
            except Exception:
                pass  # already gone (envgym sandbox gc)
        if self._socket_dir is not None:
            shutil.rmtree(self._socket_dir, ignore_errors=True)
            self._socket_dir = None

    def __enter__(self) -> ContainerServer:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


class DockerEnv(RemoteEnv):
    """A `RemoteEnv` whose server runs in its own container (a `ContainerServer`
    with one session); closing the env removes the container. Its info carries
    ``info["privileged"]``, as the local env's does: the server is this
    process's alone (an owner-only socket).

    Args:
        env_id: a registered envgym id.
        env_kwargs: the env's constructor kwargs (JSON-serialisable).
        memory_mb, cpus: the container's limits.
        startup_timeout_s: how long the server may take to answer.
        max_forks: sessions `fork` may open beside this one at once (the
            container's server holds at most ``1 + max_forks``).
    """

    def __init__(
        self,
        env_id: str,
        env_kwargs: dict[str, Any] | None = None,
        *,
        max_forks: int = 63,
        memory_mb: int = 1024,
        cpus: float = 1.0,
        startup_timeout_s: float = 60.0,
        image: str = RUNTIME_IMAGE,
        render_mode: str | None = None,
    ) -> None:
        self.server: ContainerServer | None = None
        # One session (and its forks): when they end, even because this process was
        # killed and its socket closed, the server stops and the container with it. No idle
        # reaping: a session reaped during a long pause would end the server.
        self.server = ContainerServer(
            env_id,
            env_kwargs,
            max_sessions=1 + check_int(max_forks, "max_forks", 0, 4095, "forks at once"),
            exit_after_sessions=1,
            idle_timeout_s=0,
            send_privileged=True,
            memory_mb=memory_mb,
            cpus=cpus,
            startup_timeout_s=startup_timeout_s,
            image=image,
        )
        try:
            super().__init__(self.server.address, render_mode=render_mode)
        except BaseException:
            self._remove_container()
            raise

    def fork(self, n: int = 1, snapshot: RemoteSnapshot | None = None) -> list[RemoteEnv]:
        """`RemoteEnv.fork`: `n` more sessions in this env's container, in the state
        `snapshot` names (this one's current state when None), mid-episode. They are
        plain `RemoteEnv` sessions of the same container: closing one leaves the rest,
        and they end when this env closes its container."""
        return super().fork(n, snapshot)

    @property
    def container(self) -> Any:
        """The docker SDK container, or None once removed."""
        return None if self.server is None else self.server.container

    def _remove_container(self) -> None:
        server, self.server = self.server, None
        if server is not None:
            server.close()

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._remove_container()

    def __del__(self) -> None:
        try:
            self._remove_container()
        except Exception:
            pass
