"""The shape docs/design.md promises: imports point one way, no two modules import each
other (not even for type checking), and each module is one readable job (at most
500 lines, opening with a docstring that says what it is for)."""

from __future__ import annotations

import ast
import importlib.util
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MAX_LINES = 500


def _lint_imports_module():
    spec = importlib.util.spec_from_file_location("lint_imports", ROOT / "scripts/lint_imports.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_imports_point_down_the_layers(tmp_path):
    lint_imports = _lint_imports_module()
    result = lint_imports.lint(lint_imports.assemble(tmp_path).parent)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 kept, 0 broken" in result.stdout


@pytest.mark.parametrize(
    "module,forbidden,line",
    [
        ("core.py", "envgym.vector", "from envgym.vector import make_vec\n"),
        ("sandbox/base.py", "envgym.core", "import envgym.core\n"),
        ("parsing.py", "envgym.registry", "def f():\n    from envgym.registry import get_spec\n"),
        ("trainers/grpo.py", "envgym.cli", "from envgym.cli import main\n"),
        ("evaluation/runner.py", "envgym.trainers", "import envgym.trainers.grpo\n"),
        ("retrieval/bm25.py", "envgym.envs", "from envgym.envs.search import SearchEnv\n"),
        ("sockets.py", "envgym.serving", "from envgym.serving import AppServer\n"),
    ],
)
def test_a_forbidden_import_fails_the_check(tmp_path, module, forbidden, line):
    lint_imports = _lint_imports_module()
    package = lint_imports.assemble(tmp_path)
    with open(package / module, "a") as f:
        f.write("\n" + line)
    result = lint_imports.lint(tmp_path)
    assert result.returncode != 0
    importer = "envgym." + module.removesuffix(".py").replace("/", ".")
    assert f"{importer} -> {forbidden}" in result.stdout, result.stdout


def _modules() -> list[Path]:
    return sorted(
        path
        for folder in ("envgym", "envs", "trainers", "leaderboard")
        for path in (ROOT / folder).rglob("*.py")
        if "__pycache__" not in path.parts
    )


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_each_module_is_one_documented_job_under_500_lines(path):
    text = path.read_text()
    lines = text.count("\n")
    assert lines <= MAX_LINES, f"{path.relative_to(ROOT)} has {lines} lines; split it"
    assert ast.get_docstring(ast.parse(text)), f"{path.relative_to(ROOT)} has no module docstring"


# ------------------------------------------------------------------ cycles
#: Folder -> the module name it is imported as (benchmarks import each other by
#: file name, from their own folder).
PACKAGES = {
    "envgym": "envgym",
    "envs": "envgym.envs",
    "trainers": "envgym.trainers",
    "leaderboard": "envgym.leaderboard",
    "benchmarks": "benchmarks",
}


def _module_files(root: Path) -> dict[str, tuple[Path, bool]]:
    """Module name -> (file, whether it is a package's ``__init__``)."""
    found = {}
    for folder, prefix in PACKAGES.items():
        for path in (root / folder).rglob("*.py"):
            if "__pycache__" in path.parts:
                continue
            parts = list(path.relative_to(root / folder).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            name = ".".join([prefix, *(parts[:-1] if is_package else parts)])
            found[name] = (path, is_package)
    return found


def _import_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the modules it imports, at any depth of its code: at the top, in
    functions and under ``if TYPE_CHECKING:``. ``from a import b`` imports the
    module a.b when there is one, else the package a."""
    modules = _module_files(root)

    def known(name: str, importer: str) -> str | None:
        if importer.startswith("benchmarks.") and f"benchmarks.{name.split('.')[0]}" in modules:
            name = f"benchmarks.{name}"
        while name not in modules and "." in name:
            name = name.rsplit(".", 1)[0]
        return name if name in modules else None

    graph: dict[str, set[str]] = {}
    for name, (path, is_package) in modules.items():
        package = name if is_package else name.rsplit(".", 1)[0]
        targets: list[str] = []
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets += [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                for alias in node.names:
                    submodule = known(f"{source}.{alias.name}", name)
                    targets.append(
                        f"{source}.{alias.name}"
                        if submodule == f"{source}.{alias.name}"
                        else source
                    )
        graph[name] = {t for t in (known(t, name) for t in targets) if t and t != name}
    return graph


def _find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as [a, b, ..., a], or None (a depth-first search)."""
    done: set[str] = set()
    for start in sorted(graph):
        if start in done:
            continue
        path: list[str] = []
        on_path: set[str] = set()
        stack = [(start, iter(sorted(graph[start])))]
        path.append(start)
        on_path.add(start)
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                stack.pop()
                path.pop()
                on_path.discard(node)
                done.add(node)
            elif child in on_path:
                return path[path.index(child) :] + [child]
            elif child not in done:
                stack.append((child, iter(sorted(graph[child]))))
                path.append(child)
                on_path.add(child)
    return None


def _cycle_message(cycle: list[str] | None) -> str:
    return "import cycle: " + " -> ".join(cycle) if cycle else "no import cycle"


def test_no_module_imports_itself_through_others():
    cycle = _find_cycle(_import_graph(ROOT))
    assert cycle is None, _cycle_message(cycle) + "; move what both need where both import it"


def test_a_type_checking_cycle_is_caught_and_named(tmp_path):
    for folder in PACKAGES:
        shutil.copytree(
            ROOT / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__")
        )
    with open(tmp_path / "envs/games/negotiator.py", "a") as f:
        f.write(
            "\nfrom typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n"
            "    from envgym.envs.games.simple_negotiation import SimpleNegotiation\n"
        )
    cycle = _find_cycle(_import_graph(tmp_path))
    assert _cycle_message(cycle) == (
        "import cycle: envgym.envs.games.negotiator -> envgym.envs.games.simple_negotiation"
        " -> envgym.envs.games.negotiator"
    )


def test_a_lazy_import_between_benchmarks_is_a_cycle_too(tmp_path):
    for folder in PACKAGES:
        shutil.copytree(
            ROOT / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__")
        )
    with open(tmp_path / "benchmarks/trainer_gpu.py", "a") as f:
        f.write("\n\ndef _late():\n    from trainer import section  # noqa: F401\n")
    cycle = _find_cycle(_import_graph(tmp_path))
    assert cycle is not None
    assert set(cycle) == {"benchmarks.trainer", "benchmarks.trainer_gpu"}, _cycle_message(cycle)
