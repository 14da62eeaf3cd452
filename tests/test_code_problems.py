"""envgym/Code-v0's own problem set (envs/code/problems/basic-*.json): at least
150 original problems over three difficulties, every reference solution passes
its own tests and every deliberately broken variant fails one, so the tests can
tell a right solution from a wrong one. Every solution runs in a bwrap sandbox."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest
from sandbox_backends import require_backend

PROBLEMS_DIR = Path(__file__).resolve().parent.parent / "envs" / "code" / "problems"
DIFFICULTIES = ("easy", "medium", "hard")
TOPICS = {"strings", "lists", "dicts", "math", "parsing", "algorithms"}
FIELDS = {"task_id", "difficulty", "topic", "entry_point", "prompt", "solution",
          "public_tests", "tests", "broken"}  # fmt: skip


def _problems() -> list[dict]:
    problems = []
    for difficulty in DIFFICULTIES:
        path = PROBLEMS_DIR / f"basic-{difficulty}.json"
        if path.exists():
            problems += json.loads(path.read_text())
    return problems


PROBLEMS = _problems()
pytestmark = pytest.mark.skipif(not PROBLEMS, reason="no problem files yet")

#: Runs a solution and its tests; prints one JSON line of pass/fail per test.
JOB = """
import json
ns = {}
results = []
try:
    exec(compile(SOLUTION, "solution.py", "exec"), ns)
    compiled = True
except Exception as exc:
    compiled = False
for test in TESTS:
    try:
        exec(compile(test, "test.py", "exec"), dict(ns))
        results.append(True)
    except Exception:
        results.append(False)
print(MARKER + json.dumps({"compiled": compiled, "results": results}))
"""


def _run(pool, solution: str, tests: list[str]) -> dict:
    marker = "@@result@@"
    code = f"SOLUTION = {solution!r}\nTESTS = {tests!r}\nMARKER = {marker!r}\n" + JOB
    result = pool.run(code, timeout_s=10)
    lines = [line for line in result.stdout.splitlines() if line.startswith(marker)]
    assert lines, f"no result line; exit {result.exit_code}, stderr {result.stderr[-500:]}"
    return json.loads(lines[-1][len(marker) :])


@pytest.fixture(scope="module")
def pool():
    require_backend("bwrap")
    from envgym.sandbox import SandboxPool

    with SandboxPool(size=2, backend="bwrap") as pool:
        yield pool


def test_the_set_is_150_original_problems_over_three_levels_and_six_topics():
    assert len(PROBLEMS) >= 150
    ids = [p["task_id"] for p in PROBLEMS]
    assert len(set(ids)) == len(ids), "task ids must be unique"
    levels = Counter(p["difficulty"] for p in PROBLEMS)
    assert set(levels) == set(DIFFICULTIES) and min(levels.values()) >= 40, levels
    assert {p["topic"] for p in PROBLEMS} == TOPICS
    for p in PROBLEMS:
        assert set(p) == FIELDS, p["task_id"]
        assert re.fullmatch(rf"basic/{p['difficulty']}/\d{{3}}-[a-z0-9-]+", p["task_id"])
        assert len(p["tests"]) >= 5, p["task_id"]
        assert f"def {p['entry_point']}(" in p["prompt"], p["task_id"]
        assert f"def {p['entry_point']}(" in p["solution"], p["task_id"]


@pytest.mark.parametrize("problem", PROBLEMS, ids=lambda p: p["task_id"])
def test_the_reference_passes_every_test_and_the_broken_variant_fails_one(pool, problem):
    tests = problem["public_tests"] + problem["tests"]
    reference = _run(pool, problem["solution"], tests)
    assert reference["compiled"] and all(reference["results"]), reference
    broken = _run(pool, problem["broken"], problem["tests"])
    assert not all(broken["results"]), "the hidden tests cannot tell the broken variant apart"
