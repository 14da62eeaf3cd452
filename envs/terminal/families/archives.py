"""Work with tar and gzip: pack a folder (easy), list and extract part of an
archive (medium), dig a value out of a nested archive and pack a release with
exclusions (hard)."""

from __future__ import annotations

import gzip
import io
import tarfile

from envgym.envs.terminal.families._common import (
    WORDS,
    check,
    files_check,
    lines,
    make,
    rng_for,
    text_check,
)
from envgym.envs.terminal.task import TerminalTask

FAMILY = "archives"
VOCABULARY = (
    "ls",
    "tar -tf",
    "tar -tzf incoming/bundle.tar.gz",
    "tar -xzf",
    "tar -czf",
    "gzip -l",
    "mkdir -p extracted",
    "find . -type f",
)


def tar_bytes(members: dict[str, str | bytes], compress: bool) -> bytes:
    """A deterministic tar (gzip-compressed when ``compress``) of ``members``."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name, content in members.items():
            data = content.encode() if isinstance(content, str) else content
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o644, 1_700_000_000
            tar.addfile(info, io.BytesIO(data))
    raw = buffer.getvalue()
    return gzip.compress(raw, mtime=0) if compress else raw


def archive_check(name: str, path: str, expected: dict[str, str]) -> object:
    """``path`` is a gzip-compressed tar whose regular files are exactly ``expected``."""
    return check(
        name,
        """
import tarfile
p = Path(PATH)
if p.is_symlink() or not p.is_file():
    fail(f"{PATH} is missing")
with open(p, "rb") as f:
    if f.read(2) != b"\\x1f\\x8b":
        fail(f"{PATH} is not gzip-compressed")
try:
    with tarfile.open(PATH, "r:gz") as tar:
        got = {}
        for m in tar.getmembers():
            if m.isfile():
                name = m.name
                while name.startswith("./"):
                    name = name[2:]
                got[name] = tar.extractfile(m).read().decode(errors="replace")
except (tarfile.TarError, OSError, EOFError) as e:
    fail(f"{PATH} is not a readable tar.gz: {e}")
if sorted(got) != sorted(EXPECTED):
    fail(f"{PATH} holds {sorted(got)[:6]}, not {sorted(EXPECTED)[:6]}")
bad = [n for n in EXPECTED if got[n] != EXPECTED[n]]
if bad:
    fail(f"{bad[0]} in {PATH} does not hold the original content")
""",
        PATH=path,
        EXPECTED=expected,
    )


def _text(rng) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 10))) + "\n"


def make_task(seed: int, difficulty: str) -> TerminalTask:
    rng = rng_for(FAMILY, seed, difficulty)
    if difficulty == "easy":
        docs = {f"docs/{rng.choice(WORDS)}{i}.txt": _text(rng) for i in range(rng.randint(3, 6))}
        docs[f"docs/guide/{rng.choice(WORDS)}.md"] = _text(rng)
        files = {**docs, "notes.txt": _text(rng)}
        instruction = (
            "Create backup.tar.gz in the work directory: a gzip-compressed tar archive of the "
            "folder docs/ with everything in it, member paths starting with docs/ (as "
            "`tar -czf backup.tar.gz docs` makes them). Leave docs/ itself in place."
        )
        checks = (
            archive_check("backup_archive", "backup.tar.gz", docs),
            text_check("archive_listing", "backup.txt", lines(sorted(docs))),
        )
        instruction += (
            " Then write backup.txt: the paths of the files (not folders) in the "
            "archive, one a line, sorted."
        )
        solution = (
            "tar -czf backup.tar.gz docs && tar -tzf backup.tar.gz | grep -v '/$' | "
            "LC_ALL=C sort > backup.txt"
        )
    elif difficulty == "medium":
        members = {}
        for i in range(rng.randint(6, 10)):
            ext = rng.choice(("csv", "txt", "log", "csv"))
            members[
                f"bundle/{rng.choice(('data', 'raw', 'misc'))}/{rng.choice(WORDS)}{i}.{ext}"
            ] = _text(rng)
        first = next(iter(members))
        members[first.rsplit(".", 1)[0] + ".csv"] = members.pop(first)
        files = {"incoming/bundle.tar.gz": tar_bytes(members, True)}
        csvs = {f"extracted/{n}": t for n, t in members.items() if n.endswith(".csv")}
        instruction = (
            "incoming/bundle.tar.gz is a gzip-compressed tar archive. Write bundle_list.txt: "
            "the paths of all files in it as the archive names them, one a line, sorted. "
            "Extract only its .csv files under extracted/, keeping their paths (so "
            "bundle/data/x.csv lands at extracted/bundle/data/x.csv); no other file of the "
            "archive may be extracted anywhere."
        )
        others = [f"extracted/{n}" for n in members if not n.endswith(".csv")]
        others += [n for n in members if not n.endswith(".csv")]
        checks = (
            text_check("bundle_list", "bundle_list.txt", lines(sorted(members))),
            files_check("csv_extracted", csvs),
            check(
                "only_csv",
                """
if not any(files for _, _, files in os.walk("extracted")):
    fail("nothing was extracted under extracted/")
left = [p for p in PATHS if os.path.lexists(p)]
if left:
    fail(f"{left[0]} was extracted but is not a .csv file")
""",
                PATHS=others,
            ),
        )
        solution = (
            "export LC_ALL=C; tar -tzf incoming/bundle.tar.gz | sort > bundle_list.txt && "
            "mkdir -p extracted && tar -xzf incoming/bundle.tar.gz -C extracted "
            "--wildcards '*.csv'"
        )
    else:
        key, value = rng.choice(WORDS), f"{rng.choice(WORDS)}-{rng.randint(1000, 9999)}"
        ini = f"[main]\nname = {rng.choice(WORDS)}\n{key}_token = {value}\nretries = 3\n"
        inner = tar_bytes({"config/settings.ini": ini, "config/readme.txt": _text(rng)}, True)
        outer = tar_bytes({"payload/inner.tar.gz": inner, "payload/notes.txt": _text(rng)}, False)
        app = {f"app/{rng.choice(WORDS)}{i}.py": _text(rng) for i in range(rng.randint(3, 5))}
        app[f"app/lib/{rng.choice(WORDS)}.py"] = _text(rng)
        junk = {
            f"app/{rng.choice(WORDS)}.log": _text(rng),
            "app/tmp/cache.bin": _text(rng),
            f"app/lib/{rng.choice(WORDS)}.log": _text(rng),
        }
        files = {"incoming/outer.tar": outer, **app, **junk}
        instruction = (
            "incoming/outer.tar is a tar archive holding another archive, a .tar.gz. Inside "
            f"that inner archive, config/settings.ini has a line '{key}_token = ...'. Write "
            "its value (just the value) to token.txt. Then create release.tar.gz: a "
            "gzip-compressed tar of app/ with member paths starting with app/, leaving out "
            "every *.log file and the folder app/tmp/ with what is in it. Do not leave "
            "extracted files of either archive in the work directory."
        )
        checks = (
            text_check("token", "token.txt", value),
            archive_check("release_archive", "release.tar.gz", app),
            check(
                "no_leftovers",
                """
left = [p for p in ("payload", "config", "inner.tar.gz") if os.path.lexists(p)]
if left:
    fail(f"{left[0]} was left in the work directory")
if not os.path.exists("token.txt"):
    fail("token.txt is missing")
""",
            ),
        )
        solution = (
            'tmp=$(mktemp -d) && tar -xf incoming/outer.tar -C "$tmp" && '
            'tar -xzf "$tmp"/payload/inner.tar.gz -C "$tmp" && '
            f"sed -n 's/^{key}_token = //p' \"$tmp\"/config/settings.ini > token.txt && "
            "rm -rf \"$tmp\" && tar -czf release.tar.gz --exclude='*.log' --exclude=app/tmp app"
        )
    return make(
        FAMILY,
        seed,
        difficulty,
        instruction=instruction,
        files=files,
        checks=checks,
        solution=solution,
        vocabulary=VOCABULARY,
    )
