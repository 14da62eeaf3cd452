"""A task folder's pytest tests as checks of the trusted grader (`grade.py`).

Each test function (or ``Test*`` class method) of the task's ``tests/`` is one
`Check`, whose source carries the task's whole tests folder. In the grader's
fresh job it runs, as the check (``python3 -I``, not dumpable, its working
directory the copy of the agent's final tree):

- the final tree is moved from the grader's ``/work/final`` to ``/work``,
  where the session played it (so the paths the agent's programs hold work);
- the tests folder is written to a new folder outside the tree, with the
  task's work directory (``/app``) and ``/tests`` in its text rewritten to
  ``/work`` and that folder; the agent's tree is never searched for tests;
- pytest runs as ``/usr/bin/python3 -I -m pytest`` (no ``PYTHONPATH``, no
  user site, no working directory on ``sys.path``, so no ``pytest.py`` or
  ``sitecustomize`` of the agent's is imported) with an explicit ``-c`` config
  and ``--rootdir``/``--confcutdir`` in that folder (no ``conftest.py``,
  ``pytest.ini``, ``pyproject.toml``, ``tox.ini`` or ``setup.cfg`` of the
  agent's is read), entry-point plugins off, the cache off, and an
  environment the check sets (``PATH=/usr/bin:/bin``, a fresh ``HOME``);
- the verdict comes from envgym's own plugin (a ``conftest.py`` in that
  folder, loaded before any test module): it makes the pytest process not
  dumpable and reports each test's outcome on a pipe whose only descriptor
  in pytest is close-on-exec, so a program the tests run never holds it and
  cannot open it through ``/proc``; nothing the agent's programs print or
  write to files is read as the verdict. The check passes when the test
  passed (skipped is not passed) and pytest exited 0;
- once the tests are collected, the plugin deletes the imported test
  modules' source, so a program the tests run cannot read expected values
  from it (data files the tests read while running stay, readable by it).

Code of the agent's that a test *imports* runs inside the pytest process and
is beyond any runner's reach; terminal-bench and Harbor tests mostly run the
agent's programs or read its files, which this design covers.
"""

from __future__ import annotations

import ast
import base64
import json
import zlib

from envgym.envs.terminal.task import Check

#: envgym's pytest plugin, written as the rootdir ``conftest.py`` of the tests' folder.
_PLUGIN = r"""
import json, os
try:
    import ctypes
    ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0: no /proc/PID/fd for others
except Exception:
    pass
_given = int(os.environ.pop("ENVGYM_VERDICT_FD"))
_fd = os.dup(_given)  # close-on-exec: no program the tests start inherits it
os.close(_given)
_outcomes = {"passed": 0, "failed": 0, "skipped": 0}
_reason = []

def pytest_runtest_logreport(report):
    if report.failed:
        _outcomes["failed"] += 1
        crash = getattr(report.longrepr, "reprcrash", None)
        text = crash.message if crash is not None else str(report.longrepr)
        first = (text.strip().splitlines() or ["failed"])[0]
        _reason.append(f"{report.nodeid.split('::')[-1]} ({report.when}): {first}")
    elif report.skipped:
        _outcomes["skipped"] += 1
    elif report.when == "call":
        _outcomes["passed"] += 1

def pytest_collection_finish(session):
    # The test modules are imported: delete their source (and this plugin's),
    # so the agent's programs the tests run find no expected values to copy.
    import sys
    loaded = {getattr(m, "__file__", None) for m in list(sys.modules.values())}
    for folder, dirs, files in os.walk(os.path.dirname(os.path.abspath(__file__))):
        for name in files:
            path = os.path.join(folder, name)
            if name.endswith(".py") and path in loaded:
                os.unlink(path)

def pytest_sessionfinish(session, exitstatus):
    record = dict(_outcomes, reason=(_reason[0] if _reason else ""), status=int(exitstatus))
    os.write(_fd, json.dumps(record).encode()[:60000])
    os.close(_fd)
"""

# The check's program (the grader runs it as python3 -I in the final tree).
_RUNNER = r"""
import base64, json, os, re, select, subprocess, sys, tempfile, time, zlib
spec = json.loads(zlib.decompress(base64.b64decode(SPEC)))
root = os.getcwd()
if root == "/work/final":
    # The session played the tree at /work: put it there again, so the paths the
    # agent's programs use (and the tests' /app, rewritten to /work) hold.
    hold = tempfile.mkdtemp(prefix=".envgym-", dir="/work")
    os.rename(root, os.path.join(hold, "t"))
    os.unlink("/work/tree.tar")
    for entry in os.listdir(os.path.join(hold, "t")):
        os.rename(os.path.join(hold, "t", entry), os.path.join("/work", entry))
    os.rmdir(os.path.join(hold, "t"))
    os.rmdir(hold)
    root = "/work"
    os.chdir(root)
base = tempfile.mkdtemp(prefix="envgym-verifier-")
tests = os.path.join(base, "tests")
places = [(spec["workdir"], root), ("/tests", tests)]
def rewrite(text):
    for old, new in places:
        pattern = r"(?<![\w.-])" + re.escape(old) + r"(?![\w.-])"
        text = re.sub(pattern, new.replace("\\", "\\\\"), text)
    return text
for rel, encoded in spec["files"].items():
    data = base64.b64decode(encoded)
    try:
        data = rewrite(data.decode()).encode()
    except UnicodeDecodeError:
        pass
    path = os.path.join(tests, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
with open(os.path.join(base, "conftest.py"), "w") as f:
    f.write(spec["plugin"])
with open(os.path.join(base, "pytest.ini"), "w") as f:
    f.write("[pytest]\n")
read, write = os.pipe()
env = {k: rewrite(v) for k, v in spec["env"].items()}
env.update({"PATH": "/usr/bin:/bin", "HOME": os.path.join(base, "home"), "LANG": "C.UTF-8",
            "TEST_DIR": tests, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
            "PYTHONDONTWRITEBYTECODE": "1", "ENVGYM_VERDICT_FD": str(write)})
os.makedirs(env["HOME"], exist_ok=True)
argv = ["/usr/bin/python3", "-I", "-m", "pytest", "-c", os.path.join(base, "pytest.ini"),
        "--rootdir", base, "--confcutdir", base, "-p", "no:cacheprovider", "-q",
        "--tb=no", "-rN", "--color=no", os.path.join(tests, spec["node"])]
proc = subprocess.Popen(argv, cwd=root, env=env, pass_fds=(write,),
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
os.close(write)
chunks, deadline = [], time.monotonic() + spec["timeout"]
while time.monotonic() < deadline:
    if select.select([read], [], [], max(0.0, deadline - time.monotonic()))[0]:
        chunk = os.read(read, 65536)
        if not chunk:
            break
        chunks.append(chunk)
try:
    status = proc.wait(timeout=max(0.1, deadline - time.monotonic()))
except subprocess.TimeoutExpired:
    proc.kill()
    print("the test ran out of time")
    sys.exit(1)
try:
    record = json.loads(b"".join(chunks))
except ValueError:
    print("the test run ended without a verdict")
    sys.exit(1)
if status == 0 and record["passed"] >= 1 and record["failed"] == 0 and record["skipped"] == 0:
    sys.exit(0)
if record["reason"]:
    print(record["reason"])
elif record["skipped"]:
    print("the test was skipped")
else:
    print(f"pytest exited {status}")
sys.exit(1)
"""


def test_names(task: str, rel: str, source: str) -> list[str]:
    """The node ids (``file::test`` or ``file::Class::test``) of a test file's tests."""
    try:
        tree = ast.parse(source, filename=rel)
    except SyntaxError as exc:
        raise ValueError(
            f"task {task}: tests/{rel} is not valid Python (line {exc.lineno}: {exc.msg}); "
            "fix the test file"
        ) from None
    names = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith(
            "test"
        ):
            names.append(f"{rel}::{node.name}")
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name.startswith("test"):
                    names.append(f"{rel}::{node.name}::{item.name}")
    return names


def pytest_checks(
    task: str,
    files: dict[str, bytes],
    test_files: list[str],
    workdir: str,
    env: dict[str, str],
    timeout_s: float,
) -> tuple[Check, ...]:
    """One check per test of ``test_files`` (paths in the tests folder
    ``files``), each carrying the whole folder. ``workdir`` is the task's
    work directory in its Dockerfile (rewritten in the tests to the final
    tree's folder); ``env`` the task's ENV values for pytest."""
    nodes = []
    for rel in test_files:
        nodes += test_names(task, rel, files[rel].decode(errors="replace"))
    if not nodes:
        raise ValueError(
            f"task {task}: tests/{', tests/'.join(test_files)} define no test functions "
            "(def test_...); nothing could grade the task"
        )
    packed = {rel: base64.b64encode(data).decode() for rel, data in sorted(files.items())}
    checks = []
    for node in nodes:
        spec = {
            "files": packed,
            "node": node,
            "workdir": workdir,
            "env": env,
            "plugin": _PLUGIN,
            "timeout": timeout_s,
        }
        blob = base64.b64encode(zlib.compress(json.dumps(spec).encode(), 9)).decode()
        checks.append(Check(node, _RUNNER.replace("SPEC", repr(blob), 1)))
    return tuple(checks)
