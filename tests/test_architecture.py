"""The shape docs/design.md promises: imports point one way, and each module is one
readable job (at most 500 lines, opening with a docstring that says what it is for)."""

from __future__ import annotations

import ast
import importlib.util
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
