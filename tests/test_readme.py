"""The README is a page a newcomer reads in five minutes: short, its first
example ten lines that run, the two set-up commands, and a row per env linking
to the env's page. (tests/test_docs.py runs every block of it and of docs/.)"""

from __future__ import annotations

import re
from pathlib import Path

import envgym

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
TEXT = README.read_text(encoding="utf-8")
BLOCKS = re.findall(r"```python\n(.*?)```", TEXT, flags=re.DOTALL)


def test_readme_is_at_most_250_lines():
    assert TEXT.count("\n") <= 250


def test_readme_first_example_is_ten_lines_and_runs(capsys):
    assert BLOCKS, "the README should show a Python example"
    example = BLOCKS[0]
    assert len(example.strip().splitlines()) <= 12
    namespace: dict = {}
    exec(compile(example, str(README), "exec"), namespace)
    assert namespace["truncated"] or namespace["terminated"]
    assert "Sokoban" in capsys.readouterr().out


def test_readme_gives_the_two_set_up_commands():
    # .ci/run and the newcomer both start from these two lines.
    assert "\nbash scripts/baselines.sh   #" in TEXT
    assert "\nbash scripts/test.sh        #" in TEXT


def test_every_env_has_a_row_linking_to_its_page():
    for spec in envgym.list_envs():
        name = spec.id.rpartition("/")[2].lower()
        row = f"| [`{spec.id}`](docs/envs/{name}.md) |"
        assert row in TEXT, f"the README's env table lacks {spec.id}"
        assert (ROOT / "docs" / "envs" / f"{name}.md").exists()
