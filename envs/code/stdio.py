"""Grading and running stdin/stdout programs (the ``stdio`` kind of Code problem).

A submission is a whole Python program. One sandbox job (`stdio_driver.py`,
trusted) runs it once per case with the case's input on stdin and the case's
time and memory limits, and reports what it printed; the expected outputs
never enter the sandbox. Here, on the host, each output is judged by the
problem's checker (`checkers.py`): the program's output is data, it cannot
print a verdict. A case the driver did not report (the job died or ran out of
time) fails, and nothing in the job's output can make `grade_stdio` raise.
Cases whose outputs together could pass the sandbox's output limit are split
over several jobs.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envgym.envs.code.checkers import check_output
from envgym.envs.code.execution import (
    Grade,
    JobOutcome,
    marked_records,
    run_job,
    trusted_job,
)
from envgym.envs.code.problems import IOCase, Problem, to_printable
from envgym.sandbox import ExecResult, SandboxPool

__all__ = ["STDIO_RUN_TOOL", "CaseLimits", "grade_stdio", "run_program"]

DRIVER_PATH = Path(__file__).with_name("stdio_driver.py")
#: The output a case may print, beyond twice its expected output's length.
OUTPUT_SLACK = 4096
#: What a custom run may print (the agent sees the first 2,000 characters).
RUN_OUTPUT = 64 * 1024
#: Base64 characters of case outputs one job may report (the sandbox keeps
#: 1 MiB of a job's stdout); more go to another job.
JOB_OUTPUT_BUDGET = 700_000
#: Characters of a public case's input, expected and actual output shown.
SHOWN_CHARS = 300

STDIO_RUN_TOOL: dict = {
    "type": "function",
    "function": {
        "name": "run_python",
        "description": (
            "Run a Python 3 program in a sandbox with the given stdin (no network, a fresh "
            "empty folder each run, the problem's time and memory limits). Returns its exit "
            "status, stdout and stderr inside <output>...</output>."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "code": {"type": "string", "description": "The whole program."},
                "stdin": {"type": "string", "description": "The program's input (optional)."},
            },
            "required": ["code"],
        },
    },
}


@dataclass(frozen=True)
class CaseLimits:
    """Per-case limits: seconds of wall time and megabytes of address space."""

    time_limit_s: float
    memory_mb: int

    @classmethod
    def of(cls, problem: Problem, time_limit_s: float, memory_mb: int) -> CaseLimits:
        """The problem's own limits, else the given defaults."""
        return cls(problem.time_limit_s or time_limit_s, problem.memory_mb or memory_mb)


def _case(index: int, text: str, limits: CaseLimits, max_output: int) -> dict[str, Any]:
    return {
        "index": index,
        "input": text,
        "time_limit_s": limits.time_limit_s,
        "memory_mb": limits.memory_mb,
        "max_output": max_output,
    }


def _valid(record: Any) -> bool:
    if not isinstance(record, dict) or type(record.get("index")) is not int:
        return False
    if record["index"] == -1:
        return type(record.get("compiles")) is bool
    optional_ints = (record.get("exit"), record.get("signal"))
    return (
        all(v is None or type(v) is int for v in optional_ints)
        and type(record.get("timed_out")) is bool
        and type(record.get("output_limit")) is bool
        and type(record.get("stdout")) is str
        and type(record.get("stderr")) is str
    )


def _read_records(stdout: str, mark: str) -> dict[int, dict[str, Any]]:
    """The driver's records in `stdout`, the first per index; anything else is ignored."""
    records: dict[int, dict[str, Any]] = {}
    for record in marked_records(stdout, mark):
        if _valid(record):
            records.setdefault(record["index"], record)
    return records


def _output(record: dict[str, Any]) -> str:
    try:
        data = base64.b64decode(record["stdout"], validate=True)
    except (binascii.Error, ValueError):
        return ""
    return data.decode("utf-8", errors="replace")


def _run_driver(
    pool: SandboxPool | None, code: str, cases: list[dict[str, Any]], timeout_s: float
) -> tuple[JobOutcome, dict[int, dict[str, Any]]]:
    mark = "@@envgym-case-" + secrets.token_hex(16) + "@@"

    def stdin(limit: float) -> str:
        return mark + "\n" + json.dumps({"cases": cases, "timeout_s": limit})

    program, files = trusted_job(DRIVER_PATH)
    files = {**files, "submission.py": code}
    outcome = run_job(pool, program, timeout_s, files=files, stdin=stdin)
    return outcome, _read_records(outcome.result.stdout, mark)


def _verdict(record: dict[str, Any] | None, limits: CaseLimits) -> str | None:
    """Why a case failed before its output is judged, or None."""
    if record is None:
        return "not run (the grading job ended first)"
    if record["timed_out"]:
        return f"time limit exceeded ({limits.time_limit_s:g} s)"
    if record["output_limit"]:
        return "output limit exceeded"
    if record["exit"] != 0 and "MemoryError" in record["stderr"]:
        return f"memory limit exceeded ({limits.memory_mb} MB)"
    if record["signal"] is not None:
        return f"killed by signal {record['signal']}"
    if record["exit"] != 0:
        last = record["stderr"].strip().splitlines()[-1:] or [""]
        return f"runtime error (exit status {record['exit']}) {last[0][:200]}".rstrip()
    return None


def _chunks(cases: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The cases in order, split so that no job's reported outputs pass the budget."""
    chunks: list[list[dict[str, Any]]] = [[]]
    used = 0
    for case in cases:
        size = case["max_output"] * 4 // 3 + 2 * STDERR_BUDGET
        if chunks[-1] and used + size > JOB_OUTPUT_BUDGET:
            chunks.append([])
            used = 0
        chunks[-1].append(case)
        used += size
    return chunks


#: Characters a record's stderr may take (the driver reports 1,000; JSON may escape them).
STDERR_BUDGET = 6000


def grade_stdio(
    pool: SandboxPool | None,
    problem: Problem,
    code: str,
    timeout_s: float,
    limits: CaseLimits,
) -> tuple[Grade, JobOutcome | None]:
    """Run `code` on every public and hidden case of `problem` and judge each
    output on the host with the problem's checker."""
    cases = [*problem.public_io, *problem.hidden_io]
    specs = [
        _case(i, c.input, limits, 2 * len(c.output.encode()) + OUTPUT_SLACK)
        for i, c in enumerate(cases)
    ]
    records: dict[int, dict[str, Any]] = {}
    outcome: JobOutcome | None = None
    duration, sandbox_error, compiles, load_error = 0.0, None, False, None
    for chunk in _chunks(specs):
        outcome, found = _run_driver(pool, code, chunk, timeout_s)
        duration += outcome.result.duration_s
        sandbox_error = sandbox_error or outcome.sandbox_error
        head = found.pop(-1, None)
        if head is None:
            load_error = "the program was not graded" + (
                f": {sandbox_error}" if sandbox_error else ""
            )
            break
        compiles = head["compiles"]
        if not compiles:
            load_error = str(head.get("error") or "the program does not compile")
            break
        records.update((i, r) for i, r in found.items() if 0 <= i < len(cases))
    passed: list[bool] = []
    errors: list[str | None] = []
    for index, case in enumerate(cases):
        record = records.get(index)
        why = _verdict(record, limits) if compiles else "the program does not compile"
        if why is None and not check_output(
            problem.checker, _output(record), case.output, case.input
        ):
            why = "wrong answer"
        passed.append(why is None)
        errors.append(why)
    public = len(problem.public_io)
    got = [_output(records[i]) if i in records else None for i in range(public)]
    grade = Grade(
        compiles=compiles,
        load_error=load_error,
        public=list(passed[:public]),
        public_errors=errors[:public],
        hidden=list(passed[public:]),
        sandbox_error=sandbox_error,
        duration_s=duration,
        details={"public_outputs": got, "hidden_errors": errors[public:]},
    )
    return grade, outcome


def run_program(
    pool: SandboxPool | None, code: str, stdin: str, timeout_s: float, limits: CaseLimits
) -> JobOutcome:
    """Run `code` once on `stdin` under the case limits: a custom run, as the
    agent sees it through `envgym.envs.code.execution.format_output`."""
    outcome, records = _run_driver(pool, code, [_case(0, stdin, limits, RUN_OUTPUT)], timeout_s)
    head, record = records.get(-1), records.get(0)
    if head is not None and not head["compiles"]:
        result = ExecResult(stdout="", stderr=str(head.get("error") or ""), exit_code=1)
        return JobOutcome(result, None)
    if record is None:
        failed = ExecResult("", "", -1, duration_s=outcome.result.duration_s)
        return JobOutcome(failed, outcome.sandbox_error or "the run ended before it reported")
    why = _verdict(record, limits)
    problem = why if why and not why.startswith("runtime error") else None
    exit_code = record["exit"] if record["exit"] is not None else -1
    result = ExecResult(
        stdout=_output(record),
        stderr=record["stderr"],
        exit_code=exit_code,
        timed_out=record["timed_out"],
        duration_s=outcome.result.duration_s,
    )
    return JobOutcome(result, problem)


def statement(problem: Problem, limits: CaseLimits) -> str:
    """A stdio problem as the agent reads it: the statement, the examples, the limits."""
    parts = [problem.prompt.rstrip()]
    for number, case in enumerate(problem.public_io, 1):
        parts.append(
            f"Example {number} input:\n```\n{case.input.rstrip()}\n```\n"
            f"Example {number} output:\n```\n{case.output.rstrip()}\n```"
        )
    parts.append(
        f"Limits per test: {limits.time_limit_s:g} s, {limits.memory_mb} MB. "
        + _checker_note(problem.checker)
    )
    return "\n\n".join(parts)


def _checker_note(checker: str | None) -> str:
    return {
        None: "Output is compared line by line (trailing spaces and blank lines ignored).",
        "tokens": "Output is compared token by token (any whitespace between tokens).",
        "float": "Output is compared token by token; numbers may differ by 1e-6.",
        "lines-unordered": "Output lines may come in any order.",
    }.get(checker, f"Output is judged by the {checker!r} checker.")


def _clip(text: str) -> str:
    text = text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS] + " [...]"
    return text.rstrip("\n")


def grade_text(grade: Grade, problem: Problem) -> str:
    """What the agent reads after submitting: each failed public case with its
    input, expected and actual output; hidden cases as counts only."""
    lines = []
    if grade.sandbox_error:
        lines.append(f"Grading was cut short: {grade.sandbox_error}.")
    if not grade.compiles:
        lines.append(f"Your program did not compile: {grade.load_error}.")
    outputs = grade.details.get("public_outputs") or []
    for number, (case, ok, why) in enumerate(
        zip(problem.public_io, grade.public, grade.public_errors, strict=True), 1
    ):
        if grade.compiles and not ok:
            got = outputs[number - 1] if number - 1 < len(outputs) else None
            lines.append(f"Example {number} failed: {why}.")
            lines.append(f"Input:\n{_clip(case.input)}\nExpected:\n{_clip(case.output)}")
            if got is not None:
                lines.append(f"Your output:\n{_clip(got)}")
    if grade.public:
        lines.append(f"Examples passed: {grade.public_passed}/{len(grade.public)}.")
    lines.append(f"Hidden tests passed: {grade.hidden_passed}/{len(grade.hidden)}.")
    return to_printable(_CONTROL.sub("?", "\n".join(lines)))


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def privileged(problem: Problem) -> dict[str, Any]:
    """The trainer-only data of a stdio problem."""

    def cases(io: tuple[IOCase, ...]) -> list[dict[str, str]]:
        return [{"input": c.input, "output": c.output} for c in io]

    return {
        "tests": cases(problem.hidden_io),
        "public_tests": cases(problem.public_io),
        "solution": problem.solution,
        "checker": problem.checker,
    }
