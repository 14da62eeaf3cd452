"""Math problems with exact answers, drawn from a numpy Generator.

Each kind is a function ``(rng, difficulty) -> (text, answer)``; the answer is
an ``int`` or a ``fractions.Fraction``, computed here by exact arithmetic
(enumeration, dynamic programming or Python's big integers), never by float.
Hard problems are sized so that code is the easy way: big sums, enumeration,
modular arithmetic. `make_problem` names a problem ``KIND-DIFFICULTY-SEED``
and rebuilds it from that id alone; a draw whose text states its own answer
(a number in the question equal to it) is drawn again, so copying a number
from the question is never paid.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from itertools import product

import numpy as np

from envgym.envs.python_math.answers import answers_match

DIFFICULTIES = ("easy", "medium", "hard")
MAX_SEED = 2**32 - 1

Answer = int | Fraction


@dataclass(frozen=True)
class Problem:
    """One problem: its id, the text the agent reads, and the exact answer."""

    kind: str
    difficulty: str
    seed: int
    text: str
    answer: Answer

    @property
    def task_id(self) -> str:
        return f"{self.kind}-{self.difficulty}-{self.seed}"


def _int(rng: np.random.Generator, low: int, high: int) -> int:
    """A uniform integer from low to high inclusive."""
    return int(rng.integers(low, high + 1))


def _nonzero(rng: np.random.Generator, bound: int) -> int:
    value = _int(rng, 1, bound)
    return value if rng.random() < 0.5 else -value


def _signed(value: int) -> str:
    """A term after the first: ``+ 3`` or ``- 3``."""
    return f"- {-value}" if value < 0 else f"+ {value}"


def _sum_text(terms: list[tuple[int, str]]) -> str:
    """(coefficient, variable part) pairs as text like ``3x^2 - x + 4``; zero terms left out."""
    parts: list[str] = []
    for coef, body in terms:
        if coef == 0:
            continue
        shown = f"{'' if abs(coef) == 1 and body else abs(coef)}{body}"
        if not parts:
            parts.append(f"-{shown}" if coef < 0 else shown)
        else:
            parts.append(f"{'-' if coef < 0 else '+'} {shown}")
    return " ".join(parts) or "0"


def _poly_text(coeffs: list[int], var: str = "x") -> str:
    """Coefficients, highest power first, as text like ``3x^2 - x + 4``."""
    degree = len(coeffs) - 1
    powers = [var if p == 1 else f"{var}^{p}" if p > 1 else "" for p in range(degree, -1, -1)]
    return _sum_text(list(zip(coeffs, powers, strict=True)))


# ---------------------------------------------------------------- arithmetic
def arithmetic(rng: np.random.Generator, difficulty: str) -> tuple[str, Answer]:
    if difficulty == "easy":
        a, b, c = _int(rng, 11, 99), _int(rng, 11, 99), _int(rng, 100, 999)
        return f"Compute {a} * {b} - {c}.", a * b - c
    if difficulty == "medium":
        (p, q), (r, s), (t, u) = ((_int(rng, 1, 12), _int(rng, 2, 15)) for _ in range(3))
        text = (
            f"Compute {p}/{q} + {r}/{s} * {t}/{u}. Give the answer as a fraction in lowest terms."
        )
        return text, Fraction(p, q) + Fraction(r, s) * Fraction(t, u)
    a, b, c, n = _int(rng, 1, 9), _nonzero(rng, 50), _nonzero(rng, 500), _int(rng, 2000, 20000)
    total = sum(a * k**3 + b * k + c for k in range(1, n + 1))
    return f"Compute the sum of {_poly_text([a, 0, b, c], 'k')} for k = 1, 2, ..., {n}.", total


# ------------------------------------------------------------------- algebra
def linear_equation(rng: np.random.Generator, difficulty: str) -> tuple[str, Answer]:
    if difficulty == "easy":
        a, x, b = _nonzero(rng, 12), _int(rng, -20, 20), _int(rng, -50, 50)
        return f"Solve for x: {a}x {_signed(b)} = {a * x + b}.", x
    if difficulty == "medium":
        a, c = _nonzero(rng, 15), _nonzero(rng, 15)
        while c == a:
            c = _nonzero(rng, 15)
        b, d = _int(rng, -60, 60), _int(rng, -60, 60)
        text = f"Solve for x: {a}x {_signed(b)} = {c}x {_signed(d)}. Give x as a fraction."
        return text, Fraction(d - b, a - c)
    while True:
        a, b, d, e = (_nonzero(rng, 30) for _ in range(4))
        c, f, g = _int(rng, 2, 19), _int(rng, 2, 19), _int(rng, -99, 99)
        coef = Fraction(a, c) + Fraction(d, f)
        if coef != 0:
            break
    x = (g - Fraction(b, c) - Fraction(e, f)) / coef
    text = (
        f"Solve for x: ({a}x {_signed(b)})/{c} + ({d}x {_signed(e)})/{f} = {g}. "
        "Give x as a fraction in lowest terms."
    )
    return text, x


def _solve(matrix: list[list[Fraction]], rhs: list[Fraction]) -> list[Fraction] | None:
    """Gaussian elimination over the rationals; None for a singular system."""
    n = len(rhs)
    rows = [list(matrix[i]) + [rhs[i]] for i in range(n)]
    for col in range(n):
        pivot = next((r for r in range(col, n) if rows[r][col] != 0), None)
        if pivot is None:
            return None
        rows[col], rows[pivot] = rows[pivot], rows[col]
        for r in range(n):
            if r != col and rows[r][col] != 0:
                factor = rows[r][col] / rows[col][col]
                rows[r] = [v - factor * p for v, p in zip(rows[r], rows[col], strict=True)]
    return [rows[i][n] / rows[i][i] for i in range(n)]


def linear_system(rng: np.random.Generator, difficulty: str) -> tuple[str, Answer]:
    names = "xyz"
    n = 3 if difficulty == "hard" else 2
    bound = {"easy": 6, "medium": 12, "hard": 25}[difficulty]
    while True:
        matrix = [[Fraction(_int(rng, -bound, bound)) for _ in range(n)] for _ in range(n)]
        if difficulty == "easy":
            solution = [Fraction(_int(rng, -9, 9)) for _ in range(n)]
            rhs = [
                sum((m * s for m, s in zip(row, solution, strict=True)), Fraction(0))
                for row in matrix
            ]
        else:
            rhs = [Fraction(_int(rng, -99, 99)) for _ in range(n)]
        solved = _solve(matrix, rhs)
        if solved is not None:
            break
    lines = []
    for row, value in zip(matrix, rhs, strict=True):
        lines.append(
            _sum_text([(int(v), name) for v, name in zip(row, names, strict=False)])
            + f" = {int(value)}"
        )
    if difficulty == "hard":
        ask, answer = "x + y + z", sum(solved, Fraction(0))
    else:
        ask, answer = "x", solved[0]
    text = "Solve the system\n  " + "\n  ".join(lines)
    return f"{text}\nWhat is {ask}? Give an exact value.", answer


def polynomial(rng: np.random.Generator, difficulty: str) -> tuple[str, Answer]:
    degree, bound, at = {"easy": (2, 9, 6), "medium": (4, 20, 12), "hard": (9, 99, 0)}[difficulty]
    coeffs = [_nonzero(rng, bound)] + [_int(rng, -bound, bound) for _ in range(degree)]
    if difficulty == "hard":
        x: Answer = Fraction(_nonzero(rng, 9), _int(rng, 2, 7))
        shown = f"{x.numerator}/{x.denominator}"
    else:
        x = _int(rng, -at, at)
        shown = str(x)
    value: Answer = 0
    for c in coeffs:  # Horner's rule
        value = value * x + c
    text = f"Let p(x) = {_poly_text(coeffs)}. What is p({shown})?"
    return text + (" Give an exact fraction." if difficulty == "hard" else ""), value


# ------------------------------------------------------------- number theory
def gcd_lcm(rng: np.random.Generator, difficulty: str) -> tuple[str, Answer]:
    if difficulty == "easy":
        g = _int(rng, 2, 15)
        a, b = g * _int(rng, 2, 15), g * _int(rng, 2, 15)
        return f"What is the greatest common divisor of {a} and {b}?", math.gcd(a, b)
    if difficulty == "medium":
        nums = [_int(rng, 12, 400) for _ in range(3)]
        return f"What is the least common multiple of {', '.join(map(str, nums))}?", math.lcm(*nums)
    low = _int(rng, 2, 20)
    high = low + _int(rng, 15, 40)
    return (
        f"What is the least common multiple of all the integers from {low} to {high}?",
        math.lcm(*range(low, high + 1)),
    )


def modular_power(rng: np.random.Generator, difficulty: str) -> tuple[str, Answer]:
    base_hi, exp_lo, exp_hi, mod_lo, mod_hi = {
        "easy": (12, 2, 8, 5, 30),
        "medium": (99, 50, 5000, 100, 10_000),
        "hard": (10**6, 10**12, 10**15, 10**8, 10**9),
    }[difficulty]
    a, e, m = _int(rng, 2, base_hi), _int(rng, exp_lo, exp_hi), _int(rng, mod_lo, mod_hi)
    return f"What is the remainder when {a}^{e} is divided by {m}?", pow(a, e, m)


def _primes_below(limit: int) -> bytearray:
    """Sieve of Eratosthenes: entry i is 1 when i is prime, for i < limit."""
    sieve = bytearray([1]) * limit
    sieve[:2] = b"\x00\x00"[: min(2, limit)]
    for p in range(2, math.isqrt(limit - 1) + 1):
        if sieve[p]:
            sieve[p * p :: p] = bytes(len(range(p * p, limit, p)))
    return sieve


def prime_count(rng: np.random.Generator, difficulty: str) -> tuple[str, Answer]:
    if difficulty == "easy":
        n = _int(rng, 20, 100)
        return f"How many prime numbers are less than or equal to {n}?", sum(_primes_below(n + 1))
    if difficulty == "medium":
        low = _int(rng, 100, 5000)
        high = low + _int(rng, 200, 2000)
    else:
        low = _int(rng, 10**5, 2 * 10**6)
        high = low + _int(rng, 10**5, 5 * 10**5)
    count = sum(_primes_below(high + 1)[low:])
    return f"How many prime numbers p satisfy {low} <= p <= {high}?", count


def digit_sum(rng: np.random.Generator, difficulty: str) -> tuple[str, Answer]:
    if difficulty == "easy":
        a, b = _int(rng, 100, 999), _int(rng, 10, 99)
        value, shown = a * b, f"{a} * {b}"
    elif difficulty == "medium":
        a, e = _int(rng, 2, 9), _int(rng, 15, 40)
        value, shown = a**e, f"{a}^{e}"
    else:
        a, e = _int(rng, 11, 99), _int(rng, 200, 1500)
        value, shown = a**e, f"{a}^{e}"
    return f"What is the sum of the decimal digits of {shown}?", sum(map(int, str(value)))


# ------------------------------------------------------------- combinatorics
def binomial(rng: np.random.Generator, difficulty: str) -> tuple[str, Answer]:
    if difficulty == "easy":
        n = _int(rng, 5, 12)
        k = _int(rng, 1, n - 1)
        return f"In how many ways can {k} people be chosen from a group of {n}?", math.comb(n, k)
    if difficulty == "medium":
        n = _int(rng, 20, 40)
        k = _int(rng, 3, n - 3)
        return f"What is the binomial coefficient C({n}, {k})?", math.comb(n, k)
    n = _int(rng, 1000, 20000)
    k, m = _int(rng, 10, n // 2), _int(rng, 10**6, 10**9)
    return (
        f"What is the remainder when the binomial coefficient C({n}, {k}) is divided by {m}?",
        math.comb(n, k) % m,
    )


def counting(rng: np.random.Generator, difficulty: str) -> tuple[str, Answer]:
    if difficulty == "easy":
        n, a = _int(rng, 50, 200), _int(rng, 2, 9)
        b = _int(rng, 2, 9)
        while b == a:
            b = _int(rng, 2, 9)
        count = sum(1 for k in range(1, n + 1) if k % a == 0 or k % b == 0)
        return f"How many integers from 1 to {n} are divisible by {a} or by {b} (or both)?", count
    if difficulty == "medium":
        n, s = _int(rng, 1000, 9999), _int(rng, 5, 25)
        count = sum(1 for k in range(1, n + 1) if sum(map(int, str(k))) == s)
        return f"How many integers from 1 to {n} have digits that add up to {s}?", count
    n, m = _int(rng, 15, 30), _int(rng, 5, 40)
    r = _int(rng, 0, m - 1)
    ways = [1] + [0] * (m - 1)  # ways[j]: subsets so far whose sum is j mod m
    for item in range(1, n + 1):
        ways = [ways[j] + ways[(j - item) % m] for j in range(m)]
    text = (
        f"How many subsets of {{1, 2, ..., {n}}} (the empty set included) have a sum that "
        f"leaves remainder {r} when divided by {m}?"
    )
    return text, ways[r]


# --------------------------------------------------------------- probability
def _dice_sums(dice: int, sides: int) -> dict[int, int]:
    """How many of the sides**dice outcomes give each total."""
    counts = {0: 1}
    for _ in range(dice):
        nxt: dict[int, int] = {}
        for total, ways in counts.items():
            for face in range(1, sides + 1):
                nxt[total + face] = nxt.get(total + face, 0) + ways
        counts = nxt
    return counts


def dice(rng: np.random.Generator, difficulty: str) -> tuple[str, Answer]:
    if difficulty == "easy":
        s = _int(rng, 2, 12)
        outcomes = [a + b for a, b in product(range(1, 7), repeat=2)]
        text = f"Two fair six-sided dice are rolled. What is the probability that the sum is {s}?"
        return text, Fraction(outcomes.count(s), len(outcomes))
    if difficulty == "medium":
        s = _int(rng, 6, 15)
        hits = sum(1 for roll in product(range(1, 7), repeat=3) if sum(roll) >= s)
        text = (
            "Three fair six-sided dice are rolled. What is the probability that the sum is "
            f"at least {s}?"
        )
        return text, Fraction(hits, 6**3)
    n, sides = _int(rng, 5, 10), _int(rng, 6, 12)
    s = _int(rng, n + (n * (sides - 1)) // 4, n * sides - (n * (sides - 1)) // 4)
    counts = _dice_sums(n, sides)
    text = (
        f"{n} fair {sides}-sided dice (faces 1 to {sides}) are rolled. What is the "
        f"probability that the sum is exactly {s}? Give an exact fraction."
    )
    return text, Fraction(counts.get(s, 0), sides**n)


def urn(rng: np.random.Generator, difficulty: str) -> tuple[str, Answer]:
    if difficulty == "easy":
        red, blue = _int(rng, 2, 8), _int(rng, 2, 8)
        text = (
            f"An urn holds {red} red and {blue} blue balls. Two are drawn without "
            "replacement. What is the probability that both are red?"
        )
        return text, Fraction(red, red + blue) * Fraction(red - 1, red + blue - 1)
    if difficulty == "medium":
        red, blue = _int(rng, 4, 12), _int(rng, 4, 12)
        k = _int(rng, 3, 6)
        j = _int(rng, 1, min(k, red))
        p = Fraction(math.comb(red, j) * math.comb(blue, k - j), math.comb(red + blue, k))
        text = (
            f"An urn holds {red} red and {blue} blue balls. {k} are drawn without "
            f"replacement. What is the probability that exactly {j} of them are red?"
        )
        return text, p
    colours = [_int(rng, 3, 15) for _ in range(3)]
    k = _int(rng, 4, 10)
    hits = sum(
        math.comb(colours[0], a) * math.comb(colours[1], b) * math.comb(colours[2], k - a - b)
        for a in range(1, k + 1)
        for b in range(1, k - a)
    )
    text = (
        f"An urn holds {colours[0]} red, {colours[1]} green and {colours[2]} blue balls. "
        f"{k} are drawn without replacement. What is the probability that all three colours "
        "appear among them? Give an exact fraction."
    )
    return text, Fraction(hits, math.comb(sum(colours), k))


#: Every kind of problem, by the name task ids use.
KINDS: dict[str, Callable[[np.random.Generator, str], tuple[str, Answer]]] = {
    "arithmetic": arithmetic,
    "linear_equation": linear_equation,
    "linear_system": linear_system,
    "polynomial": polynomial,
    "gcd_lcm": gcd_lcm,
    "modular_power": modular_power,
    "prime_count": prime_count,
    "digit_sum": digit_sum,
    "binomial": binomial,
    "counting": counting,
    "dice": dice,
    "urn": urn,
}

_TASK_ID = re.compile(r"^([a-z_]{1,20})-([a-z]{1,10})-(\d{1,10})$")
#: A number as a problem's text writes one: an integer, a decimal or a fraction.
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:/\d+)?")
#: Draws a problem may take before its text stops stating its own answer.
MAX_DRAWS = 100


def states_its_answer(text: str, answer: Answer) -> bool:
    """Whether a number in ``text`` has the answer's value, so that copying it
    from the question (``7 of 8`` people chosen: 8 ways) would be paid."""
    return any(answers_match(token, answer) for token in _NUMBER.findall(text))


def make_problem(kind: str, difficulty: str, seed: int) -> Problem:
    """The problem ``KIND-DIFFICULTY-SEED`` names: the same in every process."""
    if kind not in KINDS:
        raise ValueError(f"unknown problem kind {kind!r}; choose one of {sorted(KINDS)}")
    if difficulty not in DIFFICULTIES:
        raise ValueError(f"unknown difficulty {difficulty!r}; choose one of {list(DIFFICULTIES)}")
    if not 0 <= seed <= MAX_SEED:
        raise ValueError(f"problem seed must be from 0 to {MAX_SEED}, got {seed}")
    rng = np.random.default_rng([seed, list(KINDS).index(kind)])
    # A problem whose text states its answer is drawn again from the same stream,
    # so an id still names one problem.
    for _ in range(MAX_DRAWS):
        text, answer = KINDS[kind](rng, difficulty)
        if not states_its_answer(text, answer):
            break
    if isinstance(answer, Fraction) and answer.denominator == 1:
        answer = int(answer)
    return Problem(kind, difficulty, seed, text, answer)


def problem_from_id(task_id: str) -> Problem:
    """Rebuild a problem from its task id; a clear ValueError for a malformed one."""
    match = _TASK_ID.match(task_id) if isinstance(task_id, str) else None
    if match is None:
        shown = repr(task_id)[:80]
        raise ValueError(
            f"task ids look like modular_power-hard-42 (KIND-DIFFICULTY-SEED), got {shown}"
        )
    return make_problem(match[1], match[2], int(match[3]))
