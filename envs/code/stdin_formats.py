"""The stdin/stdout datasets' records as Code-v0 problems: APPS and TACO
(call-based problems become function problems), CodeContests and
LiveCodeBench (its functional problems become function problems). Field
names and rules follow APPS's ``eval/testing_util.py``, CodeContests'
``contest_problem.proto`` and LiveCodeBench's ``code_generation.py``;
docs/code-datasets.md says what each reads."""

from __future__ import annotations

import ast
import re
from typing import Any

from envgym.envs.code.function_tests import (
    FUNCTION_SETUP,
    apps_call_tests,
    as_function_prompt,
    lcb_call_tests,
    wrap_solution_class,
)
from envgym.envs.code.lcb_private import decode_private_cases
from envgym.envs.code.problems import IOCase, Problem, check_problem, to_printable
from envgym.envs.code.record_fields import (
    PUBLIC_CASES,
    Skip,
    case_text,
    json_field,
    level_of,
    need,
    stdio_problem,
    string_field,
)

__all__ = ["apps_problem", "codecontests_problem", "livecodebench_problem"]


# ------------------------------------------------------------------ APPS / TACO
_APPS_LEVELS = {
    "introductory": "easy",
    "easy": "easy",
    "interview": "medium",
    "medium": "medium",
    "medium_hard": "hard",
    "competition": "hard",
    "hard": "hard",
    "very_hard": "hard",
}


def apps_problem(record: dict, where: str, fallback: str) -> Problem | Skip:
    need(record, where, "APPS/TACO", ("question", "input_output"))
    name = "taco" if "skill_types" in record or "source" in record else "apps"
    task_id = f"{name}/{record.get('problem_id', record.get('id', fallback))}"
    question = string_field(record, "question", where)
    io = json_field(record, "input_output", where)
    if io in (None, ""):
        return Skip("no input_output cases")
    if not isinstance(io, dict) or not isinstance(io.get("inputs"), list):
        raise ValueError(f'{where}: input_output must hold {{"inputs": [...], "outputs": [...]}}')
    inputs, outputs = io["inputs"], io.get("outputs")
    if not isinstance(outputs, list) or len(outputs) != len(inputs):
        raise ValueError(f"{where}: input_output has {len(inputs)} inputs but not as many outputs")
    if not inputs:
        return Skip("no input_output cases")
    solutions = json_field(record, "solutions", where) if record.get("solutions") else []
    if not isinstance(solutions, list) or not all(isinstance(s, str) for s in solutions):
        raise ValueError(f"{where}: 'solutions' must be JSON text of a list of programs")
    # APPS holds some Python 2 programs: the reference is the first that parses as Python 3.
    solution = next((s for s in solutions if _parses(s)), "")
    level = level_of(record.get("difficulty"), _APPS_LEVELS)
    starter = record.get("starter_code") or ""
    fn_name = io.get("fn_name")
    if fn_name:
        if not isinstance(fn_name, str) or not fn_name.isidentifier():
            raise ValueError(f"{where}: fn_name must be a Python name, got {fn_name!r}")
        if not all(isinstance(args, list) for args in inputs):
            return Skip("fn_name case whose input is not a list of arguments")
        tests = apps_call_tests(fn_name, inputs, outputs)
        return check_problem(
            Problem(
                task_id=task_id,
                difficulty=level,
                entry_point=fn_name,
                prompt=to_printable(as_function_prompt(question, starter, fn_name)),
                solution=wrap_solution_class(solution, fn_name) if solution else "",
                tests=tests,
                public_tests=tests[:PUBLIC_CASES],
                setup=FUNCTION_SETUP,
                split=name,
            )
        )
    try:
        cases = [IOCase(case_text(i), case_text(o)) for i, o in zip(inputs, outputs, strict=True)]
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None
    limits = {
        "time_limit_s": _taco_amount(record.get("time_limit"), "second"),
        "memory_mb": _taco_amount(record.get("memory_limit"), "megabyte"),
    }
    limits["memory_mb"] = int(limits["memory_mb"]) if limits["memory_mb"] else None
    return stdio_problem(
        task_id, question, solution, cases[:PUBLIC_CASES], cases, level, name, **limits
    )


def _parses(program: str) -> bool:
    try:
        ast.parse(program)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def _taco_amount(value: Any, unit: str) -> float | None:
    """TACO's limits as written ("2 seconds", "256 megabytes"); None when
    absent or in another unit."""
    match = re.fullmatch(rf"\s*(\d+(?:\.\d+)?)\s*{unit}s?\s*", str(value or ""))
    return float(match[1]) if match and float(match[1]) > 0 else None


# ----------------------------------------------------------------- CodeContests
#: CodeContests' Language enum (contest_problem.proto): PYTHON is Python 2.
_PYTHON3 = (3, "PYTHON3")
#: CodeContests' Difficulty enum: 1-5 EASY..HARDEST, 6 EXTERNAL, 7.. Codeforces' A, B, C...
_CC_LEVELS = {1: "easy", 2: "medium", 3: "hard", 4: "hard", 5: "hard", 7: "easy", 8: "easy"}
_CC_LEVELS |= {9: "medium", 10: "medium", "EASY": "easy", "MEDIUM": "medium", "HARD": "hard"}


def _cc_cases(record: dict, key: str, where: str) -> list[IOCase]:
    tests = record.get(key) or {}
    if not isinstance(tests, dict):
        raise ValueError(f'{where}: {key!r} must be {{"input": [...], "output": [...]}}')
    inputs, outputs = tests.get("input") or [], tests.get("output") or []
    if not isinstance(inputs, list) or not isinstance(outputs, list) or len(inputs) != len(outputs):
        raise ValueError(f"{where}: {key!r} needs input and output lists of the same length")
    if not all(isinstance(x, str) for x in inputs + outputs):
        raise ValueError(f"{where}: {key!r} cases must be strings")
    return [IOCase(i, o) for i, o in zip(inputs, outputs, strict=True)]


def codecontests_problem(record: dict, where: str, fallback: str) -> Problem | Skip:
    need(record, where, "CodeContests", ("name", "description", "public_tests", "private_tests"))
    name = string_field(record, "name", where)
    public = _cc_cases(record, "public_tests", where)
    hidden = _cc_cases(record, "private_tests", where) + _cc_cases(record, "generated_tests", where)
    hidden = hidden or public
    if not hidden:
        return Skip("no tests")
    solutions = record.get("solutions") or {}
    languages, programs = solutions.get("language") or [], solutions.get("solution") or []
    pairs = zip(languages, programs, strict=False)
    solution = next((p for lang, p in pairs if lang in _PYTHON3 and isinstance(p, str)), "")
    limit = record.get("time_limit") or {}
    seconds = (limit.get("seconds") or 0) + (limit.get("nanos") or 0) / 1e9
    memory = record.get("memory_limit_bytes") or 0
    rating = record.get("cf_rating") or 0
    if rating:
        level = "easy" if rating < 1400 else "medium" if rating < 2000 else "hard"
    else:
        level = level_of(record.get("difficulty"), _CC_LEVELS)
    return stdio_problem(
        f"codecontests/{name.split('.')[0].strip() or fallback}",
        string_field(record, "description", where),
        solution,
        public,
        hidden,
        level,
        "codecontests",
        time_limit_s=seconds or None,
        memory_mb=(int(memory) >> 20) or None,
    )


# ---------------------------------------------------------------- LiveCodeBench
def livecodebench_problem(record: dict, where: str, fallback: str) -> Problem | Skip:
    need(record, where, "LiveCodeBench", ("question_content", "public_test_cases"))
    task_id = f"livecodebench/{record.get('question_id') or fallback}"
    public = _lcb_cases(json_field(record, "public_test_cases", where), where, "public")
    private_text = record.get("private_test_cases") or "[]"
    if not isinstance(private_text, str):
        raise ValueError(f"{where}: 'private_test_cases' must be a string")
    try:
        private = _lcb_cases(decode_private_cases(private_text), where, "private")
    except ValueError as exc:
        raise ValueError(f"{where}: private_test_cases: {exc}") from None
    cases = public + private
    if not cases:
        return Skip("no test cases")
    kinds = {case.get("testtype") for case in cases}
    level = level_of(record.get("difficulty"), {"easy": "easy", "medium": "medium", "hard": "hard"})
    question = string_field(record, "question_content", where)
    if kinds == {"stdin"}:
        io = [IOCase(c["input"], c["output"]) for c in cases]
        shown, graded = io[: len(public)], io[len(public) :] or io
        return stdio_problem(task_id, question, "", shown, graded, level, "livecodebench")
    if kinds != {"functional"}:
        return Skip("test cases mixing stdin and functional")
    metadata = json_field(record, "metadata", where) or {}
    fn_name = metadata.get("func_name") if isinstance(metadata, dict) else None
    if not isinstance(fn_name, str) or not fn_name.isidentifier():
        return Skip("functional tests without metadata.func_name")
    try:
        tests = lcb_call_tests(fn_name, cases)
    except ValueError as exc:
        return Skip(f"functional case that is not JSON ({exc})")
    starter = record.get("starter_code") or ""
    return check_problem(
        Problem(
            task_id=task_id,
            difficulty=level,
            entry_point=fn_name,
            prompt=to_printable(as_function_prompt(question, starter, fn_name)),
            solution="",
            tests=tests[len(public) :] or tests,
            public_tests=tests[: len(public)],
            setup=FUNCTION_SETUP,
            split="livecodebench",
        )
    )


def _lcb_cases(value: Any, where: str, which: str) -> list[dict]:
    if not isinstance(value, list) or not all(
        isinstance(c, dict) and isinstance(c.get("input"), str) and isinstance(c.get("output"), str)
        for c in value
    ):
        raise ValueError(
            f'{where}: {which} test cases must be a list of {{"input": str, "output": str, '
            '"testtype": "stdin" | "functional"}}'
        )
    return value
