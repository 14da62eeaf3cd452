"""Terminal-v0's task families: each module's ``make_task(seed, difficulty)``
returns a `TerminalTask`, the same one for the same seed and level.

The sandbox image has bash, coreutils, grep, sed, awk (mawk), find, tar,
gzip, diff, perl, python3, git, make and jq. The ``git`` and ``make`` families
use real repositories and Makefiles; ``bisect``, ``conflicts`` and ``build``
are their counterparts without git or make (a folder per release, conflict
markers in plain files, a bash build script)."""

from __future__ import annotations

from collections.abc import Callable

from envgym.envs.terminal.families import (
    archives,
    bisect,
    build,
    config,
    conflicts,
    gitwork,
    logs,
    makefile,
    organise,
    permissions,
    pybug,
    records,
    tables,
)
from envgym.envs.terminal.task import LEVELS, TerminalTask

#: Family name -> ``make_task(seed, difficulty)``.
FAMILIES: dict[str, Callable[[int, str], TerminalTask]] = {
    module.FAMILY: module.make_task
    for module in (
        organise,
        logs,
        tables,
        records,
        permissions,
        archives,
        bisect,
        conflicts,
        gitwork,
        pybug,
        build,
        config,
        gitwork,
        makefile,
    )
}


def make_task(family: str, seed: int, difficulty: str) -> TerminalTask:
    """The task of ``family`` for ``seed`` at ``difficulty``; clear errors for bad names."""
    if family not in FAMILIES:
        raise ValueError(f"unknown terminal task family {family!r}; known: {sorted(FAMILIES)}")
    if difficulty not in LEVELS:
        raise ValueError(f"difficulty must be one of {LEVELS}, got {difficulty!r}")
    return FAMILIES[family](seed, difficulty)


__all__ = ["FAMILIES", "make_task"]
