"""Memory and CPU limits for a whole sandbox through the kernel's cgroups.

A bwrap sandbox's processes share one cgroup whose memory limit holds for all
of them together, so a job that forks cannot multiply its limit (``RLIMIT_AS``
is per process), and whose CPU quota holds ``Limits.cpus`` however many
processes it runs. Both cgroup versions are handled:

- v2 (the unified hierarchy): a folder ``envgym`` under the root of the
  hierarchy when envgym runs as root, or ``ENVGYM_CGROUP``, a cgroup delegated
  to this user that holds no process (e.g. from ``systemd-run --user --scope
  -p Delegate=yes``), with ``memory.max``/``memory.swap.max`` and ``cpu.max``;
- v1: a folder ``envgym`` under this process's own memory cgroup, with
  ``memory.limit_in_bytes`` (and ``memory.memsw.limit_in_bytes`` where swap is
  accounted), and one under its own cpu cgroup with ``cpu.cfs_quota_us``.

`placement()` says where sandboxes would go here, or why nowhere: the bwrap
backend refuses to start without a cgroup rather than fall back to a weaker
per-process limit, unless ``ENVGYM_SANDBOX_MEMORY=per-process`` asks for one.
"""

from __future__ import annotations

import functools
import itertools
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from envgym.sandbox.jobs import oom_kill_count

__all__ = [
    "MEMORY_MODE_VARIABLE",
    "CgroupUnavailable",
    "SandboxCgroup",
    "descendants",
    "parent_pid",
    "memory_mode",
    "placement",
]

#: Set to ``per-process`` to run bwrap sandboxes with RLIMIT_AS only, where no
#: cgroup can be had (each process of a job then gets the whole limit).
MEMORY_MODE_VARIABLE = "ENVGYM_SANDBOX_MEMORY"
MEMORY_MODES = ("cgroup", "per-process")

_serial = itertools.count()


class CgroupUnavailable(OSError):
    """No cgroup with a memory controller can be used here; the message says why."""


def memory_mode() -> str:
    """``cgroup`` (the default) or ``per-process``, from ``ENVGYM_SANDBOX_MEMORY``."""
    mode = os.environ.get(MEMORY_MODE_VARIABLE, "cgroup") or "cgroup"
    if mode not in MEMORY_MODES:
        raise ValueError(
            f"{MEMORY_MODE_VARIABLE}={mode!r} is not one of {MEMORY_MODES}; unset it to hold "
            "each job's memory with a cgroup"
        )
    return mode


#: The CPU quota's period, in microseconds (the kernel's default).
CPU_PERIOD_US = 100_000


@dataclass(frozen=True)
class Placement:
    """Where sandbox cgroups are made: `parent` holds one folder per sandbox,
    `cpu_parent` (v1, where cpu is its own hierarchy) one more."""

    version: int
    parent: Path
    cpu_parent: Path | None = None

    def describe(self) -> str:
        name = "memory.max" if self.version == 2 else "memory.limit_in_bytes"
        return f"cgroup v{self.version} {name} under {self.parent}"

    def describe_cpu(self) -> str:
        if self.version == 2:
            return f"cgroup v2 cpu.max under {self.parent}"
        return f"cgroup v1 cpu.cfs_quota_us under {self.cpu_parent}"


def _mounts() -> list[tuple[str, str, set[str]]]:
    """(mount point, fstype, super options) of the cgroup file systems."""
    found = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            fields, tail = left.split(), right.split()
            if len(tail) >= 3 and tail[0] in ("cgroup", "cgroup2"):
                found.append((fields[4], tail[0], set(tail[2].split(","))))
    return found


def _own_path(controller: str | None) -> str:
    """This process's cgroup path for `controller` (v1) or in the unified hierarchy (None)."""
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            names = set(controllers.split(",")) if controllers else set()
            if (controller is None and not names) or controller in names:
                return path
    raise CgroupUnavailable(f"this process has no {controller or 'unified'} cgroup")


def _enable(cgroup: Path, controllers: tuple[str, ...] = ("memory", "cpu")) -> None:
    control = cgroup / "cgroup.subtree_control"
    enabled = control.read_text().split()
    for controller in controllers:
        if controller not in enabled:
            control.write_text(f"+{controller}")


def _v2_placement() -> Placement:
    mounts = [m for m in _mounts() if m[1] == "cgroup2"]
    for point, _, _ in mounts:
        root = Path(point)
        available = (root / "cgroup.controllers").read_text().split()
        if "memory" not in available or "cpu" not in available:
            continue
        delegated = os.environ.get("ENVGYM_CGROUP")
        if delegated:
            parent = Path(delegated)
            if not os.access(parent / "cgroup.procs", os.W_OK):
                raise CgroupUnavailable(
                    f"ENVGYM_CGROUP={delegated} is not a cgroup this user may write to"
                )
        elif os.geteuid() == 0:
            _enable(root)
            parent = root / "envgym"
            parent.mkdir(exist_ok=True)
        else:
            raise CgroupUnavailable(
                "cgroup v2 needs root, or a cgroup delegated to this user in ENVGYM_CGROUP "
                "(e.g. run under `systemd-run --user --scope -p Delegate=yes` and point "
                "ENVGYM_CGROUP at a new child folder of that scope)"
            )
        _enable(parent)
        return Placement(2, parent)
    raise CgroupUnavailable("no cgroup v2 hierarchy with the memory and cpu controllers is mounted")


def _v1_parent(controller: str) -> Path:
    for point, _, options in _mounts():
        if controller in options:
            parent = Path(point) / _own_path(controller).lstrip("/") / "envgym"
            try:
                parent.mkdir(exist_ok=True)
            except OSError as exc:
                raise CgroupUnavailable(
                    f"cannot make {parent} ({exc.strerror}); run as root"
                ) from None
            return parent
    raise CgroupUnavailable(f"no cgroup v1 {controller} controller is mounted")


def _v1_placement() -> Placement:
    return Placement(1, _v1_parent("memory"), _v1_parent("cpu"))


@functools.cache
def placement() -> Placement:
    """Where this process puts sandbox cgroups; `CgroupUnavailable` says why nowhere."""
    problems = []
    for find in (_v2_placement, _v1_placement):
        try:
            return find()
        except CgroupUnavailable as exc:
            problems.append(str(exc))
        except OSError as exc:
            problems.append(f"{exc.filename}: {exc.strerror}")
    raise CgroupUnavailable("; ".join(problems))


def parent_pid(pid: int) -> int | None:
    """The parent of `pid`, from /proc (None when it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def descendants(pid: int) -> list[int]:
    """`pid` and every process below it, from /proc."""
    parents: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        ppid = parent_pid(int(name))
        if ppid is not None:
            parents.setdefault(ppid, []).append(int(name))
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(parents.get(current, []))
    return found


class SandboxCgroup:
    """One sandbox's cgroup: a memory limit and a CPU quota for all its processes together."""

    def __init__(self, memory_bytes: int, cpus: float) -> None:
        where = placement()
        self.version = where.version
        name = f"sandbox-{os.getpid()}-{next(_serial)}"
        self.path = where.parent / name
        self.cpu_path = self.path if where.cpu_parent is None else where.cpu_parent / name
        self.path.mkdir()
        try:
            if self.cpu_path != self.path:
                self.cpu_path.mkdir()
            quota = max(1000, int(cpus * CPU_PERIOD_US))
            if self.version == 2:
                self._write(self.path, "memory.max", memory_bytes)
                if (self.path / "memory.swap.max").exists():
                    self._write(self.path, "memory.swap.max", 0)
                self._write(self.path, "cpu.max", f"{quota} {CPU_PERIOD_US}")
                self._burst(self.path / "cpu.max.burst", quota)
            else:
                self._write(self.path, "memory.limit_in_bytes", memory_bytes)
                if (self.path / "memory.memsw.limit_in_bytes").exists():
                    self._write(self.path, "memory.memsw.limit_in_bytes", memory_bytes)
                self._write(self.cpu_path, "cpu.cfs_period_us", CPU_PERIOD_US)
                self._write(self.cpu_path, "cpu.cfs_quota_us", quota)
                self._burst(self.cpu_path / "cpu.cfs_burst_us", quota)
        except OSError:
            self.remove()
            raise

    @staticmethod
    def _burst(path: Path, quota: int) -> None:
        """Let unused quota carry over one period (Linux 5.14+), so the runner's
        own work beside a job's does not stall the sandbox."""
        try:
            path.write_text(str(quota))
        except OSError:
            pass

    @staticmethod
    def _write(folder: Path, name: str, value: int | str) -> None:
        (folder / name).write_text(str(value))

    def add(self, pids: list[int], cpu: list[int] | None = None) -> None:
        """Move `pids` in (under the CPU quota too, unless ``cpu`` names the ones
        that go there); what they start from then on stays in."""
        cpu = pids if cpu is None else cpu
        for folder, members in ((self.path, pids), (self.cpu_path, cpu)):
            for pid in members:
                try:
                    self._write(folder, "cgroup.procs", pid)
                except ProcessLookupError:
                    pass

    def oom_kills(self) -> int:
        """How many processes the kernel has killed here for going over the limit."""
        name = "memory.events" if self.version == 2 else "memory.oom_control"
        return oom_kill_count(str(self.path / name)) or 0

    def throttled(self) -> int:
        """How many CPU periods the quota held the sandbox back (``nr_throttled``)."""
        try:
            for line in (self.cpu_path / "cpu.stat").read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "nr_throttled":
                    return int(value)
        except (OSError, ValueError):
            pass
        return 0

    def remove(self) -> None:
        """Kill whatever is still inside, then remove the folders."""
        for folder in dict.fromkeys((self.path, self.cpu_path)):
            _remove(folder)


def _remove(folder: Path) -> None:
    for _ in range(50):
        try:
            pids = [int(p) for p in (folder / "cgroup.procs").read_text().split()]
        except FileNotFoundError:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            folder.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.02)  # the killed processes are still exiting
