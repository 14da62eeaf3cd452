"""Which code an env id runs, named so a results file can say it: `env_version`, `env_hash`.

`env_hash` is a sha256 over the files that decide what the env does: the
source of its entry-point module and of every envgym module that module
imports, directly or through others, plus the data files in the env's own
package folder. The imports are read from the source with `ast`, not by
importing, so the set is the same in every process.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import os
import re
from pathlib import Path

from envgym.evaluation.inputs import EvaluationError
from envgym.registry import get_spec
from envgym.version import __version__

__all__ = ["env_hash", "env_source_files", "env_version"]

#: Files in a package folder that are code (found through imports) or its by-products.
_PYTHON_SUFFIXES = (".py", ".pyc", ".pyo", ".pyi")


def env_version(env_id: str) -> str:
    """The id's version suffix plus the envgym release, e.g. ``v0+envgym-0.1.0``."""
    match = re.search(r"-(v\d+)$", env_id)
    suffix = match.group(1) if match else "unversioned"
    return f"{suffix}+envgym-{__version__}"


def _locate(module: str) -> tuple[Path, bool] | None:
    """(source file, is a package) of `module`, or None if it has no Python source."""
    try:
        found = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        # A parent that is a plain module (so `module` is an attribute), or one that
        # does not import here: either way there is no file to hash.
        return None
    if found is None or not found.has_location or not found.origin:
        return None
    path = Path(found.origin)
    if path.suffix != ".py" or not path.is_file():
        return None
    return path, found.submodule_search_locations is not None


def _hashed_name(module: str, is_package: bool) -> str:
    """Where `module`'s source sits in an installed tree, e.g. ``envgym/envs/games/board.py``.

    Named from the module, not the disk, so a checkout (where envgym.envs is
    the top-level envs/ folder) and an installed wheel hash alike.
    """
    stem = module.replace(".", "/")
    return f"{stem}/__init__.py" if is_package else f"{stem}.py"


def _imports(source: Path, module: str, is_package: bool, packages: set[str]) -> set[str]:
    """The modules of `packages` that `source` imports, at any depth (inside
    functions too), relative imports resolved.

    ``from P import n`` counts as P.n where that is a module, else as P.
    """
    package = module if is_package else module.rpartition(".")[0]
    tree = ast.parse(source.read_bytes(), filename=str(source))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            try:
                base = importlib.util.resolve_name("." * node.level + (node.module or ""), package)
            except ImportError:  # a relative import above the top package: never runs
                continue
            if base.partition(".")[0] not in packages:
                continue
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                names.add(submodule if _locate(submodule) is not None else base)
    return {name for name in names if name.partition(".")[0] in packages}


def _data_files(package: str) -> dict[str, Path]:
    """The non-Python files under `package`'s folder, hidden files and caches left out."""
    found = importlib.util.find_spec(package)
    roots = found.submodule_search_locations if found is not None else None
    files: dict[str, Path] = {}
    for root in roots or ():
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = [d for d in dirnames if d != "__pycache__" and not d.startswith(".")]
            for name in filenames:
                if name.startswith(".") or name.endswith(_PYTHON_SUFFIXES):
                    continue
                path = Path(dirpath) / name
                relative = path.relative_to(root).as_posix()
                files[f"{package.replace('.', '/')}/{relative}"] = path
    return files


def env_source_files(env_id: str) -> dict[str, Path]:
    """The files `env_hash` covers, by the machine-independent name each is hashed under.

    The env's entry-point module (from `envgym.registry.get_spec`), every
    module of envgym, or of the env's own top-level package, that it imports
    transitively, and the data files in the folder of the env's package.
    Modules outside those packages (numpy, gymnasium) are versioned by their
    installers, not here. Raises KeyError for an id envgym does not know.
    """
    entry_module = get_spec(env_id).entry_point.partition(":")[0]
    located = _locate(entry_module)
    if located is None:
        raise EvaluationError(
            f"the code of {env_id} (module {entry_module!r}) cannot be found; is it installed?"
        )
    own_packages = {"envgym", entry_module.partition(".")[0]}
    files: dict[str, Path] = {}
    pending, seen = [entry_module], {entry_module}
    while pending:
        module = pending.pop()
        found = _locate(module)
        if found is None:
            continue
        path, is_package = found
        files[_hashed_name(module, is_package)] = path
        for name in _imports(path, module, is_package, own_packages) - seen:
            seen.add(name)
            pending.append(name)
    env_package = entry_module if located[1] else entry_module.rpartition(".")[0]
    if env_package:
        files.update(_data_files(env_package))
    return dict(sorted(files.items()))


def env_hash(env_id: str) -> str:
    """``sha256:<hex>`` over the entry point and the files of `env_source_files`.

    Any change to the env's code, to an envgym module it runs through (the
    base classes, parsers, the game-versus-opponent adapter) or to its data
    files changes it. The same code gives the same hash on every machine and
    in every process.
    """
    digest = hashlib.sha256(get_spec(env_id).entry_point.encode())
    for name, path in env_source_files(env_id).items():
        data = path.read_bytes()
        digest.update(b"\0" + name.encode() + b"\0" + str(len(data)).encode() + b"\0")
        digest.update(data)
    return "sha256:" + digest.hexdigest()
