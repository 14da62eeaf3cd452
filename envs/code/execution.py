"""Running the Code env's jobs in a sandbox: free-form runs, and grading a
submission against its tests in one job whose results the submission cannot
forge.

A grading job runs `harness.py` (trusted) with the submission as a file and,
on stdin, a random marker and the tests. The harness never runs the
submission: it forks submission processes before it reads the tests, calls
the entry point in them with plain data only, and compares what comes back
itself, types included (see `harness.py`). After each test it writes a result
line that starts with the marker to an output no submission process holds.
The host reads only well-formed lines that carry this job's marker; a test the
harness did not report (the job died, timed out or was killed) counts as
failed, and nothing in the job's output can make `grade_submission` raise.
"""

from __future__ import annotations

import functools
import json
import marshal
import re
import secrets
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envgym.envs.code.problems import Problem, to_printable
from envgym.sandbox import ExecResult, SandboxError, SandboxPool, shared_pool

__all__ = [
    "Grade",
    "JobOutcome",
    "format_output",
    "grade_submission",
    "marked_records",
    "run_code",
    "run_job",
    "trusted_job",
]

#: Characters of stdout and of stderr shown to the agent per run.
MAX_STREAM_CHARS = 2000

#: The sandbox runner's own frame atop a traceback: not the agent's code.
_RUNNER_FRAME = re.compile(
    r'  File "[^"\n]*jobs\.py", line \d+, in _job_process\n(?:    [^\n]*\n)*'
)


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


def run_job(
    pool: SandboxPool | None,
    code: str,
    timeout_s: float,
    files: dict[str, str | bytes] | None = None,
    stdin: str | Callable[[float], str] | None = None,
) -> JobOutcome:
    """One job on a leased sandbox, at most ``timeout_s`` (and the sandbox's
    own limit); ``stdin`` may be made from that limit."""
    try:
        pool = pool if pool is not None else shared_pool()
        with pool.lease() as box:
            limit = min(timeout_s, box.limits.timeout_s)
            text = stdin(limit) if callable(stdin) else stdin
            result = box.run(code, files=files, stdin=text, timeout_s=limit)
    except (SandboxError, OSError, ValueError) as exc:
        failed = ExecResult(stdout="", stderr="", exit_code=-1, error=str(exc))
        return JobOutcome(failed, f"the sandbox could not run the job: {exc}")
    return JobOutcome(result, _sandbox_problem(result, limit))


def run_code(pool: SandboxPool | None, code: str, timeout_s: float) -> JobOutcome:
    """Run the agent's code as a program (no files, no stdin)."""
    return run_job(pool, code, timeout_s)


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


#: The grading job's code (`harness.py`): it runs in the sandbox, not here.
HARNESS_PATH = Path(__file__).with_name("harness.py")


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


#: What the harness reports: loading, each test, and running out of time.
_RECORD_KINDS = ("load", "public", "hidden", "timeout")


def marked_records(stdout: str, mark: str) -> Iterator[dict[str, Any]]:
    """The JSON objects a trusted driver wrote in `stdout` after its secret `mark`
    (the function harness, the stdin/stdout driver); a line without the mark, or
    whose rest is not a JSON object, is skipped (never an error): the submission
    shares stdout and may print anything, but not the mark."""
    for line in stdout.splitlines():
        at = line.find(mark)
        if at < 0:
            continue
        try:
            record = json.loads(line[at + len(mark) :])
        except (ValueError, RecursionError):
            continue
        if isinstance(record, dict):
            yield record


def _read_results(stdout: str, mark: str) -> dict[tuple[str, int], dict[str, Any]]:
    """The harness's records in `stdout`: the first per test; a line without the
    mark, or that is not a well-formed record, is ignored (never an error)."""
    records: dict[tuple[str, int], dict[str, Any]] = {}
    for record in marked_records(stdout, mark):
        kind, index, ok, error = (record.get(k) for k in ("kind", "index", "ok", "error"))
        if kind not in _RECORD_KINDS or type(index) is not int or index < 0:
            continue
        if type(ok) is not bool or not (error is None or type(error) is str):
            continue
        records.setdefault((kind, index), {"ok": ok, "error": error or None})
    return records


def _refusal(code: str, entry_point: str) -> str | None:
    """Why `code` cannot pass a test, found without running or compiling it
    (the function's name is nowhere in it), or None. Compiling happens in the
    sandbox: here a large reply would hold the host's interpreter."""
    if entry_point not in code:
        return f"the code does not define a function named {entry_point}"
    return None


@functools.cache
def trusted_job(path: Path) -> tuple[str, dict[str, str | bytes]]:
    """A trusted job's program and files: a stub that runs the module at `path`
    from the bytecode compiled here when the sandbox's Python reads this
    Python's bytecode (the same ``cache_tag``), else compiles the source it is
    sent beside it. Compiling the harness took 2.7 ms of every grading job."""
    name = path.stem
    source = path.read_text(encoding="utf-8")
    compiled = marshal.dumps(compile(source, f"{name}.py", "exec", dont_inherit=True))
    stub = (
        "import marshal, sys\n"
        f"if sys.implementation.cache_tag == {sys.implementation.cache_tag!r}:\n"
        f"    with open('{name}.bin', 'rb') as f:\n"
        "        code = marshal.loads(f.read())\n"
        "else:\n"
        f"    with open('{name}.py', encoding='utf-8') as f:\n"
        f"        code = compile(f.read(), '{name}.py', 'exec')\n"
        "exec(code, {'__name__': '__main__', '__builtins__': __builtins__})\n"
    )
    return stub, {f"{name}.bin": compiled, f"{name}.py": source}


def harness_job() -> tuple[str, dict[str, str | bytes]]:
    """The function-grading job (`harness.py`): see `trusted_job`."""
    return trusted_job(HARNESS_PATH)


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
        "prompt": problem.prompt,
        "setup": problem.setup,
        "public": list(problem.public_tests),
        "hidden": list(problem.tests),
    }

    def stdin(limit: float) -> str:
        # The tests travel on stdin, read by the harness only after it has
        # forked the processes that run the submission.
        return mark + "\n" + json.dumps({**spec, "timeout_s": limit})

    program, files = harness_job()
    files = {**files, "submission.py": code}
    outcome = run_job(pool, program, timeout_s, files=files, stdin=stdin)
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
    if ("timeout", 0) in records and grade.sandbox_error is None:
        grade.sandbox_error = "the submission ran past the time limit and was stopped"
    if load is None and outcome.sandbox_error is None:
        # The harness never reported: the submission ended the process itself.
        stderr = outcome.result.stderr.strip()
        grade.load_error = "the program ended before it was graded" + (
            f": {stderr[-300:]}" if stderr else f" (exit status {outcome.result.exit_code})"
        )
    return grade, outcome
