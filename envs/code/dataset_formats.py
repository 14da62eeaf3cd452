"""One record of each standard code dataset as a Code-v0 `Problem`.

Each `Format` names the fields that identify it and converts one record,
returning a `Skip` (with its reason) for a record it cannot map faithfully
and raising ValueError for one that is malformed. Field names and grading
rules follow the datasets' own code: APPS's ``eval/testing_util.py``,
LiveCodeBench's ``lcb_runner/benchmarks/code_generation.py`` and
``evaluation/testing_util.py``, CodeContests' ``contest_problem.proto`` and
EvalPlus's ``evalplus/evaluate.py`` (docs/code-datasets.md says what each
loader reads and how). The stdin/stdout sets'
converters are in `stdin_formats.py`; function problems get their tests as
Python statements for the trusted harness (`function_tests.py`).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from envgym.envs.code.function_tests import evalplus_setup, evalplus_tests
from envgym.envs.code.problems import (
    Problem,
    check_problem,
    problems_from_records,
    split_check,
    to_printable,
)
from envgym.envs.code.record_fields import PUBLIC_CASES, Skip, json_field, need, string_field
from envgym.envs.code.stdin_formats import (
    apps_problem,
    codecontests_problem,
    livecodebench_problem,
)

__all__ = ["FORMATS", "Format", "Skip", "detect_format"]


@dataclass(frozen=True)
class Format:
    """A published layout: the fields that identify it, and its converter
    ``convert(record, where, fallback_id) -> Problem | Skip``."""

    name: str
    required: tuple[str, ...]
    example: str
    convert: Callable[[dict[str, Any], str, str], Problem | Skip]


# --------------------------------------------------------------------- MBPP
def _mbpp(record: dict, where: str, fallback: str) -> Problem | Skip:
    need(record, where, "MBPP", ("code", "test_list"))
    code = string_field(record, "code", where)
    # The full set names the statement "text"; the sanitized set, "prompt".
    text = string_field(record, "text" if "text" in record else "prompt", where)
    imports = record.get("test_imports") or []
    if not isinstance(imports, list) or not all(isinstance(i, str) for i in imports):
        raise ValueError(f"{where}: test_imports must be a list of import lines")
    tests = record["test_list"]
    extra = record.get("challenge_test_list") or []
    if not isinstance(tests, list) or not isinstance(extra, list):
        raise ValueError(f"{where}: test_list and challenge_test_list must be lists of asserts")
    tests = [t for t in tests + extra if isinstance(t, str) and t.strip()]
    if not tests:
        return Skip("no tests")
    entry = _called_name(tests[0], code)
    if entry is None:
        return Skip("tests that call no function the reference code defines")
    return check_problem(
        Problem(
            task_id=f"mbpp/{record.get('task_id', fallback)}",
            difficulty="easy",
            entry_point=entry,
            prompt=to_printable(f'"""\n{text.strip()}\n{tests[0].strip()}\n"""\n'),
            solution=code.replace("\r\n", "\n"),
            tests=tuple(tests),
            public_tests=tuple(tests[:PUBLIC_CASES]),
            setup="\n".join([*imports, string_field(record, "test_setup_code", where, empty=True)]),
            split="mbpp",
        )
    )


def _called_name(test: str, code: str) -> str | None:
    """The function of ``code`` that ``test`` calls first."""
    try:
        defined = {n.name for n in ast.walk(ast.parse(code)) if isinstance(n, ast.FunctionDef)}
        calls = [n for n in ast.walk(ast.parse(test)) if isinstance(n, ast.Call)]
    except SyntaxError:
        return None
    names = [c.func.id for c in calls if isinstance(c.func, ast.Name) and c.func.id in defined]
    return names[0] if names else None


# ------------------------------------------------------- MBPP+ and HumanEval+
def _evalplus(record: dict, where: str, fallback: str) -> Problem | Skip:
    fields = ("task_id", "prompt", "canonical_solution", "entry_point", "base_input", "plus_input")
    need(record, where, "EvalPlus", fields)
    task_id = string_field(record, "task_id", where)
    entry = string_field(record, "entry_point", where)
    if not entry.isidentifier():
        raise ValueError(f"{where}: entry_point must be a Python name, got {entry[:80]!r}")
    prompt = string_field(record, "prompt", where)
    canonical = string_field(record, "canonical_solution", where)
    # HumanEval+'s canonical solution continues the prompt; MBPP+'s stands alone.
    solution = canonical if f"def {entry}" in canonical else prompt + canonical
    inputs = json_field(record, "base_input", where), json_field(record, "plus_input", where)
    if not all(isinstance(group, list) for group in inputs):
        raise ValueError(f"{where}: base_input and plus_input must be lists of argument lists")
    imports = record.get("test_imports") or []
    if not isinstance(imports, list) or not all(isinstance(i, str) for i in imports):
        raise ValueError(f"{where}: test_imports must be a list of import lines")
    try:
        tests = evalplus_tests(task_id, entry, [*inputs[0], *inputs[1]], record.get("atol") or 0)
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None
    if not tests:
        return Skip("no inputs")
    kind = "humanevalplus" if task_id.startswith("HumanEval") else "mbppplus"
    return check_problem(
        Problem(
            task_id=f"{kind}/{task_id.split('/')[-1]}",
            difficulty="easy",
            entry_point=entry,
            prompt=to_printable(prompt),
            solution=solution,
            tests=tests,
            public_tests=tests[:PUBLIC_CASES],
            setup="\n".join([*imports, evalplus_setup(solution, entry)]),
            split=kind,
        )
    )


# ---------------------------------------------------------------- HumanEval
def _humaneval(record: dict, where: str, fallback: str) -> Problem | Skip:
    """HumanEval's layout (OpenAI's HumanEval.jsonl and the sets written like
    it), read as Code-v0's ``humaneval`` split reads the wheel's copy."""
    fields = ("task_id", "prompt", "canonical_solution", "test", "entry_point")
    need(record, where, "HumanEval", fields)
    entry = string_field(record, "entry_point", where)
    if not entry.isidentifier():
        raise ValueError(f"{where}: entry_point must be a Python name, got {entry[:80]!r}")
    test = string_field(record, "test", where)
    return check_problem(
        Problem(
            task_id=string_field(record, "task_id", where),
            difficulty="humaneval",
            entry_point=entry,
            prompt=to_printable(string_field(record, "prompt", where)),
            solution=string_field(record, "canonical_solution", where),
            tests=split_check(test, entry),
            setup=test,
            split="humaneval",
        )
    )


# -------------------------------------------------------------------- envgym
def _envgym(record: dict, where: str, fallback: str) -> Problem | Skip:
    (problem,) = problems_from_records([record], where, split="custom")
    return problem


FORMATS: dict[str, Format] = {
    "evalplus": Format(
        "evalplus",
        ("task_id", "prompt", "canonical_solution", "entry_point", "base_input", "plus_input"),
        '{"task_id": "Mbpp/2", "prompt": "...", "canonical_solution": "def f(a):\\n  ...", '
        '"entry_point": "f", "base_input": [[1]], "plus_input": [[2]], "atol": 0}',
        _evalplus,
    ),
    "humaneval": Format(
        "humaneval",
        ("task_id", "prompt", "canonical_solution", "test", "entry_point"),
        '{"task_id": "HumanEval/0", "prompt": "def f(x):\\n    \\"\\"\\"...\\"\\"\\"\\n", '
        '"canonical_solution": "    return x\\n", "test": "def check(candidate): ...", '
        '"entry_point": "f"}',
        _humaneval,
    ),
    "mbpp": Format(
        "mbpp",
        ("code", "test_list"),
        '{"task_id": 1, "text": "Write a function ...", "code": "def f(a): ...", '
        '"test_list": ["assert f(1) == 2"], "test_setup_code": "", "challenge_test_list": []}',
        _mbpp,
    ),
    "apps": Format(
        "apps",
        ("question", "input_output"),
        '{"problem_id": 0, "question": "...", "solutions": "[\\"print(1)\\"]", '
        '"input_output": "{\\"inputs\\": [\\"1\\\\n\\"], \\"outputs\\": [\\"1\\\\n\\"]}", '
        '"difficulty": "interview", "starter_code": ""}',
        apps_problem,
    ),
    "codecontests": Format(
        "codecontests",
        ("name", "description", "public_tests", "private_tests"),
        '{"name": "1A. ...", "description": "...", "public_tests": {"input": ["1\\n"], '
        '"output": ["1\\n"]}, "private_tests": {"input": [], "output": []}, '
        '"solutions": {"language": [3], "solution": ["print(input())"]}}',
        codecontests_problem,
    ),
    "livecodebench": Format(
        "livecodebench",
        ("question_content", "public_test_cases"),
        '{"question_id": "abc001_a", "question_content": "...", "public_test_cases": '
        '"[{\\"input\\": \\"1\\\\n\\", \\"output\\": \\"1\\\\n\\", \\"testtype\\": \\"stdin\\"}]", '
        '"private_test_cases": "...", "starter_code": "", "metadata": "{}"}',
        livecodebench_problem,
    ),
    "envgym": Format(
        "envgym",
        ("task_id", "difficulty", "prompt", "solution"),
        '{"task_id": "mine/1", "difficulty": "easy", "prompt": "def f(x):", "solution": "...", '
        '"entry_point": "f", "tests": ["assert f(1) == 1"]}',
        _envgym,
    ),
}


def detect_format(record: dict[str, Any], source: str) -> str:
    """The first format of `FORMATS` whose fields ``record`` has; else a
    ValueError naming ``source``, the fields it has and the layouts read."""
    for name, fmt in FORMATS.items():
        if all(key in record for key in fmt.required):
            return name
    have = ", ".join(sorted(map(str, record))[:30]) or "none"
    layouts = "\n".join(
        f"  {name}: fields {', '.join(fmt.required)}; e.g. {fmt.example}"
        for name, fmt in FORMATS.items()
    )
    raise ValueError(
        f"{source}: its first record matches no problem format (its fields: {have}). "
        f"The layouts read:\n{layouts}\nPass format= to name one."
    )
