"""Sandbox sessions: a persistent shell per episode, on docker and on bwrap.

Each test runs against a real sandbox of each backend (docker cases are
marked ``docker``); the attack tests fail without the defence they name.
The escape suite (tests/test_sandbox_escape.py) runs its attacks as session
commands too: network, host files and /proc, privileges, writes outside
/work, processes left behind, fork and memory bombs, filling the disk,
another session's files and state kept into the next session from a pool.
"""

from __future__ import annotations

import gc
import io
import os
import subprocess
import sys
import tarfile

import pytest
from sandbox_backends import backend_params, require_backend

from envgym.sandbox import (
    SessionError,
    SessionExhausted,
    SessionLimits,
    SessionPool,
    SessionSnapshot,
    open_session,
)

BACKENDS = backend_params(("docker", "bwrap"))

#: Names of the live processes in the sandbox, from a command (its own shell included).
PROCESS_NAMES = "for p in /proc/[0-9]*; do cat $p/comm 2>/dev/null; done"


@pytest.fixture(params=BACKENDS)
def backend(request) -> str:
    require_backend(request.param)
    return request.param


def session(backend: str, **limits):
    return open_session(backend, SessionLimits(**{"timeout_s": 10, **limits}))


def test_files_cwd_and_exported_variables_persist(backend):
    with session(backend) as s:
        assert s.exec("mkdir -p src/pkg && cd src && export GREETING=hello LOCAL_ONLY=1").ok
        assert s.exec("unset LOCAL_ONLY; echo data > pkg/file.txt").ok
        r = s.exec('pwd; echo "$GREETING"; cat pkg/file.txt; echo "[${LOCAL_ONLY:-unset}]"')
        assert r.output == "/work/src\nhello\ndata\n[unset]\n"
        assert s.exec("cd ..").ok
        assert s.exec("pwd").output == "/work\n"


def test_the_agent_owns_its_work_directory_so_git_works_there(backend):
    # On docker /work was root's (mode 1777), and git refused every repository in it.
    with session(backend) as s:
        assert s.exec('test "$(stat -c %u /work)" = "$(id -u)"').ok
        r = s.exec("git init -q repo && cd repo && git status --short && git rev-parse --git-dir")
        assert r.ok and r.output.strip() == ".git", r.output


def test_output_is_stdout_and_stderr_in_order_with_the_exit_status(backend):
    with session(backend) as s:
        r = s.exec("echo one; echo two >&2; echo three; exit 3")
        assert (r.output, r.exit_code, r.timed_out, r.ok) == ("one\ntwo\nthree\n", 3, False, False)
        assert s.exec("false").exit_code == 1
        assert s.exec("this-is-not-a-command").exit_code == 127
        assert s.exec("echo fine").ok  # a failed command does not end the session


def test_timeout_kills_the_command_and_its_children_and_the_session_goes_on(backend):
    with session(backend) as s:
        r = s.exec("(sleep 1; echo late > late.txt) & sleep 60", timeout_s=0.5)
        assert r.timed_out and r.exit_code == -9 and "ran out of time" in r.output
        assert s.exec("sleep 1.2; ls late.txt").exit_code != 0  # the child died too
        assert "sleep" not in s.exec(PROCESS_NAMES).output
        assert s.exec("echo alive").output == "alive\n"


def test_output_is_capped_with_a_marker(backend):
    with session(backend, output_bytes=1000) as s:
        r = s.exec("head -c 100000 /dev/zero | tr '\\0' a; echo done >&2")
        assert r.truncated and r.output.startswith("a" * 1000)
        assert "output cut" in r.output and "100005 bytes" in r.output
        assert not s.exec("echo short").truncated


def test_forged_reply_frames_change_nothing(backend):
    """Attack: output shaped like the server's reply, and writes to its channel."""
    with session(backend) as s:
        fake = '"nonce" 45\\n{"exit_code": 0, "timed_out": false, "output": ""}'
        r = s.exec(f"printf '{fake}\\n'; printf '{{\"ready\": true}}\\n'; exit 7")
        assert r.exit_code == 7 and r.output.startswith('"nonce" 45')
        # The server is not dumpable: no command reaches its descriptors.
        r = s.exec(
            "echo 'ready 2' > /proc/1/fd/1 || echo refused; cat /proc/1/fd/0 /proc/1/environ; "
            "cat /proc/1/mem || true"
        )
        assert "refused" in r.output and r.output.count("Permission denied") == 4
        assert s.exec("kill -9 1; echo still").output.endswith("still\n")
        assert s.exec("echo next").output == "next\n"


def test_read_file_keeps_to_the_work_directory(backend, tmp_path):
    """Attack: read a file of the host through read_file (through the shell:
    tests/test_sandbox_escape.py, which runs its attacks as session commands too)."""
    secret = tmp_path / "secret.txt"
    secret.write_text("host-secret-4242")
    os.chmod(tmp_path, 0o755)
    with session(backend) as s:
        with pytest.raises(ValueError, match="outside the work directory"):
            s.read_file(str(secret))
        s.exec("ln -s /etc/passwd passwd-link")
        with pytest.raises(ValueError, match="outside the work directory"):
            s.read_file("passwd-link")


def test_write_and_read_files_in_the_work_directory(backend):
    with session(backend) as s:
        s.write_file("deep/dir/data.bin", b"\x00\x01binary")
        s.write_file("/work/note.txt", "text", mode=0o755)
        assert s.exec("cat note.txt; test -x note.txt && echo exec").output == "textexec\n"
        assert s.read_file("deep/dir/data.bin") == b"\x00\x01binary"
        assert s.read_file("deep/dir/data.bin", max_bytes=2) == b"\x00\x01"
        for bad in ("../etc/passwd", "/etc/passwd", ""):
            with pytest.raises(ValueError):
                s.write_file(bad, "x")
        s.exec("ln -s /tmp out-link; mkfifo pipe")
        with pytest.raises(ValueError, match="outside the work directory"):
            s.write_file("out-link/x", "x")
        with pytest.raises(ValueError, match="not a regular file"):
            s.read_file("pipe")
        with pytest.raises(ValueError):
            s.read_file("missing.txt")
        assert s.exec("echo ok").ok  # errors leave the session usable


def test_cpu_seconds_run_out_for_the_whole_session(backend):
    with session(backend, cpu_s=0.5, timeout_s=8, cpus=2) as s:
        # Spinning processes, held to what is left all together (not each).
        r = s.exec("for i in 1 2 3; do (while :; do :; done) & done; wait")
        assert r.exit_code == -9 and not r.timed_out and "CPU seconds" in r.output
        assert 0.45 <= r.cpu_s_used <= 1.0
        with pytest.raises(SessionExhausted, match="CPU seconds"):
            s.exec("echo more")


def test_snapshot_and_restore_round_trip(backend):
    with session(backend) as s:
        s.exec("mkdir sub && echo old > sub/a.txt && cd sub && export PHASE=before")
        snap = s.snapshot()
        s.exec("echo new > a.txt; echo x > b.txt; cd /work; export PHASE=after; echo t > /tmp/t")
        s.restore(snap)
        r = s.exec('cat a.txt; ls; pwd; echo "$PHASE"; ls /tmp')
        assert r.output == "old\na.txt\n/work/sub\nbefore\n"
        with tarfile.open(fileobj=io.BytesIO(snap.tree)) as tar:
            assert sorted(tar.getnames()) == ["sub", "sub/a.txt"]
        again = SessionSnapshot.from_bytes(snap.to_bytes())
        assert again == snap
        s.restore(snap.tree)  # a bare tree: fresh shell state
        assert s.exec("pwd; cat sub/a.txt").output == "/work\nold\n"


def test_fork_gives_an_independent_copy(backend):
    with session(backend) as s:
        s.exec("echo shared > f.txt && mkdir d && cd d && export WHO=parent")
        with s.fork() as child:
            r = child.exec('pwd; cat ../f.txt; echo "$WHO"')
            assert r.output == "/work/d\nshared\nparent\n"
            child.exec("echo child > ../f.txt; echo c > ../only-child")
            s.exec("echo parent > ../only-parent")
            assert s.exec("cat ../f.txt; ls ..").output == "shared\nd\nf.txt\nonly-parent\n"
            assert child.exec("ls ..").output == "d\nf.txt\nonly-child\n"


def _leftovers(backend: str, box) -> list[str]:
    if backend == "docker":
        return [c.name for c in box.client.containers.list(all=True, filters={"id": box._id})]
    alive = []
    try:
        os.kill(box._pid, 0)
        alive.append(f"pid {box._pid}")
    except ProcessLookupError:
        pass
    return alive + [str(p) for p in box._paths if p.exists()]


def _remember(backend: str, box) -> None:
    if backend == "docker":
        box._id = box.container.id
    else:
        box._pid = box._proc.pid
        box._paths = [] if box._cgroup is None else [box._cgroup.path, box._cgroup.cpu_path]


def test_close_and_garbage_collection_leave_nothing_behind(backend):
    s = session(backend)
    s.exec("sleep 100 &")
    box = s._box
    _remember(backend, box)
    s.close()
    assert _leftovers(backend, box) == []
    with pytest.raises(SessionError, match="closed"):
        s.exec("echo")
    other = session(backend)
    box = other._box
    _remember(backend, box)
    del other
    gc.collect()
    assert _leftovers(backend, box) == []


def test_the_pool_hands_out_fresh_sessions_only(backend):
    """Attack: keep state into the next episode."""
    with SessionPool(backend, SessionLimits(timeout_s=10), size=2) as pool:
        first = pool.take(files={"task.txt": "episode 1"})
        assert first.exec("cat task.txt").output == "episode 1"
        first.exec("echo junk > left.txt; export LEFT=1; echo t > /tmp/left")
        with first.fork(pool) as copy:  # a fork from the pool: a fresh session, restored
            assert copy.exec('cat left.txt; echo "[$LEFT]"').output == "junk\n[1]\n"
        first.close()
        second = pool.take(files={"task.txt": "episode 2"})
        assert second is not first
        r = second.exec('ls; cat task.txt; echo "[${LEFT:-}]"; ls /tmp')
        assert r.output == "task.txt\nepisode 2[]\n"
        second.close()


def test_the_pool_drops_sessions_that_died_while_they_waited(backend):
    """A warm session whose sandbox is gone before it is taken (``envgym sandbox
    gc`` removed its container, its process was killed) is not handed out."""
    with SessionPool(backend, SessionLimits(timeout_s=10), size=2) as pool:
        pool.wait_ready()
        for waiting in list(pool._ready):
            if backend == "docker":
                waiting._box.container.remove(force=True)
            else:
                waiting._box._proc.kill()
                waiting._box._proc.wait()
        taken = pool.take(files={"task.txt": "alive"})
        assert taken.exec("cat task.txt").output == "alive"
        taken.close()
        assert pool.take().exec("ls -A").output == ""


def test_snapshots_keep_modes_and_links_and_feed_the_grader(backend):
    """The tree is what the trusted grader takes: modes, links and files the
    agent made unreadable included; a restore puts them back."""
    with session(backend) as s:
        script = "#!/bin/sh\necho ran\n"
        s.write_file("bin/run.sh", script, mode=0o755)
        r = s.exec(
            "./bin/run.sh && mkdir locked && echo in > locked/f && chmod 000 locked/f "
            "&& chmod 500 locked && ln -s bin/run.sh link && (chmod 000 . 2>/dev/null || true)"
        )
        assert r.output == "ran\n"
        snap = s.snapshot()
        with tarfile.open(fileobj=io.BytesIO(snap.tree)) as tar:
            members = {m.name: m for m in tar.getmembers()}
            assert members["locked"].mode & 0o777 == 0o500
            assert members["locked/f"].mode & 0o777 == 0
            assert members["bin/run.sh"].mode & 0o777 == 0o755
            assert members["link"].issym() and members["link"].linkname == "bin/run.sh"
            assert tar.extractfile("locked/f").read() == b"in\n"
        s.exec("chmod 755 /work locked 2>/dev/null; chmod 644 locked/f; rm -r locked bin")
        s.restore(snap)
        r = s.exec("stat -c '%a %n' locked locked/f bin/run.sh; ./link")
        assert r.output == "500 locked\n0 locked/f\n755 bin/run.sh\nran\n"


def test_a_snapshot_tree_is_what_the_trusted_grader_checks(backend):
    from envgym.envs.terminal.grade import run_checks
    from envgym.envs.terminal.task import Check
    from envgym.sandbox import open_sandbox

    check = Check("answer", "import sys; sys.exit(open('out/answer.txt').read() != '42\\n')")
    with session(backend) as s, open_sandbox(backend, timeout_s=10) as box:
        assert not run_checks(box, s.snapshot().tree, [check])[0].passed
        s.exec("mkdir out && echo 42 > out/answer.txt")
        assert run_checks(box, s.snapshot().tree, [check])[0].passed


def test_a_session_left_open_is_gone_when_its_interpreter_exits(backend):
    code = (
        "from envgym.sandbox import open_session\n"
        f"s = open_session({backend!r})\n"
        "s.exec('sleep 100 &')\n"
        "box = s._box\n"
        "print(box.container.id if box.backend == 'docker' else box._proc.pid)\n"
        "import os; os.environ['KEEP'] = str(s)  # still referenced at exit\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    ident = done.stdout.strip()
    if backend == "docker":
        from envgym.sandbox.images import docker_client

        assert docker_client().containers.list(all=True, filters={"id": ident}) == []
    else:
        with pytest.raises(ProcessLookupError):
            os.kill(int(ident), 0)
