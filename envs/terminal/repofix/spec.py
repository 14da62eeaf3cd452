"""What a RepoFix domain is: a package template and the bugs it can carry.

Sources, expressions and bug snippets are `string.Template` text: ``$name``
stands for a name drawn per seed (the package, its modules ``$U`` helpers,
``$C`` core, ``$R`` reports, and the functions), so no two seeds read alike.
An expression is Python evaluated with the modules bound to ``$U``, ``$C`` and
``$R``; it must give plain data (numbers, strings, None, lists, tuples, dicts).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

#: Draws a list of expression templates from a seeded generator.
Draw = Callable[[random.Random], list[str]]


@dataclass(frozen=True)
class Fix:
    """One place of a fix: in module ``module`` (``U``, ``C`` or ``R``) the
    correct text ``good`` is planted as ``bad``."""

    module: str
    good: str
    bad: str


@dataclass(frozen=True)
class Bug:
    """A planted bug. ``examples`` draws the calls the issue shows (what the
    user ran); ``hidden`` draws the hidden tests of the bug's behaviour, on inputs
    the issue never shows. ``title`` and ``note`` are the issue's words."""

    key: str
    level: str
    kind: str
    fixes: tuple[Fix, ...]
    title: str
    examples: Draw
    hidden: Draw
    note: str = ""


@dataclass(frozen=True)
class Domain:
    """A package template. ``sources`` maps ``U``/``C``/``R`` to module source
    (in import order: helpers, core, reports); ``names`` gives the choices for
    each ``$name``; ``visible`` and ``regression`` draw test expressions."""

    key: str
    about: str
    names: dict[str, tuple[str, ...]]
    sources: dict[str, str]
    visible: Draw
    regression: Draw
    bugs: tuple[Bug, ...]


def pick(rng: random.Random, options) -> str:
    return options[rng.randrange(len(options))]
