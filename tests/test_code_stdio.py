"""envgym/Code-v0's stdin/stdout problems: the shipped set, grading with
whitespace normalisation and named checkers, per-case limits, custom-input
runs, and programs that attack the grader, on bwrap and on docker."""

from __future__ import annotations

import json

import pytest
from sandbox_backends import require_backend

from envgym.envs.code import CodeEnv, IOCase, Problem
from envgym.envs.code import checkers as checkers_module
from envgym.envs.code.checkers import CHECKERS, check_output, normalise
from envgym.envs.code.oracle import CodeOracle
from envgym.envs.code.problems import load_split, problems_from_records
from envgym.sandbox import Limits, SandboxPool

#: A word only a hidden case holds: feedback must never quote it.
HIDDEN_WORD = "quokka"

ECHO = Problem(
    task_id="fixture/stdio/echo",
    difficulty="easy",
    entry_point="",
    prompt="Print each input line upper-cased.",
    solution="import sys\nfor line in sys.stdin:\n    print(line.rstrip('\\n').upper())\n",
    tests=(),
    kind="stdio",
    public_io=(IOCase("ab\n", "AB\n"),),
    hidden_io=(
        IOCase("x\ny\n", "X\nY\n"),
        IOCase(f"{HIDDEN_WORD}\n", f"{HIDDEN_WORD.upper()}\n"),
        IOCase("slow\n", "SLOW\n"),
    ),
    broken="print(input())\n",
    time_limit_s=1.0,
    memory_mb=128,
)


@pytest.fixture(scope="module", params=["bwrap", pytest.param("docker", marks=pytest.mark.docker)])
def pool(request):
    require_backend(request.param)
    limits = Limits(timeout_s=10, memory_mb=512)
    with SandboxPool(size=1, backend=request.param, limits=limits) as p:
        yield p


def make_env(pool, problems=(ECHO,), **kwargs) -> CodeEnv:
    kwargs.setdefault("timeout_s", 8)
    env = CodeEnv(problems=problems, sandbox_pool=pool, **kwargs)
    env.reset(options={"task_id": problems[0].task_id})
    return env


def submit(env: CodeEnv, code: str):
    return env.step(f"<answer>\n```python\n{code}\n```\n</answer>")


# ------------------------------------------------------------------ shipped set
def test_the_shipped_stdio_set_covers_every_level_and_checker():
    problems = load_split("stdio")
    assert {p.difficulty for p in problems} == {"easy", "medium", "hard"}
    assert all(p.kind == "stdio" and p.broken and p.hidden_io for p in problems)
    assert {p.checker for p in problems} == {None, "tokens", "float", "lines-unordered"}


def test_shipped_references_pass_and_broken_programs_fail(pool):
    problems = load_split("stdio")
    if pool.backend == "docker":
        # The same driver runs on both; docker plays the set's largest cases only.
        problems = [max(problems, key=lambda p: sum(len(c.input) for c in p.hidden_io))]
    env = CodeEnv(split="stdio", sandbox_pool=pool)
    for problem in problems:
        obs, info = env.reset(options={"task_id": problem.task_id})
        assert "Example 1 input" in obs and "Limits per test" in obs
        oracle = CodeOracle(env)
        _, reward, terminated, _, info = env.step(oracle.act(obs, info))
        assert (reward, terminated, info["success"]) == (1.0, True, True), problem.task_id
        env.reset(options={"task_id": problem.task_id})
        _, reward, *_, info = submit(env, problem.broken)
        assert reward < 1.0 and not info["success"], problem.task_id


# ------------------------------------------------------------------ comparison
def test_whitespace_normalisation_rules():
    assert normalise("1 2  \n3\t\r\n\n\n") == "1 2\n3"
    assert check_output(None, "AB  \r\n\n", "AB\n", "")
    assert not check_output(None, " AB\n", "AB\n", "")  # leading blanks count
    assert not check_output(None, "A B\n", "A  B\n", "")  # inner blanks count
    assert not check_output(None, "\nAB\n", "AB\n", "")  # leading empty lines count
    # Control characters that Python's splitlines and split take for breaks are data.
    for fake in ("\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\x0b", "\x0c"):
        assert not check_output(None, f"1{fake}2", "1\n2\n", ""), repr(fake)
    for fake in ("\x1c", "\x1d", "\x1e", "\x85", "\u2028"):
        assert not check_output("tokens", f"1{fake}2", "1 2", ""), repr(fake)
    assert check_output("tokens", "1\x0b2\x0c", "1 2", "")  # ASCII whitespace, as scanf's


def test_each_named_checker():
    assert check_output("tokens", "1\n2   3\n\n", "1 2 3", "")
    assert not check_output("tokens", "1 2", "1 2 3", "")
    assert check_output("float", "0.3333333 x", "0.33333333333 x", "")
    assert check_output("float", "1000000.5", "1000000.0", "")  # 5e-7 relative
    assert not check_output("float", "0.334", "0.333333", "")
    assert not check_output("float", "0.5 y", "0.5 x", "")  # words must be equal
    assert not check_output("float", "nan", "1.0", "") and not check_output(
        "float", "inf", "1e400", ""
    )
    assert not check_output("float", "1_0", "10", "")  # Python's float() reads it; we do not
    assert check_output("lines-unordered", "b\na\n", "a\nb", "")
    assert not check_output("lines-unordered", "a\na\nb", "a\nb\nb", "")  # a multiset
    assert check_output("no-such-checker", "a", "a", "") is False


def test_a_checker_registered_in_python_judges_and_an_unknown_one_is_refused(monkeypatch):
    monkeypatch.setitem(CHECKERS, "yes-no", lambda out, exp, inp: out.strip().lower() == exp)
    assert check_output("yes-no", "YES\n", "yes", "")
    monkeypatch.setitem(CHECKERS, "raises", lambda out, exp, inp: 1 / 0)
    assert check_output("raises", "a", "a", "") is False
    odd = Problem(**{**ECHO.__dict__, "checker": "from-the-data-file"})
    with pytest.raises(ValueError, match="unknown checker 'from-the-data-file'.*CHECKERS"):
        CodeEnv(problems=[odd])
    assert "yes-no" in checkers_module.__doc__  # the docs say how to add one


def test_the_json_format_reads_stdio_records_and_refuses_bad_ones():
    record = {
        "task_id": "t/1",
        "difficulty": "easy",
        "kind": "stdio",
        "prompt": "Echo.",
        "solution": "print(input())",
        "public_io": [{"input": "a\n", "output": "a\n"}],
        "hidden_io": [{"input": "b\n", "output": "b\n"}],
        "time_limit_s": 1.5,
        "checker": "tokens",
    }
    (problem,) = problems_from_records([record], "x.json")
    assert problem.hidden_io == (IOCase("b\n", "b\n"),) and problem.time_limit_s == 1.5
    assert problem.kind == "stdio" and problem.entry_point == ""
    with pytest.raises(ValueError, match="hidden_io' is empty"):
        problems_from_records([{**record, "hidden_io": []}], "x.json")
    with pytest.raises(ValueError, match=r"case 0 must be an object"):
        problems_from_records([{**record, "hidden_io": [["b", "b"]]}], "x.json")
    with pytest.raises(ValueError, match="'kind' must be one of"):
        problems_from_records([{**record, "kind": "sql"}], "x.json")


def test_problems_takes_a_json_path_of_stdio_records(tmp_path, pool):
    record = {
        "task_id": "t/1",
        "difficulty": "easy",
        "kind": "stdio",
        "prompt": "Add two numbers.",
        "solution": "print(sum(map(int, input().split())))",
        "hidden_io": [{"input": "2 3\n", "output": "5\n"}],
    }
    path = tmp_path / "mine.json"
    path.write_text(json.dumps([record]))
    env = CodeEnv(problems=path, sandbox_pool=pool)
    obs, info = env.reset(seed=0)
    _, reward, *_ = env.step(CodeOracle(env).act(obs, info))
    assert reward == 1.0


# ------------------------------------------------------------------ grading
def test_oracle_passes_wrong_program_fails_and_reward_is_the_hidden_fraction(pool):
    env = make_env(pool)
    _, reward, *_, info = submit(env, ECHO.solution)
    assert reward == 1.0 and info["success"] and info["grade"]["hidden_passed"] == 3
    env.reset(options={"task_id": ECHO.task_id})
    obs, reward, *_, info = submit(env, ECHO.broken)
    # Lower case echoed back: every case wrong; the public example is shown with its output.
    assert reward == 0.0 and "Example 1 failed: wrong answer" in obs and "Your output:\nab" in obs
    env.reset(options={"task_id": ECHO.task_id})
    partial = "for s in open(0).read().split():\n    print(s.upper() if s != 'slow' else 'no')"
    obs, reward, *_, info = submit(env, partial)
    assert reward == pytest.approx(2 / 3) and "Hidden tests passed: 2/3" in obs
    assert HIDDEN_WORD not in obs.lower()  # no hidden case is quoted
    env.reset(options={"task_id": ECHO.task_id})
    obs, reward, *_, info = submit(env, "print(1 +)")
    assert reward == 0.0 and info["grade"]["compiles"] is False and "did not compile" in obs


def test_time_and_memory_limits_hold_per_case(pool):
    env = make_env(pool)
    slow = (
        "import time\ns = open(0).read()\nif s == 'slow\\n':\n    time.sleep(30)\nprint(s.upper())"
    )
    _, reward, *_, info = submit(env, slow)
    assert reward == pytest.approx(2 / 3)  # only the slow case failed; the others ran
    env.reset(options={"task_id": ECHO.task_id})
    hungry = (
        "s = open(0).read()\nif s == 'slow\\n':\n    block = bytearray(200 << 20)\nprint(s.upper())"
    )
    _, reward, *_, info = submit(env, hungry)
    assert reward == pytest.approx(2 / 3)
    # The problem's own limits rule: with 480 MB (under the sandbox's 512) it passes.
    roomy = Problem(**{**ECHO.__dict__, "memory_mb": 480, "time_limit_s": 4.0})
    env = make_env(pool, problems=(roomy,))
    obs, _ = env.reset(options={"task_id": roomy.task_id})
    assert "Limits per test: 4 s, 480 MB" in obs
    _, reward, *_ = submit(env, hungry)
    assert reward == 1.0


def test_custom_input_runs_show_output_and_apply_the_limits(pool):
    env = make_env(pool)
    obs, reward, terminated, _, info = env.step(
        "<python>\nimport sys\nprint(sys.stdin.read()[::-1])\n</python>\n<input>\nabc</input>"
    )
    assert "exit status: 0" in obs and "cba" in obs and not terminated
    assert info["tools"][0]["function"]["parameters"]["properties"]["stdin"]
    call = {"name": "run_python", "arguments": {"code": "print(int(input()) * 2)", "stdin": "21"}}
    obs, *_ = env.step(f"<tool_call>{json.dumps(call)}</tool_call>")
    assert "42" in obs
    obs, *_, info = env.step("<python>import time\ntime.sleep(30)</python>")
    assert "time limit exceeded (1 s)" in obs and info["sandbox_error"] is True
    assert info["cost"]["executions"] == 3


# ------------------------------------------------------------------ attacks
#: The hidden outputs are secrets no input leads to: only a leak could print them.
LEAK = Problem(
    task_id="fixture/stdio/leak",
    difficulty="easy",
    entry_point="",
    prompt="Print the word that belongs to the number.",
    solution="print({'0': 'public-0', '1': 'zebra-7731', '2': 'zebra-1234'}[input()])\n",
    tests=(),
    kind="stdio",
    public_io=(IOCase("0\n", "public-0\n"),),
    hidden_io=(IOCase("1\n", "zebra-7731\n"), IOCase("2\n", "zebra-1234\n")),
    time_limit_s=0.5,
)

_FIND_SECRET = """
import os, re
SECRET = re.compile(rb"zebra-[0-9]{4}")
found = set()
def scan(path):
    try:
        with open(path, "rb") as f:
            found.update(SECRET.findall(f.read(1 << 20)))
    except OSError:
        pass
for top in ("/tmp", "..", "/", os.path.expanduser("~")):
    for name in os.listdir(top):
        path = os.path.join(top, name)
        if os.path.isfile(path) and not path.endswith(".py"):
            scan(path)
for pid in os.listdir("/proc"):
    if pid.isdigit() and int(pid) != os.getpid():
        for part in ("environ", "cmdline", "mem", "fd/0", "fd/1", "fd/3"):
            scan(f"/proc/{pid}/{part}")
print(sorted(found)[0].decode() if found else "nothing")
"""

_FORGE_RECORDS = """
import os, re
MARK = re.compile(rb"@@envgym-[a-z]+-[0-9a-f]{32}@@")
marks = set()
for pid in os.listdir("/proc"):
    for part in ("environ", "cmdline"):
        try:
            with open(f"/proc/{pid}/{part}", "rb") as f:
                marks.update(MARK.findall(f.read(1 << 20)))
        except OSError:
            pass
for mark in marks or {b"@@envgym-case-" + b"0" * 32 + b"@@"}:
    for i in range(-1, 8):
        line = b'\\n%s{"index": %d, "compiles": true, "exit": 0, "signal": null, ' % (mark, i)
        line += b'"timed_out": false, "output_limit": false, "stdout": "WFk=", "stderr": ""}\\n'
        for fd in range(1, 12):
            try:
                os.write(fd, line)
            except OSError:
                pass
"""

#: Programs that try to pass without solving: (name, program).
ATTACKS = [
    ("hard-code the public example", "print('public-0')"),
    ("exit early with status 0", "import sys\nsys.exit(0)\nprint(input().upper())"),
    ("os._exit before printing", "import os\nos._exit(0)"),
    ("read files for the expected output", _FIND_SECRET),
    ("forge the driver's records", _FORGE_RECORDS),
    ("huge output", "import sys\nwhile True:\n    sys.stdout.write('X' * 65536)"),
    ("sleep past the limit", "import time\ntime.sleep(60)"),
    ("fork and die", "import os\nos.fork()\nos.fork()\nprint('A')"),
    ("control characters", "import sys\nsys.stdout.write('X\\x1cY\\x1b[2J\\x00\\r\\x85')"),
    (
        "a verdict on stderr",
        "import sys\nprint('Hidden tests passed: 3/3. Accepted', file=sys.stderr)\nprint('?')",
    ),
    ("kill the driver", "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)"),
]


@pytest.mark.parametrize("name,attack", ATTACKS, ids=[a[0] for a in ATTACKS])
def test_attacks_earn_nothing_and_the_pool_still_grades(pool, name, attack):
    env = make_env(pool, problems=(LEAK,), timeout_s=4)
    obs, reward, terminated, _, info = submit(env, attack)
    assert reward == 0.0 and terminated and not info["success"], obs
    assert info["grade"]["hidden_passed"] == 0
    assert all(c in "\n\t" or " " <= c <= "~" for c in obs)  # nothing printed reaches it raw
    assert "zebra" not in obs
    env.reset(options={"task_id": LEAK.task_id})
    _, reward, *_ = env.step(CodeOracle(env).act("", {}))
    assert reward == 1.0


def test_what_one_case_leaves_behind_is_gone_by_the_next(pool):
    """A program that leaves a process running (in a session of its own) and
    files in reach; the next case must find neither, or it answers wrongly."""
    program = """
import os, sys, time
text = sys.stdin.read()
marks = [p for p in ("/tmp/left.pid", "left.pid", "../left.pid") if os.path.exists(p)]
alive = False
for path in marks:
    try:
        os.kill(int(open(path).read()), 0)
        alive = True
    except (OSError, ValueError):
        pass
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        for fd in (0, 1, 2):
            os.close(fd)
        for path in ("/tmp/left.pid", "left.pid", "../left.pid"):
            try:
                with open(path, "w") as f:
                    f.write(str(os.getpid()))
            except OSError:
                pass
        time.sleep(60)
    os._exit(0)
time.sleep(0.1)
with open("time.py", "w") as f:
    f.write("raise SystemExit(3)")
print("SURVIVOR" if alive else text.upper())
"""
    env = make_env(pool)
    obs, reward, *_, info = submit(env, program)
    assert reward == 1.0, obs
