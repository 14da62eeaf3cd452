"""Organise files by rules: by extension (easy), by the date in the name
(medium), by size and extension with names normalised (hard)."""

from __future__ import annotations

import shlex

from envgym.envs.terminal.families._common import (
    WORDS,
    absent_check,
    files_check,
    make,
    rng_for,
)
from envgym.envs.terminal.task import TerminalTask

FAMILY = "organise"
EXTS = ("txt", "csv", "log", "jpg", "pdf", "md")
VOCABULARY = ("ls", "ls -R", "find . -type f", "mkdir -p sorted", "mv inbox/* sorted/", "pwd")


def _body(rng, size: int = 0) -> str:
    words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12)))
    return words + "\n" + ("x" * size + "\n" if size else "")


def make_task(seed: int, difficulty: str) -> TerminalTask:
    rng = rng_for(FAMILY, seed, difficulty)
    files: dict[str, str] = {}
    target: dict[str, str] = {}
    if difficulty == "easy":
        exts = rng.sample(EXTS, 3)
        for i in range(rng.randint(6, 9)):
            ext = exts[i % 3]
            name = f"{rng.choice(WORDS)}{i}.{ext}"
            files[f"inbox/{name}"] = text = _body(rng)
            target[f"sorted/{ext}/{name}"] = text
        instruction = (
            "Move every file in inbox/ into sorted/<ext>/, where <ext> is the file's "
            "extension without the dot (inbox/a.txt goes to sorted/txt/a.txt). Keep file "
            "names and contents unchanged; inbox/ must end up with no files in it."
        )
    elif difficulty == "medium":
        for i in range(rng.randint(8, 12)):
            y, m, d = rng.randint(2019, 2024), rng.randint(1, 12), rng.randint(1, 28)
            word, ext = rng.choice(WORDS), rng.choice(EXTS)
            style = rng.randrange(3) if i > 2 else i
            if style == 0:
                name = f"{word}_{y}-{m:02d}-{d:02d}_{i}.{ext}"
                dest = f"archive/{y}/{m:02d}/{name}"
            elif style == 1:
                name = f"{word}-{y}{m:02d}{d:02d}-{i}.{ext}"
                dest = f"archive/{y}/{m:02d}/{name}"
            else:
                name = f"{word}-v{i}.{ext}"
                dest = f"archive/undated/{name}"
            files[f"inbox/{name}"] = text = _body(rng)
            target[dest] = text
        instruction = (
            "Every file in inbox/ has a date in its name, written YYYY-MM-DD or YYYYMMDD, "
            "or no date at all. Move each dated file to archive/YYYY/MM/ (four-digit year, "
            "two-digit month, from the date in its name) and each undated file to "
            "archive/undated/. Keep names and contents unchanged; inbox/ must end up with no "
            "files in it."
        )
    else:
        limit = rng.choice((1000, 2000, 4000))
        for i in range(rng.randint(9, 13)):
            ext = rng.choice(EXTS[:4])
            big = rng.random() < 0.35 or i == 0
            size = rng.randint(limit + 10, limit * 2) if big else rng.randint(0, limit // 2)
            words = [rng.choice(WORDS).capitalize(), rng.choice(WORDS)]
            name = f"{words[0]} {words[1]} {i}.{ext.upper() if rng.random() < 0.4 else ext}"
            sub = rng.choice(("", "", "old/", "misc/deep/"))
            text = _body(rng, size)
            files[f"inbox/{sub}{name}"] = text
            clean = name.lower().replace(" ", "_")
            if len(text.encode()) > limit:
                target[f"large/{clean}"] = text
            else:
                target[f"sorted/{ext.lower()}/{clean}"] = text
        instruction = (
            f"inbox/ holds files, some in subfolders. Move every file (from any depth) out "
            f"of inbox/: a file larger than {limit} bytes goes to large/, any other file to "
            "sorted/<ext>/ where <ext> is its extension in lower case. Rename each file on "
            "the way: the whole name in lower case, each space replaced by an underscore "
            "('Big Cat 3.TXT' becomes 'big_cat_3.txt'). Keep contents unchanged; no file may "
            "be left anywhere under inbox/ (empty folders may stay)."
        )
    if difficulty == "easy":
        groups = {
            f"files_in_{e}": f"sorted/{e}/" for e in sorted({p.split("/")[1] for p in target})
        }
    elif difficulty == "medium":
        groups = {"dated_files": "archive/2", "undated_files": "archive/undated/"}
    else:
        groups = {"large_files": "large/", "sorted_files": "sorted/"}
    checks = []
    for name, prefix in groups.items():
        part = {p: t for p, t in target.items() if p.startswith(prefix)}
        if part:
            checks.append(files_check(name, part))
    checks.append(absent_check("inbox_emptied", list(files), "every file must leave inbox/"))
    solution = "\n".join(
        f"mkdir -p {shlex.quote(dst.rsplit('/', 1)[0])} && mv {shlex.quote(src)} {shlex.quote(dst)}"
        for src, dst in zip(files, target, strict=True)
    )
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
