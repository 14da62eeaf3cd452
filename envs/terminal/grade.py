"""The trusted grader of terminal and repository tasks.

It runs after the agent's last action, on a copy of the final work directory
(a tar archive, which `starting_tree` writes for an untouched task and a
session's snapshot gives for a played one), never in the agent's session:

- each check is its own fresh sandbox job, so no process, alias, shell
  function, environment variable or open file of the agent's is there;
- the tree is unpacked under ``/work/final`` by this module's code, which
  drops absolute paths, ``..``, devices and links that leave the tree and
  clears set-id bits; the check's source is written beside it, outside the
  tree, so no file of the agent's can stand in for it;
- the check runs as ``/usr/bin/python3 -I`` (no ``PYTHONPATH``, user site,
  or script folder on the path, so no ``sitecustomize`` the agent wrote is
  imported) with ``PATH=/usr/bin:/bin`` and a fresh ``HOME``;
- the verdict is the check process's exit status, read by the host: a line
  the agent's programs print cannot forge it, and killing the check fails it.
"""

from __future__ import annotations

import io
import tarfile
from collections.abc import Sequence
from dataclasses import dataclass

from envgym.envs.terminal.task import Check, TerminalTask

#: Longest reason kept from a failed check's output.
REASON_CHARS = 200

# Runs in the sandbox (its Python 3.11 has no tarfile.data_filter): unpack the
# tree safely, then run the check in a fresh isolated interpreter, exit with its status.
_JOB = r"""
import os, stat, subprocess, sys, tarfile
def not_dumpable():
    try:
        import ctypes
        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0
    except Exception:
        pass
not_dumpable()
# The check's source (its expected values) is read and deleted before anything
# of the agent's runs, and reaches the check on a pipe: no file, command line
# or (the check being made not dumpable first) memory shows it to the agent's programs.
with open("/work/check.py", "rb") as f:
    code = CHECK_PRELUDE + f.read()
os.unlink("/work/check.py")
root = "/work/final"
os.mkdir(root)
def inside(path):
    full = os.path.realpath(os.path.join(root, path))
    return full == root or full.startswith(root + os.sep)
with tarfile.open("/work/tree.tar") as tar:
    for m in tar.getmembers():
        name = m.name
        while name.startswith("./"):
            name = name[2:]
        name = "" if name in (".", "") else name.rstrip("/")
        if not name or m.name.startswith("/") or ".." in m.name.split("/") or not inside(name):
            continue
        if not (m.isfile() or m.isdir() or m.issym() or m.islnk()):
            continue
        if m.issym() and (m.linkname.startswith("/") or not inside(
                os.path.join(os.path.dirname(name), m.linkname))):
            continue
        if m.islnk() and (m.linkname.startswith("/") or ".." in m.linkname.split("/")
                          or not inside(m.linkname)):
            continue
        m.name = name
        m.mode &= 0o777 & ~0o022
        if m.isdir():
            m.mode |= 0o700
        tar.extract(m, root, set_attrs=not m.issym())
# A symlink checked on its own may leave the tree through links written after
# it (a -> c/x, then c -> e/.., e -> .): drop every link that now resolves outside.
dropped = True
while dropped:
    dropped = False
    for folder, dirs, files in os.walk(root):
        for entry in dirs + files:
            path = os.path.join(folder, entry)
            if os.path.islink(path) and not inside(os.path.relpath(path, root)):
                os.unlink(path)
                dropped = True
env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp/home", "LANG": "C.UTF-8"}
os.makedirs("/tmp/home", exist_ok=True)
try:
    done = subprocess.run(["/usr/bin/python3", "-I", "-"], cwd=root, env=env, input=code,
                          timeout=TIMEOUT)
    sys.exit(0 if done.returncode == 0 else 1)
except subprocess.TimeoutExpired:
    print("the check ran out of time")
    sys.exit(1)
"""


#: Run first in each check: makes the check's process not dumpable, so the
#: agent's programs it runs cannot read its memory or descriptors through /proc.
_CHECK_PRELUDE = (
    b"try:\n    import ctypes as _c\n    _c.CDLL(None).prctl(4, 0, 0, 0, 0)\n    del _c\n"
    b"except Exception:\n    pass\n"
)


@dataclass(frozen=True)
class CheckResult:
    name: str
    passed: bool
    reason: str = ""


def starting_tree(task: TerminalTask) -> bytes:
    """A tar archive of the task's files with their modes (before ``setup``)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for path, content in sorted(task.files.items()):
            data = content.encode() if isinstance(content, str) else content
            info = tarfile.TarInfo(path)
            info.size, info.mode = len(data), task.modes.get(path, 0o644)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _reason(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    last = lines[-1] if lines else "the check failed"
    return last.encode("ascii", "replace").decode()[:REASON_CHARS]


def run_checks(box, tree: bytes, checks: Sequence[Check]) -> list[CheckResult]:
    """Each check's verdict on the final ``tree`` (a tar archive of the work
    directory's contents), each in a fresh job of ``box`` (a started sandbox
    from `envgym.sandbox.open_sandbox`; never the agent's own session). A check
    has the sandbox's job time limit less 2 s (for unpacking), at least 1 s. A
    job the sandbox failed to run (`ExecResult.error`) is run once more on the
    sandbox that replaced it."""
    results = []
    job = _JOB.replace("TIMEOUT", repr(max(1.0, box.limits.timeout_s - 2.0)))
    job = job.replace("CHECK_PRELUDE", repr(_CHECK_PRELUDE))
    files = {"tree.tar": tree}
    for check in checks:
        done = box.run(job, language="python", files={**files, "check.py": check.code})
        if done.error is not None:
            # The sandbox itself failed (its container removed by `envgym sandbox
            # gc`, say), not the check: it has been replaced; run the check once
            # more there. A check that fails is a verdict and is never re-run.
            done = box.run(job, language="python", files={**files, "check.py": check.code})
        if done.ok:
            results.append(CheckResult(check.name, True))
        else:
            why = done.error or _reason(done.stdout + "\n" + done.stderr)
            results.append(CheckResult(check.name, False, why))
    return results
