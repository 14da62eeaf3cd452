"""Math problems with LaTeX answers from the public data sets' own files.

`load_problems` reads a file, folder, glob or list of them (JSONL, a JSON
list or parquet: `envgym.records`) in one of these layouts, detected per file
from its first row or forced with ``format=``:

- ``gsm8k`` (GSM8K): ``question``, and ``answer`` whose last line is
  ``#### 72`` (the worked solution above it is dropped).
- ``math`` (MATH, MATH-500): ``problem``, and ``answer`` (MATH-500) or a
  ``solution`` whose last ``\\boxed{...}`` (or ``\\fbox{...}``) holds the
  answer, nested braces and all; ``level`` (``"Level 3"`` or ``3``),
  ``type`` or ``subject``, and ``unique_id`` (MATH-500) as the id.
- ``dapo`` (DAPO-Math-17k, verl's RL layout): ``prompt``, a chat list whose
  last user turn is the problem (DAPO's "Solve the following math problem
  ... Answer:" instructions around it are dropped: the env says how to
  answer), ``reward_model.ground_truth`` the answer, ``extra_info.index`` the id.
- ``aime`` (AIME and AMC sets, e.g. AI-MO's aimo-validation-aime/-amc, AIME
  2024/2025 releases): ``problem`` (or ``question``) and ``answer``, any case
  (``Problem``/``Answer``), with ``id`` and ``year`` when given.

Every problem keeps a task id: ``FILESTEM:ID`` from the row's id field, else
``FILESTEM:INDEX`` (its line in a JSONL file, its row in a JSON list or a
parquet file), so the id names the same problem whenever the file is loaded.
FILESTEM is the file's path from the folder its files share, suffixes dropped:
``gsm8k-test``, or ``train/algebra/1`` for MATH's own layout of one JSON file
per problem in a folder per subject.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envgym.parsing import parse_boxed
from envgym.records import Record, read_records, source_files
from envgym.text import OBSERVATION_MAX_LENGTH, to_ascii

__all__ = ["FORMATS", "LoadedProblem", "load_problems"]

#: The longest problem text kept (room is left for the env's feedback).
MAX_PROBLEM_CHARS = OBSERVATION_MAX_LENGTH - 1024
#: The longest gold answer: longer ones are not a final value.
MAX_GOLD_CHARS = 400
MAX_ID_CHARS = 200

_DAPO_PREFIX = (
    "Solve the following math problem step by step. The last line of your response "
    "should be of the form Answer: $Answer (without quotes) where $Answer is the answer "
    "to the problem."
)
_DAPO_SUFFIX = 'Remember to put your answer on its own line after "Answer:".'


@dataclass(frozen=True)
class LoadedProblem:
    """One loaded problem: its id, the text the agent reads and the gold answer (LaTeX)."""

    task_id: str
    text: str
    answer: str
    #: The layout it was read in: one of `FORMATS`.
    source_format: str
    level: str | None = None
    subject: str | None = None


class FormatError(ValueError):
    """A row that does not fit the layout of its file."""


def _field(row: dict[str, Any], *names: str, text: bool = False) -> Any:
    """The first of `names` the row has (any case; with `text`, only a non-empty
    string counts: some AIME files number the problem in ``problem``), or None."""
    lowered = {str(k).lower(): v for k, v in row.items()}
    for name in names:
        value = lowered.get(name)
        if value is not None and (not text or (isinstance(value, str) and value.strip())):
            return value
    return None


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise FormatError(f"{what} is not a non-empty string")
    return value.strip()


def _gsm8k(row: dict[str, Any]) -> dict[str, Any]:
    answer = _text(row.get("answer"), '"answer"')
    solution, marker, final = answer.rpartition("####")
    if not marker:
        raise FormatError('the "answer" has no "#### ANSWER" line')
    return {"text": _text(row.get("question"), '"question"'), "answer": final.strip()}


def _boxed_answer(solution: str) -> str:
    solution = solution.replace("\\fbox{", "\\boxed{")
    boxed = parse_boxed(solution)
    if boxed.value is None:
        raise FormatError('the "solution" has no \\boxed{...} answer and there is no "answer"')
    return boxed.value


def _math(row: dict[str, Any]) -> dict[str, Any]:
    answer = row.get("answer")
    if answer is None or (isinstance(answer, str) and not answer.strip()):
        answer = _boxed_answer(_text(row.get("solution"), '"solution"'))
    level = row.get("level")
    subject = row.get("subject", row.get("type"))
    return {
        "text": _text(row.get("problem"), '"problem"'),
        "answer": str(answer).strip(),
        "id": row.get("unique_id", row.get("id")),
        "level": None if level is None else str(level).removeprefix("Level ").strip(),
        "subject": None if subject is None else str(subject),
    }


def _dapo(row: dict[str, Any]) -> dict[str, Any]:
    prompt = row.get("prompt")
    turns = [t for t in prompt or [] if isinstance(t, dict) and t.get("role") == "user"]
    if not turns:
        raise FormatError('"prompt" is not a chat list with a user turn')
    text = _text(turns[-1].get("content"), "the user turn's content")
    text = text.removeprefix(_DAPO_PREFIX).removesuffix(_DAPO_SUFFIX).strip()
    reward_model = row.get("reward_model")
    truth = reward_model.get("ground_truth") if isinstance(reward_model, dict) else None
    if truth is None:
        raise FormatError('there is no "reward_model": {"ground_truth": ...}')
    extra = row.get("extra_info")
    return {
        "text": _text(text, "the problem"),
        "answer": str(truth).strip(),
        "id": extra.get("index") if isinstance(extra, dict) else None,
        "subject": row.get("data_source"),
    }


def _aime(row: dict[str, Any]) -> dict[str, Any]:
    answer = _field(row, "answer")
    if answer is None:
        raise FormatError('there is no "answer"')
    year = _field(row, "year")
    return {
        "text": _text(_field(row, "problem", "question", text=True), '"problem"'),
        "answer": str(answer).strip(),
        "id": _field(row, "id", "unique_id"),
        "subject": None if year is None else f"{year}",
    }


#: Layout name -> (what it expects, how to read one row).
FORMATS: dict[str, tuple[str, Callable[[dict[str, Any]], dict[str, Any]]]] = {
    "gsm8k": ('GSM8K: {"question", "answer": "...\\n#### 72"}', _gsm8k),
    "math": (
        'MATH / MATH-500: {"problem", "solution" with \\boxed{answer} or "answer", '
        '"level", "type" or "subject"}',
        _math,
    ),
    "dapo": (
        'DAPO-Math-17k: {"prompt": [{"role": "user", "content"}], '
        '"reward_model": {"ground_truth"}, "extra_info": {"index"}}',
        _dapo,
    ),
    "aime": ('AIME / AMC: {"problem" or "question", "answer", "id", "year"}', _aime),
}


def detect_format(row: Any) -> str | None:
    """The layout a row is in, judged by its field names, or None."""
    if not isinstance(row, dict):
        return None
    keys = {str(k).lower() for k in row}
    if "prompt" in keys and "reward_model" in keys:
        return "dapo"
    if "question" in keys and isinstance(row.get("answer"), str) and "####" in row["answer"]:
        return "gsm8k"
    if "problem" in keys and ("solution" in keys or "answer" in keys):
        if keys & {"level", "type", "subject", "unique_id"} or "answer" not in keys:
            return "math"
    if keys & {"problem", "question"} and "answer" in keys:
        return "aime"
    return None


def _unknown_layout(record: Record) -> ValueError:
    row = record.row
    fields = sorted(str(k) for k in row)[:20] if isinstance(row, dict) else type(row).__name__
    expected = "; ".join(f"{name} ({layout})" for name, (layout, _) in FORMATS.items())
    return ValueError(
        f"{record.where}: not a math problem layout envgym reads (fields: {fields}). "
        f"Expected one of: {expected}. Pass format=NAME to force one."
    )


def _problem(record: Record, layout: str, stem: str) -> LoadedProblem:
    if not isinstance(record.row, dict):
        raise ValueError(f"{record.where}: a row is a JSON object, not {type(record.row).__name__}")
    try:
        fields = FORMATS[layout][1](record.row)
    except FormatError as exc:
        raise ValueError(
            f"{record.where}: not a {layout} row: {exc}. Expected {FORMATS[layout][0]}"
        ) from None
    if len(fields["text"]) > MAX_PROBLEM_CHARS:
        raise ValueError(f"{record.where}: the problem is longer than {MAX_PROBLEM_CHARS} chars")
    if not fields["answer"] or len(fields["answer"]) > MAX_GOLD_CHARS:
        raise ValueError(
            f"{record.where}: the answer is empty or longer than {MAX_GOLD_CHARS} characters"
        )
    raw_id = fields.get("id")
    own = str(raw_id).strip() if raw_id is not None and str(raw_id).strip() else None
    task_id = to_ascii(f"{stem}:{own if own is not None else record.index}")[:MAX_ID_CHARS]
    return LoadedProblem(
        task_id=task_id,
        text=to_ascii(fields["text"]),
        answer=fields["answer"],
        source_format=layout,
        level=fields.get("level"),
        subject=None if fields.get("subject") is None else str(fields["subject"]),
    )


def _stems(files: list[Path]) -> dict[Path, str]:
    """Each file's name in task ids: its path from the files' common folder, suffixes
    dropped (``gsm8k-test``; ``train/algebra/1`` for MATH's file per problem)."""
    root = Path(os.path.commonpath([p.resolve().parent for p in files]))
    stems = {}
    for path in files:
        name = path.resolve().relative_to(root).as_posix()
        for suffix in (".gz", ".jsonl", ".json", ".parquet"):
            name = name.removesuffix(suffix)
        stems[path] = name
    return stems


def load_problems(
    source: str | Path | Sequence[str | Path], *, format: str | None = None
) -> tuple[LoadedProblem, ...]:
    """Every problem in the files a source names, in file order; a ValueError naming
    the file and row for a row that fits no layout (or not the forced `format`)."""
    if format is not None and format not in FORMATS:
        raise ValueError(f"unknown math data format {format!r}; choose one of {sorted(FORMATS)}")
    problems: list[LoadedProblem] = []
    where: dict[str, str] = {}
    layouts: dict[Path, str] = {}
    files = source_files(source)
    stems = _stems(files)
    for record in read_records(files):
        layout = layouts.get(record.path) or format or detect_format(record.row)
        if layout is None:
            raise _unknown_layout(record)
        layouts[record.path] = layout
        problem = _problem(record, layout, stems[record.path])
        if problem.task_id in where:
            raise ValueError(
                f"{record.where}: task id {problem.task_id!r} is also the id of "
                f"{where[problem.task_id]}; ids must be unique (rename one file)"
            )
        where[problem.task_id] = record.where
        problems.append(problem)
    if not problems:
        raise ValueError(f"{source} holds no problems")
    return tuple(problems)
