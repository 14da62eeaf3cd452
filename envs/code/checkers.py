"""How a stdin/stdout problem's output is judged: whitespace-normalised
equality by default, or a named checker for problems with several right answers.

A checker is a Python function ``check(output, expected, case_input) -> bool``
registered by name in `CHECKERS`; a problem names one in ``Problem.checker``.
Checkers run on the host, in the grader, after the program has ended: the
program's output is only data to them, and a data file can name a checker but
never bring one. To add one, register it before making the env::

    from envgym.envs.code.checkers import CHECKERS

    def yes_no(output: str, expected: str, case_input: str) -> bool:
        return output.strip().lower() == expected.strip().lower()

    CHECKERS["yes-no"] = yes_no

A checker that raises counts as a wrong answer.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

__all__ = ["CHECKERS", "Checker", "check_output", "normalise", "tokens"]

Checker = Callable[[str, str, str], bool]

#: Whitespace as the checkers know it: ASCII only. Python's own str.split and
#: str.splitlines also split at control characters (\x1c to \x1f, \x85), which
#: a program could print to make one line or token look like two.
_BLANKS = " \t\r\f\v"
_WHITESPACE = re.compile(r"[ \t\n\r\f\v]+")
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
#: Tolerance of the ``float`` checker, relative or absolute.
FLOAT_TOLERANCE = 1e-6


def lines(text: str) -> list[str]:
    """`text`'s lines, each without trailing blanks, without trailing empty lines."""
    found = [line.rstrip(_BLANKS) for line in text.split("\n")]
    while found and not found[-1]:
        found.pop()
    return found


def normalise(text: str) -> str:
    """`text` as the default comparison sees it: lines stripped of trailing
    blanks (spaces, tabs, a carriage return), trailing empty lines dropped."""
    return "\n".join(lines(text))


def tokens(text: str) -> list[str]:
    """The whitespace-separated tokens of `text` (ASCII whitespace only)."""
    return [t for t in _WHITESPACE.split(text) if t]


def exact_lines(output: str, expected: str, case_input: str) -> bool:
    """The default: the outputs equal once `normalise` d."""
    return lines(output) == lines(expected)


def same_tokens(output: str, expected: str, case_input: str) -> bool:
    """The same tokens in the same order, however they are spaced or broken into lines."""
    return tokens(output) == tokens(expected)


def _close(got: str, want: str) -> bool:
    if got == want:
        return True
    if not (_NUMBER.fullmatch(got) and _NUMBER.fullmatch(want)):
        return False
    a, b = float(got), float(want)
    if not (math.isfinite(a) and math.isfinite(b)):
        return False
    diff = abs(a - b)
    return diff <= FLOAT_TOLERANCE or diff <= FLOAT_TOLERANCE * abs(b)


def close_floats(output: str, expected: str, case_input: str) -> bool:
    """The same tokens, where numbers may differ by `FLOAT_TOLERANCE`
    (relative or absolute); other tokens must be equal."""
    got, want = tokens(output), tokens(expected)
    return len(got) == len(want) and all(_close(g, w) for g, w in zip(got, want, strict=True))


def unordered_lines(output: str, expected: str, case_input: str) -> bool:
    """The same lines (as the default normalises them) in any order."""
    return sorted(lines(output)) == sorted(lines(expected))


#: The named checkers a problem may choose; add one by assigning here.
CHECKERS: dict[str, Checker] = {
    "tokens": same_tokens,
    "float": close_floats,
    "lines-unordered": unordered_lines,
}


def check_output(checker: str | None, output: str, expected: str, case_input: str) -> bool:
    """Whether `output` is right: the named checker's verdict (False if it
    raises), or whitespace-normalised equality when `checker` is None."""
    if checker is None:
        return exact_lines(output, expected, case_input)
    function = CHECKERS.get(checker)
    if function is None:
        return False
    try:
        return function(output, expected, case_input) is True
    except Exception:
        return False


def unknown_checker(name: str | None) -> str | None:
    """Why `name` cannot judge a problem (not registered), or None."""
    if name is None or name in CHECKERS:
        return None
    return (
        f"unknown checker {name!r}; the registered ones are {', '.join(sorted(CHECKERS))} "
        "(register another in envgym.envs.code.checkers.CHECKERS before making the env)"
    )
