"""reasoning-gym's generators as envgym tasks: the registry, configs, entries, scoring.

reasoning-gym (``pip install 'envgym[reasoning]'``) registers each generator by
name with a config dataclass. The entry of index ``i`` is reasoning-gym's
``create_dataset(name, seed=i, size=1)[0]``, made at each reset: most
generators draw entry ``j`` from ``random.Random(seed + j)``, but some (acre)
draw all ``size`` entries when the dataset is made, so one large dataset
indexed by ``i`` is not an option. Making one costs 1 ms for most generators
and up to about 0.3 s (arc_agi). Scoring uses one dataset per (task, config)
per process.

Scoring hands the scorer only the answer's text, after the checks of
`refusal`: several scorers of 0.1.25 ``eval()`` or ``sympy.parse_expr`` what
they are given (`EVAL_SCORERS`, `EXPRESSION_SCORERS`), and ``Fraction(text)``
computes ``1e999999999`` digit by digit, so an answer never reaches a scorer
unless it is safe to.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import re
from typing import Any

from envgym.extras import require
from envgym.per_process import PerProcess

#: Generators that cannot be an envgym task, with the reason.
UNAVAILABLE = {
    "composite": "it mixes other generators from a list of dataset specs; make one env per "
    "task (or a vector env of several) instead",
}
#: Scorers that call ``eval()`` on an answer that is not the gold answer (for a
#: 0.1 or 0.5 partial score): they are never called; an answer scores 1 when it
#: is the gold answer (n_queens: one of its valid boards), else 0.
EVAL_SCORERS = ("binary_matrix", "n_queens", "spiral_matrix", "string_insertion")
#: Scorers that run ``sympy.parse_expr`` (which evaluates Python) on the answer:
#: it must be a plain arithmetic expression (`unsafe_expression`) to be scored.
EXPRESSION_SCORERS = (
    "countdown",
    "intermediate_integration",
    "polynomial_multiplication",
    "puzzle24",
    "simple_integration",
)
#: Scorers that expand a move's repeat count (``R3`` is R R R) before playing the
#: moves: ``R999999999`` would be a billion moves, so counts are at most two digits.
REPEAT_SCORERS = ("rubiks_cube",)
#: Generators whose entries have no answer (many answers are right, the scorer
#: checks the one given): the oracle has nothing to send.
NO_GOLD_ANSWER = {
    "boxnet": "the entry has no answer: the scorer simulates the moves given",
    "rush_hour": "the entry has no answer: the scorer plays the moves given on the board",
}
#: Where an entry without an answer keeps an example of a right one.
_EXAMPLE_KEYS = ("possible_answer", "example_answer", "example_correct_answer")
#: The longest answer any scorer is given; an expression scorer's, `MAX_EXPRESSION`.
MAX_ANSWER_CHARS = 10_000
MAX_EXPRESSION = 500

_PER_PROCESS = PerProcess()
_BIG_EXPONENT = re.compile(r"\d[eE][+-]?\d{4,}")
_EXPRESSION_CHARS = re.compile(r"^[0-9A-Za-z\s+\-*/^().=]*$")
_NAME = re.compile(r"[A-Za-z]+")
_FUNCTIONS = frozenset(
    "sin cos tan cot sec csc asin acos atan sinh cosh tanh exp log ln sqrt pi E I C".split()
)
_POWER = re.compile(r"(\*\*|\^)\s*")
_SMALL_EXPONENT = re.compile(
    r"-?\d{1,2}(?!\d)|[A-Za-z](?![A-Za-z(])|\(\s*-?\d{1,2}\s*/\s*\d{1,2}\s*\)"
)


class TaskError(ValueError):
    """A task or task config reasoning-gym does not have; the message lists close names."""


def library() -> Any:
    """The ``reasoning_gym`` module, or MissingExtra naming the ``reasoning`` extra."""
    return require("reasoning_gym", extra="reasoning", purpose="envgym/ReasoningGym-v0")


def _registry() -> dict[str, tuple[type, type]]:
    library()
    from reasoning_gym.factory import DATASETS

    return DATASETS


def task_names() -> list[str]:
    """Every generator that can be a task, sorted."""
    return sorted(name for name in _registry() if name not in UNAVAILABLE)


def categories() -> dict[str, list[str]]:
    """Task names by reasoning-gym's category (the package each generator lives in)."""
    grouped: dict[str, list[str]] = {}
    for name in task_names():
        module = _registry()[name][0].__module__.split(".")
        grouped.setdefault(module[1] if len(module) > 2 else "other", []).append(name)
    return {category: grouped[category] for category in sorted(grouped)}


def _close(word: str, names: list[str]) -> str:
    close = difflib.get_close_matches(word, names, n=5, cutoff=0.5)
    return f" Close names: {', '.join(close)}." if close else ""


def check_task(task: Any, config: Any) -> tuple[str, dict[str, Any]]:
    """The task name and its config, checked; TaskError saying what to fix."""
    registry = _registry()
    if not isinstance(task, str) or task not in registry:
        raise TaskError(
            f"reasoning-gym has no generator {task!r}.{_close(str(task), task_names())} "
            "`envgym info envgym/ReasoningGym-v0` lists them all."
        )
    if task in UNAVAILABLE:
        raise TaskError(f"the generator {task!r} cannot be an envgym task: {UNAVAILABLE[task]}")
    config = {} if config is None else config
    if not isinstance(config, dict) or not all(isinstance(k, str) for k in config):
        raise TaskError(f"task_config must be a dict of {task}'s config fields, got {config!r}")
    fields = [
        f.name for f in dataclasses.fields(registry[task][1]) if f.name not in ("seed", "size")
    ]
    for key in config:
        if key not in fields:
            raise TaskError(
                f"{task}'s config has no field {key!r}.{_close(key, fields)} "
                f"Its fields are {', '.join(fields)} (seed and size are the env's)."
            )
    try:
        json.dumps(config)
    except (TypeError, ValueError) as exc:
        raise TaskError(f"task_config must be JSON data (numbers, strings, lists): {exc}") from None
    dataset(task, config)  # the generator's own checks, now rather than at reset
    return task, dict(config)


def _make(task: str, config: dict[str, Any], seed: int) -> Any:
    try:
        return library().create_dataset(task, seed=seed, size=1, **config)
    except (TypeError, ValueError, AssertionError) as exc:
        raise TaskError(f"reasoning-gym refused {task}'s config {config!r}: {exc}") from None


def dataset(task: str, config: dict[str, Any]) -> Any:
    """This process's dataset of `task` with `config` (seed 0), made once: its scorer."""
    key = (task, json.dumps(config, sort_keys=True))
    return _PER_PROCESS.get(key, lambda: _make(task, config, 0))


def entry(task: str, config: dict[str, Any], index: int) -> dict[str, Any]:
    """Entry `index`: reasoning-gym's ``create_dataset(task, seed=index, size=1)[0]``."""
    return _make(task, config, index)[0]


def oracle_answer(task: str, item: dict[str, Any]) -> str | None:
    """A right answer for an entry: its answer, else an example its metadata keeps."""
    if item.get("answer") is not None:
        return str(item["answer"])
    for key in _EXAMPLE_KEYS:
        example = item.get("metadata", {}).get(key)
        if example is not None:
            return example if isinstance(example, str) else json.dumps(example)
    return None


def unsafe_expression(text: str) -> str | None:
    """Why `text` may not reach a sympy scorer, or None when it is a plain
    expression: numbers, single letters and common functions, + - * / ^ ( ) . =,
    exponents of at most two digits, and no power of a power."""
    if len(text) > MAX_EXPRESSION:
        return f"an expression answer is at most {MAX_EXPRESSION} characters"
    if not _EXPRESSION_CHARS.match(text) or re.search(r"\.\s*[A-Za-z]", text):
        return "an expression may hold only numbers, variables, + - * / ^ ( ) and ="
    if any(len(name) > 1 and name not in _FUNCTIONS for name in _NAME.findall(text)):
        return "an expression may name only single-letter variables and common functions"
    if "!" in text or re.search(r"\d{31}", text):
        return "an expression's numbers are at most 30 digits"
    for match in _POWER.finditer(text):
        exponent = _SMALL_EXPONENT.match(text, match.end())
        if not exponent:
            return "an exponent is a number of at most two digits, a fraction of those or a letter"
        if _POWER.match(text[exponent.end() :].lstrip()):  # 9**9**9
            return "a power of a power is not read"
        if text[: match.start()].rstrip().endswith(")") and _powered_group(text, match.start()):
            return "a power of a power is not read"
    return None


def _powered_group(text: str, power_at: int) -> bool:
    """Whether the bracketed group before a power holds a power itself."""
    end = text.rstrip()[:power_at].rstrip()
    depth, i = 0, len(end) - 1
    while i >= 0:
        depth += {")": 1, "(": -1}.get(end[i], 0)
        if depth == 0:
            break
        i -= 1
    group = end[i:]
    return "**" in group or "^" in group


def refusal(task: str, answer: str) -> str | None:
    """Why an answer is not scored at all (feedback for the model), or None."""
    if len(answer) > MAX_ANSWER_CHARS:
        return f"the answer is longer than {MAX_ANSWER_CHARS:,} characters"
    if _BIG_EXPONENT.search(answer):
        return "a number's exponent has at most three digits"
    if task in EXPRESSION_SCORERS:
        return unsafe_expression(answer)
    if task in REPEAT_SCORERS and re.search(r"\d{3}", answer):
        return "a move is repeated at most 99 times"
    return None


def score(task: str, config: dict[str, Any], answer: str, item: dict[str, Any]) -> float:
    """reasoning-gym's score of `answer` (checked by `refusal` first) for an entry, in [0, 1]."""
    if task in EVAL_SCORERS:
        if task == "n_queens":
            return float(answer in item["metadata"]["valid_answers"])
        return float(answer == item["answer"])
    try:
        value = float(dataset(task, config).score_answer(answer, item))
    except Exception:  # a scorer that trips over an odd answer: no score, never a crash
        return 0.0
    return min(max(value, 0.0), 1.0) if value == value else 0.0


def version() -> str:
    """The installed reasoning-gym's version (its distribution's, not its ``__version__``)."""
    library()
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("reasoning-gym")
    except PackageNotFoundError:
        return str(getattr(library(), "__version__", "unknown"))
