"""envgym/PythonMath-v0: exact-answer math problems, with a Python sandbox to help."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from envgym.arguments import check_number
from envgym.core import Preset, TextEnv, Turn, quote_for_feedback, setting
from envgym.envs.python_math.answers import AnswerError, read_answer
from envgym.envs.python_math.code_runs import run_code
from envgym.envs.python_math.datasets import LoadedProblem, load_problems
from envgym.envs.python_math.generators import (
    KINDS,
    MAX_SEED,
    Problem,
    make_problem,
    problem_from_id,
)
from envgym.envs.python_math.latex_answers import check_latex_answer, require_math_verify
from envgym.parsing import first_tag, parse_tool_calls, strip_think
from envgym.sandbox import RUN_PYTHON_TOOL

#: The Python tool as an OpenAI function schema (``info["tools"]``).
FORMAT_PENALTY = 0.1
_FORMAT_HINT = (
    "Run code with <python>print(2 + 2)</python> or answer with \\boxed{42} "
    "(or <answer>42</answer>)."
)
_FENCE = re.compile(r"^\s*```(?:python|py)?\s*\n(.*?)\n?\s*```\s*$", re.DOTALL | re.IGNORECASE)
_PYTHON_TAG = re.compile(r"<python>(.*?)</python>", re.DOTALL | re.IGNORECASE)


@dataclass(frozen=True)
class MathPreset(Preset):
    timeout_s: float = setting(10.0, 0.1, 60.0, "seconds one code run may take")
    memory_mb: int = setting(512, 32, 4096, "megabytes of memory one code run may use")


class PythonMathEnv(TextEnv):
    """Solve a math problem with an exact answer; Python runs in a sandbox on request.

    ## Description
    A generated problem in one of twelve kinds: ``arithmetic``,
    ``linear_equation``, ``linear_system``, ``polynomial`` (algebra),
    ``gcd_lcm``, ``modular_power``, ``prime_count``, ``digit_sum`` (number
    theory), ``binomial``, ``counting`` (combinatorics), ``dice``, ``urn``
    (probability). Every answer is an integer or a fraction. Easy problems are
    done by hand; hard ones (a sum of up to 20,000 terms, the primes in a
    window of up to 500,000 numbers, a 13-to-16-digit exponent mod m, subsets
    counted by their sum) are easier with code, which the agent may run before
    answering.

    With ``problems=``, the problems come from files of the public math sets
    instead: GSM8K, MATH and MATH-500, DAPO-Math-17k, AIME and AMC (JSONL, a
    JSON list or parquet; see Loaded problems below). Their answers are
    LaTeX values (``\\frac{\\sqrt{3}}{2}``, ``[2, 5)``, ``x^2+2x+1``), checked
    with math-verify (the ``math`` extra).

    ## Action Space
    Text, one of:

    * ``<python>code</python>`` (a fenced block inside is fine), or the tool call
      ``<tool_call>{"name": "run_python", "arguments": {"code": "..."}}</tool_call>``
      (schema in ``info["tools"]``): runs the program in a fresh sandbox job.
    * ``\\boxed{answer}`` or ``<answer>answer</answer>``: the final answer, a
      number in one of these forms, with a sign where needed: an integer
      (``1,000`` is fine), a decimal (``0.75``, ``1000.0``; exact, so ``0.333``
      is not 1/3) or a fraction of integers (``3/4``, ``\\frac{3}{4}``). An
      expression is not an answer, however simply it evaluates (``2^10``,
      ``3/4 + 1/4``, the question's own expression copied): it is read as no
      answer. A loaded problem's answer is any LaTeX value equal to the gold
      one (``0.5`` for ``\\frac12``, ``50\\%`` for ``50``, ``5 \\text{ cm}``
      for ``5``), up to 400 characters, and it is read as no answer when it
      hedges (``or``, ``\\pm``, ``\\approx``), lists several values where one
      is asked, leaves arithmetic on numbers undone (``2^{10}``,
      ``\\sqrt{8}``, ``\\binom{5}{2}``), copies an expression of the question,
      is prose, or cannot be checked in ``answer_timeout_s``.

    When a reply holds several ``<python>``, ``<answer>`` and ``<tool_call>``
    tags, the first one counts (and the first program of a tool call); a
    ``\\boxed{}`` counts only in a reply with none of those tags.
    ``<think>...</think>`` is ignored.

    ## Observation Space
    Text: the problem at reset. After code, an ``<output>...</output>`` block with
    the exit status, stdout and stderr (each cut to 2,000 characters), and a
    bracketed line when the run timed out, ran out of memory or the sandbox
    failed. After an answer, whether it was correct.

    ## Starting State
    A kind drawn uniformly and a problem seed drawn from the reset's seed, at the
    env's difficulty; with ``problems=``, a loaded problem drawn uniformly.

    ## Rewards
    ``correct``: 1 for a correct answer, 0 for a wrong one (the episode ends
    either way) and 0 for a code run. ``format``: -0.1 for a reply with no code
    and no answer, or whose answer is not a number; the turn is used up and the
    episode goes on. ``info`` has ``tools``, ``cost`` (``executions``: code runs
    so far, ``sandbox_seconds``: their total time), ``privileged`` (``answer``:
    the exact answer as text), ``state_key`` (task and runs so far) and, after a
    code run, ``sandbox_error``: None, or ``"timeout"``, ``"memory"``,
    ``"sandbox"`` (the sandbox failed and was replaced) or ``"unavailable"``
    (no sandbox could start). A failed run is feedback, never an exception.

    ## Episode End
    Terminated by an answer (right or wrong); truncated after ``max_turns``.

    ## Arguments
    ``difficulty``: ``easy`` (4 turns), ``medium`` (6) or ``hard`` (8).
    ``max_turns`` (1 to 100,000), ``timeout_s`` (0.1 to 60 s per run, default
    10) and ``memory_mb`` (32 to 4096, default 512) override it; a run never gets
    more than the pool's own limits. ``sandbox_pool``: an
    `envgym.sandbox.SandboxPool` to run code on; None (the default) uses one
    pool per process (backend "auto"), started on the first code run, never at
    reset. ``reset(options={"task_id": "modular_power-hard-42"})`` replays a
    problem (``KIND-DIFFICULTY-SEED``, seed 0 to 2**32 - 1). ``problems``: a
    file, folder, glob or list of them to load problems from (their ids are
    ``FILESTEM:ID``, or ``FILESTEM:LINE`` where a row has no id, FILESTEM the
    file's path from the folder the files share, without suffixes; the
    difficulty then sets only the turns); ``format``: ``gsm8k``, ``math``, ``dapo`` or
    ``aime`` to force a layout (else detected per file); ``answer_timeout_s``
    (0.1 to 60, default 5): the most seconds one answer's check may take.

    ## Loaded problems
    ``problems=`` takes a file, a folder (its ``.jsonl``, ``.json``,
    ``.parquet`` files, ``.gz`` too, in name order), a glob or a list of
    them; JSONL is read a line at a time and parquet a row batch at a time
    (pyarrow, in the ``math`` extra). Each file's layout is read from its first
    row's fields, or forced with ``format=``:

    * ``gsm8k`` (GSM8K): ``question``; ``answer``, whose ``#### 72`` line is
      the gold (the worked solution above it is dropped).
    * ``math`` (MATH, MATH-500): ``problem``; ``answer`` (MATH-500) or the
      last ``\\boxed{...}`` (or ``\\fbox{...}``) of ``solution``, nested
      braces and all; ``level``, ``type`` or ``subject``; ``unique_id``.
      MATH as first published, a folder per split and subject with one
      JSON file per problem, loads from its top folder.
    * ``dapo`` (DAPO-Math-17k, verl's layout): ``prompt``, a chat list whose
      last user turn is the problem (DAPO's "... Answer: $Answer ..."
      instructions around it are dropped: this env says how to answer);
      ``reward_model.ground_truth``; ``extra_info.index``.
    * ``aime`` (AIME, AMC): ``problem`` or ``question``, ``answer``, in any
      case (``Problem``, ``Answer``); ``id`` and ``year`` when given.

    A row that fits no layout is an error naming its file and line, its
    fields and the layouts read. Field names were checked against the sets'
    published files (GSM8K's ``#### `` line, MATH-500's
    ``problem/solution/answer/subject/level/unique_id``, DAPO-Math-17k's
    ``prompt``/``reward_model``/``extra_info`` parquet, AI-MO's AIME/AMC
    validation sets).

    An answer is checked by math-verify (``parse`` then ``verify``: fractions,
    decimals, radicals, intervals, sets, tuples, matrices, ``\\dfrac``,
    units and ``^\\circ`` dropped, thousands separators, ``x = 5``) after
    a percent sign is dropped (``50\\%`` is compared as ``50``) and
    scientific notation is written out (``1.5 \\times 10^{3}`` is ``1500``).
    math-verify runs in a worker process of its own, bounded by
    ``answer_timeout_s`` (a hostile expression can keep sympy busy in C, past
    any signal); a late check kills the worker, which the next check starts
    again (about 2 s), and each process remembers its last 4,096 verdicts.
    Before math-verify, the text rules: at most 400 characters; no ``$``,
    ``\\boxed`` or display math inside; no row or cell separator
    (``\\\\``, ``&``) and no equation but ``x = value`` unless the gold has
    them; no hedge (``or``, ``and``, ``maybe``, ``approximately``,
    ``\\pm``, ``\\approx``, ...) and no operation command (``\\binom``,
    ``\\log``, ``\\sin``, ``\\sum``, ``!``, ...) the gold does not use;
    at most two words the gold lacks (a unit, a variable's name); no copy of
    the question's own arithmetic (an answer, or a side of an answer's
    equation, with ``+ - * / ^ =`` in it that the question holds, spaces and
    braces aside). After parsing: one value where the gold is one (not a
    set, a tuple, an interval or a list), and no more operations on plain
    numbers that sympy would still evaluate than the gold leaves (``2 + 3``,
    ``2^{10}``, ``\\sqrt{8}``, ``\\frac{2}{4} + \\frac{1}{3}`` are
    refused; ``\\frac{3}{4}``, ``2\\sqrt{2}``, ``-7`` are values), and
    at most two operations more than the gold (sympy's ``count_ops``:
    ``\\frac{(x-1)(x+1)}{x-1}`` is not ``x + 1``). A refused answer is a
    format error, as for generated problems.

    ```python
    import json
    from pathlib import Path

    row = {"question": "Ann has 3 boxes of 12 pens. How many pens?", "answer": "3*12=36\\n#### 36"}
    Path("gsm8k-demo.jsonl").write_text(json.dumps(row) + "\\n")
    env = gym.make("envgym/PythonMath-v0", problems="gsm8k-demo.jsonl")
    obs, info = env.reset(seed=0)
    assert info["task_id"] == "gsm8k-demo:1"
    obs, reward, terminated, truncated, info = env.step("<answer>36.0</answer>")
    assert reward == 1.0 and info["success"]
    ```

    ## Version History
    * v0: initial version. Answers are values only: expressions such as
      ``2^10`` are no longer read. ``problems=`` loads GSM8K, MATH, DAPO-Math
      and AIME/AMC files, their answers checked with math-verify.
    """

    presets: ClassVar[dict[str, MathPreset]] = {
        "easy": MathPreset(max_turns=4),
        "medium": MathPreset(max_turns=6),
        "hard": MathPreset(max_turns=8),
    }
    snapshot_exclude: ClassVar[tuple[str, ...]] = ("sandbox_pool", "_loaded", "_by_id")
    system_prompt: ClassVar[str] = (
        "Solve the math problem. The answer is exact: an integer or a fraction. You may run "
        "Python first: write <python>print(...)</python> or call the run_python tool, and "
        "the output comes back in <output>...</output>. Give the final answer as "
        "\\boxed{answer}; it ends the episode."
    )
    #: The system prompt of loaded problems, whose answers may be any LaTeX value.
    loaded_system_prompt: ClassVar[str] = (
        "Solve the math problem. Give one exact final value in its simplest form (a number, "
        "a fraction, a radical, an interval, an expression in the problem's variables). You "
        "may run Python first: write <python>print(...)</python> or call the run_python tool, "
        "and the output comes back in <output>...</output>. Give the final answer as "
        "\\boxed{answer}; it ends the episode."
    )

    def __init__(
        self,
        *,
        difficulty: str = "easy",
        max_turns: int | None = None,
        timeout_s: float | None = None,
        memory_mb: int | None = None,
        sandbox_pool: Any = None,
        problems: str | Path | Sequence[str | Path] | None = None,
        format: str | None = None,
        answer_timeout_s: float = 5.0,
        render_mode: str | None = None,
    ) -> None:
        super().__init__(
            difficulty=difficulty,
            render_mode=render_mode,
            max_turns=max_turns,
            timeout_s=timeout_s,
            memory_mb=memory_mb,
        )
        self.sandbox_pool = sandbox_pool
        self.answer_timeout_s = check_number(answer_timeout_s, "answer_timeout_s", 0.1, 60.0)
        if format is not None and problems is None:
            raise ValueError("format= names the layout of problems=; pass problems= too")
        self._loaded: tuple[LoadedProblem, ...] = ()
        if problems is not None:
            require_math_verify()
            self._loaded = load_problems(problems, format=format)
            self.system_prompt = self.loaded_system_prompt
        self._by_id = {p.task_id: p for p in self._loaded}
        self.problem: Problem | LoadedProblem | None = None
        self.executions = 0
        self.sandbox_seconds = 0.0

    def _new_task(self, options: dict[str, Any]) -> str:
        if self._loaded:
            self.problem = self._loaded_problem(options)
        elif "task_id" in options:
            self.problem = problem_from_id(options["task_id"])
        else:
            kinds = list(KINDS)
            kind = kinds[int(self.np_random.integers(len(kinds)))]
            seed = int(self.np_random.integers(0, MAX_SEED + 1))
            self.problem = make_problem(kind, self.difficulty, seed)
        self.task_id = self.problem.task_id
        self.executions = 0
        self.sandbox_seconds = 0.0
        return self.problem.text

    def _loaded_problem(self, options: dict[str, Any]) -> LoadedProblem:
        if "task_id" not in options:
            return self._loaded[int(self.np_random.integers(len(self._loaded)))]
        task_id = options["task_id"]
        if not isinstance(task_id, str) or task_id not in self._by_id:
            example = self._loaded[0].task_id
            raise ValueError(
                f"unknown task_id {quote_for_feedback(str(task_id), 80)} in the loaded problems; "
                f"their ids look like {example!r} (FILESTEM:ID or FILESTEM:LINE)"
            )
        return self._by_id[task_id]

    def _act(self, action: str) -> Turn:
        kind, value = first_tag(
            action, ("python", "answer"), tool_calls=True, boxed_as="answer", hint=_FORMAT_HINT
        )
        if kind == "python":
            match = _PYTHON_TAG.search(strip_think(action))
            return self._run(match[1] if match else "")
        if kind == "tool_call":
            calls, error = parse_tool_calls(strip_think(action))
            if not calls:
                return self._invalid(f"{error} {_FORMAT_HINT}")
            call = calls[0]
            code = call.arguments.get("code")
            if call.name != "run_python":
                name = quote_for_feedback(call.name, 40)
                return self._invalid(f"There is no tool {name}; the only tool is run_python.")
            if not isinstance(code, str):
                return self._invalid('The run_python tool needs a "code" string.')
            return self._run(code)
        if kind == "answer":
            return self._answer(value)
        return self._invalid(value)

    def _run(self, code: str) -> Turn:
        fenced = _FENCE.match(code)
        code = fenced[1] if fenced else code
        if not code.strip():
            return self._invalid("Your code is empty. " + _FORMAT_HINT)
        run = run_code(self.sandbox_pool, code, self.config.timeout_s, self.config.memory_mb)
        self.executions += 1
        self.sandbox_seconds += run.seconds
        return Turn(run.feedback, {"correct": 0.0}, extra_info={"sandbox_error": run.error})

    def _answer(self, text: str) -> Turn:
        if isinstance(self.problem, LoadedProblem):
            verdict = check_latex_answer(
                text, self.problem.answer, self.problem.text, timeout_s=self.answer_timeout_s
            )
            if verdict.correct is None:
                shown = quote_for_feedback(text, 60)
                return self._invalid(f"Your answer {shown} is not read: {verdict.reason}.")
            return self._verdict(text, verdict.correct)
        try:
            given = read_answer(text)
        except AnswerError as exc:
            shown = quote_for_feedback(text, 60)
            return self._invalid(f"Your answer {shown} could not be read: {exc}. {_FORMAT_HINT}")
        return self._verdict(text, given == self.problem.answer)

    def _verdict(self, text: str, correct: bool) -> Turn:
        verdict = "correct" if correct else "not correct"
        reply = f"Your answer {quote_for_feedback(text, 60)} is {verdict}."
        return Turn(reply, {"correct": float(correct)}, terminated=True, success=correct)

    def _invalid(self, text: str) -> Turn:
        return Turn(text, {"correct": 0.0, "format": -FORMAT_PENALTY}, action_valid=False)

    def _task_info(self) -> dict[str, Any]:
        if self.problem is None:
            return {}
        return {
            "state_key": f"{self.task_id}|runs:{self.executions}",
            "tools": [RUN_PYTHON_TOOL],
            "cost": {"executions": self.executions, "sandbox_seconds": self.sandbox_seconds},
            "privileged": {"answer": str(self.problem.answer)},
        }
