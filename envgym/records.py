"""Reading rows of a public data set from disk: JSONL, a JSON list, or parquet.

A source is a file, a folder (its ``*.jsonl``, ``*.json``, ``*.parquet`` files,
recursively, in name order), a glob (``data/train-*.parquet``) or a list of
any of those. Each row comes back as a `Record`: the dict, the file it came
from and where in it (``line 12`` of a JSONL file, ``row 3`` of a JSON list or
a parquet file), so a loader's errors can point at the row. JSONL is read a
line at a time and parquet a row batch at a time (pyarrow, the ``math``
extra), so a large file is streamed; a ``.json`` file is one document, read
whole: a list of rows or a single row (JSON lines in a ``.json`` file are read
as JSONL). A ``.gz`` suffix on a JSON or JSONL file is read through gzip.

Imports only the standard library (pyarrow when a parquet file is read).
"""

from __future__ import annotations

import glob
import gzip
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envgym.extras import require

__all__ = ["FILE_SUFFIXES", "Record", "data_stem", "read_records", "source_files"]

#: The file types a folder is searched for, by suffix.
FILE_SUFFIXES = (".jsonl", ".json", ".parquet", ".jsonl.gz", ".json.gz")
#: Rows per parquet batch: a large file is read this many rows at a time.
PARQUET_BATCH_ROWS = 1024


@dataclass(frozen=True)
class Record:
    """One row of a data file: the row, its file and its place there (1-based)."""

    row: Any
    path: Path
    index: int
    #: "line" (JSONL) or "row" (a JSON list, parquet).
    unit: str

    @property
    def where(self) -> str:
        """``path, line 12``: where the row is, for an error message."""
        return f"{self.path}, {self.unit} {self.index}"


def _suffix(path: Path) -> str:
    name = path.name.lower()
    return next((s for s in sorted(FILE_SUFFIXES, key=len, reverse=True) if name.endswith(s)), "")


def data_stem(path: Path) -> str:
    """The file's name without its data suffix (``test.jsonl.gz`` -> ``test``)."""
    suffix = _suffix(path)
    return path.name[: -len(suffix)] if suffix else path.stem


def source_files(source: str | Path | Sequence[str | Path]) -> list[Path]:
    """The data files a source names, in order; FileNotFoundError when there are none."""
    if isinstance(source, str | Path):
        sources = [source]
    elif isinstance(source, Sequence):
        sources = list(source)
    else:
        raise TypeError(
            f"a data source is a path, a folder, a glob or a list of those, not {type(source)}"
        )
    files: list[Path] = []
    for item in sources:
        if not isinstance(item, str | Path):
            raise TypeError(f"a data source is a path, a folder or a glob, not {type(item)}")
        path = Path(item).expanduser()
        if path.is_file():
            files.append(path)
        elif path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.is_file() and _suffix(p))
            if not found:
                raise FileNotFoundError(
                    f"the folder {path} holds no data files (suffixes {', '.join(FILE_SUFFIXES)})"
                )
            files.extend(found)
        elif any(c in str(item) for c in "*?["):
            found = sorted(Path(p) for p in glob.glob(str(path), recursive=True))
            found = [p for p in found if p.is_file()]
            if not found:
                raise FileNotFoundError(f"no file matches {item}")
            files.extend(found)
        else:
            raise FileNotFoundError(f"no file, folder or glob match at {path}")
    return files


def _json_rows(path: Path) -> Iterator[Record]:
    try:
        yield from _json_text_rows(path)
    except (UnicodeDecodeError, gzip.BadGzipFile, EOFError) as exc:
        raise ValueError(f"{path} is not UTF-8 JSON or JSONL text: {exc}") from None


def _json_text_rows(path: Path) -> Iterator[Record]:
    opener = gzip.open if path.name.lower().endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        if _suffix(path).startswith(".json") and not _suffix(path).startswith(".jsonl"):
            yield from _json_document(path, f.read())
            return
        lines = enumerate(f, 1)
        found = next(((n, line) for n, line in lines if line.strip()), None)
        if found is None:
            return
        start, first = found
        if first.lstrip().startswith("["):
            yield from _json_document(path, first + f.read())
            return
        yield _json_line(path, start, first)
        for lineno, line in lines:
            if line.strip():
                yield _json_line(path, lineno, line)


def _json_document(path: Path, text: str) -> Iterator[Record]:
    """The rows of a JSON file: a list of rows, or one object (MATH ships a file per
    problem); a ``.json`` file that holds JSON lines is read as such."""
    try:
        document = json.loads(text)
    except RecursionError:
        raise ValueError(f"{path}: not a JSON document (nested too deeply)") from None
    except json.JSONDecodeError as exc:
        if exc.msg != "Extra data":
            raise ValueError(f"{path}: not a JSON document ({exc.msg})") from None
        for lineno, line in enumerate(text.splitlines(), 1):
            if line.strip():
                yield _json_line(path, lineno, line)
        return
    rows = document if isinstance(document, list) else [document]
    for index, row in enumerate(rows, 1):
        yield Record(row, path, index, "row")


def _json_line(path: Path, lineno: int, line: str) -> Record:
    try:
        return Record(json.loads(line), path, lineno, "line")
    except (json.JSONDecodeError, RecursionError) as exc:
        why = getattr(exc, "msg", "nested too deeply")
        raise ValueError(
            f"{path}, line {lineno}: not a JSON line ({why}); a JSONL file holds one "
            "JSON object a line"
        ) from None


def _parquet_rows(path: Path, extra: str) -> Iterator[Record]:
    parquet = require("pyarrow.parquet", extra=extra, purpose=f"reading the parquet file {path}")
    import pyarrow

    try:
        reader = parquet.ParquetFile(path)
    except (pyarrow.ArrowInvalid, OSError) as exc:
        raise ValueError(f"{path} is not a parquet file: {exc}") from None
    index = 0
    with reader:
        for batch in reader.iter_batches(batch_size=PARQUET_BATCH_ROWS):
            for row in batch.to_pylist():
                index += 1
                yield Record(row, path, index, "row")


def read_records(
    source: str | Path | Sequence[str | Path],
    *,
    file_format: str | None = None,
    extra: str = "math",
) -> Iterator[Record]:
    """Every row of every file a source names, streamed. `file_format` ("jsonl",
    "json" or "parquet") overrides the file suffixes; otherwise a ``.parquet``
    file is parquet and any other is JSON: a list, or one object a line. A file
    that is not what it claims (not UTF-8, a broken gzip or parquet file, JSON
    nested too deeply) is a ValueError naming it. `extra` is the envgym extra
    that brings pyarrow, named when a parquet file needs it and it is missing."""
    if file_format not in (None, "jsonl", "json", "parquet"):
        raise ValueError(f"file_format is 'jsonl', 'json' or 'parquet', not {file_format!r}")
    for path in source_files(source):
        is_parquet = file_format == "parquet" or (
            file_format is None and _suffix(path) == ".parquet"
        )
        yield from _parquet_rows(path, extra) if is_parquet else _json_rows(path)
