import json
import os
import subprocess
from pathlib import Path

EXPECTED = json.loads((Path(os.environ["TEST_DIR"]) / "expected.json").read_text())


def test_totals_file_is_right():
    totals = json.loads(Path("/app/out/totals.json").read_text())
    assert totals == EXPECTED


def test_script_gives_the_totals_again():
    Path("/app/out/totals.json").unlink()
    subprocess.run(["python3", "/app/bin/summarise.py"], check=True, timeout=20)
    assert json.loads(Path("/app/out/totals.json").read_text()) == EXPECTED


def test_data_is_untouched():
    assert Path("/app/data/2024/2024-02.csv").read_text().splitlines()[1] == "south,4"
