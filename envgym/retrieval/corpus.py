"""Reading a corpus for retrieval: the Search-R1 / FlashRAG JSONL format.

One object per line, ``{"id": ..., "contents": "\\"Title\\"\\ntext"}`` (the first
line of `contents` is the title, in quotes), or ``{"id": ..., "title": ..., "text": ...}``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from envgym.retrieval.base import Doc

__all__ = ["read_corpus_jsonl"]


def read_corpus_jsonl(path: str | Path) -> list[Doc]:
    """Documents from a JSONL file, one object per line.

    Reads the Search-R1 / FlashRAG corpus format, ``{"id": ..., "contents":
    "\\"Title\\"\\ntext"}`` (the first line of `contents` is the title, in quotes),
    and also ``{"id": ..., "title": ..., "text": ...}``.
    """
    path = Path(path)
    docs = []
    with path.open(encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                docs.append(_doc_from_row(row))
            except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as exc:
                raise ValueError(
                    f"{path}:{lineno}: not a corpus line ({exc}); expected "
                    '{"id": ..., "contents": "\\"Title\\"\\ntext"} or '
                    '{"id": ..., "title": ..., "text": ...}'
                ) from None
    return docs


def _doc_from_row(row: dict[str, Any]) -> Doc:
    doc_id = str(row["id"])
    if "contents" in row:
        first, _, rest = str(row["contents"]).partition("\n")
        title = first.strip()
        if len(title) >= 2 and title[0] == title[-1] == '"':
            title = title[1:-1]
        return Doc(doc_id, title, rest.strip())
    return Doc(doc_id, str(row.get("title", "")), str(row["text"]))
