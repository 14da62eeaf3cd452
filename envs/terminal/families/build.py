"""Repair a broken build script without make (the build is a bash script;
family ``make`` repairs a Makefile): one planted bug (easy), two (medium),
three (hard). A check rebuilds from a changed copy of the sources, so a dist/
written by hand does not pass; and dist/ counts only once build.sh differs from
the broken script as given (running that one builds the outputs its bug spares,
which paid a random agent that merely ran it)."""

from __future__ import annotations

import hashlib

from envgym.envs.terminal.families._common import (
    WORDS,
    check,
    lines,
    make,
    rng_for,
    write_cmd,
)
from envgym.envs.terminal.task import TerminalTask

FAMILY = "build"
VOCABULARY = (
    "ls",
    "cat build.sh",
    "bash build.sh",
    "bash -x build.sh",
    "cat src/parts.list",
    "ls src/chapters",
    "ls dist",
    "cat VERSION",
)

SCRIPT = """#!/bin/bash
# Builds dist/ from src/: see README.txt.
set -euo pipefail
cd "$(dirname "$0")"
rm -rf dist
mkdir -p dist
version=$(cat VERSION)
sed "s/@VERSION@/$version/g" src/header.txt > dist/book.txt
while read -r part; do
  [ -n "$part" ] || continue
  cat "src/chapters/$part.txt" >> dist/book.txt
done < src/parts.list
(cd dist && sha256sum book.txt > SHA256SUMS)
wc -w < dist/book.txt > dist/wordcount.txt
"""

BUGS = (
    ("mkdir -p dist\n", ""),
    ("done < src/parts.list", "done < src/part.list"),
    (
        'cat "src/chapters/$part.txt" >> dist/book.txt',
        'cat "src/chapters/$part.txt" > dist/book.txt',
    ),
    ('"s/@VERSION@/$version/g"', '"s/@VERSION@/$version/"'),
    ("version=$(cat VERSION)", "version=$(cat src/VERSION)"),
    ("(cd dist && sha256sum book.txt > SHA256SUMS)", "sha256sum dist/book.txt > dist/SHA256SUMS"),
    ("wc -w < dist/book.txt", "wc -l < dist/book.txt"),
)


def _outputs(header: str, version: str, chapters: dict[str, str], order: list[str]) -> dict:
    book = header.replace("@VERSION@", version) + "".join(chapters[p] for p in order)
    return {
        "dist/book.txt": book,
        "dist/SHA256SUMS": f"{hashlib.sha256(book.encode()).hexdigest()}  book.txt\n",
        "dist/wordcount.txt": f"{len(book.split())}\n",
    }


def _built_check(name: str, path: str, expected: str, broken: str):
    """``path`` holds ``expected``, built by a build.sh other than the broken one."""
    return check(
        name,
        """
script = Path("build.sh")
if script.is_file() and hashlib.sha256(script.read_bytes()).hexdigest() == BROKEN:
    fail("build.sh is still the broken script as given: dist/ counts once it is repaired")
got = norm(read(PATH))
if got != norm(EXPECTED):
    fail(f"{PATH} does not hold the expected content (got {got[:60]!r})")
""",
        PATH=path,
        EXPECTED=expected,
        BROKEN=broken,
    )


def make_task(seed: int, difficulty: str) -> TerminalTask:
    rng = rng_for(FAMILY, seed, difficulty)
    k = {"easy": 1, "medium": 2, "hard": 3}[difficulty]
    script = SCRIPT
    for right, wrong in rng.sample(BUGS, k):
        script = script.replace(right, wrong)
    names = rng.sample(WORDS, rng.randint(3, 6))
    chapters = {
        n: f"## {n}\n" + " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 20))) + "\n"
        for n in names
    }
    order = rng.sample(names, len(names))
    version = f"{rng.randint(1, 4)}.{rng.randint(0, 20)}.{rng.randint(0, 9)}"
    header = f"# The {rng.choice(WORDS)} book @VERSION@ (release @VERSION@)\n\n"
    files = {
        "build.sh": script,
        "VERSION": version + "\n",
        "src/header.txt": header,
        "src/parts.list": lines(order),
        **{f"src/chapters/{n}.txt": t for n, t in chapters.items()},
        "README.txt": (
            "bash build.sh builds dist/ afresh:\n"
            "- dist/book.txt: src/header.txt with every @VERSION@ replaced by the content of "
            "VERSION (without its newline), then each chapter src/chapters/<name>.txt in the "
            "order src/parts.list names them (one name a line);\n"
            "- dist/SHA256SUMS: the line `sha256sum book.txt` prints when run inside dist/;\n"
            "- dist/wordcount.txt: the number of words of dist/book.txt (as `wc -w` counts).\n"
        ),
    }
    built = _outputs(header, version, chapters, order)
    new_version = f"{rng.randint(5, 9)}.{rng.randint(0, 20)}.0"
    new_order = list(reversed(order))
    rebuilt = _outputs(header, new_version, chapters, new_order)
    instruction = (
        "build.sh is broken. Fix it so that `bash build.sh`, run in the work directory, "
        "builds dist/ exactly as README.txt says, from whatever VERSION, src/header.txt, "
        "src/parts.list and the chapters hold at the time; then run it so dist/ holds the "
        "build of the current sources. Do not change the files under src/ or VERSION."
    )
    broken = hashlib.sha256(script.encode()).hexdigest()
    checks = [
        _built_check(f"built_{p.split('/')[1].split('.')[0].lower()}", p, t, broken)
        for p, t in built.items()
    ]
    checks.append(
        check(
            "rebuilds_from_sources",
            """
import shutil, tempfile
copy = os.path.join(tempfile.mkdtemp(), "project")
shutil.copytree(".", copy, symlinks=True)
shutil.rmtree(os.path.join(copy, "dist"), ignore_errors=True)
Path(copy, "VERSION").write_text(VERSION + "\\n")
Path(copy, "src", "parts.list").write_text(ORDER)
try:
    done = subprocess.run(["/bin/bash", "build.sh"], cwd=copy, capture_output=True, text=True,
                          timeout=10, stdin=subprocess.DEVNULL)
except subprocess.TimeoutExpired:
    fail("build.sh ran for more than 10 s")
if done.returncode != 0:
    fail(f"build.sh failed after VERSION and src/parts.list changed: {done.stderr.strip()[-80:]}")
for path, want in sorted(WANT.items()):
    p = Path(copy, path)
    if p.is_symlink() or not p.is_file() or norm(p.read_text()) != norm(want):
        fail(f"after VERSION and src/parts.list changed, build.sh made a wrong {path}")
""",
            VERSION=new_version,
            ORDER=lines(new_order),
            WANT=rebuilt,
        )
    )
    solution = write_cmd("build.sh", SCRIPT) + "\nbash build.sh"
    return make(
        FAMILY,
        seed,
        difficulty,
        instruction=instruction,
        files=files,
        checks=tuple(checks),
        solution=solution,
        modes={"build.sh": 0o755},
        vocabulary=VOCABULARY,
    )
