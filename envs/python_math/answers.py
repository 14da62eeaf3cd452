"""Reading a final answer as an exact number, safely.

``read_answer("1,000")``, ``"1000.0"``, ``"3/4"``, ``"0.75"``, ``"-2^10"``,
``"\\frac{3}{4}"`` and ``"3/4 + 1/4"`` all become `fractions.Fraction` values.
Expressions are evaluated by walking their syntax tree over numbers and
``+ - * / **`` only, with bounds on exponents and on the size of every
intermediate number, so no reply can run code or exhaust memory. Every answer
here is rational, so sympy is never needed.
"""

from __future__ import annotations

import ast
import re
from fractions import Fraction

MAX_ANSWER_CHARS = 300
MAX_EXPONENT = 10_000
#: No number met while evaluating may have more bits than this (numerator or denominator).
MAX_BITS = 100_000

_LATEX_FRAC = re.compile(r"\\[dt]?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_DECIMAL = re.compile(r"(?<![\w.])(\d*)\.(\d+)|(?<![\w.])(\d+)\.(?![\d\w])")
_LEADING_NAME = re.compile(r"^\s*[A-Za-z]\w*\s*=(?!=)")
_REPLACEMENTS = (
    ("\\left", ""),
    ("\\right", ""),
    ("\\cdot", "*"),
    ("\\times", "*"),
    ("\\div", "/"),
    ("\\,", ""),
    ("\\!", ""),
    ("\\ ", ""),
    ("{", "("),
    ("}", ")"),
    ("$", ""),
    ("\u2212", "-"),
    ("\u00d7", "*"),
    ("^", "**"),
)


class AnswerError(ValueError):
    """An answer that is not a number or a simple expression of numbers."""


def read_answer(text: str) -> Fraction:
    """The exact value of an answer, or AnswerError saying why it has none."""
    if len(text) > MAX_ANSWER_CHARS:
        raise AnswerError(f"the answer is longer than {MAX_ANSWER_CHARS} characters")
    text = text.strip().rstrip(".").strip()
    text = _LEADING_NAME.sub("", text)  # "x = 5"
    text = _LATEX_FRAC.sub(r"((\1)/(\2))", text)
    for old, new in _REPLACEMENTS:
        text = text.replace(old, new)
    text = _THOUSANDS.sub("", text)
    text = _DECIMAL.sub(_decimal_as_fraction, text)
    if not text.strip():
        raise AnswerError("the answer is empty")
    try:
        tree = ast.parse(text.strip(), mode="eval")
        return _value(tree.body)
    except (SyntaxError, RecursionError, MemoryError):
        raise AnswerError("it is not a number or an expression of numbers") from None
    except ZeroDivisionError:
        raise AnswerError("it divides by zero") from None


def _decimal_as_fraction(match: re.Match) -> str:
    whole, digits = (match[1], match[2]) if match[2] is not None else (match[3], "")
    return f"({int((whole or '0') + digits)}/{10 ** len(digits)})"


def _value(node: ast.AST) -> Fraction:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return _bounded(Fraction(node.value))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.UAdd | ast.USub):
        value = _value(node.operand)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp):
        left, right = _value(node.left), _value(node.right)
        if isinstance(node.op, ast.Add):
            return _bounded(left + right)
        if isinstance(node.op, ast.Sub):
            return _bounded(left - right)
        if isinstance(node.op, ast.Mult):
            return _bounded(left * right)
        if isinstance(node.op, ast.Div):
            return _bounded(left / right)
        if isinstance(node.op, ast.Pow):
            return _power(left, right)
    raise AnswerError("only numbers, + - * / ^ and parentheses are understood")


def _power(base: Fraction, exponent: Fraction) -> Fraction:
    if exponent.denominator != 1:
        raise AnswerError("only whole-number exponents are understood")
    if abs(exponent) > MAX_EXPONENT:
        raise AnswerError(f"exponents above {MAX_EXPONENT} are not evaluated")
    bits = max(abs(base.numerator).bit_length(), base.denominator.bit_length())
    if bits * abs(int(exponent)) > MAX_BITS:
        raise AnswerError("the power is too large to evaluate")
    return base ** int(exponent)


def _bounded(value: Fraction) -> Fraction:
    if max(abs(value.numerator).bit_length(), value.denominator.bit_length()) > MAX_BITS:
        raise AnswerError("a number in it is too large to evaluate")
    return value


def answers_match(given: str, expected: int | Fraction) -> bool:
    """Whether an answer's text has exactly the expected value (False when unreadable)."""
    try:
        return read_answer(given) == expected
    except AnswerError:
        return False
