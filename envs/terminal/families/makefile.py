"""Repair a Makefile (family ``make``): one planted bug (easy), two (medium),
three (hard), drawn from missing or wrong prerequisites, recipe bugs, a wrong
variable, a recipe indented with spaces and a build file marked phony. The
checks read the build of the current sources, rebuild a copy from changed
sources (so a dist/ written by hand does not pass), and check that make is
incremental: after a change to one chapter only that chapter's page and what
depends on it are remade, and a second make remakes nothing."""

from __future__ import annotations

import hashlib

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

FAMILY = "make"
VOCABULARY = (
    "ls",
    "cat Makefile",
    "make",
    "make -n",
    "make clean",
    "make -d | tail",
    "cat src/parts.list",
    "ls build dist",
    "cat VERSION",
)

MAKEFILE = """# Builds dist/ from src/: see README.txt.
VERSION := $(shell cat VERSION)
PARTS := $(shell cat src/parts.list)
PAGES := $(patsubst %,build/%.txt,$(PARTS))

all: dist/book.txt dist/SHA256SUMS

build/%.txt: src/chapters/%.md VERSION | build
\tsed 's/@VERSION@/$(VERSION)/g' $< > $@

dist/book.txt: src/header.txt $(PAGES) src/parts.list | dist
\tcat src/header.txt $(PAGES) > $@

dist/SHA256SUMS: dist/book.txt
\tcd dist && sha256sum book.txt > SHA256SUMS

build dist:
\tmkdir -p $@

clean:
\trm -rf build dist

.PHONY: all clean
"""

#: (right, wrong) pairs: each wrong text breaks a clean build, the rebuild
#: from changed sources, or the incremental build.
BUGS = (
    # a missing prerequisite: the pages are never made
    ("dist/book.txt: src/header.txt $(PAGES) src/parts.list", "dist/book.txt: src/header.txt"),
    # a missing prerequisite: the sums are not remade when the book changes
    ("dist/SHA256SUMS: dist/book.txt\n", "dist/SHA256SUMS:\n"),
    # a wrong prerequisite: no rule makes the pages
    ("build/%.txt: src/chapters/%.md VERSION", "build/%.txt: src/chapter/%.md VERSION"),
    # a recipe bug: a page gets its source and VERSION
    ("' $< > $@", "' $^ > $@"),
    # a recipe bug: only the first @VERSION@ of a line is replaced
    ("s/@VERSION@/$(VERSION)/g", "s/@VERSION@/$(VERSION)/"),
    # a recipe bug: the sums name dist/book.txt, not book.txt
    ("cd dist && sha256sum book.txt > SHA256SUMS", "sha256sum dist/book.txt > dist/SHA256SUMS"),
    # a wrong variable: no pages at all
    ("$(patsubst %,build/%.txt,$(PARTS))", "$(patsubst %,build/%.txt,$(PART))"),
    # a wrong variable: the version read from a file that is not there
    ("VERSION := $(shell cat VERSION)", "VERSION := $(shell cat src/VERSION)"),
    # a recipe indented with spaces: "missing separator"
    ("\tcat src/header.txt $(PAGES) > $@", "    cat src/header.txt $(PAGES) > $@"),
    # the pages marked phony: every make remakes them all
    (".PHONY: all clean\n", ".PHONY: all clean $(PAGES)\n"),
)

#: The bugs after which a clean build still makes the right dist/book.txt.
BOOK_STILL_RIGHT = (BUGS[1], BUGS[5])


def _outputs(header: str, version: str, chapters: dict[str, str], order: list[str]) -> dict:
    book = header + "".join(chapters[p].replace("@VERSION@", version) for p in order)
    return {
        "dist/book.txt": book,
        "dist/SHA256SUMS": f"{hashlib.sha256(book.encode()).hexdigest()}  book.txt\n",
    }


#: Rebuilds a copy from changed sources, then checks that make is incremental.
REBUILD = """
import shutil, tempfile
copy = os.path.join(tempfile.mkdtemp(), "project")
shutil.copytree(".", copy, symlinks=True)
for out in ("build", "dist"):
    shutil.rmtree(os.path.join(copy, out), ignore_errors=True)
ENV = {"PATH": "/usr/bin:/bin", "HOME": tempfile.mkdtemp(), "LANG": "C"}
def run_make(what):
    try:
        done = subprocess.run(["/usr/bin/make"], cwd=copy, capture_output=True, text=True,
                              timeout=20, stdin=subprocess.DEVNULL, env=ENV)
    except subprocess.TimeoutExpired:
        fail(f"make ran for more than 20 s {what}")
    if done.returncode != 0:
        fail(f"make failed {what}: {(done.stderr or done.stdout).strip()[-90:]}")
def expect(want, what):
    for path, text in sorted(want.items()):
        p = Path(copy, path)
        if p.is_symlink() or not p.is_file() or norm(p.read_text(errors="replace")) != norm(text):
            fail(f"{what}, make made a wrong {path}")
Path(copy, "VERSION").write_text(VERSION + "\\n")
Path(copy, "src", "parts.list").write_text(ORDER)
Path(copy, "src", "header.txt").write_text(HEADER)
run_make("after VERSION, the header and src/parts.list changed")
expect(WANT, "after VERSION, the header and src/parts.list changed")
# Sources an hour old, outputs half an hour old; then one chapter changes now.
for folder, dirs, files in os.walk(copy):
    for name in files:
        full = os.path.join(folder, name)
        top = os.path.relpath(full, copy).split(os.sep)[0]
        old = 1_000_000_000 + (1800 if top in ("build", "dist") else 0)
        os.utime(full, (old, old), follow_symlinks=False)
Path(copy, "src", "chapters", CHANGED + ".md").write_text(CHAPTER)
run_make("after one chapter changed")
expect(WANT2, "after one chapter changed")
def stamps():
    out = {}
    for folder in ("build", "dist"):
        for entry in sorted(Path(copy, folder).glob("*")):
            out[f"{folder}/{entry.name}"] = entry.stat().st_mtime_ns
    return out
first = stamps()
kept_old = [p for p in PAGES_KEPT if first.get(p) != 1_000_001_800 * 10**9]
if kept_old:
    fail(f"make remade {kept_old[0]} though only {CHANGED}'s chapter changed")
if first.get(f"build/{CHANGED}.txt") == 1_000_001_800 * 10**9:
    fail(f"make did not remake build/{CHANGED}.txt after its chapter changed")
run_make("a second time")
again = [p for p, t in stamps().items() if t != first.get(p)]
if again:
    fail(f"a second make with nothing changed remade {again[0]}")
"""


def make_task(seed: int, difficulty: str) -> TerminalTask:
    rng = rng_for(FAMILY, seed, difficulty)
    k = {"easy": 1, "medium": 2, "hard": 3}[difficulty]
    # The first bug spoils the book of a clean build, so running `make` on the
    # project as it is passes no check.
    first = rng.choice([bug for bug in BUGS if bug not in BOOK_STILL_RIGHT])
    makefile = MAKEFILE
    for right, wrong in [first, *rng.sample([bug for bug in BUGS if bug != first], k - 1)]:
        assert makefile.count(right) == 1, f"bug {wrong!r} would not be planted"
        makefile = makefile.replace(right, wrong)
    names = rng.sample(WORDS, rng.randint(3, 6))
    chapters = {
        n: f"## {n} (version @VERSION@)\n"
        + " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 20)))
        + f"\nSee @VERSION@ notes; {n} @VERSION@.\n"
        for n in names
    }
    order = rng.sample(names, len(names))
    version = f"{rng.randint(1, 4)}.{rng.randint(0, 20)}.{rng.randint(0, 9)}"
    header = f"# The {rng.choice(WORDS)} book\n\n"
    files = {
        "Makefile": makefile,
        "VERSION": version + "\n",
        "src/header.txt": header,
        "src/parts.list": lines(order),
        **{f"src/chapters/{n}.md": t for n, t in chapters.items()},
        "README.txt": (
            "`make` builds, remaking only what is out of date:\n"
            "- build/<name>.txt for each chapter src/chapters/<name>.md: the chapter with "
            "every @VERSION@ replaced by the content of VERSION (without its newline);\n"
            "- dist/book.txt: src/header.txt, then each page build/<name>.txt in the order "
            "src/parts.list names them (one name a line);\n"
            "- dist/SHA256SUMS: the line `sha256sum book.txt` prints when run inside dist/.\n"
            "`make clean` removes build/ and dist/.\n"
        ),
    }
    built = _outputs(header, version, chapters, order)
    new_version = f"{rng.randint(5, 9)}.{rng.randint(0, 20)}.0"
    new_order = list(reversed(order))
    new_header = f"# The {rng.choice(WORDS)} book, revised\n\n"
    rebuilt = _outputs(new_header, new_version, chapters, new_order)
    changed = rng.choice(names)
    chapter = f"## {changed} (version @VERSION@)\nrewritten {rng.choice(WORDS)} @VERSION@.\n"
    rebuilt2 = _outputs(new_header, new_version, {**chapters, changed: chapter}, new_order)
    instruction = (
        "The Makefile is broken. Fix it so that `make`, run in the work directory, builds "
        "build/ and dist/ exactly as README.txt says, from whatever VERSION, src/header.txt, "
        "src/parts.list and the chapters hold at the time, remaking only what is out of "
        "date (after one chapter changes, only its page and what depends on it; with "
        "nothing changed, nothing); then run it so dist/ holds the build of the current "
        "sources. Do not change the files under src/ or VERSION."
    )
    checks = [
        text_check(f"built_{p.split('/')[1].split('.')[0].lower()}", p, t) for p, t in built.items()
    ]
    checks.append(
        check(
            "rebuilds_incrementally",
            REBUILD,
            VERSION=new_version,
            ORDER=lines(new_order),
            HEADER=new_header,
            WANT=rebuilt,
            CHANGED=changed,
            CHAPTER=chapter,
            WANT2=rebuilt2,
            PAGES_KEPT=sorted(f"build/{n}.txt" for n in names if n != changed),
        )
    )
    solution = write_cmd("Makefile", MAKEFILE) + "\nmake"
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
