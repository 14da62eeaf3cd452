"""What a terminal or repository task is, whichever family or loader made it.

A task is plain data: the starting tree of the work directory, a set-up script
that runs before the agent (a git history, say), the instruction the agent
reads, a reference solution, and checks that a trusted grader runs after the
episode on a copy of the final tree (`grade.py`). Families generate tasks from
a seed; loaders read them from files; the env plays them in a `Session`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

LEVELS = ("easy", "medium", "hard")


@dataclass(frozen=True)
class Check:
    """One check of the final tree: Python source that the grader runs with
    ``python3 -I`` in a fresh sandbox job, its working directory the root of a
    copy of the agent's final work directory. The check passes when the code
    exits 0; it should print one line saying what is wrong when it fails.
    It may run the agent's programs (with a timeout): their output is data the
    check compares, and only the check's own exit status is the verdict."""

    name: str
    code: str


@dataclass(frozen=True)
class TerminalTask:
    """A task for the terminal envs. ``files`` are relative to the work
    directory (``str`` is UTF-8 text); ``modes`` gives a file's mode where it is
    not 0o644 (0o755 for a script). ``setup`` is bash run in the work
    directory, as the agent's user, before the agent's first turn; ``solution``
    is bash run the same way after it, which must make every check pass.
    ``vocabulary`` is what the random agent draws its commands from."""

    task_id: str
    family: str
    difficulty: str
    instruction: str
    files: dict[str, str | bytes]
    checks: tuple[Check, ...]
    solution: str
    setup: str = ""
    modes: dict[str, int] = field(default_factory=dict)
    vocabulary: tuple[str, ...] = ("ls", "cat", "pwd")

    def __post_init__(self) -> None:
        if self.difficulty not in LEVELS:
            raise ValueError(f"difficulty must be one of {LEVELS}, got {self.difficulty!r}")
        if not self.checks:
            raise ValueError(f"task {self.task_id} has no checks: nothing could grade it")
        names = [c.name for c in self.checks]
        if len(set(names)) != len(names):
            raise ValueError(f"task {self.task_id} has two checks of one name: {names}")
        for path in [*self.files, *self.modes]:
            parts = path.split("/")
            if path.startswith("/") or ".." in parts or not path:
                raise ValueError(f"task {self.task_id}: {path!r} is not a relative path inside it")
