"""Task folders played for real as envgym/Terminal-v0 on bwrap and docker: the
oracle (the folder's reference solution) succeeds, untouched and wrong work
fail, and trees an agent could leave behind do not forge the pytest verdict.

Each attack tree also fails the honest test, so a check that passes on it was
forged: the attacks below pass a check when their defence is taken away."""

from __future__ import annotations

import io
import tarfile

import gymnasium as gym
import pytest
from sandbox_backends import backend_params, require_backend
from taskdir_builders import SHIPPED, tb_task

import envgym  # noqa: F401 - registers the ids
from envgym.envs.terminal.grade import run_checks
from envgym.envs.terminal.taskdirs import load_task_dir
from envgym.sandbox import open_sandbox

#: A wrong try at each shipped task (some of its tests may still pass, none all).
WRONG = {
    "tb-hello": "echo 'Hello world' > greeting.txt",
    "tb-sales-report": "mkdir -p out && echo '{}' > out/totals.json",
    "harbor-word-count": "echo '# looked at it' >> src/wc.py",
}


@pytest.fixture(scope="module", params=backend_params(("bwrap", "docker")))
def env(request):
    require_backend(request.param)
    made = gym.make("envgym/Terminal-v0", tasks=str(SHIPPED), sandbox=request.param)
    yield made
    made.close()


def episode(env, task_id: str, *commands: str):
    env.reset(seed=0, options={"task_id": task_id})
    for command in commands:
        obs, reward, terminated, truncated, info = env.step(f"<bash>{command}</bash>")
        assert not terminated, obs
    return env.step("<done/>")


@pytest.mark.parametrize("task_id", sorted(WRONG))
def test_the_oracle_succeeds_and_untouched_work_fails(env, task_id):
    env.reset(seed=0, options={"task_id": task_id})
    obs, reward, terminated, _, info = episode(env, task_id, env.unwrapped.task.solution)
    assert terminated and info["success"], info["grade"]
    assert reward == pytest.approx(1.0)
    checks = info["grade"]["checks"]
    assert all(c["passed"] for c in checks) and len(checks) >= 2

    obs, reward, _, _, info = episode(env, task_id, "ls")
    assert not info["success"] and reward == 0.0


def wrong_work_fails(env, task_id):
    obs, reward, _, _, info = episode(env, task_id, WRONG[task_id])
    assert not info["success"] and reward < 1.0, obs
    failed = [c for c in info["grade"]["checks"] if not c["passed"]]
    assert failed and all(c["reason"] for c in failed)
    # Per-test components: each passed test earns its share.
    parts = {k: v for k, v in info["reward_components"].items() if k.startswith("check:")}
    assert len(parts) == len(info["grade"]["checks"])
    assert sum(parts.values()) == pytest.approx(reward)


def test_wrong_work_fails_the_tests_it_gets_wrong(env):
    wrong_work_fails(env, "tb-sales-report")
    verdicts = {c["name"].split("::")[-1]: c for c in env.unwrapped._grade["checks"]}
    for name in ("test_totals_file_is_right", "test_script_gives_the_totals_again"):
        assert not verdicts[name]["passed"] and "totals" in verdicts[name]["reason"], verdicts


@pytest.mark.slow
@pytest.mark.parametrize("task_id", sorted(WRONG))
def test_wrong_work_fails_every_shipped_task(env, task_id):
    wrong_work_fails(env, task_id)
    # The tests the wrong work does not break still pass: partial credit.
    assert env.unwrapped._grade["passed"] == {"tb-hello": 0}.get(task_id, 1), env.unwrapped._grade


# -------------------------------------------------------------------- attacks
#: The honest tests: answer.txt must hold 42, the agent's tool must exit 0, and
#: print the code word (which the instruction would give the agent).
ATTACK_TESTS = """import subprocess
from pathlib import Path

WORD = "SECRET-" + "5b1e"


def test_answer():
    assert Path("/app/answer.txt").read_text().strip() == "42"


def test_tool():
    assert subprocess.run(["python3", "/app/tool.py"], timeout=5).returncode == 0


def test_word():
    done = subprocess.run(["python3", "/app/tool.py"], capture_output=True, text=True, timeout=5)
    assert WORD in done.stdout
"""
HONEST_TOOL = "print('SECRET-5b1e')\n"
FAILED = [False, False, False]
FORGE_PLUGIN = """import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    outcome.get_result().outcome = "passed"
"""
FAKE_RECORD = '{"passed": 1, "failed": 0, "skipped": 0, "reason": "", "status": 0}'
#: A pytest (and _pytest) that writes a passing verdict where envgym's runner reads one.
FAKE_PYTEST = f"""import os, sys
fd = os.environ.get("ENVGYM_VERDICT_FD")
if fd:
    os.write(int(fd), {FAKE_RECORD!r}.encode())
print("== 2 passed in 0.01s ==")
sys.exit(0)
"""
#: The agent's tool: looks for the code word in the tests and tries every
#: channel to the verdict, then fails.
FORGING_TOOL = f"""import glob, os, re, sys
for path in glob.glob("/tmp/envgym-verifier-*/**", recursive=True):
    try:
        found = re.findall(r'SECRET-" \\+ "(\\w+)|(SECRET-\\w+)', open(path).read())
    except Exception:
        continue
    for joined, whole in found:
        print(whole or "SECRET-" + joined)
record = {FAKE_RECORD!r}.encode()
for pid in (os.getppid(), os.getpid()):
    try:
        fds = os.listdir(f"/proc/{{pid}}/fd")
    except OSError:
        fds = []
    for fd in fds:
        try:
            with open(f"/proc/{{pid}}/fd/{{fd}}", "wb") as f:
                f.write(record)
        except OSError:
            pass
for fd in range(3, 64):
    try:
        os.write(fd, record)
    except OSError:
        pass
for path in ("/logs/verifier/reward.txt", "/work/logs/verifier/reward.txt", "/work/reward.txt"):
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        open(path, "w").write("1")
    except OSError:
        pass
print("== 2 passed in 0.01s ==")
sys.exit(1)
"""
ATTACKS = {
    "conftest.py and replaced tests": {
        "conftest.py": FORGE_PLUGIN,
        "tests/conftest.py": FORGE_PLUGIN,
        "pytest.ini": "[pytest]\n",
        "tests/test_outputs.py": "def test_answer():\n    pass\n\n\ndef test_tool():\n    pass\n",
    },
    "pytest options in config files": {
        "forge.py": FORGE_PLUGIN,
        "pytest.ini": "[pytest]\naddopts = -p forge -p no:envgym\npythonpath = .\n",
        "pyproject.toml": '[tool.pytest.ini_options]\naddopts = "-p forge"\npythonpath = ["."]\n',
        "tox.ini": "[pytest]\naddopts = -p forge\npythonpath = .\n",
        "setup.cfg": "[tool:pytest]\naddopts = -p forge\npythonpath = .\n",
    },
    "shadowed modules and PATH": {
        "pytest.py": FAKE_PYTEST,
        "_pytest/__init__.py": FAKE_PYTEST,
        "sitecustomize.py": FAKE_PYTEST,
        "usercustomize.py": FAKE_PYTEST,
        "bin/python3": "#!/bin/sh\nexit 0\n",
        ".bashrc": 'export PATH="/work/bin:$PATH"\n',
        ".profile": 'export PATH="/work/bin:$PATH"\n',
        ".env": "PYTHONPATH=/work\nPATH=/work/bin\n",
    },
    "a tool that reads the tests and writes to the verdict's channels": {
        "tool.py": FORGING_TOOL,
        "logs/verifier/reward.txt": "1\n",
        "logs/verifier/reward.json": '{"reward": 1.0}\n',
    },
}


def tree(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, text in sorted(files.items()):
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o755 if name.startswith("bin/") else 0o644
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


@pytest.fixture(scope="module", params=backend_params(("bwrap", "docker")))
def box(request):
    require_backend(request.param)
    with open_sandbox(backend=request.param) as sandbox:
        yield sandbox


@pytest.fixture(scope="module")
def attack_task(tmp_path_factory):
    folder = tb_task(tmp_path_factory.mktemp("attack"), {"tests/test_outputs.py": ATTACK_TESTS})
    return load_task_dir(folder)


def test_honest_work_passes_the_attack_tests(box, attack_task):
    honest = tree({"answer.txt": "42\n", "tool.py": HONEST_TOOL})
    assert [r.passed for r in run_checks(box, honest, attack_task.checks)] == [True] * 3


def forged(box, attack_task, *attacks: str) -> list[bool]:
    files = {"answer.txt": "wrong\n", "tool.py": "import sys\nsys.exit(1)\n"}
    for attack in attacks:
        files.update(ATTACKS[attack])
    return [r.passed for r in run_checks(box, tree(files), attack_task.checks)]


def test_nothing_the_agent_leaves_forges_a_test(box, attack_task):
    """Every attack in one tree (each on its own in the slow test below)."""
    assert forged(box, attack_task, *ATTACKS) == FAILED


@pytest.mark.slow
@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_each_attack_alone_forges_no_test(box, attack_task, attack):
    assert forged(box, attack_task, attack) == FAILED
