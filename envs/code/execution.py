"""Running the Code env's jobs in a sandbox: free-form runs, and grading a
submission against its tests in one job whose results cannot be forged by
printing.

A grading job runs `_HARNESS` with the submission and the tests as files and a
random marker on stdin. The harness runs the submission with its output sent
to a buffer, then each test in a copy of the submission's namespace, and after
each one writes a result line that starts with the marker. The host reads
only lines that carry this job's marker, so a submission that prints a result
line of its own (it never sees the marker in its output or on disk) changes
nothing; a test the harness did not report (the job died, timed out or was
killed) counts as failed. A submission that digs the marker out of the
harness's memory could still forge a line: the marker stops printed forgeries,
not a submission written to attack this harness. Nor do plain ``assert``
tests stop a function that returns an object whose ``__eq__`` always says
True; problem sets that care compare types in their tests.
"""

from __future__ import annotations

import json
import re
import secrets
import traceback
from dataclasses import dataclass, field
from typing import Any

from envgym.envs.code.problems import Problem, to_printable
from envgym.sandbox import ExecResult, SandboxError, SandboxPool, shared_pool

__all__ = [
    "Grade",
    "JobOutcome",
    "format_output",
    "grade_submission",
    "run_code",
]

#: Characters of stdout and of stderr shown to the agent per run.
MAX_STREAM_CHARS = 2000

#: The sandbox runner's own frame atop a traceback: not the agent's code.
_RUNNER_FRAME = re.compile(r'  File "[^"\n]*runner\.py", line \d+, in _child\n(?:    [^\n]*\n)*')


@dataclass
class JobOutcome:
    """One sandbox job as the env accounts for it."""

    result: ExecResult
    #: why the sandbox failed (timeout, memory, crash, could not start), or None
    sandbox_error: str | None = None


def _sandbox_problem(result: ExecResult, timeout_s: float) -> str | None:
    if result.error:
        return f"the sandbox failed: {result.error}"
    if result.timed_out:
        return f"the job ran past the time limit of {timeout_s:g} s and was stopped"
    if result.memory_exceeded:
        return "the job used more memory than the sandbox allows and was killed"
    return None


def _run(
    pool: SandboxPool | None,
    code: str,
    timeout_s: float,
    files: dict[str, str] | None = None,
    stdin: str | None = None,
) -> JobOutcome:
    try:
        pool = pool if pool is not None else shared_pool()
        with pool.lease() as box:
            limit = min(timeout_s, box.limits.timeout_s)
            result = box.run(code, files=files, stdin=stdin, timeout_s=limit)
    except (SandboxError, OSError, ValueError) as exc:
        failed = ExecResult(stdout="", stderr="", exit_code=-1, error=str(exc))
        return JobOutcome(failed, f"the sandbox could not run the job: {exc}")
    return JobOutcome(result, _sandbox_problem(result, limit))


def run_code(pool: SandboxPool | None, code: str, timeout_s: float) -> JobOutcome:
    """Run the agent's code as a program (no files, no stdin)."""
    return _run(pool, code, timeout_s)


def _cut(text: str, head: bool) -> str:
    if len(text) <= MAX_STREAM_CHARS:
        return text
    cut = len(text) - MAX_STREAM_CHARS
    if head:
        return f"{text[:MAX_STREAM_CHARS]}\n[... {cut} more characters cut ...]"
    return f"[... {cut} characters cut ...]\n{text[-MAX_STREAM_CHARS:]}"


def format_output(outcome: JobOutcome) -> str:
    """A run as the agent sees it: exit status, stdout (its start) and stderr
    (its end, where a traceback ends), in an <output> block."""
    result = outcome.result
    stderr = _RUNNER_FRAME.sub("", result.stderr)
    lines = ["<output>", f"exit status: {result.exit_code}"]
    if outcome.sandbox_error:
        lines.append(f"sandbox: {outcome.sandbox_error}")
    lines += ["stdout:", _cut(result.stdout, head=True).rstrip("\n")]
    lines += ["stderr:", _cut(stderr, head=False).rstrip("\n"), "</output>"]
    return to_printable("\n".join(lines))


# The harness gets the marker on stdin, then removes its own file and the tests
# file, so neither the submission's output nor the work dir holds the marker.
# Everything it calls after the submission has run is bound to a local first:
# a submission that replaces builtins.exec, json.dumps or os.write changes
# nothing the harness uses.
_HARNESS = r"""
import contextlib, io, json, os, sys, traceback

def _main():
    mark = sys.stdin.readline().strip()
    with open("tests.json", encoding="utf-8") as f:
        spec = json.load(f)
    with open("submission.py", encoding="utf-8") as f:
        source = f.read()
    for name in ("tests.json", "main.py"):
        try:
            os.remove(name)
        except OSError:
            pass
    out, write, run, build, copy, number = os.dup(1), os.write, exec, compile, dict, enumerate
    base, redirect, callable_, format_exc = BaseException, contextlib.redirect_stdout, callable, (
        traceback.format_exception_only)
    safe = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
    safe |= set(" .,:;()[]{}<>=+-*/'_!?#%&|^~@$")

    def report(kind, index, ok, error):
        text = "".join(c if c in safe else " " for c in (error or "")[-400:])
        line = '\n%s{"kind": "%s", "index": %d, "ok": %s, "error": "%s"}\n' % (
            mark, kind, index, "true" if ok else "false", text)
        write(out, line.encode())

    def describe(exc):
        return "".join(format_exc(type(exc), exc)).strip()

    sink = io.StringIO()
    namespace = {"__name__": "solution"}
    try:
        with redirect(sink):
            run(build(source, "submission.py", "exec"), namespace)
        error = None
        if not callable_(namespace.get(spec["entry_point"])):
            error = "the code does not define a function named " + spec["entry_point"]
    except base as exc:
        tb = traceback.extract_tb(exc.__traceback__)
        where = [f for f in tb if f.filename == "submission.py"]
        line = " (submission.py, line %d)" % where[-1].lineno if where else ""
        error = describe(exc) + line
    report("load", 0, error is None, error)
    setup = build(spec["setup"], "<setup>", "exec") if spec["setup"] else None
    for kind in ("public", "hidden"):
        for index, test in number(spec[kind]):
            scope = copy(namespace)
            try:
                with redirect(sink):
                    if setup is not None:
                        run(setup, scope)
                    run(build(test, "<%s test %d>" % (kind, index + 1), "exec"), scope)
                ok, error = True, None
            except base as exc:
                ok, error = False, describe(exc)
            sink.seek(0)
            sink.truncate()
            report(kind, index, ok, error)

_main()
"""


@dataclass
class Grade:
    """How a submission did: each test's result (None: never reported) and the
    sandbox's failure, if any."""

    compiles: bool
    load_error: str | None
    public: list[bool | None]
    public_errors: list[str | None]
    hidden: list[bool | None]
    sandbox_error: str | None
    duration_s: float
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def public_passed(self) -> int:
        return sum(1 for ok in self.public if ok)

    @property
    def hidden_passed(self) -> int:
        return sum(1 for ok in self.hidden if ok)


def _read_results(stdout: str, mark: str) -> dict[tuple[str, int], dict[str, Any]]:
    """The harness's records in `stdout`: the first per test, lines without the mark ignored."""
    records: dict[tuple[str, int], dict[str, Any]] = {}
    for line in stdout.splitlines():
        at = line.find(mark)
        if at < 0:
            continue
        try:
            record = json.loads(line[at + len(mark) :])
        except ValueError:
            continue
        if not isinstance(record, dict) or not isinstance(record.get("kind"), str):
            continue
        key = (record["kind"], int(record.get("index", 0) or 0))
        records.setdefault(key, record)
    return records


def _refusal(code: str, entry_point: str) -> str | None:
    """Why `code` cannot pass a test, found without running it (a syntax error,
    or the function's name nowhere in it), or None."""
    try:
        compile(code, "submission.py", "exec", dont_inherit=True)
    except Exception as exc:  # SyntaxError, or ValueError for a null byte
        text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        return text[-400:]
    if entry_point not in code:
        return f"the code does not define a function named {entry_point}"
    return None


def grade_submission(
    pool: SandboxPool | None, problem: Problem, code: str, timeout_s: float
) -> tuple[Grade, JobOutcome | None]:
    """Run `code` and every test of `problem` in one sandbox job; code that
    cannot load or never names the function fails every test without a job."""
    refusal = _refusal(code, problem.entry_point)
    if refusal is not None:
        failed = Grade(
            compiles=False,
            load_error=refusal,
            public=[False] * len(problem.public_tests),
            public_errors=[None] * len(problem.public_tests),
            hidden=[False] * len(problem.tests),
            sandbox_error=None,
            duration_s=0.0,
        )
        return failed, None
    mark = "@@envgym-result-" + secrets.token_hex(16) + "@@"
    spec = {
        "entry_point": problem.entry_point,
        "setup": problem.setup,
        "public": list(problem.public_tests),
        "hidden": list(problem.tests),
    }
    files = {"submission.py": code, "tests.json": json.dumps(spec)}
    outcome = _run(pool, _HARNESS, timeout_s, files=files, stdin=mark + "\n")
    records = _read_results(outcome.result.stdout, mark)
    load = records.get(("load", 0))

    def results(kind: str, count: int) -> list[dict[str, Any] | None]:
        return [records.get((kind, i)) for i in range(count)]

    public = results("public", len(problem.public_tests))
    hidden = results("hidden", len(problem.tests))
    grade = Grade(
        compiles=bool(load and load.get("ok")),
        load_error=(load or {}).get("error") if load else None,
        public=[None if r is None else bool(r.get("ok")) for r in public],
        public_errors=[None if r is None else r.get("error") for r in public],
        hidden=[None if r is None else bool(r.get("ok")) for r in hidden],
        sandbox_error=outcome.sandbox_error,
        duration_s=outcome.result.duration_s,
    )
    if load is None and outcome.sandbox_error is None:
        # The harness never reported: the submission ended the process itself.
        stderr = outcome.result.stderr.strip()
        grade.load_error = "the program ended before it was graded" + (
            f": {stderr[-300:]}" if stderr else f" (exit status {outcome.result.exit_code})"
        )
    return grade, outcome
