"""What a user of envgym.sandbox sees, on every backend (attacks: test_sandbox_escape.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
import warnings
from pathlib import Path

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
    with pytest.raises(ValueError, match="timeout_s=11 is outside this sandbox's limit of 10 s"):
        box.run("print(1)", timeout_s=LIMITS.timeout_s + 1)
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


def test_auto_passes_over_a_bwrap_that_cannot_run_jobs(monkeypatch, tmp_path):
    import envgym.sandbox.backends as backends
    import envgym.sandbox.bwrap as bwrap

    # A bwrap the sandbox's uid may not execute (under root's private tmp_path),
    # with staging turned off: the case staging exists for.
    if os.geteuid() != 0:
        pytest.skip("only root runs sandboxes as another uid")
    broken = tmp_path / "bwrap"
    broken.write_text("#!/bin/sh\nexit 1\n")
    broken.chmod(0o755)
    monkeypatch.setattr(bwrap, "bwrap_binary", lambda: str(broken))
    monkeypatch.setattr(bwrap, "staged_paths", lambda binary: (binary, str(bwrap.RUNNER_PATH)))
    monkeypatch.setattr(backends, "_docker_ready", lambda: "no Docker daemon (test)")
    backends._bwrap_ready.cache_clear()
    monkeypatch.delenv("ENVGYM_SANDBOX", raising=False)
    try:
        with pytest.raises(SandboxError, match="bwrap: cannot start bubblewrap") as caught:
            resolve_backend("auto")
        assert "no isolating sandbox works here" in str(caught.value)
        # Asked for by name, it fails with the same reason, never a raw OSError.
        with pytest.raises(SandboxError, match="cannot start bubblewrap"):
            open_sandbox("bwrap")
    finally:
        backends._bwrap_ready.cache_clear()


def test_bwrap_never_falls_back_to_a_weaker_memory_limit_silently(monkeypatch):
    from envgym.sandbox import cgroup

    def no_cgroup():
        raise cgroup.CgroupUnavailable("no cgroup v1 memory controller is mounted")

    require_backend("bwrap")
    monkeypatch.setattr(cgroup, "placement", no_cgroup)
    monkeypatch.delenv(cgroup.MEMORY_MODE_VARIABLE, raising=False)
    with pytest.raises(SandboxError, match="ENVGYM_SANDBOX_MEMORY=per-process"):
        make_sandbox("bwrap", limits=LIMITS)
    assert cli(["sandbox", "doctor"]) == 0
    monkeypatch.setenv(cgroup.MEMORY_MODE_VARIABLE, "per-process")
    with make_sandbox("bwrap", limits=LIMITS) as box:
        assert "per process" in box.memory_mechanism
        assert box.run("print(2)").stdout == "2\n"
    monkeypatch.setenv(cgroup.MEMORY_MODE_VARIABLE, "sometimes")
    with pytest.raises(ValueError, match="ENVGYM_SANDBOX_MEMORY='sometimes'"):
        make_sandbox("bwrap", limits=LIMITS)


def test_process_backend_warns_that_it_isolates_nothing():
    with pytest.warns(RuntimeWarning, match="does NOT isolate"):
        box = make_sandbox("process")
    box.close()


def test_doctor_reports_each_backend(capsys):
    code = cli(["sandbox", "doctor"])
    out = capsys.readouterr().out
    for check in ("docker daemon", "bubblewrap", "bwrap memory limit", "auto picks"):
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
    running = {
        c.id
        for c in client.containers.list(filters={"label": CONTAINER_LABEL}, ignore_removed=True)
    }
    assert set(ids) <= running
    owner.kill()  # SIGKILL: no exit hook runs
    owner.wait()
    gc(only_dead_owners=True)
    left = {
        c.id
        for c in client.containers.list(
            all=True, filters={"label": CONTAINER_LABEL}, ignore_removed=True
        )
    }
    assert not set(ids) & left


@pytest.mark.docker
@pytest.mark.parametrize("channel", ["socket", "attach"])
def test_a_killed_owners_containers_go_by_themselves(channel):
    """No gc: the runner's channel closes with its owner, the runner exits and
    the container removes itself."""
    require_backend("docker")
    from envgym.sandbox.docker import CHANNEL_ENV
    from envgym.sandbox.images import CONTAINER_LABEL, docker_client

    owner = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import time\n"
            "from envgym.sandbox import SandboxPool\n"
            "pool = SandboxPool(size=2, backend='docker')\n"
            "assert all(box.run('print(1)').stdout == '1\\n' for box in pool._all)\n"
            "print(' '.join(box.container.id for box in pool._all), flush=True)\n"
            "time.sleep(600)\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, CHANNEL_ENV: channel},
    )
    ids = set(owner.stdout.readline().split())
    assert len(ids) == 2
    owner.kill()  # SIGKILL: no exit hook runs
    owner.wait()
    client = docker_client()
    labelled = {"label": CONTAINER_LABEL}
    for _ in range(300):  # the daemon removes them within a second or two
        listed = client.containers.list(all=True, ignore_removed=True, filters=labelled)
        left = ids & {c.id for c in listed}
        if not left:
            break
        time.sleep(0.1)
    assert not left


@pytest.mark.docker
def test_a_runner_that_cannot_reach_its_socket_falls_back_to_attach(monkeypatch):
    """A daemon that cannot mount a host folder (one in a VM) leaves the runner
    without its socket: the sandbox says so once and works through the
    daemon; one told to use the socket says what to set instead."""
    require_backend("docker")
    from envgym.sandbox import docker as docker_backend

    class FolderNotMounted(docker_backend.DockerSandbox):
        def container_kwargs(self, folder=None):
            kwargs = super().container_kwargs(folder)
            if folder is not None:  # an empty folder where the socket should be
                del kwargs["volumes"]
                kwargs["tmpfs"] = {**kwargs["tmpfs"], docker_backend.CHANNEL_MOUNT: "size=1m"}
            return kwargs

    monkeypatch.delenv(docker_backend.CHANNEL_ENV, raising=False)
    monkeypatch.setattr(docker_backend, "_socket_unreachable", False)
    box = FolderNotMounted(LIMITS)
    with pytest.warns(RuntimeWarning, match="attach"):
        box.start()
    try:
        result = box.run("import sys; print(open('f').read(), sys.stdin.read())",
                         files={"f": "file"}, stdin="in")  # fmt: skip
        assert result.stdout == "file in\n", result
        assert box.run("while True: pass", timeout_s=1).timed_out
        assert docker_backend.channel_kind(box.client) == "attach"  # later ones don't retry
    finally:
        box.close()
    forced = FolderNotMounted(LIMITS, channel="socket")
    with pytest.raises(SandboxError, match="ENVGYM_DOCKER_CHANNEL=attach"):
        forced.start()
    forced.close()


@pytest.mark.docker
def test_an_unknown_docker_channel_is_a_clear_error(monkeypatch):
    require_backend("docker")
    from envgym.sandbox.docker import CHANNEL_ENV

    monkeypatch.setenv(CHANNEL_ENV, "pipe")
    with pytest.raises(SandboxError, match="'pipe' is not a channel: use one of socket, attach"):
        make_sandbox("docker", limits=LIMITS).start()
    with pytest.raises(ValueError, match="channel='pipe'"):
        make_sandbox("docker", limits=LIMITS, channel="pipe")


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


FORGE = """
import json, os, sys
nonce = None
if {with_nonce}:
    # Look for the job's nonce in this process's frames (a job forked from the
    # runner itself would find it there).
    frame = sys._getframe()
    while frame is not None and nonce is None:
        nonce = frame.f_locals.get("nonce")
        frame = frame.f_back
fake = {{"stdout": "FORGED", "stderr": "", "exit_code": 0, "timed_out": False,
        "duration_s": 0.0, "truncated": False, "nonce": nonce}}
# The job's parent is the zygote; the runner, whose output goes to the host, is its parent.
with open(f"/proc/{{os.getppid()}}/stat") as f:
    runner = int(f.read().rsplit(")", 1)[1].split()[1])
try:
    with open(f"/proc/{{runner}}/fd/1", "w") as out:
        out.write(json.dumps(fake) + "\\n")
    print("wrote", nonce is not None)
except OSError as exc:
    print("refused", type(exc).__name__)
"""


@pytest.mark.parametrize("with_nonce", [False, True], ids=["no-nonce", "stolen-nonce"])
def test_a_job_forging_the_runners_reply_cannot_feed_the_next_job(with_nonce):
    # The process backend isolates nothing, so a job can reach the runner's output
    # there (as root); the escape suite tries the same on docker and bwrap.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        box = make_sandbox("process", limits=LIMITS)
    with box:
        forged = box.run(FORGE.format(with_nonce=with_nonce))
        if forged.stdout.startswith("refused"):
            pytest.skip("the runner's output is out of this user's reach (not root)")
        # The job process is a copy of the zygote, which never held a job: no nonce
        # to steal, so the forged reply is refused either way.
        assert forged.error is not None and "nonce" in forged.error, forged
        assert forged.stdout == "" and box.restarts == 1
        # A job can at most spoil its own result; every later job gets its own output.
        for i in range(3):
            after = box.run(f"print('job {i}')")
            assert (after.stdout, after.error) == (f"job {i}\n", None), after
        assert box.restarts == 1


def test_emptying_a_folder_is_bounded_and_survives_locked_trees(tmp_path):
    """The runner's cleanup: locked trees empty, and a tree too deep or too large
    is reported (the host then replaces the sandbox) rather than worked on forever."""
    from envgym.sandbox.jobs import CLEAN_MAX_DEPTH, CLEAN_MAX_ENTRIES, clear_folder

    locked = tmp_path / "locked"
    (locked / "a" / "b").mkdir(parents=True)
    (locked / "a" / "b" / "f").write_text("x")
    (locked / "top.txt").write_text("y")
    (locked / "link").symlink_to("/etc")
    for folder in (locked / "a" / "b", locked / "a"):
        folder.chmod(0)
    assert clear_folder(str(locked)) is True
    assert list(locked.iterdir()) == [] and Path("/etc").is_dir()

    deep = tmp_path / "deep"
    path = deep
    for _ in range(CLEAN_MAX_DEPTH + 5):
        path = path / "d"
    path.mkdir(parents=True)
    assert clear_folder(str(deep)) is False

    wide = tmp_path / "wide"
    wide.mkdir()
    for i in range(CLEAN_MAX_ENTRIES + 1):
        (wide / str(i)).touch()
    assert clear_folder(str(wide)) is False


def test_a_zygote_killed_with_messages_unread_is_reported_gone(tmp_path):
    """A job can kill the zygote while the runner's request for the next job
    process sits unread in its socket; the runner then gets a connection reset,
    which must mean "replace the sandbox", not a traceback as the next job's
    result (seen in CI on docker, about one run in twenty)."""
    import signal

    from envgym.sandbox.jobs import Zygote, ZygoteGone

    zygote = Zygote(str(tmp_path), isolated=False)
    try:
        os.kill(zygote.pid, signal.SIGSTOP)
        zygote.control.send(b"spawn")  # never read: the zygote is stopped
        os.kill(zygote.pid, signal.SIGKILL)
        os.waitpid(zygote.pid, 0)
        with pytest.raises(ZygoteGone):
            zygote.receive(time.monotonic() + 5)
    finally:
        for pid, _ in zygote.ready:
            os.killpg(pid, signal.SIGKILL)


def test_a_root_filesystem_from_an_older_build_script_is_reported_stale(tmp_path):
    from envgym.sandbox.images import ROOTFS_STAMP, rootfs_problem, rootfs_recipe_hash

    assert "not built" in rootfs_problem(tmp_path)
    (tmp_path / "usr" / "bin").mkdir(parents=True)
    (tmp_path / "usr" / "bin" / "python3").touch()
    (tmp_path / "etc").mkdir()
    # Built before the stamp existed, or by another version of the script: rebuilt.
    assert "older containers/build-rootfs.sh" in rootfs_problem(tmp_path)
    (tmp_path / ROOTFS_STAMP).write_text("0123456789abcdef\n")
    assert "envgym sandbox build" in rootfs_problem(tmp_path)
    (tmp_path / ROOTFS_STAMP).write_text(rootfs_recipe_hash() + "\n")
    assert rootfs_problem(tmp_path) is None


@pytest.mark.parametrize("tool", ["git --version", "make --version", "jq --version", "patch -v"])
def test_terminal_task_tools_are_in_the_sandbox(box, backend, tool):
    if backend == "process":
        pytest.skip("the process backend runs the host's tools")
    result = box.run(tool, language="bash")
    assert result.exit_code == 0, result.stderr
