"""The seccomp filter of a bwrap sandbox, as a classic BPF program for ``bwrap --seccomp``.

Close to Docker's default profile where it matters for model-written code:
the calls that reach kernel state shared beyond the sandbox, or that are the
usual first step of a kernel exploit, fail with ``EPERM`` for every process
of the sandbox:

- keyrings (``keyctl``, ``add_key``, ``request_key``): a key would outlive
  the job that added it;
- new namespaces (``unshare``, ``setns``, and ``clone`` with any
  ``CLONE_NEW*`` flag; ``clone3``, whose flags a filter cannot read, answers
  ``ENOSYS`` so the C library falls back to ``clone``);
- mounts (``mount``, ``umount2``, ``pivot_root`` and the new mount API);
- reading or writing other processes (``ptrace``, ``process_vm_readv``,
  ``process_vm_writev``, ``kcmp``);
- ``bpf``, ``perf_event_open``, ``userfaultfd``, ``io_uring_*``, kernel
  modules and ``kexec``, ``reboot``, swap, accounting, quotas, the clock,
  ``syslog``, ``open_by_handle_at``, and the NUMA memory-policy calls;
- on x86-64, the x32 system-call numbers; and any call from another
  architecture's ABI (32-bit ``int 0x80``) kills the process.

Only x86-64 and AArch64 have a table here (`FILTERED_ARCHES`); elsewhere
`filter_program` raises and the bwrap backend refuses to start.
"""

from __future__ import annotations

import errno
import platform
import struct

__all__ = ["BLOCKED", "FILTERED_ARCHES", "SeccompUnavailable", "filter_program"]


class SeccompUnavailable(RuntimeError):
    """No filter for this machine's architecture."""


#: System calls that fail with EPERM: name -> (x86-64 number, AArch64 number).
BLOCKED: dict[str, tuple[int, int]] = {
    "keyctl": (250, 219),
    "add_key": (248, 217),
    "request_key": (249, 218),
    "unshare": (272, 97),
    "setns": (308, 268),
    "mount": (165, 40),
    "umount2": (166, 39),
    "pivot_root": (155, 41),
    "fsopen": (430, 430),
    "fsconfig": (431, 431),
    "fsmount": (432, 432),
    "fspick": (433, 433),
    "move_mount": (429, 429),
    "open_tree": (428, 428),
    "mount_setattr": (442, 442),
    "ptrace": (101, 117),
    "process_vm_readv": (310, 270),
    "process_vm_writev": (311, 271),
    "kcmp": (312, 272),
    "bpf": (321, 280),
    "perf_event_open": (298, 241),
    "userfaultfd": (323, 282),
    "io_uring_setup": (425, 425),
    "io_uring_enter": (426, 426),
    "io_uring_register": (427, 427),
    "kexec_load": (246, 104),
    "kexec_file_load": (320, 294),
    "init_module": (175, 105),
    "finit_module": (313, 273),
    "delete_module": (176, 106),
    "reboot": (169, 142),
    "swapon": (167, 224),
    "swapoff": (168, 225),
    "acct": (163, 89),
    "quotactl": (179, 60),
    "quotactl_fd": (443, 443),
    "open_by_handle_at": (304, 265),
    "name_to_handle_at": (303, 264),
    "lookup_dcookie": (212, 18),
    "syslog": (103, 116),
    "vhangup": (153, 58),
    "settimeofday": (164, 170),
    "clock_settime": (227, 112),
    "adjtimex": (159, 171),
    "clock_adjtime": (305, 266),
    "move_pages": (279, 239),
    "migrate_pages": (256, 238),
    "mbind": (237, 235),
    "set_mempolicy": (238, 237),
    "get_mempolicy": (239, 236),
}
#: x86-64 only (AArch64 has no such call).
BLOCKED_X86_64 = {"iopl": 172, "ioperm": 173, "uselib": 134, "ustat": 136, "sysfs": 139}
#: machine name -> (AUDIT_ARCH value, column in `BLOCKED`, clone, clone3).
FILTERED_ARCHES = {
    "x86_64": (0xC000003E, 0, 56, 435),
    "aarch64": (0xC00000B7, 1, 220, 435),
}
#: Every CLONE_NEW* flag: NEWTIME, NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET.
CLONE_NEW_FLAGS = 0x00000080 | 0x00020000 | 0x7E000000
X32_SYSCALL_BIT = 0x40000000

# Classic BPF, as <linux/filter.h> and <linux/seccomp.h> define it.
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_JSET_K = 0x45
_RET_K = 0x06
_RET_ALLOW = 0x7FFF0000
_RET_KILL_PROCESS = 0x80000000
_RET_ERRNO = 0x00050000
# Offsets in struct seccomp_data: nr, arch, then the six 64-bit arguments.
_NR, _ARCH, _ARG0_LOW = 0, 4, 16


def filter_program(machine: str | None = None) -> bytes:
    """The filter for ``machine`` (default: this one) as ``struct sock_filter``
    records, what ``bwrap --seccomp FD`` reads from its descriptor."""
    machine = machine or platform.machine()
    if machine not in FILTERED_ARCHES:
        raise SeccompUnavailable(
            f"no seccomp filter for {machine}: envgym has one for "
            f"{', '.join(FILTERED_ARCHES)}; use ENVGYM_SANDBOX=docker here"
        )
    audit_arch, column, clone, clone3 = FILTERED_ARCHES[machine]
    blocked = sorted({numbers[column] for numbers in BLOCKED.values()})
    if machine == "x86_64":
        blocked = sorted(set(blocked) | set(BLOCKED_X86_64.values()))
    # Labels are resolved after the body is laid out: (code, jt, jf, k) with
    # jt/jf either an int offset or a label name.
    body: list[tuple[int, int | str, int | str, int]] = [
        (_LD_W_ABS, 0, 0, _ARCH),
        (_JEQ_K, 0, "kill", audit_arch),
        (_LD_W_ABS, 0, 0, _NR),
    ]
    if machine == "x86_64":
        body.append((_JGE_K, "eperm", 0, X32_SYSCALL_BIT))
    body += [(_JEQ_K, "eperm", 0, number) for number in blocked]
    body += [
        (_JEQ_K, "enosys", 0, clone3),
        (_JEQ_K, 0, "allow", clone),
        (_LD_W_ABS, 0, 0, _ARG0_LOW),
        (_JSET_K, "eperm", "allow", CLONE_NEW_FLAGS),
    ]
    labels = {
        "allow": (_RET_K, 0, 0, _RET_ALLOW),
        "eperm": (_RET_K, 0, 0, _RET_ERRNO | errno.EPERM),
        "enosys": (_RET_K, 0, 0, _RET_ERRNO | errno.ENOSYS),
        "kill": (_RET_K, 0, 0, _RET_KILL_PROCESS),
    }
    where = {name: len(body) + i for i, name in enumerate(labels)}
    program = b""
    for pc, (code, jt, jf, k) in enumerate([*body, *labels.values()]):
        jumps = [where[j] - pc - 1 if isinstance(j, str) else j for j in (jt, jf)]
        if not all(0 <= j <= 255 for j in jumps):
            raise AssertionError("a seccomp jump is out of range")  # the table grew too long
        program += struct.pack("<HBBI", code, jumps[0], jumps[1], k)
    return program
