"""RepoFix tasks (envs/terminal/repofix): generated packages with a planted
bug, graded by hidden tests that the untouched package fails, the reference
solution passes, and no attack on the grading passes."""

from __future__ import annotations

import ast
import hashlib
import json
import random
import re
import subprocess
import sys

import pytest
from repofix_play import grade, play
from sandbox_backends import require_backend

from envgym.envs.terminal.grade import run_checks, starting_tree
from envgym.envs.terminal.repofix import DOMAINS, make_repo_task
from envgym.envs.terminal.repofix.build import build_task, module_of
from envgym.envs.terminal.task import LEVELS
from envgym.sandbox import open_sandbox

SEEDS = (0, 1)


def cases(task, name: str) -> list[str]:
    """The expressions a check tests (read back from its source)."""
    code = next(c.code for c in task.checks if c.name == name)
    line = next(line for line in code.splitlines() if line.startswith("CASES = "))
    return [expr for expr, _ in ast.literal_eval(line[len("CASES = ") :])]


def fingerprint(task) -> str:
    data = [task.task_id, task.instruction, task.solution, sorted(task.files.items())]
    data.append([(c.name, c.code) for c in task.checks])
    return hashlib.sha256(json.dumps(data).encode()).hexdigest()


def test_same_seed_same_task_in_another_process():
    here = [fingerprint(make_repo_task(seed, level)) for level in LEVELS for seed in SEEDS]
    code = (
        "import sys; sys.path.insert(0, 'tests'); from test_repofix import fingerprint, SEEDS\n"
        "from envgym.envs.terminal.repofix import make_repo_task\n"
        "from envgym.envs.terminal.task import LEVELS\n"
        "print([fingerprint(make_repo_task(s, l)) for l in LEVELS for s in SEEDS])"
    )
    there = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert ast.literal_eval(there.stdout) == here


def test_seeds_differ_in_names_bugs_and_inputs():
    for level in LEVELS:
        tasks = [make_repo_task(seed, level) for seed in range(12)]
        assert len({t.instruction for t in tasks}) == len(tasks)
        assert len({next(iter(t.files)) for t in tasks}) >= 4  # package names
        assert len({t.instruction.splitlines()[0] for t in tasks}) >= 6  # bugs and names
        assert all(t.family == "repofix" and t.difficulty == level for t in tasks)


def test_bad_arguments_say_what_to_pass():
    with pytest.raises(ValueError, match="easy"):
        make_repo_task(0, "impossible")
    with pytest.raises(TypeError, match="seed must be an int"):
        make_repo_task("0", "easy")


@pytest.mark.parametrize("level", LEVELS)
def test_issue_shows_a_symptom_and_the_hidden_tests_stay_hidden(level):
    for seed in range(6):
        task = make_repo_task(seed, level)
        assert ">>> " in task.instruction and "I expected" in task.instruction
        tree = "\n".join(v for v in task.files.values() if isinstance(v, str))
        for name in ("hidden_bug", "hidden_regressions"):
            for expr in cases(task, name):
                assert expr not in task.instruction and expr not in tree, (seed, expr)
        # the issue does not give the fix away: no line the solution writes is in it
        fixes = ast.literal_eval(re.search(r"for path, bad, good in (.*):\n", task.solution)[1])
        for _, _bad, good in fixes:
            for line in good.splitlines():
                assert line.strip() not in task.instruction, (seed, line)


def test_levels_place_the_bug_as_documented():
    for domain in DOMAINS:
        for bug in domain.bugs:
            shown = {module_of(e).lstrip("$") for e in bug.examples(random.Random(0))}
            modules = {fix.module for fix in bug.fixes}
            if bug.level == "easy":
                assert len(bug.fixes) == 1 and modules <= shown, bug.key
            elif bug.level == "medium":
                assert modules == {"U"} and "U" not in shown, bug.key
            else:
                assert len(bug.fixes) == 2 or "edge case" in bug.kind, bug.key
    levels = {bug.level for domain in DOMAINS for bug in domain.bugs}
    assert levels == set(LEVELS)


@pytest.fixture(scope="module")
def bwrap_box():
    require_backend("bwrap")
    with open_sandbox(backend="bwrap") as box:
        yield box


def unittest_status(box, task, script: str = "") -> int:
    """The exit status of ``python3 -m unittest`` in the tree after ``script``."""
    tree = play(box, task, script)
    done = box.run(
        "mkdir w && cd w && tar xf ../t.tar && python3 -m unittest -q 2>&1 | tail -3; "
        "exit ${PIPESTATUS[0]}",
        language="bash",
        files={"t.tar": tree},
    )
    return done.exit_code


@pytest.mark.parametrize("level", LEVELS)
def test_untouched_fails_and_the_reference_solution_passes(bwrap_box, level):
    task = make_repo_task(0, level)
    untouched = grade(bwrap_box, task)
    assert "wrong result" in untouched["hidden_bug"].reason
    # the other checks pay nothing for a package left as it was
    for name in ("hidden_regressions", "visible_tests"):
        assert "issue's behaviour is still wrong" in untouched[name].reason
    assert not any(r.passed for r in untouched.values())
    solved = grade(bwrap_box, task, task.solution)
    assert all(r.passed for r in solved.values()), solved


BUGS = [(domain, bug) for domain in DOMAINS for bug in domain.bugs]


@pytest.mark.parametrize("domain, bug", BUGS, ids=[bug.key for _, bug in BUGS])
def test_every_bug_fails_untouched_and_passes_fixed(bwrap_box, domain, bug):
    task = build_task(domain, bug, 5, random.Random(5))
    hidden_bug = [c for c in task.checks if c.name == "hidden_bug"]
    assert not run_checks(bwrap_box, starting_tree(task), hidden_bug)[0].passed
    solved = grade(bwrap_box, task, task.solution)
    assert all(r.passed for r in solved.values()), solved


@pytest.mark.parametrize("level", LEVELS)
def test_visible_tests_run_with_unittest_and_fail_only_below_hard(bwrap_box, level):
    task = make_repo_task(2, level)
    assert (unittest_status(bwrap_box, task) == 0) == (level == "hard")
    assert unittest_status(bwrap_box, task, task.solution) == 0


@pytest.mark.docker
def test_untouched_fails_and_the_reference_solution_passes_on_docker():
    require_backend("docker")
    task = make_repo_task(0, "medium")
    with open_sandbox(backend="docker") as box:
        assert not grade(box, task)["hidden_bug"].passed
        assert all(r.passed for r in grade(box, task, task.solution).values())


def test_starting_tree_holds_the_package_and_its_tests():
    task = make_repo_task(0, "easy")
    package = next(iter(task.files)).split("/")[0]
    assert f"{package}/__init__.py" in task.files and "tests/__init__.py" in task.files
    assert any(p.startswith("tests/test_") for p in task.files)
    assert starting_tree(task)  # a tar the grader and the sessions can unpack


# --- attacks: an agent that games the tests instead of fixing the bug ---------

EXIT_0 = "import os\nos._exit(0)\n"


def package_of(task) -> tuple[str, list[str]]:
    package = next(iter(task.files)).split("/")[0]
    modules = [
        p.split("/")[1][:-3]
        for p in task.files
        if p.startswith(package + "/") and not p.endswith("__init__.py")
    ]
    return package, modules


def append_to_init(task, code: str) -> str:
    package, _ = package_of(task)
    return f"cat >> {package}/__init__.py <<'ATTACK'\n{code}\nATTACK\n"


def startup_files(task) -> str:
    """Files Python or a test runner would import at start, and stdlib names a
    check might import, in the tree, the package and tests/: each ends the
    interpreter with status 0."""
    package, _ = package_of(task)
    names = ("sitecustomize", "usercustomize", "conftest", "json", "subprocess", "secrets", "math")
    paths = [f"{folder}/{name}.py" for folder in (".", package, "tests") for name in names]
    write = f"for p in {paths!r}:\n    open(p, 'w').write({EXIT_0!r})"
    return f"python3 - <<'ATTACK'\n{write}\nATTACK\n"


def special_case(task) -> str:
    """Learn, from a fixed copy, the right value of every call that the visible
    tests and the issue make, and make the package return those values for
    exactly those arguments (its own code for any other)."""
    package, modules = package_of(task)
    examples = [
        line[4:]
        for line in task.instruction.splitlines()
        if line.startswith(">>> ") and not line.startswith(">>> from ")
    ]
    learn = f'''
import ast, importlib, io, sys, unittest
sys.path.insert(0, "/tmp/ref")
memo = {{}}
def spy(module, name, function):
    def inner(*args, **kwargs):
        out = function(*args, **kwargs)
        try:
            ast.literal_eval(repr(out))
            memo[repr(((module, name), args, kwargs))] = repr(out)
        except Exception:
            pass
        return out
    return inner
modules = {{m: importlib.import_module("{package}." + m) for m in {modules!r}}}
for m, module in modules.items():
    for n, f in list(vars(module).items()):
        if callable(f) and not isinstance(f, type) and f.__module__ == module.__name__:
            setattr(module, n, spy(m, n, f))
tests = unittest.defaultTestLoader.discover("/tmp/ref/tests", top_level_dir="/tmp/ref")
unittest.TextTestRunner(stream=io.StringIO()).run(tests)
for example in {examples!r}:
    eval(example, dict(modules))
hook = """
import ast as _ast, importlib as _il
_MEMO = %r
for _m in %r:
    _mod = _il.import_module(__name__ + "." + _m)
    for _n, _f in list(vars(_mod).items()):
        if callable(_f) and not isinstance(_f, type) and _f.__module__ == _mod.__name__:
            def _w(*a, _f=_f, _k=(_m, _n), **k):
                key = repr((_k, a, k))
                return _ast.literal_eval(_MEMO[key]) if key in _MEMO else _f(*a, **k)
            setattr(_mod, _n, _w)
""" % (memo, {modules!r})
open("{package}/__init__.py", "a").write(hook)
'''
    return (
        "cp -r . /tmp/ref && (cd /tmp/ref && " + task.solution.strip() + "\n) && "
        f"python3 - <<'LEARN'\n{learn}\nLEARN\n"
    )


PATCH_UNITTEST = """
import contextlib, unittest
unittest.TestCase.assertEqual = lambda *args, **kwargs: None
unittest.TestCase.assertRaises = lambda *args, **kwargs: contextlib.suppress(Exception)
"""

#: attack -> (its script, the grader without the defences that it fools, the level it plays)
ATTACKS = {
    "delete the tests": (lambda task: "rm -rf tests", "unittest", "easy"),
    "rewrite the tests to pass": (
        lambda task: "for f in tests/test_*.py; do printf 'import unittest\\n' > $f; done",
        "unittest",
        "medium",
    ),
    "startup files that exit 0": (startup_files, "check in the tree", "hard"),
    "patch unittest in the package": (
        lambda task: append_to_init(task, PATCH_UNITTEST),
        "unittest",
        "easy",
    ),
    "exit 0 on import": (
        lambda task: append_to_init(task, EXIT_0),
        "check importing the package",
        "medium",
    ),
    "SystemExit on import": (
        lambda task: append_to_init(task, "raise SystemExit(0)"),
        "check importing the package",
        "hard",
    ),
    "exit 0 at exit, output swallowed": (
        lambda task: append_to_init(
            task,
            "import atexit, io, os, sys\natexit.register(os._exit, 0)\nsys.stdout = io.StringIO()",
        ),
        "check importing the package",
        "hard",
    ),
}
EQUALS_ALL = """
import functools, importlib


class _Equal:
    def __eq__(self, other):
        return True

    __hash__ = object.__hash__


def _fake(function):
    @functools.wraps(function)
    def inner(*args, **kwargs):
        return _Equal()
    return inner


for _name in MODULES:
    _module = importlib.import_module(__name__ + "." + _name)
    for _key, _value in list(vars(_module).items()):
        if callable(_value) and getattr(_value, "__module__", None) == _module.__name__:
            setattr(_module, _key, _fake(_value))
"""
ATTACKS["return objects equal to everything"] = (
    lambda task: append_to_init(task, EQUALS_ALL.replace("MODULES", repr(package_of(task)[1]))),
    "check comparing in its own process",
    "easy",
)
NAIVE = {
    "unittest": "python3 -m unittest -q",
    "check in the tree": "python3 check.py",
    "check importing the package": "python3 inproc.py",
    "check comparing in its own process": "python3 compare.py",
}


def decode(tagged: list):
    """A value from the checks' type-tagged encoding."""
    tag, *rest = tagged
    if tag == "n":
        return None
    if tag in ("b", "s"):
        return rest[0]
    if tag in ("i", "f"):
        return (int if tag == "i" else float)(rest[0])
    if tag in ("l", "t"):
        return (list if tag == "l" else tuple)(decode(v) for v in rest[0])
    return {decode(k): decode(v) for k, v in rest[0]}


def comparing_check(task) -> str:
    """The hidden tests of the bug as a check that imports the package and
    compares with ``==`` in its own process."""
    package, modules = package_of(task)
    code = next(c.code for c in task.checks if c.name == "hidden_bug")
    line = next(line for line in code.splitlines() if line.startswith("CASES = "))
    wanted = [
        (expr, decode(want[1]))
        for expr, want in ast.literal_eval(line[len("CASES = ") :])
        if want[0] == "ok"
    ]
    return (
        "import importlib, sys\n"
        "sys.path.insert(0, '.')\n"
        f"names = {{m: importlib.import_module('{package}.' + m) for m in {modules!r}}}\n"
        f"wrong = [e for e, v in {wanted!r} if not eval(e, dict(names)) == v]\n"
        "sys.exit(1 if wrong else 0)\n"
    )


def naive_passes(box, task, tree: bytes, grader: str) -> bool:
    """Whether a grader without the defences passes ``tree``: the tree's own
    ``python3 -m unittest``; the hidden check run as plain ``python3`` in the
    tree (the tree on sys.path); or a check that imports the package in its own
    process and exits 1 on a wrong value."""
    package, modules = package_of(task)
    check = next(c.code for c in task.checks if c.name == "hidden_bug")
    in_process = f"import {package}.{modules[0]}\nraise SystemExit(1)\n"
    done = box.run(
        "mkdir w && cd w && tar xf ../t.tar && cp ../check.py ../inproc.py ../compare.py . && "
        + NAIVE[grader],
        language="bash",
        files={
            "t.tar": tree,
            "check.py": check,
            "inproc.py": in_process,
            "compare.py": comparing_check(task),
        },
    )
    return done.exit_code == 0


def test_no_grader_passes_the_untouched_package(bwrap_box):
    task = make_repo_task(3, "easy")
    tree = play(bwrap_box, task)
    assert not any(naive_passes(bwrap_box, task, tree, grader) for grader in NAIVE)


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_attacks_fool_a_naive_grader_but_not_the_hidden_checks(bwrap_box, attack):
    script, fooled, level = ATTACKS[attack]
    task = make_repo_task(3, level)
    tree = play(bwrap_box, task, script(task))
    assert naive_passes(bwrap_box, task, tree, fooled)  # the attack is real
    results = {r.name: r for r in run_checks(bwrap_box, tree, task.checks)}
    assert not results["hidden_bug"].passed, results


def test_answers_special_cased_for_every_visible_input_do_not_pass(bwrap_box):
    from envgym.envs.terminal.repofix import ledger, textstats

    plain = set(textstats.NAMES["pkg"] + ledger.NAMES["pkg"])  # no objects to memoise
    task = next(
        t for t in (make_repo_task(s, "easy") for s in range(40)) if package_of(t)[0] in plain
    )
    script = special_case(task)
    assert unittest_status(bwrap_box, task, script) == 0  # the visible tests are fooled
    results = grade(bwrap_box, task, script)
    assert not any(r.passed for r in results.values()), results


@pytest.mark.sweep  # about 5 min on bwrap
@pytest.mark.parametrize("level", LEVELS)
def test_sweep_oracle_passes_and_untouched_fails_on_100_seeds(bwrap_box, level):
    """100 seeds: the reference solution passes every check, and the untouched
    package fails the hidden tests of the bug (no setup: the starting tree is
    what the agent would hand back untouched)."""
    wrong = []
    for seed in range(100):
        task = make_repo_task(seed, level)
        assert not task.setup
        bug_check = [c for c in task.checks if c.name == "hidden_bug"]
        if run_checks(bwrap_box, starting_tree(task), bug_check)[0].passed:
            wrong.append((seed, "untouched passes"))
        solved = grade(bwrap_box, task, task.solution)
        wrong += [(seed, r.name, r.reason) for r in solved.values() if not r.passed]
    assert not wrong


def test_a_fix_that_breaks_something_else_earns_part(bwrap_box):
    from envgym.envs.terminal.repofix import textstats

    bug = next(b for b in textstats.DOMAIN.bugs if b.key == "textstats-top")
    task = build_task(textstats.DOMAIN, bug, 0, random.Random(0))
    path, source = next(
        (p, s) for p, s in task.files.items() if re.search(r"def \w+\(text, limit=8\)", s)
    )
    excerpt = re.search(r"def (\w+)\(text, limit=8\)", source)[1]
    breakage = f"cat >> {path} <<'EOF'\n\ndef {excerpt}(text, limit=8):\n    return ''\nEOF\n"
    results = grade(bwrap_box, task, task.solution + breakage)
    assert results["hidden_bug"].passed
    assert not results["hidden_regressions"].passed and not results["visible_tests"].passed
