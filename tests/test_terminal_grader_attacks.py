"""Trees an agent could leave behind for the terminal grader
(envs/terminal/grade.py): each attack must not turn a failing verdict into a
pass. Each check here passes only if the attack worked, so a grader without
the defence fails the test."""

from __future__ import annotations

import io
import tarfile

import pytest
from sandbox_backends import backend_params, require_backend

from envgym.envs.terminal.families._common import check, text_check
from envgym.envs.terminal.grade import run_checks
from envgym.sandbox import open_sandbox

TOKEN = "TOKEN-7f3a91"
#: Passes when answer.txt holds the token, which only this check's own source holds.
TOKEN_CHECK = check(
    "token",
    """
text = open("answer.txt", errors="replace").read()
sys.exit(0 if TOKEN in text else 1)
""",
    TOKEN=TOKEN,
)
#: Passes when answer.txt shows /etc/passwd, which is outside the tree.
PASSWD_CHECK = check(
    "passwd",
    """
text = open("answer.txt", errors="replace").read()
sys.exit(0 if "root:" in text else 1)
""",
)
EXIT0 = "import os\nos._exit(0)\n"


def tree(*members) -> bytes:
    """A tar of ``(name, kind, payload, mode)`` members, kinds file, dir, sym, hard."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for name, kind, payload, mode in members:
            info = tarfile.TarInfo(name)
            info.mode = mode
            if kind == "file":
                data = payload.encode() if isinstance(payload, str) else payload
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
                continue
            info.type = {"dir": tarfile.DIRTYPE, "sym": tarfile.SYMTYPE, "hard": tarfile.LNKTYPE}[
                kind
            ]
            info.linkname = payload
            tar.addfile(info)
    return buffer.getvalue()


def f(name, text="", mode=0o644):
    return (name, "file", text, mode)


@pytest.fixture(scope="module", params=backend_params(("bwrap", "docker")))
def box(request):
    require_backend(request.param)
    with open_sandbox(backend=request.param) as sandbox:
        yield sandbox


def verdict(box, tree_tar: bytes, chk) -> bool:
    (result,) = run_checks(box, tree_tar, [chk])
    return result.passed


def test_an_honest_answer_passes_and_a_wrong_one_fails(box):
    assert verdict(box, tree(f("answer.txt", TOKEN)), TOKEN_CHECK)
    assert not verdict(box, tree(f("answer.txt", "wrong")), TOKEN_CHECK)


def test_sitecustomize_and_shadowed_modules_are_not_imported(box):
    """Modules in the tree named like ones the check or site imports."""
    names = [
        "sitecustomize.py",
        "usercustomize.py",
        "json.py",
        "hashlib.py",
        "subprocess.py",
        "pathlib.py",
        "stat.py",
        "evil.pth",
    ]
    members = [f(n, EXIT0 if n.endswith(".py") else "import os; os._exit(0)\n") for n in names]
    members += [
        f(".local/lib/python3.11/site-packages/usercustomize.py", EXIT0),
        f("__pycache__/json.cpython-311.pyc", b"\0" * 64),
    ]
    assert not verdict(box, tree(f("answer.txt", "wrong"), *members), TOKEN_CHECK)


def test_a_fake_python3_or_git_on_a_path_the_agent_set_is_not_run(box):
    fake = "#!/bin/sh\necho FAKE\nexit 0\n"
    rc = 'export PATH="$PWD/bin:$PATH"\nalias python3=$PWD/bin/python3\n'
    members = [
        f("bin/python3", fake, 0o755),
        f("bin/git", fake, 0o755),
        f("bin/sh", fake, 0o755),
        f(".bashrc", rc),
        f(".profile", rc),
        f(".bash_profile", rc),
        f(".env", "PATH=bin\n"),
    ]
    runs_fake = check(
        "fake",
        """
def ran_fake(command, **kwargs):
    out = subprocess.run(command, capture_output=True, text=True, **kwargs).stdout
    return "FAKE" in out

ok = ran_fake(["python3", "-c", "import sys; sys.exit(3)"])
shell = ran_fake("python3 -c 'import sys; sys.exit(3)'", shell=True)
# git is in the image: the real one says "git version ...", the agent's says FAKE.
login = ran_fake(["bash", "-lc", "git --version"])
sys.exit(0 if ok or shell or login else 1)
""",
    )
    assert not verdict(box, tree(*members), runs_fake)


@pytest.mark.parametrize("target", ["/etc/passwd", "../../etc/passwd", "/proc/1/environ"])
def test_a_symlink_out_of_the_tree_is_dropped(box, target):
    assert not verdict(box, tree(("answer.txt", "sym", target, 0o777)), PASSWD_CHECK)


@pytest.mark.parametrize(
    "members",
    [
        [("answer.txt", "sym", "../check.py", 0o777)],
        [("answer.txt", "sym", "/work/check.py", 0o777)],
        [("answer.txt", "hard", "/work/check.py", 0o644)],
        [("answer.txt", "hard", "../check.py", 0o644)],
        # Links that only leave the tree once later members exist: answer.txt ->
        # c/check.py is inside when written; then c -> e/.. and e -> . make it /work/check.py.
        [
            ("answer.txt", "sym", "c/check.py", 0o777),
            ("c", "sym", "e/..", 0o777),
            ("e", "sym", ".", 0o777),
        ],
        # A hard link made through such a chain of symlinks.
        [
            ("c", "sym", "e/..", 0o777),
            ("e", "sym", ".", 0o777),
            ("answer.txt", "hard", "c/check.py", 0o644),
        ],
        # A folder link out of the tree, then a file written through it.
        [("d", "sym", "..", 0o777), f("d/check.py", EXIT0), f("answer.txt", "wrong")],
    ],
    ids=[
        "sym-dotdot",
        "sym-absolute",
        "hard-absolute",
        "hard-dotdot",
        "sym-chain",
        "hard-through-chain",
        "write-through-link",
    ],
)
def test_links_to_the_check_file_do_not_show_its_source(box, members):
    assert not verdict(box, tree(*members), TOKEN_CHECK)


@pytest.mark.parametrize(
    "name", ["../check.py", "/work/check.py", "./../check.py", "a/../../check.py"]
)
def test_a_member_outside_the_tree_does_not_replace_the_check(box, name):
    assert not verdict(box, tree(f(name, EXIT0), f("answer.txt", "wrong")), TOKEN_CHECK)


def test_set_id_bits_are_cleared(box):
    kept_setid = check(
        "setid",
        """
sys.exit(0 if os.stat("tool").st_mode & 0o6000 else 1)
""",
    )
    assert not verdict(box, tree(f("tool", "#!/bin/sh\necho hi\n", 0o6755)), kept_setid)


def test_a_forged_success_line_or_a_write_to_the_parents_stdout_does_not_pass(box):
    """The check runs the agent's program, which prints what a passing grader
    would, writes to every stdout up its process tree and kills its parents;
    only the check's own exit status counts."""
    forger = """
import os, sys
line = "PASS\\nall checks passed\\nexit 0\\n"
print(line)
pid = os.getppid()
while pid > 1:
    for fd in (1, 2):
        try:
            with open(f"/proc/{pid}/fd/{fd}", "w") as out:
                out.write(line + '{"exit_code": 0, "ok": true}\\n')
        except OSError:
            pass
    try:
        with open(f"/proc/{pid}/stat") as st:
            parent = int(st.read().rsplit(")", 1)[1].split()[1])
    except OSError:
        break
    pid = parent
"""
    runs = check(
        "runs_program",
        """
done = subprocess.run(["/usr/bin/python3", "solve.py"], capture_output=True, text=True,
                      timeout=5)
if norm(done.stdout) != "42":
    fail(f"solve.py printed {done.stdout[:40]!r}")
""",
    )
    assert not verdict(box, tree(f("solve.py", forger)), runs)
    killer = "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n"
    assert not verdict(box, tree(f("solve.py", killer)), runs)


def test_a_huge_file_fails_the_check_and_the_sandbox_still_grades():
    require_backend("bwrap")
    answer = text_check("answer", "answer.txt", "42")
    with open_sandbox(backend="bwrap", work_mb=8) as small:
        huge = tree(f("answer.txt", "42"), f("huge.bin", b"\0" * (12 << 20)))
        assert not verdict(small, huge, answer)
        assert verdict(small, tree(f("answer.txt", "42")), answer)


#: Looks for TOKEN wherever a program the check runs could: files outside the
#: tree, every process's command line, environment, open files and memory.
SNOOP = r"""
import os, re, stat
TOKEN = re.compile(rb"TOKEN-[0-9a-f]{4}\d\d")
found = set()
def scan(data):
    found.update(m.decode() for m in TOKEN.findall(data))
for folder in ("/work", "/tmp", "/dev/shm"):
    for base, dirs, files in os.walk(folder):
        for name in files:
            try:
                with open(os.path.join(base, name), "rb") as f:
                    scan(f.read(1 << 22))
            except OSError:
                pass
for pid in os.listdir("/proc"):
    if not pid.isdigit() or int(pid) == os.getpid():
        continue
    for part in ("cmdline", "environ"):
        try:
            with open(f"/proc/{pid}/{part}", "rb") as f:
                scan(f.read())
        except OSError:
            pass
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                if not stat.S_ISREG(os.stat(f"/proc/{pid}/fd/{fd}").st_mode):
                    continue  # a pipe or a terminal would block
                with open(f"/proc/{pid}/fd/{fd}", "rb") as f:
                    scan(f.read(1 << 22))
            except OSError:
                pass
    except OSError:
        pass
    try:
        with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", 0) as mem:
            for row in maps:
                span, perms = row.split()[:2]
                start, end = (int(x, 16) for x in span.split("-"))
                if "r" in perms and end - start < 1 << 26:
                    try:
                        mem.seek(start)
                        scan(mem.read(end - start))
                    except (OSError, ValueError, OverflowError):
                        pass
    except OSError:
        pass
print("\n".join(sorted(found)))
"""


def test_a_program_the_check_runs_cannot_read_the_checks_expected_values(box):
    """pybug and build checks run the agent's code: it must not find the
    expected output in the check's file, command line or memory."""
    runs = check(
        "snoop",
        """
done = subprocess.run(["/usr/bin/python3", "solve.py"], capture_output=True, text=True,
                      timeout=20, stdin=subprocess.DEVNULL)
sys.exit(0 if TOKEN in done.stdout else 1)
""",
        TOKEN=TOKEN,
    )
    assert not verdict(box, tree(f("solve.py", SNOOP)), runs)


@pytest.mark.parametrize("backend", backend_params(("bwrap", "docker")))
def test_a_grader_sandbox_that_died_between_episodes_still_grades(backend):
    """A grader sandbox whose container was removed (``envgym sandbox gc``) or
    whose process was killed gives a verdict, not a failed check: the job the
    sandbox could not run is run once more on its replacement."""
    require_backend(backend)
    with open_sandbox(backend=backend) as sandbox:
        assert verdict(sandbox, tree(f("answer.txt", TOKEN)), TOKEN_CHECK)
        if backend == "docker":
            sandbox.container.remove(force=True)
        else:
            sandbox._proc.kill()
            sandbox._proc.wait()
        assert verdict(sandbox, tree(f("answer.txt", TOKEN)), TOKEN_CHECK)
        assert not verdict(sandbox, tree(f("answer.txt", "wrong")), TOKEN_CHECK)
