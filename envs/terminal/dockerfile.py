"""Which task environments envgym can serve with its own image, offline.

A terminal-bench or Harbor task names its environment with a Dockerfile.
envgym builds no images per task: it plays every task in its own sandbox
image (Debian with python3, numpy, pytest, git, make, jq, patch, file, bzip2
and xz). `read_dockerfile` accepts a Dockerfile only when that image can
stand in for it: a plain Debian, Ubuntu or python base (or terminal-bench's
own ubuntu/python bases), ``WORKDIR``, ``COPY``/``ADD`` of files of the task
folder into the work directory, ``ENV``, and ``RUN`` lines that install only
what the image has (dropped) or do file operations in the work directory
(kept, run as the task's set-up). Anything else raises `EnvironmentRefused`
naming the task, the line and what to do.
"""

from __future__ import annotations

import glob
import json
import os
import posixpath
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

#: Base images the envgym image stands in for (any tag): their name after the registry.
BASE_IMAGES = ("debian", "ubuntu", "python", "buildpack-deps")
#: terminal-bench's own base images (ubuntu or python, plus tmux and asciinema).
TBENCH_BASES = ("ghcr.io/laude-institute/t-bench/",)
#: Debian packages the envgym image has (or that only fetch things, which it never needs).
APT_PACKAGES = frozenset(
    "python3 python3-pip python3-venv python3-pytest python3-numpy python-is-python3 git make "
    "jq patch file bzip2 xz-utils tar gzip coreutils findutils grep sed gawk mawk diffutils "
    "bash procps ca-certificates curl wget tmux asciinema less vim-tiny nano".split()
)
#: Python packages the envgym image has.
PIP_PACKAGES = frozenset({"pytest", "numpy", "pip", "setuptools", "wheel"})
#: Commands a kept RUN line may use: file operations in the work directory.
FILE_COMMANDS = frozenset(
    "mkdir touch chmod cp mv rm ln echo printf cat tee sed awk sort head tail tar gzip gunzip "
    "bzip2 bunzip2 xz unxz git python3 python true cd base64 find install truncate dd seq "
    "tr cut uniq wc test [ export".split()
)
#: Commands that write their path operands (checked to stay in the work directory).
WRITERS = frozenset("mkdir touch chmod cp mv rm ln tee install truncate".split())
#: Shell operators that write their next word's file.
REDIRECTS = (">", ">>", "&>", "&>>", ">|")
#: Directives that change nothing envgym serves (the env keeps its own shell and user).
IGNORED = frozenset("LABEL CMD ENTRYPOINT EXPOSE MAINTAINER STOPSIGNAL USER".split())
#: ENV names never passed on (they would change which programs or modules run).
UNSAFE_ENV = re.compile(r"\A(PATH|HOME|PYTHON\w*|LD_\w*|BASH_ENV|ENV|SHELL|IFS)\Z")
#: What a refusal tells the user to do.
ADVICE = (
    "envgym runs tasks whose environment is its own image (Debian with python3, numpy, pytest, "
    "git, make, jq, patch, file, bzip2, xz), offline; drop this task or rewrite its environment "
    "to use only that"
)


class EnvironmentRefused(ValueError):
    """A task whose environment envgym cannot serve offline with its own image."""


@dataclass
class Environment:
    """What a Dockerfile amounts to in the envgym image: the work directory it
    sets, the files it copies there (relative path to bytes, with modes), the
    RUN lines to replay as set-up, and its ENV values."""

    workdir: str = "/"
    files: dict[str, bytes] = field(default_factory=dict)
    modes: dict[str, int] = field(default_factory=dict)
    setup: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """(first line number, instruction) with continuations joined, comments dropped."""
    lines, current, start = [], "", 0
    for number, raw in enumerate(text.splitlines(), 1):
        stripped = raw.strip()
        if not current and (not stripped or stripped.startswith("#")):
            continue
        if current and stripped.startswith("#"):
            continue
        if not current:
            start = number
        if stripped.endswith("\\"):
            current += stripped[:-1] + " "
            continue
        lines.append((start, current + stripped))
        current = ""
    if current.strip():
        lines.append((start, current.strip()))
    return lines


def _image_ok(image: str) -> bool:
    image = image.lower()
    if any(image.startswith(prefix) for prefix in TBENCH_BASES):
        return True
    name = image.split("@")[0]
    for prefix in ("docker.io/library/", "docker.io/", "library/"):
        if name.startswith(prefix):
            name = name[len(prefix) :]
    name = name.split(":")[0]
    return name in BASE_IMAGES


def shell_commands(command: str) -> list[list[str]]:
    """The simple commands of a shell line (split at ``&&``, ``||``, ``;``, ``|``),
    redirection operators (``>``, ``&>``, ...) kept as words of their own."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|<>")
    lexer.whitespace_split = True
    commands, words = [], []
    for token in lexer:
        if token in ("&&", "||", ";", "|", "&", ";;", "|&"):
            if words:
                commands.append(words)
            words = []
        else:
            words.append(token)
    if words:
        commands.append(words)
    return commands


def _package(spec: str) -> str:
    return re.split(r"[=<>!~\[;@ ]", spec, maxsplit=1)[0].lower().replace("_", "-")


class _Reader:
    def __init__(self, task: str, path: Path, context: Path, hidden: tuple[str, ...]):
        self.task, self.path, self.context, self.hidden = task, path, context, hidden
        self.name = path.name

    def refuse(self, number: int, line: str, why: str) -> EnvironmentRefused:
        shown = line if len(line) <= 160 else line[:157] + "..."
        return EnvironmentRefused(
            f"task {self.task}: {self.name} line {number} ({shown!r}) {why}; {ADVICE}"
        )

    # ------------------------------------------------------------------ RUN
    def run_line(self, number: int, line: str, command: str, cwd: str, env: Environment) -> None:
        try:
            commands = shell_commands(command)
        except ValueError as exc:
            raise self.refuse(number, line, f"is not a shell line envgym reads ({exc})") from None
        kept = False
        for words in commands:
            while words and re.match(r"\A[A-Za-z_]\w*=", words[0]):
                words = words[1:]
            if words and words[0] == "sudo":
                words = words[1:]
            if not words:
                continue
            verb = posixpath.basename(words[0])
            if verb in ("apt-get", "apt", "apk", "yum", "dnf"):
                self._apt(number, line, words)
            elif verb in ("pip", "pip3", "uv") or words[:3] in (
                ["python3", "-m", "pip"],
                ["python", "-m", "pip"],
            ):
                self._pip(number, line, words)
            elif verb == "rm" and all(
                w.startswith(("-", "/var/lib/apt", "/var/cache/apt", "/root/.cache", "/tmp"))
                for w in words[1:]
            ):
                continue
            elif verb == "chown":
                continue  # everything in the work directory is the agent's already
            elif verb in ("curl", "wget"):
                raise self.refuse(number, line, "downloads from the network")
            elif verb == "git" and len(words) > 1 and words[1] in ("clone", "fetch", "pull"):
                raise self.refuse(number, line, "fetches a repository over the network")
            elif verb in FILE_COMMANDS:
                self._paths(number, line, words, cwd, env.workdir)
                kept = True
            else:
                raise self.refuse(number, line, f"runs {verb!r}, which envgym cannot replay")
        if kept:
            env.setup.append(f"cd {shlex.quote(cwd)}\n{command}")

    def _apt(self, number: int, line: str, words: list[str]) -> None:
        if words[0] in ("apk", "yum", "dnf"):
            raise self.refuse(number, line, f"uses {words[0]}, which a Debian image does not have")
        args = [w for w in words[1:] if not w.startswith("-")]
        if not args or args[0] in ("update", "clean", "autoremove", "autoclean", "upgrade"):
            return
        if args[0] != "install":
            raise self.refuse(number, line, f"runs apt {args[0]!r}")
        missing = [p for p in args[1:] if p.split("=")[0].lower() not in APT_PACKAGES]
        if missing:
            raise self.refuse(
                number, line, f"installs {', '.join(missing)}, which the envgym image lacks"
            )

    def _pip(self, number: int, line: str, words: list[str]) -> None:
        if "install" not in words:
            raise self.refuse(number, line, "runs a package manager for something but install")
        args = words[words.index("install") + 1 :]
        if "-r" in args or "--requirement" in args or any(a.startswith("-r") for a in args):
            raise self.refuse(number, line, "installs a requirements file's packages")
        packages = [_package(a) for a in args if not a.startswith("-")]
        missing = [p for p in packages if p not in PIP_PACKAGES]
        if missing:
            raise self.refuse(
                number, line, f"installs {', '.join(missing)}, which the envgym image lacks"
            )

    def _paths(self, number: int, line: str, words: list[str], cwd: str, workdir: str) -> None:
        verb = posixpath.basename(words[0])
        targets = [w for w in words[1:] if w.startswith("/")] if verb in WRITERS else []
        targets += [words[i + 1] for i, w in enumerate(words[:-1]) if w in REDIRECTS]
        for target in targets:
            full = posixpath.normpath(posixpath.join(cwd, target))
            if not _under(full, workdir) and not _under(full, "/tmp") and full != "/dev/null":
                raise self.refuse(number, line, f"writes {target}, outside the work directory")

    # ----------------------------------------------------------------- COPY
    def copy(self, number: int, line: str, args: str, cwd: str, env: Environment) -> None:
        if args.startswith("["):
            try:
                words = json.loads(args)
            except ValueError:
                raise self.refuse(number, line, "is not valid JSON") from None
        else:
            words = shlex.split(args)
        mode = None
        flags = [w for w in words if w.startswith("--")]
        words = [w for w in words if not w.startswith("--")]
        for flag in flags:
            if flag.startswith("--from"):
                raise self.refuse(number, line, "copies from another build stage or image")
            if flag.startswith("--chmod="):
                mode = int(flag.split("=", 1)[1], 8)
        if len(words) < 2:
            raise self.refuse(number, line, "names no source and destination")
        *sources, dest = words
        dest_full = posixpath.normpath(posixpath.join(cwd, dest))
        if not _under(dest_full, env.workdir):
            raise self.refuse(number, line, f"copies to {dest}, outside the work directory")
        into_dir = dest.endswith("/") or len(sources) > 1
        for source in sources:
            if re.match(r"\A[a-z]+://", source):
                raise self.refuse(number, line, "downloads from the network")
            matches = sorted(glob.glob(str(self.context / source)))
            if not matches:
                raise self.refuse(number, line, f"copies {source}, which the task folder lacks")
            for match in matches:
                self._copy_one(number, line, Path(match), dest_full, into_dir, mode, env)

    def _copy_one(self, number, line, source: Path, dest: str, into_dir, mode, env) -> None:
        context = self.context.resolve()
        real = source.resolve()
        if real != context and context not in real.parents:
            raise self.refuse(number, line, f"copies {source.name}, outside the task folder")
        if real.is_file():
            base = source.name
            target = posixpath.join(dest, base) if into_dir or _is_dir(env, dest) else dest
            self._add(number, line, real, target, mode, env)
            return
        for folder, dirs, files in os.walk(real):
            dirs.sort()
            for name in sorted(files):
                path = Path(folder) / name
                rel = path.relative_to(real).as_posix()
                if real == context and rel.split("/")[0] in self.hidden:
                    continue  # the task's tests and solution never enter the work directory
                self._add(number, line, path, posixpath.join(dest, rel), mode, env)

    def _add(self, number, line, path: Path, target: str, mode, env: Environment) -> None:
        rel = posixpath.relpath(target, env.workdir)
        if rel in (".", "") or rel.startswith(".."):
            raise self.refuse(number, line, f"copies a file onto {target}")
        env.files[rel] = path.read_bytes()
        executable = os.stat(path).st_mode & 0o111
        chosen = mode if mode is not None else (0o755 if executable else 0o644)
        if chosen != 0o644:
            env.modes[rel] = chosen & 0o777
        else:
            env.modes.pop(rel, None)


def _under(path: str, folder: str) -> bool:
    return folder == "/" or path == folder or path.startswith(folder.rstrip("/") + "/")


def _is_dir(env: Environment, dest: str) -> bool:
    rel = posixpath.relpath(dest, env.workdir)
    return rel == "." or any(p.startswith(rel + "/") for p in env.files)


def _env_pairs(args: str) -> dict[str, str]:
    words = shlex.split(args)
    if len(words) >= 2 and "=" not in words[0]:
        return {words[0]: " ".join(words[1:])}
    return dict(w.split("=", 1) for w in words if "=" in w)


def read_dockerfile(
    task: str, path: Path, context: Path, hidden: tuple[str, ...] = ()
) -> Environment:
    """What the Dockerfile at ``path`` (build context ``context``) amounts to
    in the envgym image; `EnvironmentRefused` where the image cannot serve it.
    ``hidden`` names top-level entries of the context a ``COPY`` never takes
    (a terminal-bench task's tests and solution sit in its build context)."""
    reader = _Reader(task, path, context, hidden)
    env = Environment()
    text = path.read_text(errors="replace")
    lines = _logical_lines(text)
    froms = [(n, line) for n, line in lines if line.split()[0].upper() == "FROM"]
    if len(froms) != 1:
        what = "has no FROM line" if not froms else "has several build stages"
        raise EnvironmentRefused(f"task {task}: {path.name} {what}; {ADVICE}")
    # The work directory is the last WORKDIR: everything copied must land under it.
    cwd = "/"
    for _, line in lines:
        directive, _, args = line.partition(" ")
        if directive.upper() == "WORKDIR":
            cwd = posixpath.normpath(posixpath.join(cwd, args.strip().strip("\"'")))
    if cwd == "/":
        raise EnvironmentRefused(
            f"task {task}: {path.name} sets no WORKDIR, so envgym cannot tell which folder is "
            "the task's work directory; add one (terminal-bench and Harbor tasks use WORKDIR /app)"
        )
    env.workdir, cwd = cwd, "/"
    for number, line in lines:
        directive, _, args = line.partition(" ")
        directive, args = directive.upper(), args.strip()
        if directive == "FROM":
            image = [w for w in args.split() if not w.startswith("--")][0]
            if not _image_ok(image):
                raise reader.refuse(
                    number, line, f"needs the image {image}, which cannot be built offline"
                )
        elif directive == "WORKDIR":
            cwd = posixpath.normpath(posixpath.join(cwd, args.strip("\"'")))
        elif directive in ("COPY", "ADD"):
            if directive == "ADD" and re.search(r"\.(tar|tgz|gz|bz2|xz|zip)\b", args):
                raise reader.refuse(number, line, "unpacks an archive (use COPY of its files)")
            reader.copy(number, line, args, cwd, env)
        elif directive == "ENV":
            env.env.update(_env_pairs(args))
        elif directive == "RUN":
            command = " ".join(json.loads(args)) if args.startswith("[") else args
            reader.run_line(number, line, command, cwd, env)
        elif directive in IGNORED:
            continue
        else:
            raise reader.refuse(number, line, f"uses {directive}, which envgym does not serve")
    return env
