"""Load terminal-bench and Harbor task folders as `TerminalTask`s.

``envgym.make("envgym/Terminal-v0", tasks=PATH)`` plays them: PATH is a task
folder, a folder of task folders, or a glob. Each folder's format is detected
on its own:

- **terminal-bench**: ``task.yaml`` (``instruction``, ``difficulty``,
  ``max_test_timeout_sec``, ...), a ``Dockerfile`` (and usually a
  ``docker-compose.yaml`` of one ``client`` service), ``solution.sh`` or
  ``solution.yaml``, ``run-tests.sh`` and ``tests/`` (pytest files);
- **Harbor** (terminal-bench 2): ``task.toml`` (``[metadata]``,
  ``[verifier]`` and ``[agent]`` timeouts, ``[environment]``),
  ``instruction.md``, ``environment/Dockerfile``, ``solution/solve.sh`` and
  ``tests/test.sh`` with its pytest files.

The environment is always envgym's own image: `dockerfile.read_dockerfile`
accepts a Dockerfile only where that image can serve it and gives the files
it copies into the work directory (the starting tree) and the file operations
of its RUN lines (the set-up). The task's work directory (``WORKDIR``, often
``/app``) becomes ``/work`` in the instruction, set-up and solution. The hidden
tests become one check per test (`pytest_check`), which envgym runs with its
own pytest runner; a task's ``run-tests.sh``/``test.sh`` is read only to check
that it does nothing but install pytest, run the task's pytest files and
write the reward, and a task whose tests need more is refused.
"""

from __future__ import annotations

import base64
import glob
import os
import re
import shlex
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from envgym.envs.terminal.dockerfile import (
    APT_PACKAGES,
    PIP_PACKAGES,
    UNSAFE_ENV,
    EnvironmentRefused,
    read_dockerfile,
    shell_commands,
)
from envgym.envs.terminal.pytest_check import pytest_checks
from envgym.envs.terminal.task import LEVELS, TerminalTask

__all__ = ["EnvironmentRefused", "TaskFolderError", "find_task_dirs", "load_task_dir", "load_tasks"]

#: Where the session plays a task's work directory.
WORK = "/work"
#: Where the oracle unpacks the task's solution files in the session.
SOLUTION_DIR = "/tmp/envgym-solution"
#: git refuses a repository in a folder another user owns (docker's /work is
#: root's, mode 1777): the set-up, solution and tests trust it (as GIT_CONFIG_* values).
GIT_SAFE = {
    "GIT_CONFIG_COUNT": "1",
    "GIT_CONFIG_KEY_0": "safe.directory",
    "GIT_CONFIG_VALUE_0": "*",
}
#: Longest a test may run when the task names no time (the grader's job limit caps it).
DEFAULT_TEST_TIMEOUT_S = 60.0
#: Top-level entries of a terminal-bench folder (its build context) that no COPY takes.
TBENCH_HIDDEN = (
    "tests",
    "solution.sh",
    "solution.yaml",
    "solution",
    "run-tests.sh",
    "task.yaml",
    "Dockerfile",
    "docker-compose.yaml",
    "docker-compose.yml",
)
#: Python packages a test script may ask for besides the image's (pytest plugins only report).
_TEST_PACKAGE = re.compile(r"\A(pytest(-[\w-]+)?|numpy|pip|setuptools|wheel)\Z")


class TaskFolderError(ValueError):
    """A task folder envgym cannot read (a missing or malformed file)."""


def _rewrite(text: str, old: str, new: str) -> str:
    if old == new:
        return text
    return re.sub(r"(?<![\w.-])" + re.escape(old) + r"(?![\w.-])", new.replace("\\", r"\\"), text)


def _rewrite_file(data: bytes, workdir: str) -> str | bytes:
    """A starting file with the task's work directory rewritten to /work (text files only)."""
    try:
        return _rewrite(data.decode(), workdir, WORK)
    except UnicodeDecodeError:
        return data


def _read_folder(root: Path, skip: tuple[str, ...] = ("__pycache__",)) -> dict[str, bytes]:
    files = {}
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in skip)
        for name in sorted(names):
            path = Path(folder) / name
            if path.is_file() and not name.endswith(".pyc"):
                files[path.relative_to(root).as_posix()] = path.read_bytes()
    return files


# ------------------------------------------------------------------ test scripts
def _test_script(task: str, name: str, text: str) -> list[str]:
    """Check that a ``run-tests.sh``/``test.sh`` only installs pytest, runs the
    task's pytest files and writes the reward; the test files it names."""
    named: list[str] = []
    pending, start = "", 0
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.endswith("\\"):
            start = start if pending else number
            pending += line[:-1] + " "
            continue
        line, number, pending = pending + line, start if pending else number, ""
        try:
            commands = shell_commands(line)
        except ValueError as exc:
            commands, unread = [], f"is not a shell line envgym reads ({exc})"
        else:
            unread = ""
        for words in commands or [[]]:
            why = unread or _script_step(words, line, named)
            if why:
                shown = line if len(line) <= 160 else line[:157] + "..."
                raise EnvironmentRefused(
                    f"task {task}: {name} line {number} ({shown!r}) {why}; envgym runs a task's "
                    "pytest files itself with its own pytest, so a test script may only install "
                    "pytest, run the task's pytest files and write the reward"
                )
    return named


def _script_step(words: list[str], line: str, named: list[str]) -> str:
    """Why a simple command of a test script is not one envgym can stand in for ("" if it is)."""
    while words and words[0] in ("if", "then", "else", "elif", "fi", "!", "{", "}"):
        words = words[1:]
    while words and re.match(r"\A[A-Za-z_]\w*=", words[0]):
        words = words[1:]
    if not words:
        return ""
    verb = os.path.basename(words[0])
    if verb in ("[", "[[", "test", "true", "false", "exit", "set", "cd", "source", ".", "echo"):
        return ""
    if verb in ("printf", "command", "mkdir", "export", "cat", "tee", "sh", "bash") and (
        verb != "bash" or len(words) == 1
    ):
        return ""
    if verb in ("curl", "wget"):
        return "" if "astral.sh" in line else "downloads from the network"
    if verb in ("apt-get", "apt"):
        args = [w for w in words[1:] if not w.startswith("-")]
        if args and args[0] == "install":
            missing = [p for p in args[1:] if p.lower() not in APT_PACKAGES]
            if missing:
                return f"installs {', '.join(missing)}, which the envgym image lacks"
        return ""
    if "pytest" in words or (verb in ("python", "python3") and "pytest" in words[1:3]):
        named += [_test_path(w) for w in words if w.endswith(".py")]
        packages = [words[i + 1] for i, w in enumerate(words[:-1]) if w in ("-w", "--with")]
        return _packages(packages)
    if verb in ("uv", "uvx", "pip", "pip3", "python", "python3"):
        rest = words[1:]
        if rest[:2] == ["-m", "pip"]:
            rest = rest[2:]
        if rest and rest[0] in ("init", "venv", "sync", "--version"):
            return ""
        if rest and rest[0] in ("add", "install") or rest[:2] == ["pip", "install"]:
            start = 2 if rest[0] == "pip" else 1
            return _packages([w for w in rest[start:] if not w.startswith("-")])
    return f"runs {verb!r}, a step envgym does not take"


def _packages(specs: list[str]) -> str:
    names = [re.split(r"[=<>!~\[;@ ]", s, maxsplit=1)[0].lower() for s in specs]
    missing = [n for n in names if not _TEST_PACKAGE.match(n) and n not in PIP_PACKAGES]
    return f"installs {', '.join(missing)} for the tests, which the envgym image lacks" * bool(
        missing
    )


def _test_path(word: str) -> str:
    for prefix in ("$TEST_DIR/", "${TEST_DIR}/", "/tests/", "tests/", "./tests/"):
        if word.startswith(prefix):
            return word[len(prefix) :]
    return word


# ----------------------------------------------------------------------- formats
def _load_yaml(task: str, path: Path) -> dict[str, Any]:
    try:
        import yaml
    except ImportError:  # pragma: no cover - PyYAML is a dependency
        raise ImportError("reading a task.yaml needs PyYAML: pip install pyyaml") from None
    try:
        data = yaml.safe_load(path.read_text(errors="replace"))
    except yaml.YAMLError as exc:
        raise TaskFolderError(
            f"task {task}: task.yaml is not valid YAML ({' '.join(str(exc).split())}); fix it"
        ) from None
    if not isinstance(data, dict):
        raise TaskFolderError(f"task {task}: task.yaml is not a mapping of keys to values")
    return data


def _compose(task: str, folder: Path) -> tuple[Path | None, Path]:
    """The Dockerfile and build context a task's compose file names (else the defaults)."""
    for name in ("docker-compose.yaml", "docker-compose.yml", "compose.yaml"):
        path = folder / name
        if not path.is_file():
            continue
        import yaml

        try:
            data = yaml.safe_load(path.read_text(errors="replace")) or {}
        except yaml.YAMLError as exc:
            raise TaskFolderError(f"task {task}: {name} is not valid YAML ({exc})") from None
        services = data.get("services") if isinstance(data, dict) else None
        if not isinstance(services, dict) or not services:
            raise TaskFolderError(f"task {task}: {name} defines no services")
        if len(services) > 1:
            raise EnvironmentRefused(
                f"task {task}: {name} starts the services {', '.join(map(str, services))}; "
                "envgym runs a task in one sandbox with no other services, so it cannot serve "
                "this task; drop it or fold what the services do into the task's own programs"
            )
        (service,) = services.values()
        build = service.get("build") if isinstance(service, dict) else None
        if build is None:
            image = service.get("image") if isinstance(service, dict) else None
            raise EnvironmentRefused(
                f"task {task}: {name} runs the prebuilt image {image}, which cannot be built "
                "offline; envgym runs tasks whose environment is its own image"
            )
        if isinstance(build, str):
            return None, folder / build
        context = folder / str(build.get("context", "."))
        return context / str(build.get("dockerfile", "Dockerfile")), context
    return None, folder


def _tbench(task: str, folder: Path) -> dict[str, Any]:
    meta = _load_yaml(task, folder / "task.yaml")
    instruction = meta.get("instruction")
    if not instruction and isinstance(meta.get("descriptions"), list):
        for item in meta["descriptions"]:
            if isinstance(item, dict) and item.get("key", "base") == "base":
                instruction = item.get("description")
    if not isinstance(instruction, str) or not instruction.strip():
        raise TaskFolderError(
            f"task {task}: task.yaml has no instruction; add an 'instruction:' with the task text"
        )
    dockerfile, context = _compose(task, folder)
    solution = folder / "solution.sh"
    if solution.is_file():
        solution_files = {"solve.sh": solution.read_bytes()}
    elif (folder / "solution.yaml").is_file():
        solution_files = {"solve.sh": _solution_yaml(task, folder / "solution.yaml").encode()}
    else:
        raise TaskFolderError(
            f"task {task} has no reference solution; add solution.sh (or solution.yaml)"
        )
    script = folder / "run-tests.sh"
    return {
        "format": "terminal-bench",
        "instruction": instruction,
        "difficulty": meta.get("difficulty"),
        "timeout": meta.get("max_test_timeout_sec"),
        "dockerfile": dockerfile or context / "Dockerfile",
        "context": context,
        "hidden": TBENCH_HIDDEN,
        "solution": solution_files,
        "script": ("run-tests.sh", script.read_text(errors="replace"))
        if script.is_file()
        else None,
    }


def _solution_yaml(task: str, path: Path) -> str:
    import yaml

    try:
        steps = yaml.safe_load(path.read_text(errors="replace"))
    except yaml.YAMLError as exc:
        raise TaskFolderError(f"task {task}: solution.yaml is not valid YAML ({exc})") from None
    if not isinstance(steps, list) or not all(
        isinstance(s, dict) and isinstance(s.get("command"), str) for s in steps
    ):
        raise TaskFolderError(
            f"task {task}: solution.yaml must be a list of steps, each with a 'command'"
        )
    return "\n".join(s["command"] for s in steps) + "\n"


def _harbor(task: str, folder: Path) -> dict[str, Any]:
    try:
        meta = tomllib.loads((folder / "task.toml").read_text(errors="replace"))
    except tomllib.TOMLDecodeError as exc:
        raise TaskFolderError(f"task {task}: task.toml is not valid TOML ({exc}); fix it") from None
    instruction_path = folder / "instruction.md"
    if not instruction_path.is_file() or not instruction_path.read_text(errors="replace").strip():
        raise TaskFolderError(f"task {task} has no instruction; write it in instruction.md")
    environment = meta.get("environment") if isinstance(meta.get("environment"), dict) else {}
    dockerfile, context = _compose(task, folder / "environment")
    dockerfile = dockerfile or context / "Dockerfile"
    if not dockerfile.is_file() and environment.get("docker_image"):
        raise EnvironmentRefused(
            f"task {task}: task.toml names the prebuilt image {environment['docker_image']} and "
            "the task has no environment/Dockerfile; that image cannot be built offline, and "
            "envgym runs tasks whose environment is its own image"
        )
    solve = folder / "solution" / "solve.sh"
    if not solve.is_file():
        raise TaskFolderError(f"task {task} has no reference solution; add solution/solve.sh")
    script = folder / "tests" / "test.sh"
    metadata = meta.get("metadata") if isinstance(meta.get("metadata"), dict) else {}
    verifier = meta.get("verifier") if isinstance(meta.get("verifier"), dict) else {}
    return {
        "format": "harbor",
        "instruction": instruction_path.read_text(errors="replace"),
        "difficulty": metadata.get("difficulty"),
        "timeout": verifier.get("timeout_sec"),
        "dockerfile": dockerfile,
        "context": context,
        "hidden": (),
        "solution": _read_folder(folder / "solution"),
        "script": ("tests/test.sh", script.read_text(errors="replace"))
        if script.is_file()
        else None,
    }


# -------------------------------------------------------------------- the task
def _solution_script(files: dict[str, bytes], workdir: str, env: dict[str, str]) -> str:
    """Bash that unpacks the solution's files under SOLUTION_DIR and runs solve.sh in /work."""
    lines = [f"rm -rf {SOLUTION_DIR}"]
    for rel, data in sorted(files.items()):
        try:
            data = _rewrite(_rewrite(data.decode(), workdir, WORK), "/solution", SOLUTION_DIR)
            data = data.encode()
        except UnicodeDecodeError:
            pass
        path = shlex.quote(f"{SOLUTION_DIR}/{rel}")
        encoded = base64.b64encode(data).decode()
        lines.append(f'mkdir -p "$(dirname {path})" && echo {encoded} | base64 -d > {path}')
    values = {**GIT_SAFE, **{k: _rewrite(v, workdir, WORK) for k, v in env.items()}}
    exports = "".join(f"{k}={shlex.quote(v)} " for k, v in values.items())
    lines.append(f"cd {WORK} && {exports}bash {SOLUTION_DIR}/solve.sh")
    return "\n".join(lines)


def load_task_dir(path: str | os.PathLike[str], task_id: str | None = None) -> TerminalTask:
    """The `TerminalTask` of one terminal-bench or Harbor task folder."""
    folder = Path(path)
    task = task_id or folder.resolve().name
    if (folder / "task.toml").is_file():
        spec = _harbor(task, folder)
    elif (folder / "task.yaml").is_file():
        spec = _tbench(task, folder)
    else:
        raise TaskFolderError(
            f"{folder} is not a task folder: it has neither task.yaml (terminal-bench) nor "
            "task.toml (Harbor)"
        )
    if not spec["dockerfile"].is_file():
        raise TaskFolderError(
            f"task {task} has no Dockerfile ({spec['dockerfile']}); envgym reads it to learn the "
            "work directory and the files the task starts with"
        )
    env = read_dockerfile(task, spec["dockerfile"], spec["context"], spec["hidden"])
    tests_dir = folder / "tests"
    tests = _read_folder(tests_dir) if tests_dir.is_dir() else {}
    named = _test_script(task, *spec["script"]) if spec["script"] else []
    test_files = [n for n in dict.fromkeys(named) if n in tests] or [
        rel for rel in tests if "/" not in rel and re.match(r"\A(test_\w*|\w*_test)\.py\Z", rel)
    ]
    missing = [n for n in named if n not in tests]
    if missing and tests:
        raise TaskFolderError(
            f"task {task}: its test script runs tests/{missing[0]}, which the task lacks; "
            "put the test file in tests/ or fix the script"
        )
    if not test_files:
        raise TaskFolderError(
            f"task {task} has no hidden tests: put pytest files (test_*.py) in tests/ "
            "(envgym grades a task folder by its pytest tests)"
        )
    timeout = spec["timeout"]
    if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or timeout <= 0:
        timeout = DEFAULT_TEST_TIMEOUT_S
    safe_env = {k: v for k, v in env.env.items() if not UNSAFE_ENV.match(k)}
    test_env = {**GIT_SAFE, **safe_env}
    checks = pytest_checks(task, tests, test_files, env.workdir, test_env, float(timeout))
    setup = "\n".join(_rewrite(s, env.workdir, WORK) for s in env.setup)
    if setup:
        setup = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in GIT_SAFE.items()) + setup
    difficulty = str(spec["difficulty"]).lower()
    listing = [f"cat {shlex.quote(p)}" for p in sorted(env.files)[:5]]
    return TerminalTask(
        task_id=task,
        family=spec["format"],
        difficulty=difficulty if difficulty in LEVELS else "medium",
        instruction=_rewrite(spec["instruction"].strip(), env.workdir, WORK) + "\n",
        files={rel: _rewrite_file(data, env.workdir) for rel, data in env.files.items()},
        modes=dict(env.modes),
        checks=checks,
        solution=_solution_script(spec["solution"], env.workdir, safe_env),
        setup=setup,
        vocabulary=("ls", "ls -la", "pwd", *listing),
    )


def _is_task(folder: Path) -> bool:
    return (folder / "task.yaml").is_file() or (folder / "task.toml").is_file()


def find_task_dirs(spec: str | os.PathLike[str]) -> list[Path]:
    """The task folders ``spec`` names: a task folder, a folder of task folders, or a glob."""
    text = os.fspath(spec)
    if any(c in text for c in "*?["):
        found = [Path(p) for p in sorted(glob.glob(os.path.expanduser(text))) if Path(p).is_dir()]
        folders = [p for p in found if _is_task(p)]
        if not folders:
            raise TaskFolderError(
                f"the glob {text!r} matches no task folder (one with task.yaml or task.toml)"
            )
        return folders
    path = Path(text).expanduser()
    if not path.is_dir():
        raise TaskFolderError(
            f"tasks={text!r} is not a folder; pass a task folder, a folder of task folders, "
            "or a glob of them"
        )
    if _is_task(path):
        return [path]
    folders = [p for p in sorted(path.iterdir()) if p.is_dir() and _is_task(p)]
    if not folders:
        raise TaskFolderError(
            f"{text} holds no task folder: a terminal-bench task has task.yaml, a Harbor task "
            "task.toml"
        )
    return folders


def load_tasks(
    spec: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
) -> tuple[TerminalTask, ...]:
    """The tasks of every folder ``spec`` names (one spec or several), by task id."""
    specs = [spec] if isinstance(spec, (str, os.PathLike)) else spec
    if not isinstance(specs, (list, tuple)) or not all(
        isinstance(one, (str, os.PathLike)) for one in specs
    ):
        raise TypeError(
            f"tasks must be a folder's path, a glob, or a list of them, not {type(spec).__name__}"
        )
    if not specs:
        raise TaskFolderError("tasks= names no folder; pass a task folder, a folder or a glob")
    folders = [folder for one in specs for folder in find_task_dirs(one)]
    tasks: dict[str, TerminalTask] = {}
    for folder in folders:
        name = folder.resolve().name
        if name in tasks:
            raise TaskFolderError(
                f"two task folders are named {name!r}; a task's id is its folder's name, so "
                "load folders of distinct names"
            )
        tasks[name] = load_task_dir(folder, name)
    return tuple(tasks.values())
