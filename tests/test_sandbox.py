"""What a user of envgym.sandbox sees, on every backend (attacks: test_sandbox_escape.py)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time
import warnings

import pytest
from sandbox_backends import backend_params, require_backend

from envgym.cli import main as cli
from envgym.sandbox import (
    ExecResult,
    Limits,
    SandboxError,
    SandboxPool,
    make_sandbox,
    open_sandbox,
    resolve_backend,
)

ALL = ("docker", "bwrap", "process")
LIMITS = Limits(timeout_s=10, memory_mb=256, work_mb=16, max_output_bytes=4096)


@pytest.fixture(scope="module", params=backend_params(ALL))
def backend(request):
    require_backend(request.param)
    return request.param


@pytest.fixture(scope="module")
def box(backend):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        sandbox = make_sandbox(backend, limits=LIMITS)
    sandbox.start()
    yield sandbox
    sandbox.close()


def test_python_job_with_files_and_stdin(box):
    result = box.run(
        "import sys, json\n"
        "data = json.load(open('cfg/data.json'))\n"
        "print(data['n'] * 2, sys.stdin.read().upper())\n"
        "print(open('blob.bin', 'rb').read().hex(), file=sys.stderr)\n",
        files={"cfg/data.json": '{"n": 21}', "blob.bin": b"\x00\xff"},
        stdin="hello",
    )
    assert isinstance(result, ExecResult)
    assert result.stdout == "42 HELLO\n"
    assert result.stderr == "00ff\n"
    assert result.ok and result.exit_code == 0 and not result.timed_out
    assert result.backend == box.backend
    assert 0 < result.duration_s < 10


def test_bash_job_and_exit_codes(box):
    result = box.run("echo out; echo err >&2; exit 3", language="bash")
    assert (result.stdout, result.stderr, result.exit_code) == ("out\n", "err\n", 3)
    assert not result.ok
    assert box.run("raise SystemExit(4)").exit_code == 4
    failed = box.run("1 / 0")
    assert failed.exit_code == 1 and "ZeroDivisionError" in failed.stderr


def test_each_job_starts_in_an_empty_work_dir(box):
    box.run("open('left.txt', 'w').write('x'); import os; os.makedirs('d/e')")
    result = box.run("import os; print(sorted(os.listdir('.')))")
    assert result.stdout == "['main.py']\n"


def test_timeout_and_output_cap(box):
    slow = box.run("import time; print('start', flush=True); time.sleep(30)", timeout_s=1)
    assert slow.timed_out and slow.stdout == "start\n" and not slow.ok
    loud = box.run("print('z' * 100_000)")
    assert loud.truncated and "truncated" in loud.stdout
    assert len(loud.stdout) < LIMITS.max_output_bytes + 200


def test_numpy_is_available(box):
    if (
        box.backend == "bwrap"
        and not box.root.joinpath("usr/lib/python3/dist-packages/numpy").exists()
    ):
        pytest.skip("bwrap on the host's /usr: numpy comes with `envgym sandbox build`")
    if box.backend == "process":
        pytest.skip("the process backend uses this interpreter's packages")
    result = box.run("import numpy as np; print(int(np.arange(10).sum()))")
    assert result.stdout == "45\n", result


def test_bad_input_gets_clear_errors(box):
    with pytest.raises(ValueError, match="language"):
        box.run("print(1)", language="ruby")
    with pytest.raises(ValueError, match="memory_mb"):
        box.run("print(1)", memory_mb=LIMITS.memory_mb * 2)
    with pytest.raises(ValueError, match="timeout_s"):
        box.run("print(1)", timeout_s=0)
    with pytest.raises(ValueError, match="leaves the work directory"):
        box.run("print(1)", files={"../escape.txt": "x"})
    with pytest.raises(TypeError, match="str"):
        box.run(b"print(1)")
    # The sandbox still works after refusing those.
    assert box.run("print('ok')").stdout == "ok\n"


def test_pool_serves_many_envs_at_once(backend):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        pool = SandboxPool(size=2, backend=backend, limits=LIMITS)
    results: dict[int, str] = {}

    def worker(i: int) -> None:
        with pool.lease() as sandbox:
            results[i] = sandbox.run(
                f"open('mine.txt', 'w').write('{i}')\n"
                "import time; time.sleep(0.05)\n"
                "print(open('mine.txt').read())"
            ).stdout

    with pool:
        threads = [threading.Thread(target=worker, args=(i,)) for i in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert results == {i: f"{i}\n" for i in range(6)}
        assert pool.run("print(7)").stdout == "7\n"
    with pytest.raises(SandboxError, match="closed"):
        with pool.lease():
            pass


def test_open_sandbox_takes_limits_directly(backend):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with open_sandbox(backend, timeout_s=1, max_output_bytes=1000) as sandbox:
            assert sandbox.run("while True: pass").timed_out
    with pytest.raises(TypeError, match="unknown"):
        open_sandbox(backend, colour="blue")


def test_backend_selection(monkeypatch):
    monkeypatch.setenv("ENVGYM_SANDBOX", "process")
    assert resolve_backend("auto") == "process"
    assert resolve_backend("bwrap") == "bwrap"
    monkeypatch.setenv("ENVGYM_SANDBOX", "firecracker")
    with pytest.raises(ValueError, match="unknown sandbox backend"):
        resolve_backend("auto")
    monkeypatch.delenv("ENVGYM_SANDBOX")
    assert resolve_backend("auto") in ("docker", "bwrap")


def test_process_backend_warns_that_it_isolates_nothing():
    with pytest.warns(RuntimeWarning, match="does NOT isolate"):
        box = make_sandbox("process")
    box.close()


def test_doctor_reports_each_backend(capsys):
    code = cli(["sandbox", "doctor"])
    out = capsys.readouterr().out
    for check in ("docker daemon", "bubblewrap", "auto picks"):
        assert check in out
    assert code == 0


@pytest.mark.docker
def test_killed_owner_leaves_no_container_after_gc():
    require_backend("docker")
    from envgym.sandbox import gc
    from envgym.sandbox.images import CONTAINER_LABEL, docker_client

    owner = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                """
                import time
                from envgym.sandbox import SandboxPool
                pool = SandboxPool(size=2, backend="docker")
                print(" ".join(box.container.id for box in pool._all), flush=True)
                time.sleep(600)
                """
            ),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    ids = owner.stdout.readline().split()
    assert len(ids) == 2
    client = docker_client()
    running = {c.id for c in client.containers.list(filters={"label": CONTAINER_LABEL})}
    assert set(ids) <= running
    owner.kill()  # SIGKILL: no exit hook runs
    owner.wait()
    gc(only_dead_owners=True)
    left = {c.id for c in client.containers.list(all=True, filters={"label": CONTAINER_LABEL})}
    assert not set(ids) & left


@pytest.mark.docker
def test_gc_command_removes_containers(capsys):
    require_backend("docker")
    box = make_sandbox("docker", limits=LIMITS)
    box.start()
    name = box.container.name
    assert cli(["sandbox", "gc"]) == 0
    assert name in capsys.readouterr().out
    # The sandbox notices its container is gone and starts a new one.
    result = box.run("print(1)")
    assert result.error is not None
    assert box.run("print(1)").stdout == "1\n"
    box.close()


def test_killed_owner_leaves_no_bwrap_sandbox():
    require_backend("bwrap")
    owner = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                """
                import time
                from envgym.sandbox import open_sandbox
                box = open_sandbox("bwrap")
                box.run("print(1)")
                print(box._channel.proc.pid, flush=True)
                time.sleep(600)
                """
            ),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    bwrap_pid = int(owner.stdout.readline())
    assert _alive(bwrap_pid)
    owner.kill()  # SIGKILL: no exit hook runs; the runner reads end-of-file and exits
    owner.wait()
    for _ in range(100):
        if not _alive(bwrap_pid):
            break
        time.sleep(0.1)
    assert not _alive(bwrap_pid)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False
