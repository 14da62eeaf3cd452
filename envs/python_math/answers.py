"""Reading a final answer as an exact number: values only, never expressions.

An answer is rewarded only when it is a number written in a canonical form:

- an integer: ``42``, ``-7``, ``1,000`` (thousands separators), ``+3``;
- a decimal: ``0.75``, ``-2.5``, ``.5``, ``1000.0``, ``5.`` (exact: ``0.333``
  is not 1/3);
- a fraction of integers: ``3/4``, ``-3/4``, ``\\frac{3}{4}``,
  ``\\dfrac{-3}{4}``, ``-\\tfrac{3}{4}``.

Around it, ``$...$``, LaTeX's thin spaces (``1\\,000``), a trailing period and a
leading name (``x = 5``) are dropped, and a Unicode minus reads as ``-``.
Anything else is not read, however simply it evaluates to the answer:
``2^10``, ``3/4 + 1/4``, ``(3/4)``, ``1e3``, or the question's own
expression copied into the box (``3/7 + 5/11``) earn nothing. Reading is a
few regular expressions over at most `MAX_ANSWER_CHARS` characters: linear,
and no code runs.
"""

from __future__ import annotations

import re
from fractions import Fraction

MAX_ANSWER_CHARS = 300

_LEADING_NAME = re.compile(r"^\s*[A-Za-z]\w*\s*=(?!=)")
_DROPPED = ("$", "\\,", "\\!", "\\ ", "\\;")
_INTEGER = r"(?:\d{1,3}(?:,\d{3})+|\d+)"
_DECIMAL = re.compile(rf"([+-]?)(?:({_INTEGER})(?:\.(\d*))?|\.(\d+))")
_FRACTION = re.compile(r"([+-]?)(\d+)\s*/\s*(\d+)")
_LATEX_FRACTION = re.compile(r"([+-]?)\\[dt]?frac\s*\{\s*([+-]?)\s*(\d+)\s*\}\s*\{\s*(\d+)\s*\}")


class AnswerError(ValueError):
    """An answer that is not a number in one of the forms read."""


def read_answer(text: str) -> Fraction:
    """The exact value of an answer, or AnswerError saying why it has none."""
    if len(text) > MAX_ANSWER_CHARS:
        raise AnswerError(f"the answer is longer than {MAX_ANSWER_CHARS} characters")
    text = _LEADING_NAME.sub("", text.strip().rstrip(".").strip(), count=1)
    for dropped in _DROPPED:
        text = text.replace(dropped, "")
    text = text.replace("\u2212", "-").strip()
    if not text:
        raise AnswerError("the answer is empty")
    if match := _DECIMAL.fullmatch(text):
        sign, whole, digits, only_digits = match.groups()
        digits = digits if only_digits is None else only_digits
        value = Fraction(
            int((whole or "0").replace(",", "") + (digits or "")), 10 ** len(digits or "")
        )
        return -value if sign == "-" else value
    for pattern in (_FRACTION, _LATEX_FRACTION):
        if match := pattern.fullmatch(text):
            groups = match.groups()
            numerator, denominator = int(groups[-2]), int(groups[-1])
            if denominator == 0:
                raise AnswerError("it divides by zero")
            negative = groups.count("-") % 2 == 1
            value = Fraction(numerator, denominator)
            return -value if negative else value
    raise AnswerError(
        "it is not a number: give an integer, a decimal or a fraction such as 3/4 or "
        "\\frac{3}{4}, not an expression"
    )


def answers_match(given: str, expected: int | Fraction) -> bool:
    """Whether an answer's text has exactly the expected value (False when unreadable)."""
    try:
        return read_answer(given) == expected
    except AnswerError:
        return False
