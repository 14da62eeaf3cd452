"""Fix file modes to a written spec: scripts executable (easy), private
folders and keys (medium), a spec by folder and pattern (hard).

The grader clears group and other write bits when it unpacks the final tree,
so every spec here is told apart by the owner's bits and the read and execute
bits of group and others (mode & 0o755)."""

from __future__ import annotations

import shlex

from envgym.envs.terminal.families._common import WORDS, check, make, rng_for
from envgym.envs.terminal.task import Check, TerminalTask

FAMILY = "permissions"
VOCABULARY = (
    "ls -l",
    "ls -la bin",
    "chmod +x",
    "chmod 600",
    "chmod 755",
    "stat -c %a",
    "find . -type f",
)


def mode_check(name: str, modes: dict[str, int]) -> Check:
    return check(
        name,
        """
for path, want in sorted(MODES.items()):
    p = Path(path)
    if p.is_symlink() or not p.exists():
        fail(f"{path} is missing")
    got = stat.S_IMODE(p.stat().st_mode) & 0o755
    if got != want & 0o755:
        fail(f"{path} has mode {got:o}, not {want:o}")
""",
        MODES=modes,
    )


def make_task(seed: int, difficulty: str) -> TerminalTask:
    rng = rng_for(FAMILY, seed, difficulty)
    files: dict[str, str] = {}
    modes: dict[str, int] = {}
    want: dict[str, dict[str, int]] = {}
    dirs: dict[str, int] = {}

    def add(group: str, path: str, start: int, final: int, text: str | None = None) -> None:
        files[path] = text or f"# {rng.choice(WORDS)} {rng.choice(WORDS)}\n"
        modes[path] = start
        want.setdefault(group, {})[path] = final

    names = rng.sample(WORDS, 12)
    if difficulty == "easy":
        for n in names[: rng.randint(2, 4)]:
            add("scripts_executable", f"bin/{n}.sh", 0o644, 0o755, "#!/bin/sh\necho hi\n")
        for n in names[5:7]:
            add("docs_not_executable", f"docs/{n}.md", rng.choice((0o755, 0o744)), 0o644)
        instruction = (
            "Make every file in bin/ mode 755 (rwxr-xr-x) and every file in docs/ "
            "mode 644 (rw-r--r--)."
        )
    elif difficulty == "medium":
        for n in names[:3]:
            add("scripts_executable", f"bin/{n}.sh", rng.choice((0o644, 0o600)), 0o755)
        for n in names[3:6]:
            add("secrets_private", f"secrets/{n}.key", rng.choice((0o644, 0o755)), 0o600)
        for n in names[6:8]:
            add("public_readable", f"public/{n}.html", rng.choice((0o600, 0o700)), 0o644)
        dirs["secrets"] = 0o700
        instruction = (
            "Set modes: every file in bin/ 755; the folder secrets/ 700 and every file in it "
            "600; every file in public/ 644."
        )
    else:
        for n in names[:3]:
            add("bin_group_only", f"bin/{n}", rng.choice((0o644, 0o755)), 0o750)
        for n in names[3:5]:
            add("config_640", f"config/{n}.conf", rng.choice((0o644, 0o600)), 0o640)
        for n in names[5:7]:
            add("keys_readonly", f"keys/{n}.key", 0o644, 0o400)
        for n in names[7:10]:
            sub = rng.choice(("notes", "notes/old", "tools"))
            add("stray_scripts_plain", f"{sub}/{n}.sh", rng.choice((0o755, 0o711)), 0o644)
        dirs["keys"] = 0o700
        dirs["bin"] = 0o750
        instruction = (
            "Set modes to this spec: the folder bin/ 750 and every file in it 750; every "
            "*.conf file in config/ 640; the folder keys/ 700 and every file in it 400; "
            "every other *.sh file anywhere in the tree (outside bin/) 644, so none is "
            "executable. Leave all contents unchanged."
        )
    checks = [mode_check(group, modes_) for group, modes_ in sorted(want.items())]
    if dirs:
        checks.append(
            check(
                "folders",
                """
for path, want in sorted(DIRS.items()):
    got = stat.S_IMODE(os.stat(path).st_mode) & 0o755
    if got != want & 0o755:
        fail(f"folder {path} has mode {got:o}, not {want:o}")
""",
                DIRS=dirs,
            )
        )
    final = {p: m for group in want.values() for p, m in group.items()}
    solution = "\n".join(
        [f"chmod {m:o} {shlex.quote(p)}" for p, m in sorted(final.items())]
        + [f"chmod {m:o} {shlex.quote(p)}" for p, m in sorted(dirs.items())]
    )
    return make(
        FAMILY,
        seed,
        difficulty,
        instruction=instruction,
        files=files,
        modes=modes,
        checks=tuple(checks),
        solution=solution,
        vocabulary=VOCABULARY,
    )
