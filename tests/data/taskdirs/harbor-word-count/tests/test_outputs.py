import subprocess

import pytest


def words(tmp_path, text):
    path = tmp_path / "input.txt"
    path.write_text(text)
    done = subprocess.run(
        ["python3", "/app/src/wc.py", str(path)], capture_output=True, text=True, timeout=10
    )
    assert done.returncode == 0, done.stderr
    return int(done.stdout.strip())


class TestWordCount:
    @pytest.mark.parametrize("text,count", [("one two  three  \n", 3), ("a\tb\nc\n", 3)])
    def test_spaces_are_not_words(self, tmp_path, text, count):
        assert words(tmp_path, text) == count

    def test_empty_file(self, tmp_path):
        assert words(tmp_path, "") == 0


def test_plain_text_still_counts(tmp_path):
    assert words(tmp_path, "the quick brown fox") == 4
