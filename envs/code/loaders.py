"""Code-v0's problems from the files the standard code datasets are published
as: APPS and TACO, CodeContests, LiveCodeBench, MBPP, MBPP+ and HumanEval+
(`dataset_formats.py` turns one record of each into a `Problem`), and
envgym's own problem records.

`load_problems` takes a file, a folder, a glob or a list of those; reads
JSONL (``.gz`` too), a JSON list or parquet, streaming JSONL and parquet a
row batch at a time; detects each file's format from its first record's
fields (or takes ``format=``); and yields validated problems. A record that
cannot be mapped faithfully is skipped, counted by reason in the
`LoadReport` and warned about once per file; a record that is malformed is a
ValueError naming the file and the line (or row).
"""

from __future__ import annotations

import glob
import gzip
import json
import warnings
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envgym.envs.code.dataset_formats import FORMATS, Skip, detect_format
from envgym.envs.code.problems import Problem, _check_unique, check_problem

__all__ = ["FORMATS", "LoadReport", "load_problems", "read_records", "resolve_problems"]

#: Rows read from a parquet file at a time.
PARQUET_BATCH_ROWS = 256
_SUFFIXES = (".jsonl", ".jsonl.gz", ".json", ".json.gz", ".parquet")


@dataclass
class LoadReport:
    """What `load_problems` read: problems yielded per format, and records
    skipped per (file, reason)."""

    loaded: Counter = field(default_factory=Counter)
    skipped: Counter = field(default_factory=Counter)

    def summary(self) -> str:
        kept = ", ".join(f"{n} {fmt}" for fmt, n in sorted(self.loaded.items())) or "none"
        lines = [f"loaded: {kept}"]
        lines += [f"skipped {n} in {f}: {why}" for (f, why), n in sorted(self.skipped.items())]
        return "\n".join(lines)


def _files(source: Any, split: str | None) -> list[Path]:
    """The data files a source names, in a stable order."""
    sources = [source] if isinstance(source, str | Path) else list(source)
    files: list[Path] = []
    for item in sources:
        if not isinstance(item, str | Path):
            raise ValueError(
                f"a problem source must be a path or a glob, got a {type(item).__name__}"
            )
        path = Path(item)
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.is_file() and _is_data(p))
            if not found:
                raise ValueError(f"{path} holds no {', '.join(_SUFFIXES)} files")
            files += found
        elif path.is_file():
            files.append(path)
        elif any(c in str(item) for c in "*?["):
            found = sorted(Path(p) for p in glob.glob(str(item), recursive=True))
            found = [p for p in found if p.is_file()]
            if not found:
                raise FileNotFoundError(f"no file matches {item}")
            files += found
        else:
            raise FileNotFoundError(f"no such file or folder: {item}")
    if split is not None:
        # Hugging Face's layout: data/test-00000-of-00001.parquet, test.jsonl, test/...
        kept = [p for p in files if p.name.startswith(split) or split in p.parent.parts]
        if not kept:
            names = ", ".join(p.name for p in files[:5])
            raise ValueError(
                f"no file of split {split!r} among {names}: a split's files are named "
                f"{split}*.jsonl / {split}-*.parquet or lie in a folder named {split}"
            )
        files = kept
    return files


def _stem(path: Path) -> str:
    name = path.name
    for suffix in _SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return path.stem


def _is_data(path: Path) -> bool:
    return any(path.name.endswith(suffix) for suffix in _SUFFIXES)


def read_records(path: Path) -> Iterator[tuple[str, Any]]:
    """(where, record) for each record of a file: ``path:line`` for JSONL,
    ``path: row n`` otherwise. Parquet is read a row batch at a time and JSONL
    a line at a time; a JSON list is read whole."""
    name = path.name
    if name.endswith(".parquet"):
        yield from _parquet_records(path)
        return
    opener = gzip.open if name.endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8") as f:
            first = _first_char(f)
            f.seek(0)
            if first == "[":
                try:
                    records = json.load(f)
                except (json.JSONDecodeError, RecursionError) as exc:
                    raise ValueError(f"{path} is not valid JSON: {exc}") from None
                for index, record in enumerate(records):
                    yield f"{path}: item {index}", record
                return
            for number, line in enumerate(f, start=1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except (json.JSONDecodeError, RecursionError) as exc:
                    why = getattr(exc, "msg", "nested too deeply")
                    raise ValueError(
                        f"{path}:{number}: not a JSON object ({why}); JSONL holds one "
                        "JSON object per line"
                    ) from None
                yield f"{path}:{number}", record
    except (UnicodeDecodeError, gzip.BadGzipFile, EOFError) as exc:
        raise ValueError(f"{path} is not UTF-8 JSON or JSONL text: {exc}") from None


def _first_char(f) -> str:
    while True:
        chunk = f.read(4096)
        if not chunk:
            return ""
        stripped = chunk.lstrip()
        if stripped:
            return stripped[0]


def _parquet_records(path: Path) -> Iterator[tuple[str, Any]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        reader = pq.ParquetFile(path)
    except (pa.ArrowInvalid, OSError) as exc:
        raise ValueError(f"{path} is not a parquet file: {exc}") from None
    row = 0
    with reader:
        for batch in reader.iter_batches(batch_size=PARQUET_BATCH_ROWS):
            for record in batch.to_pylist():
                yield f"{path}: row {row}", record
                row += 1


def load_problems(
    source: str | Path | Iterable[str | Path],
    *,
    format: str | None = None,
    split: str | None = None,
    limit: int | None = None,
    report: LoadReport | None = None,
) -> Iterator[Problem]:
    """The problems in ``source`` (a file, folder, glob or a list of those), in
    file order, lazily: the first is yielded before the rest of its file is read.

    ``format`` forces one of `FORMATS` for every file (default: detected per
    file from its first record). ``split`` keeps the files of one split of a
    Hugging Face dataset's layout (``test-*.parquet``, ``test.jsonl``, a
    ``test/`` folder). ``limit`` stops after that many problems. ``report``
    (a `LoadReport`) counts what was loaded and what was skipped, and why.
    """
    if format is not None and format not in FORMATS:
        raise ValueError(f"unknown format {format!r}; choose one of {', '.join(FORMATS)}")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        raise ValueError(f"limit must be a non-negative integer, got {limit!r}")
    report = report if report is not None else LoadReport()
    # The sources are checked now, so a wrong path fails at the call, not at the first next().
    return _problems(_files(source, split), format, limit, report)


def _problems(
    files: list[Path], format: str | None, limit: int | None, report: LoadReport
) -> Iterator[Problem]:
    yielded = 0
    for path in files:
        if limit is not None and yielded >= limit:
            return
        fmt = format
        skipped = Counter()
        empty = True
        for index, (where, record) in enumerate(read_records(path)):
            empty = False
            if not isinstance(record, dict):
                got = type(record).__name__
                raise ValueError(f"{where}: a record must be a JSON object, got a {got}")
            if fmt is None:
                fmt = detect_format(record, str(path))
            problem = FORMATS[fmt].convert(record, where, f"{_stem(path)}-{index}")
            if isinstance(problem, Skip):
                skipped[problem.reason] += 1
                report.skipped[(str(path), problem.reason)] += 1
                continue
            report.loaded[fmt] += 1
            yielded += 1
            yield problem
            if limit is not None and yielded >= limit:
                break
        if empty:
            raise ValueError(f"{path} holds no records; a problem file holds at least one")
        if skipped:
            reasons = "; ".join(f"{n} {why}" for why, n in skipped.most_common())
            total = sum(skipped.values())
            warnings.warn(f"{path}: skipped {total} records: {reasons}", stacklevel=2)


def resolve_problems(problems: Any) -> tuple[Problem, ...]:
    """The problems a Code env's ``problems=`` names: `Problem` records as they
    are, and paths, globs or folders (or a list mixing them) read by
    `load_problems`; task ids must be unique across them."""
    if isinstance(problems, str | Path):
        sources: list[Any] = [problems]
    elif isinstance(problems, Iterable):
        sources = list(problems)
    else:
        raise ValueError(
            "problems= must be a path, a glob, a list of paths or a list of Problem records, "
            f"got a {type(problems).__name__}"
        )
    odd = [p for p in sources if not isinstance(p, Problem | str | Path)]
    if odd:
        raise ValueError(
            f"problems= holds a {type(odd[0]).__name__}; give paths, globs or Problem records"
        )
    loaded = [check_problem(p) for p in sources if isinstance(p, Problem)]
    for path in (p for p in sources if isinstance(p, str | Path)):
        loaded.extend(load_problems(path))
    _check_unique(loaded, "problems=")
    return tuple(loaded)
