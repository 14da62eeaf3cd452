"""scripts/fingerprints.py, the refactoring check: the same code gives the same
digests, and a changed digest is reported and fails the comparison."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _script():
    spec = importlib.util.spec_from_file_location("fingerprints", ROOT / "scripts/fingerprints.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_same_code_same_digests_and_a_change_fails_the_comparison(tmp_path, capsys):
    fingerprints = _script()
    args = ["--seeds", "3", "--env", "envgym/GuessNumber-v0", "--env", "envgym/TicTacToe-v0"]
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    assert fingerprints.main([*args, "--out", str(first)]) == 0
    digests = json.loads(first.read_text())
    assert sorted(digests) == [
        f"envgym/{name} {level}"
        for name in ("GuessNumber-v0", "TicTacToe-v0")
        for level in ("easy", "hard", "medium")
    ]
    assert fingerprints.main([*args, "--out", str(second), "--compare", str(first)]) == 0
    assert "6 of 6 identical" in capsys.readouterr().out

    digests["envgym/TicTacToe-v0 hard"] = "0" * 64
    first.write_text(json.dumps(digests))
    assert fingerprints.main([*args, "--out", str(second), "--compare", str(first)]) == 1
    out = capsys.readouterr().out
    assert "DIFFERS: envgym/TicTacToe-v0 hard" in out and "5 of 6 identical" in out
