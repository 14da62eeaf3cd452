"""Pieces every family shares: a seeded random source, check builders whose
expected values are embedded in the check's source, and shell snippets for
reference solutions."""

from __future__ import annotations

import base64
import hashlib
import random
import shlex

from envgym.envs.terminal.task import LEVELS, Check, TerminalTask

#: Imported by every check; `fail` prints the one-line reason and exits 1.
PRELUDE = """import hashlib, json, os, stat, subprocess, sys
from pathlib import Path
def fail(why):
    print(why)
    sys.exit(1)
def norm(text):
    return "\\n".join(line.rstrip() for line in text.strip().splitlines())
def read(path):
    p = Path(path)
    if p.is_symlink() or not p.is_file():
        fail(f"{path} is missing or not a regular file")
    return p.read_text(errors="replace")
"""


def rng_for(family: str, seed: int, difficulty: str) -> random.Random:
    """The random source of one task; fails clearly on a bad seed or level."""
    if difficulty not in LEVELS:
        raise ValueError(f"difficulty must be one of {LEVELS}, got {difficulty!r}")
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    return random.Random(f"{family}/{difficulty}/{seed}")


def make(family: str, seed: int, difficulty: str, **fields) -> TerminalTask:
    return TerminalTask(
        task_id=f"{family}-{difficulty}-{seed}", family=family, difficulty=difficulty, **fields
    )


def check(name: str, body: str, **values) -> Check:
    """A check: the prelude, then ``values`` bound as Python literals, then ``body``."""
    bound = "".join(f"{key} = {value!r}\n" for key, value in values.items())
    return Check(name, PRELUDE + bound + body.strip() + "\n")


def text_check(name: str, path: str, expected: str) -> Check:
    """``path`` holds ``expected`` (trailing spaces and blank lines at the ends aside)."""
    return check(
        name,
        """
got = norm(read(PATH))
if got != norm(EXPECTED):
    fail(f"{PATH} does not hold the expected content (got {got[:60]!r})")
""",
        PATH=path,
        EXPECTED=expected,
    )


def json_check(name: str, path: str, expected) -> Check:
    """``path`` parses as JSON equal to ``expected``."""
    return check(
        name,
        """
try:
    got = json.loads(read(PATH))
except ValueError as e:
    fail(f"{PATH} is not valid JSON: {e}")
if got != EXPECTED:
    fail(f"{PATH} does not hold the expected data (got {str(got)[:60]})")
""",
        PATH=path,
        EXPECTED=expected,
    )


def files_check(name: str, expected: dict[str, str]) -> Check:
    """Each path in ``expected`` is a regular file with exactly that content."""
    digests = {path: sha(text) for path, text in expected.items()}
    return check(
        name,
        """
for path, digest in sorted(DIGESTS.items()):
    p = Path(path)
    if p.is_symlink() or not p.is_file():
        fail(f"{path} is missing")
    if hashlib.sha256(p.read_bytes()).hexdigest() != digest:
        fail(f"{path} does not hold its original content")
""",
        DIGESTS=digests,
    )


def absent_check(name: str, paths: list[str], why: str) -> Check:
    return check(
        name,
        """
left = [p for p in PATHS if os.path.lexists(p)]
if left:
    fail(f"{left[0]} is still there: {WHY}")
""",
        PATHS=sorted(paths),
        WHY=why,
    )


def sha(text: str | bytes) -> str:
    data = text.encode() if isinstance(text, str) else text
    return hashlib.sha256(data).hexdigest()


def write_cmd(path: str, content: str | bytes) -> str:
    """Bash that writes ``content`` to ``path`` (its folder made first)."""
    data = content.encode() if isinstance(content, str) else content
    quoted = shlex.quote(path)
    folder = path.rsplit("/", 1)[0] if "/" in path else "."
    encoded = base64.b64encode(data).decode()
    return f"mkdir -p {shlex.quote(folder)} && echo {encoded} | base64 -d > {quoted}"


def lines(items) -> str:
    return "".join(f"{item}\n" for item in items)


WORDS = (
    "alpha bravo cedar delta ember falcon garnet harbor indigo juniper kestrel lumen "
    "meadow nickel orchid pepper quartz raven saffron timber umber velvet willow yarrow zephyr"
).split()
