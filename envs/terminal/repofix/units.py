"""RepoFix domain: a units-conversion library (lengths and temperatures)."""

from __future__ import annotations

import random

from envgym.envs.terminal.repofix.spec import Bug, Domain, Fix

NAMES = {
    "pkg": ("unitwise", "measurekit", "lengthly", "convertable"),
    "U": ("units", "registry", "scales"),
    "C": ("convert", "conversion", "lengths"),
    "R": ("tables", "totals", "sheets"),
    "unit": ("unit", "canonical_unit", "unit_key"),
    "round_to": ("round_to", "round_half_up", "to_places"),
    "conv": ("convert_length", "length_in", "change_unit"),
    "parse": ("parse", "parse_length", "read_length"),
    "celsius": ("to_celsius", "celsius", "f_to_c"),
    "fahrenheit": ("to_fahrenheit", "fahrenheit", "c_to_f"),
    "total": ("total_length", "sum_lengths", "add_lengths"),
    "table": ("conversion_table", "table", "chart"),
    "longest": ("longest", "longest_length", "max_length"),
}

SCALES = '''"""Units known to $pkg, and rounding."""

import math

METRES = {"mm": 0.001, "cm": 0.01, "m": 1.0, "km": 1000.0, "in": 0.0254, "ft": 0.3048}
ALIASES = {"metre": "m", "meter": "m", "metres": "m", "meters": "m", "inch": "in", "feet": "ft"}


def $unit(name):
    """The unit's short name: case and spaces ignored, long names allowed."""
    key = name.strip().lower()
    key = ALIASES.get(key, key)
    if key not in METRES:
        raise ValueError(f"unknown unit {name!r}")
    return key


def $round_to(value, places=3):
    """value rounded to places decimals, halves away from zero."""
    scale = 10**places
    return math.copysign(math.floor(abs(value) * scale + 0.5) / scale, value)
'''

CONVERT = '''"""Conversions."""

from .$U import METRES, $round_to, $unit


def $conv(value, source, target):
    """value in unit source, expressed in unit target, to 3 decimals."""
    return $round_to(value * METRES[$unit(source)] / METRES[$unit(target)])


def $parse(text):
    """'12.5 km' as (12.5, 'km')."""
    number, _, name = text.strip().partition(" ")
    return float(number), $unit(name)


def $celsius(degrees):
    """Fahrenheit degrees in Celsius, to 2 decimals."""
    return $round_to((degrees - 32) * 5 / 9, 2)


def $fahrenheit(degrees):
    """Celsius degrees in Fahrenheit, to 2 decimals."""
    return $round_to(degrees * 9 / 5 + 32, 2)
'''

TABLES = '''"""Sums and tables of lengths written like '3.5 km'."""

from .$C import $conv, $parse
from .$U import $round_to


def $total(texts, target="m"):
    """The sum of the lengths, in unit target, to 3 decimals."""
    return $round_to(sum($conv(*$parse(t), target) for t in texts))


def $table(values, source, target):
    """One line 'v source = w target' per value."""
    return [f"{v:g} {source} = {$conv(v, source, target):g} {target}" for v in values]


def $longest(texts):
    """The longest length as written (the first of several as long)."""
    best, best_metres = None, -1.0
    for t in texts:
        metres = $conv(*$parse(t), "m")
        if metres > best_metres:
            best, best_metres = t, metres
    return best
'''

UNITS = ("mm", "cm", "m", "km", "in", "ft")
SPELLED = ("metres", "meter", "inch", "feet", "km", "cm", "m")


def length(rng: random.Random, spelled: tuple[str, ...] = UNITS) -> str:
    return f"{rng.randint(1, 900) / rng.choice((1, 2, 4, 10))} {rng.choice(spelled)}"


def lengths(rng: random.Random, n: int | None = None) -> list[str]:
    return [length(rng) for _ in range(n or rng.randint(2, 5))]


def visible(rng):
    a, b = rng.sample(UNITS, 2)
    return [
        f"$C.$conv({rng.randint(1, 500)}, {a!r}, {b!r})",
        f"$C.$parse({length(rng, SPELLED)!r})",
        f"$C.$celsius({rng.randint(0, 300)})",
        f"$C.$fahrenheit({rng.randint(0, 100)})",
        f"$R.$total({lengths(rng)!r})",
        f"$R.$total({lengths(rng)!r}, {rng.choice(UNITS)!r})",
        f"$R.$table({[rng.randint(1, 20) for _ in range(3)]!r}, {a!r}, {b!r})",
        f"$R.$longest({lengths(rng)!r})",
        f"$U.$unit({rng.choice(SPELLED)!r})",
        f"$U.$round_to({rng.randint(1, 9999) / 1000}, 2)",
    ]


def regression(rng):
    a, b = rng.sample(UNITS, 2)
    return [
        f"$C.$conv({rng.randint(1, 5000) / 10}, {a!r}, {b!r})",
        f"$C.$conv({rng.randint(1, 500)}, {b!r}, {a!r})",
        f"$C.$parse({length(rng, SPELLED)!r})",
        f"$C.$celsius({rng.randint(-40, 400)})",
        f"$C.$fahrenheit({rng.randint(-40, 200)})",
        f"$R.$total({lengths(rng, 5)!r}, {rng.choice(UNITS)!r})",
        f"$R.$table({[rng.randint(1, 99) for _ in range(4)]!r}, {b!r}, {a!r})",
        f"$R.$longest({lengths(rng, 5)!r})",
        f"$U.$unit({rng.choice(('parsec', 'mile', 'yard'))!r})",
        f"$U.$round_to({rng.randint(1, 99999) / 1000}, {rng.randint(0, 3)})",
    ]


def _swapped(rng):
    a, b = rng.sample(UNITS, 2)
    return [f"$C.$conv({rng.randint(2, 500)}, {a!r}, {b!r})"]


def _fahrenheit(rng):
    return [f"$C.$fahrenheit({rng.randint(1, 100)})"]


def _tie(rng):
    metres = rng.randint(1, 9)
    same = [f"{metres} km", f"{metres * 1000} m", f"{metres * 100000} cm"]
    rng.shuffle(same)
    return [f"$R.$longest({[length(rng, ('mm', 'cm')), *same[:2]]!r})"]


def _case(rng):
    shouty = [f"{rng.randint(1, 99)} {rng.choice(('KM', 'Metres', 'FT', 'Cm', 'Inch'))}"]
    return [f"$R.$total({lengths(rng, 2) + shouty!r}, {rng.choice(UNITS)!r})"]


def _half_up(rng):
    return [f"$R.$table({[rng.randint(1, 40) / 8 for _ in range(3)]!r}, 'm', 'km')"]


def _negative(rng):
    value = -rng.randint(1, 400) / 8
    return [f"$U.$round_to({value}, {rng.randint(0, 2)})"]


def _temperatures(rng):
    return [f"$C.$celsius({rng.randint(40, 400)})", f"$C.$fahrenheit({rng.randint(1, 100)})"]


BUGS = (
    Bug(
        "units-swapped",
        "easy",
        "swapped factors",
        (
            Fix(
                "C",
                "METRES[$unit(source)] / METRES[$unit(target)]",
                "METRES[$unit(target)] / METRES[$unit(source)]",
            ),
        ),
        "`$conv` converts the wrong way round",
        _swapped,
        lambda rng: [_swapped(rng)[0] for _ in range(3)],
    ),
    Bug(
        "units-fahrenheit",
        "easy",
        "wrong constant",
        (Fix("C", "degrees * 9 / 5 + 32", "degrees * 5 / 9 + 32"),),
        "`$fahrenheit` gives wrong temperatures",
        _fahrenheit,
        lambda rng: [_fahrenheit(rng)[0] for _ in range(3)],
        "For reference, 100 degrees Celsius is 212 Fahrenheit.",
    ),
    Bug(
        "units-longest",
        "easy",
        "wrong comparison",
        (Fix("R", "if metres > best_metres:", "if metres >= best_metres:"),),
        "`$longest` returns the last of several equal lengths",
        _tie,
        lambda rng: [_tie(rng)[0] for _ in range(3)],
        "The docstring says the first one written should win.",
    ),
    Bug(
        "units-case",
        "medium",
        "case not ignored in a helper",
        (Fix("U", "key = name.strip().lower()", "key = name.strip()"),),
        "`$total` rejects units written in capitals",
        _case,
        lambda rng: [_case(rng)[0] for _ in range(3)],
        "Unit names are meant to be case-insensitive.",
    ),
    Bug(
        "units-half-up",
        "medium",
        "wrong rounding in a helper",
        (Fix("U", "abs(value) * scale + 0.5)", "abs(value) * scale)"),),
        "`$table` shows some conversions a little too small",
        _half_up,
        lambda rng: [_half_up(rng)[0] for _ in range(3)],
        "Values should be rounded to 3 decimals, halves up.",
    ),
    Bug(
        "units-negative",
        "hard",
        "missing edge case",
        (
            Fix(
                "U",
                "math.copysign(math.floor(abs(value) * scale + 0.5) / scale, value)",
                "math.floor(value * scale + 0.5) / scale",
            ),
        ),
        "`$round_to` rounds negative halves the wrong way",
        _negative,
        lambda rng: [_negative(rng)[0] for _ in range(3)],
        "The docstring says halves go away from zero, for negative numbers too.",
    ),
    Bug(
        "units-precedence",
        "hard",
        "operator precedence in two places",
        (
            Fix("C", "(degrees - 32) * 5 / 9", "degrees - 32 * 5 / 9"),
            Fix("C", "degrees * 9 / 5 + 32", "degrees * (9 / 5 + 32)"),
        ),
        "Temperature conversions are way off",
        lambda rng: [_temperatures(rng)[0]],
        lambda rng: _temperatures(rng) + _temperatures(rng),
        "Converting back with `$fahrenheit` is wrong as well.",
    ),
)

DOMAIN = Domain(
    "units",
    "units-conversion",
    NAMES,
    {"U": SCALES, "C": CONVERT, "R": TABLES},
    visible,
    regression,
    BUGS,
)
