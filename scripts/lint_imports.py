"""Check that envgym's imports point one way (the layers in pyproject.toml).

import-linter reads a package from its folder, and envgym.envs,
envgym.trainers and envgym.leaderboard live in the top-level envs/,
trainers/ and leaderboard/ folders (a package-dir mapping), so this copies
them and envgym/ into one tree under a temporary folder, as the wheel lays
them out, and runs the contracts there. Exit status 0 when every contract holds.

    python scripts/lint_imports.py
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def assemble(dest: Path, root: Path = ROOT) -> Path:
    """Copy the Python files of envgym/ and the mapped folders into ``dest``/envgym."""
    package = dest / "envgym"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".*")
    shutil.copytree(root / "envgym", package, ignore=ignore)
    for folder in ("envs", "trainers", "leaderboard"):
        shutil.copytree(root / folder, package / folder, ignore=ignore)
    return package


def lint(tree: Path, config: Path = ROOT / "pyproject.toml") -> subprocess.CompletedProcess[str]:
    """Run import-linter on the assembled tree in ``tree`` (a fresh interpreter,
    so the installed envgym does not shadow the copy)."""
    code = (
        "import sys; from importlinter.cli import lint_imports; "
        f"sys.exit(lint_imports(config_filename={str(config)!r}, no_cache=True, no_logo=True))"
    )
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=tree,
        env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin", "PYTHONSAFEPATH": ""},
        capture_output=True,
        text=True,
    )


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="envgym-layers-") as tmp:
        assemble(Path(tmp))
        result = lint(Path(tmp))
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    return result.returncode


if __name__ == "__main__":
    raise SystemExit(main())
