from pathlib import Path


def test_greeting_file():
    path = Path("/app/greeting.txt")
    assert path.exists(), f"File {path} does not exist"
    assert path.read_text().strip() == "Hello, world!"


def test_notes_folder():
    assert Path("/app/notes").is_dir()
