"""How fast Code-v0's dataset loaders read a file, against reading the same
records without converting them, and how little memory streaming holds.

For each format of tests/code_format_files.py, a file of ``--rows`` records
(its fixture records repeated, ids made unique) as JSONL and (but EvalPlus's,
whose argument lists mix types a parquet column cannot) as parquet. Per
round, interleaved: the raw read (``json.loads`` per line; pyarrow's
``iter_batches().to_pylist()``) and `load_problems` over the same file. The
table shows problems per second of the loader and the loader's time over the
raw read's (median of the rounds). Then the peak Python memory (tracemalloc)
of taking the first problem of the parquet file against reading it whole with
``pyarrow.parquet.read_table().to_pylist()``.

    python benchmarks/code_loaders.py              # 4000 rows, 5 rounds
    python benchmarks/code_loaders.py --rows 500 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import tracemalloc
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from code_format_files import FILES, write_format  # noqa: E402

from envgym.envs.code.loaders import load_problems  # noqa: E402

#: The record field that names a problem, per file, made unique per row.
ID_FIELD = {
    "apps.jsonl": "problem_id",
    "codecontests.parquet": "name",
    "livecodebench.jsonl": "question_id",
    "mbpp.jsonl": "task_id",
    "mbppplus.jsonl.gz": "task_id",
    "humanevalplus.jsonl": "task_id",
}


def _rows(name: str, count: int) -> list[dict]:
    base = FILES[name]
    rows = []
    for i in range(count):
        row = dict(base[i % len(base)])
        key = ID_FIELD[name]
        row[key] = f"{row[key]}-{i}" if name != "codecontests.parquet" else f"{i}_A. P"
        rows.append(row)
    return rows


def _raw(path: Path) -> int:
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        with pq.ParquetFile(path) as f:
            return sum(len(b.to_pylist()) for b in f.iter_batches(batch_size=256))
    with path.open(encoding="utf-8") as f:
        return sum(1 for line in f if json.loads(line))


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=4000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    with tempfile.TemporaryDirectory() as tmp:
        print(f"{'file':<34} {'problems/s':>12} {'loader / raw read':>18}")
        for name in ID_FIELD:
            rows = _rows(name, args.rows)
            stem = name.split(".")[0]
            # EvalPlus's argument lists mix types that one parquet column cannot hold.
            suffixes = (".jsonl",) if "plus" in name else (".jsonl", ".parquet")
            for suffix in suffixes:
                path = write_format(name, Path(tmp) / f"{stem}{suffix}", rows)
                raw, loaded = [], []
                for _ in range(args.rounds):
                    raw.append(_timed(lambda p=path: _raw(p)))
                    loaded.append(_timed(lambda p=path: sum(1 for _ in load_problems(p))))
                rate = args.rows / statistics.median(loaded)
                ratio = statistics.median(a / b for a, b in zip(loaded, raw, strict=True))
                print(f"{path.name:<34} {rate:>12,.0f} {ratio:>17.1f}x")
        path = Path(tmp) / "codecontests.parquet"
        import pyarrow.parquet as pq

        tracemalloc.start()
        next(load_problems(path))
        first = tracemalloc.get_traced_memory()[1]
        tracemalloc.reset_peak()
        pq.read_table(path).to_pylist()
        whole = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        print(
            f"\npeak Python memory, {args.rows} CodeContests rows: first problem streamed "
            f"{first / 2**20:.2f} MiB, whole file read {whole / 2**20:.2f} MiB "
            f"({whole / max(first, 1):.0f}x)"
        )


if __name__ == "__main__":
    main()
