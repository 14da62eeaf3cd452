"""The README's Python example runs as written."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_python_example_runs(capsys):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)
    assert blocks, "the README should show a Python example"
    example = blocks[0]
    assert len(example.strip().splitlines()) <= 12
    namespace: dict = {}
    exec(compile(example, str(README), "exec"), namespace)
    assert namespace["truncated"] or namespace["terminated"]
    assert "Sokoban" in capsys.readouterr().out
