"""Code-v0's problems from the files the standard code datasets are published
as: APPS and TACO, CodeContests, LiveCodeBench, MBPP, MBPP+ and HumanEval+
(`dataset_formats.py` turns one record of each into a `Problem`), and
envgym's own problem records.

`load_problems` takes a file, a folder, a glob or a list of those; reads
JSONL (``.gz`` too), a JSON list or parquet (`envgym.records`), streaming JSONL
and parquet a row batch at a time; detects each file's format from its first record's
fields (or takes ``format=``); and yields validated problems. A record that
cannot be mapped faithfully is skipped, counted by reason in the
`LoadReport` and warned about once per file; a record that is malformed is a
ValueError naming the file and the line (or row).
"""

from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envgym.envs.code.dataset_formats import FORMATS, Skip, detect_format
from envgym.envs.code.problems import Problem, _check_unique, check_problem
from envgym.records import data_stem, read_records, source_files

__all__ = ["FORMATS", "LoadReport", "load_problems", "resolve_problems"]


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
    """The data files a source names, in a stable order (`envgym.records.source_files`),
    kept to one split of a Hugging Face layout when `split` is given."""
    files = source_files(source)
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
        for index, found in enumerate(read_records(path, extra="code")):
            where, record = found.where, found.row
            empty = False
            if not isinstance(record, dict):
                got = type(record).__name__
                raise ValueError(f"{where}: a record must be a JSON object, got a {got}")
            if fmt is None:
                fmt = detect_format(record, str(path))
            problem = FORMATS[fmt].convert(record, where, f"{data_stem(path)}-{index}")
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
