"""The README's Python example runs as written."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)


def test_readme_first_example_is_ten_lines_and_runs(capsys):
    assert BLOCKS, "the README should show a Python example"
    example = BLOCKS[0]
    assert len(example.strip().splitlines()) <= 12
    namespace: dict = {}
    exec(compile(example, str(README), "exec"), namespace)
    assert namespace["truncated"] or namespace["terminated"]
    assert "Sokoban" in capsys.readouterr().out


def test_every_readme_python_example_runs():
    for block in BLOCKS[1:]:
        exec(compile(block, str(README), "exec"), {})
