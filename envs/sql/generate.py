"""What the generated databases (`domains.py`) are filled with: word lists and a
random source of realistic columns (skewed categories, names, cities, dates,
money), all drawn from one ``numpy.random.Generator``, so a database is the
same for the same seed in any process.

Every value is a plain Python ``int``, ``float``, ``str`` or ``None`` (what
``sqlite3`` binds); text is ASCII; money is a float with two decimals (cents
divided by 100, so ``12.35`` is exactly ``float("12.35")``); a date is
``YYYY-MM-DD`` text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["CITIES", "FIRST_NAMES", "LAST_NAMES", "Gen", "ids", "text_days", "zipf_weights"]

# Alternately male and female (`Gen.first_names` picks by sex from the halves).
FIRST_NAMES = (
    "James", "Mary", "John", "Patricia", "Robert", "Jennifer", "Michael", "Linda", "David",
    "Elizabeth", "William", "Barbara", "Richard", "Susan", "Joseph", "Jessica", "Thomas", "Sarah",
    "Carlos", "Karen", "Daniel", "Lisa", "Matthew", "Nancy", "Anthony", "Sandra", "Mark",
    "Ashley", "Steven", "Emily", "Andrew", "Michelle", "Paul", "Amanda", "Joshua", "Melissa",
    "Kenji", "Deborah", "Kevin", "Laura", "Brian", "Olivia", "Omar", "Fatima", "Ahmed", "Priya",
    "Wei", "Mei", "Hiroshi", "Yuki", "Lucas", "Sofia", "Mateo", "Camila", "Ivan", "Elena",
    "Noah", "Emma", "Liam", "Ava", "Ethan", "Mia", "Arjun", "Ananya", "Diego", "Lucia",
)  # fmt: skip

LAST_NAMES = (
    "Smith", "Johnson", "Williams", "Brown", "Jones", "Garcia", "Miller", "Davis", "Rodriguez",
    "Martinez", "Hernandez", "Lopez", "Gonzalez", "Wilson", "Anderson", "Thomas", "Taylor",
    "Moore", "Jackson", "Martin", "Lee", "Perez", "Thompson", "White", "Harris", "Sanchez",
    "Clark", "Ramirez", "Lewis", "Robinson", "Walker", "Young", "Allen", "King", "Wright",
    "Scott", "Torres", "Nguyen", "Hill", "Flores", "Green", "Adams", "Nelson", "Baker", "Hall",
    "Rivera", "Campbell", "Mitchell", "Carter", "Roberts", "Kim", "Patel", "Chen", "Wang",
    "Singh", "Kumar", "Tanaka", "Sato", "Muller", "Schmidt", "Rossi", "Silva", "Novak", "Ivanov",
    "Okafor", "Mensah", "Haddad", "Cohen", "Larsen", "Dubois", "Moreau", "Costa", "Ferreira",
)  # fmt: skip

# (city, country), most populous first: `Gen.cities` draws them with Zipf-like weights.
CITIES = (
    ("New York", "USA"), ("London", "UK"), ("Tokyo", "Japan"), ("Paris", "France"),
    ("Chicago", "USA"), ("Toronto", "Canada"), ("Berlin", "Germany"), ("Madrid", "Spain"),
    ("Los Angeles", "USA"), ("Sydney", "Australia"), ("Mumbai", "India"), ("Seoul", "South Korea"),
    ("Houston", "USA"), ("Rome", "Italy"), ("Amsterdam", "Netherlands"), ("Boston", "USA"),
    ("Mexico City", "Mexico"), ("Sao Paulo", "Brazil"), ("Manchester", "UK"), ("Lyon", "France"),
    ("Osaka", "Japan"), ("Vancouver", "Canada"), ("Munich", "Germany"), ("Barcelona", "Spain"),
    ("Seattle", "USA"), ("Melbourne", "Australia"), ("Dublin", "Ireland"), ("Lisbon", "Portugal"),
    ("Vienna", "Austria"), ("Stockholm", "Sweden"), ("Oslo", "Norway"), ("Denver", "USA"),
    ("Nairobi", "Kenya"), ("Lagos", "Nigeria"), ("Cairo", "Egypt"), ("Singapore", "Singapore"),
    ("Auckland", "New Zealand"), ("Prague", "Czech Republic"), ("Warsaw", "Poland"),
    ("Buenos Aires", "Argentina"),
)  # fmt: skip

_DAY = np.timedelta64(1, "D")


def zipf_weights(n: int, exponent: float = 1.0) -> np.ndarray:
    """Weights ``1/rank**exponent`` over ``n`` ranks, summing to 1 (the skew of
    real categories: a few common values, a long tail)."""
    w = 1.0 / np.arange(1, n + 1) ** exponent
    return w / w.sum()


class Gen:
    """Columns of ``n`` values drawn from ``rng``."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng

    def count(self, low: int, high: int) -> int:
        """How many rows a table gets: uniform in ``[low, high]``."""
        return int(self.rng.integers(low, high + 1))

    def ints(self, n: int, low: int, high: int) -> list[int]:
        """Uniform integers in ``[low, high]``."""
        return self.rng.integers(low, high + 1, size=n).tolist()

    def normal_ints(self, n: int, mean: float, sd: float, low: int, high: int) -> list[int]:
        """Integers around ``mean``, clipped to ``[low, high]``."""
        values = np.rint(self.rng.normal(mean, sd, size=n))
        return np.clip(values, low, high).astype(np.int64).tolist()

    def money(
        self, n: int, median: float | np.ndarray, spread: float = 0.6, low: float = 0.5
    ) -> list[float]:
        """Amounts with two decimals, log-normal around ``median`` (one for all,
        or one per value: a long right tail, few exact ties), at least ``low``."""
        cents = np.rint(self.rng.lognormal(np.log(median * 100), spread, size=n))
        cents = np.maximum(cents, round(low * 100))
        return (cents / 100).tolist()

    def decimals(self, n: int, low: float, high: float, places: int = 2) -> list[float]:
        """Uniform reals in ``[low, high]`` rounded to ``places`` decimals."""
        scale = 10**places
        units = self.rng.integers(round(low * scale), round(high * scale) + 1, size=n)
        return (units / scale).tolist()

    def pick(self, values: Sequence[Any]) -> Any:
        return values[int(self.rng.integers(len(values)))]

    def choice(
        self, n: int, values: Sequence[Any], weights: Sequence[float] | None = None
    ) -> list[Any]:
        """``n`` draws from ``values`` with ``weights`` (relative; uniform when
        None). The result holds the values themselves (Python objects)."""
        p = None
        if weights is not None:
            p = np.asarray(weights, dtype=float)
            p = p / p.sum()
        index = self.rng.choice(len(values), size=n, p=p)
        return [values[i] for i in index.tolist()]

    def zipf(self, n: int, values: Sequence[Any], exponent: float = 1.0) -> list[Any]:
        """``n`` draws from ``values``, the first most often (Zipf-like)."""
        return self.choice(n, values, zipf_weights(len(values), exponent))

    def refs(self, n: int, ids: Sequence[int], exponent: float = 0.6) -> list[int]:
        """``n`` foreign keys into ``ids``, some parents far more popular than
        others (popularity in a shuffled order, so it is not the id order)."""
        order = self.rng.permutation(len(ids))
        weights = np.empty(len(ids))
        weights[order] = zipf_weights(len(ids), exponent)
        index = self.rng.choice(len(ids), size=n, p=weights)
        return [ids[i] for i in index.tolist()]

    def first_names(self, n: int, sex: Sequence[str] | None = None) -> list[str]:
        """``n`` first names; with ``sex`` (``"F"``/``"M"`` per row), names of that sex."""
        if sex is None:
            return self.zipf(n, FIRST_NAMES, 0.4)
        female, male = self.zipf(n, FIRST_NAMES[1::2], 0.4), self.zipf(n, FIRST_NAMES[0::2], 0.4)
        return [f if s == "F" else m for s, f, m in zip(sex, female, male, strict=True)]

    def last_names(self, n: int) -> list[str]:
        return self.zipf(n, LAST_NAMES, 0.5)

    def cities(self, n: int, exponent: float = 0.9) -> list[tuple[str, str]]:
        """``n`` (city, country) pairs, big cities more often."""
        return self.zipf(n, CITIES, exponent)

    def days(self, n: int, start: str, end: str) -> np.ndarray:
        """``n`` uniform days in ``[start, end]`` as ``datetime64[D]``."""
        first, last = np.datetime64(start, "D"), np.datetime64(end, "D")
        span = int((last - first) / _DAY)
        return first + self.rng.integers(0, span + 1, size=n) * _DAY

    def after(self, days: np.ndarray, low: int, high: int) -> np.ndarray:
        """Each day in ``days`` plus ``low..high`` days."""
        return days + self.rng.integers(low, high + 1, size=len(days)) * _DAY

    def nullify(self, values: Sequence[Any], fraction: float) -> list[Any]:
        """``values`` with about ``fraction`` of them set to None, and always at
        least one None and one value left (a nullable column shows both)."""
        n = len(values)
        mask = self.rng.random(n) < fraction
        if n >= 2:
            if not mask.any():
                mask[int(self.rng.integers(n))] = True
            if mask.all():
                mask[int(self.rng.integers(n))] = False
        return [None if m else v for v, m in zip(values, mask.tolist(), strict=True)]


def text_days(days: np.ndarray) -> list[str]:
    """``datetime64[D]`` values as ``YYYY-MM-DD`` text."""
    return np.datetime_as_string(days.astype("datetime64[D]"), unit="D").tolist()


def ids(n: int) -> list[int]:
    """Primary keys ``1..n``."""
    return list(range(1, n + 1))
