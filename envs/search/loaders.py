"""Real corpora and question sets for the search env, in the formats the research uses.

- Corpus: Search-R1 / FlashRAG JSONL, one ``{"id": ..., "contents": "\\"Title\\"\\ntext"}``
  per line (also ``{"id", "title", "text"}``), read by `envgym.retrieval.read_corpus_jsonl`.
- Questions: NQ / HotpotQA style, JSONL (or one JSON array, as HotpotQA ships its
  dev set): ``{"question": ..., "golden_answers": [...]}`` (Search-R1, FlashRAG) or
  ``{"question": ..., "answer": "..."}`` (HotpotQA), with an optional ``id`` /
  ``_id``, ``type`` and supporting documents (``supporting_doc_ids``, or HotpotQA's
  ``supporting_facts`` titles, matched against the corpus titles).

A question file may be gzip'd (``.gz``); a corpus is read plain.
"""

from __future__ import annotations

import gzip
import io
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from envgym.envs.search.questions import Question
from envgym.retrieval import Doc, read_corpus_jsonl

__all__ = ["load_corpus", "load_questions", "read_corpus_jsonl"]


def _open(path: Path) -> io.TextIOBase:
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8")  # type: ignore[return-value]
    return path.open(encoding="utf-8")


def _existing(path: str | Path, what: str) -> Path:
    path = Path(path).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"no {what} file at {path}; pass the path of a JSONL file")
    return path


def load_corpus(path: str | Path) -> list[Doc]:
    """The documents of a Search-R1-style JSONL corpus."""
    path = _existing(path, "corpus")
    if path.suffix == ".gz":
        raise ValueError(f"{path} is compressed; gunzip it first (the corpus is read as JSONL)")
    return read_corpus_jsonl(path)


def _rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    with _open(path) as f:
        text = f.read()
    if text.lstrip().startswith("["):
        try:
            rows = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}: not a JSON array of questions ({exc.msg})") from None
        yield from enumerate(rows, 1)
        return
    for lineno, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                yield lineno, json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{lineno}: not a JSON line ({exc.msg})") from None


def _answers(row: dict[str, Any]) -> list[str]:
    for key in ("golden_answers", "answers", "answer"):
        value = row.get(key)
        if value is None:
            continue
        if isinstance(value, str):
            value = [value]
        if isinstance(value, dict):  # {"text": [...]} (SQuAD-like)
            value = value.get("text", [])
        return [str(v) for v in value if str(v).strip()]
    return []


def load_questions(path: str | Path, corpus: Sequence[Doc] | None = None) -> list[Question]:
    """Questions with their gold answers from an NQ / HotpotQA-style file.

    Each gets ``task_id`` from its ``id`` (or ``_id``), else ``q<line number>``.
    With `corpus`, HotpotQA ``supporting_facts`` titles become document ids.
    """
    path = _existing(path, "questions")
    by_title: dict[str, str] = {}
    if corpus is not None:
        for doc in corpus:
            by_title.setdefault(doc.title, doc.id)
    questions: list[Question] = []
    seen: set[str] = set()
    for lineno, row in _rows(path):
        where = f"{path}:{lineno}"
        if not isinstance(row, dict) or not isinstance(row.get("question"), str):
            raise ValueError(f'{where}: expected an object with a "question" string')
        answers = _answers(row)
        if not answers:
            raise ValueError(
                f'{where}: no gold answer; give "golden_answers": [...] or "answer": "..."'
            )
        raw_id = row.get("id", row.get("_id"))
        task_id = str(raw_id) if raw_id is not None else f"q{lineno}"
        if task_id in seen:
            raise ValueError(f"{where}: id {task_id!r} appears twice; ids must be unique")
        seen.add(task_id)
        support = row.get("supporting_doc_ids") or row.get("supporting_ids") or []
        if not support and by_title and isinstance(row.get("supporting_facts"), list):
            titles = [f[0] for f in row["supporting_facts"] if isinstance(f, list | tuple) and f]
            support = [by_title[t] for t in dict.fromkeys(titles) if t in by_title]
        hops = row.get("hops")
        questions.append(
            Question(
                task_id=task_id,
                question=row["question"].strip(),
                answers=tuple(answers),
                supporting_ids=tuple(str(s) for s in support),
                hops=hops if isinstance(hops, int) else None,
                kind=str(row.get("type", "loaded")),
            )
        )
    if not questions:
        raise ValueError(f"{path} holds no questions")
    return questions
