"""One record of each standard code dataset as a Code-v0 `Problem`.

Each `Format` names the fields that identify it and converts one record,
returning a `Skip` (with its reason) for a record it cannot map faithfully
and raising ValueError for one that is malformed. Field names and grading
rules follow the datasets' own code: APPS's ``eval/testing_util.py``,
LiveCodeBench's ``lcb_runner/benchmarks/code_generation.py`` and
``evaluation/testing_util.py``, CodeContests' ``contest_problem.proto`` and
EvalPlus's ``evalplus/evaluate.py`` (docs/code-datasets.md says what each
loader reads and how). Function problems get their tests as Python
statements for the trusted harness; the helpers those statements call are
in `FUNCTION_SETUP` (a problem's ``setup``, run by the harness in the
sandbox, never here).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from envgym.envs.code.function_tests import (
    FUNCTION_SETUP,
    apps_call_tests,
    as_function_prompt,
    evalplus_setup,
    evalplus_tests,
    lcb_call_tests,
    wrap_solution_class,
)
from envgym.envs.code.lcb_private import decode_private_cases
from envgym.envs.code.problems import (
    DIFFICULTIES,
    IOCase,
    Problem,
    check_problem,
    problems_from_records,
    split_check,
    to_printable,
)

__all__ = ["FORMATS", "Format", "Skip", "detect_format"]

#: Cases shown to the agent from a set with no public/hidden split of its own.
PUBLIC_CASES = 1


@dataclass(frozen=True)
class Skip:
    """A record left out, and why (counted in the load's report)."""

    reason: str


@dataclass(frozen=True)
class Format:
    """A published layout: the fields that identify it, and its converter
    ``convert(record, where, fallback_id) -> Problem | Skip``."""

    name: str
    required: tuple[str, ...]
    example: str
    convert: Callable[[dict[str, Any], str, str], Problem | Skip]


def _need(record: dict, where: str, fmt: str, fields: tuple[str, ...]) -> None:
    missing = [f for f in fields if f not in record]
    if missing:
        have = ", ".join(sorted(map(str, record))[:20])
        raise ValueError(f"{where}: a {fmt} record needs {', '.join(missing)}; it has {have}")


def _string(record: dict, key: str, where: str, *, empty: bool = False) -> str:
    value = record.get(key)
    if value is None and empty:
        return ""
    if not isinstance(value, str) or (not empty and not value.strip()):
        got = type(value).__name__
        raise ValueError(f"{where}: {key!r} must be a non-empty string, got a {got}")
    return value


def _json_field(record: dict, key: str, where: str) -> Any:
    """A field that is JSON text in the published files (or already decoded)."""
    value = record.get(key)
    if isinstance(value, str):
        try:
            return json.loads(value)
        except (json.JSONDecodeError, RecursionError) as exc:
            raise ValueError(f"{where}: {key!r} is not valid JSON text: {exc}") from None
    return value


def _level(value: Any, table: dict[Any, str], default: str = "medium") -> str:
    """A dataset's difficulty as one of Code-v0's levels (`DIFFICULTIES`)."""
    if isinstance(value, str):
        value = value.strip().lower()
    level = table.get(value, default)
    assert level in DIFFICULTIES
    return level


def _text(value: Any) -> str:
    """APPS writes a case's stdin or stdout as a string or a list of lines."""
    if isinstance(value, list):
        return "\n".join(str(line) for line in value)
    if isinstance(value, str):
        return value
    raise ValueError(f"a case's input and output must be text, got a {type(value).__name__}")


def _stdio(
    task_id: str, prompt: str, solution: str, public, hidden, difficulty: str, split: str, **extra
) -> Problem:
    return check_problem(
        Problem(
            task_id=task_id,
            difficulty=difficulty,
            entry_point="",
            prompt=to_printable(prompt),
            solution=solution,
            tests=(),
            split=split,
            kind="stdio",
            public_io=tuple(public),
            hidden_io=tuple(hidden),
            **extra,
        )
    )


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


def _apps(record: dict, where: str, fallback: str) -> Problem | Skip:
    _need(record, where, "APPS/TACO", ("question", "input_output"))
    name = "taco" if "skill_types" in record or "source" in record else "apps"
    task_id = f"{name}/{record.get('problem_id', record.get('id', fallback))}"
    question = _string(record, "question", where)
    io = _json_field(record, "input_output", where)
    if io in (None, ""):
        return Skip("no input_output cases")
    if not isinstance(io, dict) or not isinstance(io.get("inputs"), list):
        raise ValueError(f'{where}: input_output must hold {{"inputs": [...], "outputs": [...]}}')
    inputs, outputs = io["inputs"], io.get("outputs")
    if not isinstance(outputs, list) or len(outputs) != len(inputs):
        raise ValueError(f"{where}: input_output has {len(inputs)} inputs but not as many outputs")
    if not inputs:
        return Skip("no input_output cases")
    solutions = _json_field(record, "solutions", where) if record.get("solutions") else []
    if not isinstance(solutions, list) or not all(isinstance(s, str) for s in solutions):
        raise ValueError(f"{where}: 'solutions' must be JSON text of a list of programs")
    # APPS holds some Python 2 programs: the reference is the first that parses as Python 3.
    solution = next((s for s in solutions if _parses(s)), "")
    level = _level(record.get("difficulty"), _APPS_LEVELS)
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
        cases = [IOCase(_text(i), _text(o)) for i, o in zip(inputs, outputs, strict=True)]
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None
    limits = {
        "time_limit_s": _taco_amount(record.get("time_limit"), "second"),
        "memory_mb": _taco_amount(record.get("memory_limit"), "megabyte"),
    }
    limits["memory_mb"] = int(limits["memory_mb"]) if limits["memory_mb"] else None
    return _stdio(task_id, question, solution, cases[:PUBLIC_CASES], cases, level, name, **limits)


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


def _codecontests(record: dict, where: str, fallback: str) -> Problem | Skip:
    _need(record, where, "CodeContests", ("name", "description", "public_tests", "private_tests"))
    name = _string(record, "name", where)
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
        level = _level(record.get("difficulty"), _CC_LEVELS)
    return _stdio(
        f"codecontests/{name.split('.')[0].strip() or fallback}",
        _string(record, "description", where),
        solution,
        public,
        hidden,
        level,
        "codecontests",
        time_limit_s=seconds or None,
        memory_mb=(int(memory) >> 20) or None,
    )


# ---------------------------------------------------------------- LiveCodeBench
def _lcb(record: dict, where: str, fallback: str) -> Problem | Skip:
    _need(record, where, "LiveCodeBench", ("question_content", "public_test_cases"))
    task_id = f"livecodebench/{record.get('question_id') or fallback}"
    public = _lcb_cases(_json_field(record, "public_test_cases", where), where, "public")
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
    level = _level(record.get("difficulty"), {"easy": "easy", "medium": "medium", "hard": "hard"})
    question = _string(record, "question_content", where)
    if kinds == {"stdin"}:
        io = [IOCase(c["input"], c["output"]) for c in cases]
        return _stdio(task_id, question, "", io[: len(public)], io[len(public) :] or io, level,
                      "livecodebench")  # fmt: skip
    if kinds != {"functional"}:
        return Skip("test cases mixing stdin and functional")
    metadata = _json_field(record, "metadata", where) or {}
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


# --------------------------------------------------------------------- MBPP
def _mbpp(record: dict, where: str, fallback: str) -> Problem | Skip:
    _need(record, where, "MBPP", ("code", "test_list"))
    code = _string(record, "code", where)
    # The full set names the statement "text"; the sanitized set, "prompt".
    text = _string(record, "text" if "text" in record else "prompt", where)
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
            setup="\n".join([*imports, _string(record, "test_setup_code", where, empty=True)]),
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
    _need(record, where, "EvalPlus", fields)
    task_id = _string(record, "task_id", where)
    entry = _string(record, "entry_point", where)
    if not entry.isidentifier():
        raise ValueError(f"{where}: entry_point must be a Python name, got {entry[:80]!r}")
    prompt = _string(record, "prompt", where)
    canonical = _string(record, "canonical_solution", where)
    # HumanEval+'s canonical solution continues the prompt; MBPP+'s stands alone.
    solution = canonical if f"def {entry}" in canonical else prompt + canonical
    inputs = _json_field(record, "base_input", where), _json_field(record, "plus_input", where)
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
    _need(record, where, "HumanEval", fields)
    entry = _string(record, "entry_point", where)
    if not entry.isidentifier():
        raise ValueError(f"{where}: entry_point must be a Python name, got {entry[:80]!r}")
    test = _string(record, "test", where)
    return check_problem(
        Problem(
            task_id=_string(record, "task_id", where),
            difficulty="humaneval",
            entry_point=entry,
            prompt=to_printable(_string(record, "prompt", where)),
            solution=_string(record, "canonical_solution", where),
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
        _apps,
    ),
    "codecontests": Format(
        "codecontests",
        ("name", "description", "public_tests", "private_tests"),
        '{"name": "1A. ...", "description": "...", "public_tests": {"input": ["1\\n"], '
        '"output": ["1\\n"]}, "private_tests": {"input": [], "output": []}, '
        '"solutions": {"language": [3], "solution": ["print(input())"]}}',
        _codecontests,
    ),
    "livecodebench": Format(
        "livecodebench",
        ("question_content", "public_test_cases"),
        '{"question_id": "abc001_a", "question_content": "...", "public_test_cases": '
        '"[{\\"input\\": \\"1\\\\n\\", \\"output\\": \\"1\\\\n\\", \\"testtype\\": \\"stdin\\"}]", '
        '"private_test_cases": "...", "starter_code": "", "metadata": "{}"}',
        _lcb,
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
