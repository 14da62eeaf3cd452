"""Resolve merge conflicts left in files without git (the conflict markers
are written out as git writes them; family ``git`` merges for real): keep one
side (easy), a rule per file (medium), rules per line, by version order (hard)."""

from __future__ import annotations

from envgym.envs.terminal.families._common import (
    WORDS,
    check,
    lines,
    make,
    rng_for,
    text_check,
    write_cmd,
)
from envgym.envs.terminal.task import TerminalTask

FAMILY = "conflicts"
VOCABULARY = (
    "ls",
    "cat app.conf",
    "grep -n '<<<<<<<' -r .",
    "sed -i '/^=======/d' app.conf",
    "head CHANGELOG.md",
    "diff",
)


def _conflict(ours: list[str], theirs: list[str]) -> list[str]:
    return ["<<<<<<< HEAD", *ours, "=======", *theirs, ">>>>>>> feature"]


def _conf(rng, hunks: int, keep: str) -> tuple[str, str]:
    """A key = value file with ``hunks`` conflicts: (conflicted, resolved by ``keep``)."""
    keys = rng.sample(WORDS, rng.randint(6, 9))
    at = set(rng.sample(range(len(keys)), hunks))
    text, resolved = ["[main]"], ["[main]"]
    for i, key in enumerate(keys):
        ours, theirs = f"{key} = {rng.randint(1, 99)}", f"{key} = {rng.randint(100, 999)}"
        if i in at:
            text += _conflict([ours], [theirs])
            resolved.append(ours if keep == "ours" else theirs)
        else:
            text.append(ours)
            resolved.append(ours)
    return lines(text), lines(resolved)


def _changelog(rng) -> tuple[str, str]:
    """A changelog whose Unreleased section conflicts; resolved: HEAD's lines, then feature's."""
    ours = [f"- {rng.choice(WORDS)} {rng.choice(WORDS)} fixed" for _ in range(rng.randint(1, 3))]
    theirs = [f"- added {rng.choice(WORDS)} {rng.choice(WORDS)}" for _ in range(rng.randint(1, 3))]
    head = ["# Changelog", "", "## Unreleased", ""]
    tail = ["", "## 1.0.0", "", "- first release"]
    return lines(head + _conflict(ours, theirs) + tail), lines(head + ours + theirs + tail)


def _version(rng) -> tuple[int, int, int]:
    return (rng.randint(0, 3), rng.randint(0, 15), rng.randint(0, 20))


def _deps(rng) -> tuple[str, str]:
    """Pinned requirements with conflicts per package: keep the higher version."""
    names = sorted(rng.sample(WORDS, rng.randint(6, 9)))
    at = set(rng.sample(range(len(names)), rng.randint(2, 4)))
    text, resolved = [], []
    for i, name in enumerate(names):
        a = _version(rng)
        if i in at:
            b = a
            while b == a:
                b = (a[0], rng.randint(0, 15), rng.randint(0, 20))
            fa, fb = (f"{name}=={'.'.join(map(str, v))}" for v in (a, b))
            text += _conflict([fa], [fb])
            resolved.append(fa if a > b else fb)
        else:
            text.append(f"{name}=={'.'.join(map(str, a))}")
            resolved.append(text[-1])
    return lines(text), lines(resolved)


def make_task(seed: int, difficulty: str) -> TerminalTask:
    rng = rng_for(FAMILY, seed, difficulty)
    if difficulty == "easy":
        conf, done = _conf(rng, rng.randint(1, 2), "theirs")
        files, want = {"app.conf": conf}, {"app.conf": done}
        instruction = (
            "A merge of the branch feature into HEAD left conflicts in app.conf, marked as git "
            "marks them (<<<<<<< HEAD, =======, >>>>>>> feature). Resolve each by keeping the "
            "feature side only, and remove the markers; leave every other line as it is."
        )
    elif difficulty == "medium":
        conf, conf_done = _conf(rng, rng.randint(2, 3), "ours")
        log, log_done = _changelog(rng)
        files = {"app.conf": conf, "CHANGELOG.md": log}
        want = {"app.conf": conf_done, "CHANGELOG.md": log_done}
        instruction = (
            "A merge of the branch feature into HEAD left conflicts, marked as git marks them "
            "(<<<<<<< HEAD, =======, >>>>>>> feature), in app.conf and CHANGELOG.md. In "
            "app.conf keep the HEAD side of each conflict. In CHANGELOG.md keep both sides: "
            "HEAD's lines, then feature's lines. Remove all markers; leave other lines as "
            "they are."
        )
    else:
        conf, conf_done = _conf(rng, rng.randint(2, 3), "theirs")
        log, log_done = _changelog(rng)
        deps, deps_done = _deps(rng)
        files = {"app.conf": conf, "CHANGELOG.md": log, "requirements.txt": deps}
        want = {"app.conf": conf_done, "CHANGELOG.md": log_done, "requirements.txt": deps_done}
        instruction = (
            "A merge of the branch feature into HEAD left conflicts, marked as git marks them "
            "(<<<<<<< HEAD, =======, >>>>>>> feature), in app.conf, CHANGELOG.md and "
            "requirements.txt. In app.conf keep the feature side. In CHANGELOG.md keep both "
            "sides: HEAD's lines, then feature's. In requirements.txt each conflict pins one "
            "package to two versions: keep the line with the higher version, comparing "
            "versions number by number (1.10.0 is higher than 1.9.3). Remove all markers; "
            "leave other lines as they are."
        )
    checks = [
        text_check(f"resolved_{path.split('.')[0].lower()}", path, text)
        for path, text in want.items()
    ]
    checks.append(
        check(
            "no_markers",
            """
for path in PATHS:
    text = read(path)
    if any(line.startswith(("<<<<<<<", "=======", ">>>>>>>")) for line in text.splitlines()):
        fail(f"{path} still has conflict markers")
""",
            PATHS=sorted(want),
        )
    )
    solution = "\n".join(write_cmd(path, text) for path, text in want.items())
    return make(
        FAMILY,
        seed,
        difficulty,
        instruction=instruction,
        files=files,
        checks=tuple(checks),
        solution=solution,
        vocabulary=VOCABULARY,
    )
