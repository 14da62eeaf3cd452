"""RepoFix tasks: a generated small Python package with one planted bug, an
issue that describes the symptom as a user saw it, and hidden tests.

``make_repo_task(seed, difficulty)`` draws a domain, a bug of that level and
the names, inputs and tests from the seed. Levels:

- easy: the bug is one line in the module the issue's example calls, and a
  visible test fails;
- medium: the bug is in a helper module the example (and its failing visible
  test) reaches only through another module;
- hard: the fix takes two places, or the bug is a missing edge case; no
  visible test fails on the untouched package.

Checks (run by `envgym.envs.terminal.grade` after the episode): the hidden
tests of the issue's behaviour, hidden tests of the rest of the package, and
the original visible tests, each run on the final package in a child
interpreter whose values the check compares.
"""

from __future__ import annotations

import random

from envgym.envs.terminal.repofix import inventory, ledger, textstats, units
from envgym.envs.terminal.repofix.build import build_task
from envgym.envs.terminal.task import LEVELS, TerminalTask

DOMAINS = (inventory.DOMAIN, textstats.DOMAIN, ledger.DOMAIN, units.DOMAIN)

__all__ = ["DOMAINS", "make_repo_task"]


def make_repo_task(seed: int, difficulty: str) -> TerminalTask:
    """The RepoFix task of ``seed`` at ``difficulty`` (easy, medium or hard):
    the same seed and level always give the same files, issue and checks."""
    if difficulty not in LEVELS:
        raise ValueError(f"difficulty must be one of {LEVELS}, got {difficulty!r}")
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    rng = random.Random(f"repofix:{difficulty}:{seed}")
    domain = DOMAINS[rng.randrange(len(DOMAINS))]
    bugs = [bug for bug in domain.bugs if bug.level == difficulty]
    bug = bugs[rng.randrange(len(bugs))]
    return build_task(domain, bug, seed, rng)
