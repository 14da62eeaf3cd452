"""Checking a LaTeX final answer against a loaded problem's gold, with math-verify.

`check_latex_answer` first applies the rules that need only the text (linear
in it, in this process), then hands the answer to a worker process running
math-verify (`latex_worker`), bounded by the clock:

- the answer is at most `MAX_LATEX_ANSWER_CHARS` characters and one value:
  no ``$``, ``\\boxed`` or display math; no row or cell separator (``\\\\``,
  ``&``) and no equation but ``x = value`` unless the gold has them; no hedge
  word or command (``or``, ``and``, ``maybe``, ``approximately``, ``\\pm``,
  ``\\approx``, ...) and no operation command (``\\binom``, ``\\log``,
  ``\\sum``, ``!``, ...) the gold does not use; at most `MAX_EXTRA_WORDS`
  words the gold lacks (prose is not a value, and sympy is slow on it);
- a percentage is compared as its number (``50\\%`` matches ``50``) and
  scientific notation as the decimal it writes (``1.5 \\times 10^{3}`` is
  ``1500``);
- it does not copy the question: an answer with an operation in it (``+``,
  ``^``, ``\\cdot``, ...) that the question's text holds, or an equation one
  of whose sides it holds, earns nothing unless it is the gold's own text;
- then the worker's rules (one value, no arithmetic left undone, at most two
  operations more than the gold) and math-verify's ``verify``.

A check that does not finish in time (a pathological expression) kills the
worker, which the next check starts again, and the answer is refused.
"""

from __future__ import annotations

import atexit
import json
import os
import re
import select
import subprocess
import sys
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from importlib.util import find_spec

from envgym.extras import missing_extra

__all__ = ["LatexVerdict", "check_latex_answer", "require_math_verify"]

#: The longest final answer read (a gold answer is held to the same bound).
MAX_LATEX_ANSWER_CHARS = 400
#: Checks remembered per process (the same answer to the same gold is not checked twice:
#: a policy repeats itself, and a pathological answer costs its timeout only once).
CACHED_CHECKS = 4096
#: Seconds the worker may take to start (import sympy and math-verify).
START_TIMEOUT_S = 60.0

_HEDGE_WORDS = frozenset(
    "or and either maybe perhaps possibly probably approximately approx about roughly "
    "around nearly almost between".split()
)
_HEDGE_COMMANDS = frozenset("lor vee pm mp approx sim simeq lessapprox gtrapprox".split())
#: Commands that name an operation to carry out: an answer using one its gold does not
#: use is an expression, not its value (latex2sympy evaluates some, like \\binom, while
#: parsing, so the worker cannot see them).
_OPERATION_COMMANDS = frozenset(
    "binom dbinom tbinom choose sum prod int iint oint lim gcd lcm operatorname mod bmod pmod "
    "max min det sin cos tan cot sec csc arcsin arccos arctan sinh cosh tanh log ln lg exp "
    "lfloor rfloor lceil rceil".split()
)
_COMMAND = re.compile(r"\\([A-Za-z]+)")
_WORD = re.compile(r"[A-Za-z]+")
_OUTER_MATH = re.compile(r"^\s*(?:\$\$?|\\\(|\\\[)(.*?)(?:\$\$?|\\\)|\\\])\s*$", re.DOTALL)
_FORBIDDEN = ("$", "\\boxed", "\\fbox", "\\[", "\\]", "\\(", "\\)")
#: Marks that separate several values (rows, cells, lines): refused unless the gold,
#: a matrix say, has them too.
_SEPARATORS = ("\\\\", "&", "\\newline", "\\cr")
#: ``x = `` before a value: the one equation an answer may be when its gold is none.
_LEADING_NAME = re.compile(r"^\s*[A-Za-z]\w*\s*=(?!=)")
_PERCENT = re.compile(r"\s*(?:\\,|\\!|\\ )*\s*\\?%\s*$")
_NUMBER = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)"
_SCIENTIFIC = re.compile(
    rf"^\s*({_NUMBER})\s*(?:\\times|\\cdot|\*|×)\s*10\s*\^\s*\{{?\s*([+-]?\d{{1,4}})\s*\}}?\s*$"
    rf"|^\s*({_NUMBER})[eE]([+-]?\d{{1,4}})\s*$"
)
#: An operation to carry out: what makes a copied stretch of the question an echo (a
#: lone value such as ``\\sqrt{2}`` or ``\\frac{3}{4}`` may stand in a question and be the answer).
_OPERATION = re.compile(r"[-+*/^=]|\\(?:cdot|times|div)")
#: A number on its own (an integer, a decimal, a fraction of integers): never an echo.
_PLAIN_NUMBER = re.compile(r"[+-]?(?:\d[\d,]*(?:\.\d*)?|\.\d+|\d+/\d+)")
_SPACE_COMMANDS = re.compile(r"\\(?:left|right|displaystyle|,|!|;|:| )|\s+")


#: Words (letter runs outside command names) an answer may have that its gold lacks: a
#: unit (``cm``) or a variable's name (``x = 5``), not prose, which sympy would read as a
#: product of many symbols (slow, and never a final value).
MAX_EXTRA_WORDS = 2


@dataclass(frozen=True)
class LatexVerdict:
    """``correct`` True or False for an answer that was checked, None for one refused;
    ``reason`` says why, for the agent's feedback."""

    correct: bool | None
    reason: str


def require_math_verify() -> None:
    """MissingExtra naming the ``math`` extra when math-verify is not installed."""
    try:
        installed = find_spec("math_verify") is not None
    except (ImportError, ValueError):  # a module set to None in sys.modules: blocked
        installed = False
    if not installed:
        raise missing_extra(
            "math_verify", extra="math", purpose="PythonMath-v0 with problems= (LaTeX answers)"
        )


def _strip_math(text: str) -> str:
    text = text.strip().rstrip(".").strip()
    match = _OUTER_MATH.match(text)
    return match[1].strip() if match else text


def _squeezed(text: str) -> str:
    """Text with spacing commands, ``\\left``/``\\right``, braces and whitespace dropped,
    and ``\\dfrac``/``\\tfrac`` read as ``\\frac``: the form echoes are compared in."""
    text = _SPACE_COMMANDS.sub("", text).replace("{", "").replace("}", "")
    return text.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac").replace("$", "")


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(_COMMAND.sub(" ", text))}


def _hedges(text: str) -> set[str]:
    commands = {c for c in _COMMAND.findall(text) if c in _HEDGE_COMMANDS}
    return commands | (_words(text) & _HEDGE_WORDS)


def _operations(text: str) -> set[str]:
    found = {f"\\{c}" for c in _COMMAND.findall(text) if c in _OPERATION_COMMANDS}
    return found | ({"!"} if re.search(r"[\w)}]\s*!", text) else set())


def normalise(text: str) -> str:
    """A final answer as the worker reads it: a trailing percent sign dropped and
    scientific notation written as a decimal."""
    text = _PERCENT.sub("", text).strip()
    match = _SCIENTIFIC.match(text)
    if match:
        mantissa, exponent = (match[1], match[2]) if match[1] else (match[3], match[4])
        try:
            value = Decimal(mantissa).scaleb(int(exponent))
        except InvalidOperation:
            return text
        text = format(value.normalize(), "f")
    return text


def _echoes(answer: str, gold: str, question: str) -> bool:
    """Whether an answer with an operation in it copies (part of) the question."""
    squeezed, asked = _squeezed(answer), _squeezed(question)
    if squeezed == _squeezed(gold) or _PLAIN_NUMBER.fullmatch(squeezed):
        return False
    sides = [squeezed, *squeezed.split("=")] if "=" in squeezed else [squeezed]
    return any(side and _OPERATION.search(side.lstrip("+-")) and side in asked for side in sides)


def check_latex_answer(
    answer: str, gold: str, question: str, *, timeout_s: float = 5.0
) -> LatexVerdict:
    """Whether `answer` (a reply's final answer) has the value of `gold` (the data
    set's answer) for `question`; None with the reason when the answer is refused."""
    if len(answer) > MAX_LATEX_ANSWER_CHARS:
        return LatexVerdict(None, f"it is longer than {MAX_LATEX_ANSWER_CHARS} characters")
    answer, gold = _strip_math(answer), _strip_math(gold)
    if not answer:
        return LatexVerdict(None, "it is empty")
    answer = answer.replace("\\$", " ")  # an escaped dollar is a currency sign
    gold = gold.replace("\\$", " ")
    if any(mark in answer for mark in _FORBIDDEN):
        return LatexVerdict(None, "give one final value, with no $, \\boxed or tags inside")
    separators = [mark for mark in _SEPARATORS if mark in answer and mark not in gold]
    if separators:
        return LatexVerdict(None, f"it holds several values ({separators[0]}); give one")
    if "=" in answer and "=" not in gold:
        answer = _LEADING_NAME.sub("", answer, count=1)
        if "=" in answer:
            return LatexVerdict(None, "it is an equation; give the value alone (or x = value)")
    operations = _operations(answer) - _operations(gold)
    if operations:
        shown = ", ".join(sorted(operations))
        return LatexVerdict(None, f"it is an expression to evaluate ({shown}); give its value")
    hedged = _hedges(answer) - _hedges(gold)
    if hedged:
        return LatexVerdict(
            None, f"it hedges ({', '.join(sorted(hedged))}); give one final value, no alternatives"
        )
    extra = _words(answer) - _words(gold)
    if len(extra) > MAX_EXTRA_WORDS:
        return LatexVerdict(None, "it is words, not a value; give one final value")
    if _echoes(answer, gold, question):
        return LatexVerdict(None, "it copies the question's own expression; give its value")
    reply = _CHECKER.check(normalise(gold), normalise(answer), timeout_s)
    verdict = reply.get("verdict")
    if verdict == "refused":
        return LatexVerdict(None, str(reply.get("reason", "it could not be read")))
    return LatexVerdict(verdict == "correct", str(reply.get("reason", "")))


class LatexChecker:
    """The math-verify worker of this process: started on the first check, restarted
    after a check that timed out or a worker that died, one check at a time; the
    last `CACHED_CHECKS` replies are remembered."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cache: OrderedDict[tuple[str, str, float], dict] = OrderedDict()
        self._proc: subprocess.Popen | None = None
        self._pid = 0  # the process that started the worker (a forked child starts its own)
        self._buffer = b""

    def _start(self) -> None:
        require_math_verify()
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "envgym.envs.python_math.latex_worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            # The worker imports envgym from where this process found it.
            env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)},
        )
        self._pid, self._buffer = os.getpid(), b""
        if self._read_line(START_TIMEOUT_S) is None:
            self._stop()
            raise RuntimeError(f"the math-verify worker did not start in {START_TIMEOUT_S:g} s")

    def _stop(self) -> None:
        if self._proc is not None and self._pid == os.getpid():
            self._proc.kill()
            self._proc.wait()
        self._proc = None

    def _read_line(self, timeout_s: float) -> bytes | None:
        """One line from the worker, or None when none came in time (or it died)."""
        deadline = time.monotonic() + timeout_s
        fd = self._proc.stdout.fileno()
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                return None
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def check(self, gold: str, answer: str, timeout_s: float) -> dict:
        """The worker's reply to one check; a refusal when it timed out or died."""
        key = (gold, answer, timeout_s)
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
            reply = self._check(gold, answer, timeout_s)
            self._cache[key] = reply
            if len(self._cache) > CACHED_CHECKS:
                self._cache.popitem(last=False)
            return reply

    def _check(self, gold: str, answer: str, timeout_s: float) -> dict:
        if self._proc is None or self._pid != os.getpid() or self._proc.poll() is not None:
            self._proc = None
            self._start()
        request = json.dumps({"gold": gold, "answer": answer}) + "\n"
        try:
            self._proc.stdin.write(request.encode())
            self._proc.stdin.flush()
            line = self._read_line(timeout_s)
        except OSError:
            line = None
        if line is None:
            self._stop()
            return {"verdict": "refused", "reason": f"checking it took over {timeout_s:g} s"}
        return json.loads(line)

    def close(self) -> None:
        with self._lock:
            self._stop()


_CHECKER = LatexChecker()
atexit.register(_CHECKER.close)
