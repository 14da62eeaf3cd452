"""Small terminal-bench and Harbor task folders written into a test's tmp_path."""

from __future__ import annotations

from pathlib import Path

SHIPPED = Path(__file__).parent / "data" / "taskdirs"

TB_YAML = "instruction: Write 42 into /app/answer.txt.\ndifficulty: easy\n"
TB_TEST = """from pathlib import Path


def test_answer():
    assert Path("/app/answer.txt").read_text().strip() == "42"
"""
HARBOR_TOML = '[metadata]\ndifficulty = "medium"\n\n[verifier]\ntimeout_sec = 30.0\n'
HARBOR_TEST_SH = """#!/bin/bash
apt-get update
apt-get install -y curl
curl -LsSf https://astral.sh/uv/0.9.5/install.sh | sh
source $HOME/.local/bin/env
uvx -p 3.13 -w pytest==8.4.1 -w pytest-json-ctrf==0.3.5 \\
  pytest --ctrf /logs/verifier/ctrf.json /tests/test_outputs.py -rA
if [ $? -eq 0 ]; then echo 1 > /logs/verifier/reward.txt
else echo 0 > /logs/verifier/reward.txt; fi
"""


def write(root: Path, files: dict[str, str | None]) -> Path:
    """Write ``files`` (relative path -> text; None leaves a file out) under ``root``."""
    for rel, text in files.items():
        if text is None:
            continue
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def tb_task(parent: Path, changes: dict[str, str | None] | None = None, name: str = "tb-task"):
    """A terminal-bench task folder under ``parent``; ``changes`` replace its
    files or drop them (None)."""
    layout: dict[str, str | None] = {
        "task.yaml": TB_YAML,
        "Dockerfile": "FROM ubuntu:24.04\nWORKDIR /app\n",
        "solution.sh": "#!/bin/bash\necho 42 > /app/answer.txt\n",
        "run-tests.sh": "#!/bin/bash\nuv run pytest $TEST_DIR/test_outputs.py -rA\n",
        "tests/test_outputs.py": TB_TEST,
    }
    return write(parent / name, {**layout, **(changes or {})})


def harbor_task(
    parent: Path, changes: dict[str, str | None] | None = None, name: str = "harbor-task"
) -> Path:
    """A Harbor task folder under ``parent`` (``changes`` as in `tb_task`)."""
    layout: dict[str, str | None] = {
        "task.toml": HARBOR_TOML,
        "instruction.md": "Write 42 into /app/answer.txt.\n",
        "environment/Dockerfile": "FROM python:3.12-slim\nWORKDIR /app\n",
        "solution/solve.sh": "#!/bin/bash\necho 42 > /app/answer.txt\n",
        "tests/test.sh": HARBOR_TEST_SH,
        "tests/test_outputs.py": TB_TEST,
    }
    return write(parent / name, {**layout, **(changes or {})})
