"""What every retriever shares: the `Retriever` protocol and its `Doc` / `Hit`
types, the on-disk index cache (content keys, the cache folder, an atomic commit
of a built index), and exact top-k selection with ties in corpus order.

The retrievers themselves are in `bm25`, `dense` and `client`; callers import
them from `envgym.retrieval`.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

__all__ = [
    "INDEX_FORMAT",
    "Doc",
    "Hit",
    "IndexDir",
    "Retriever",
    "check_k",
    "default_cache_dir",
    "docs_fingerprint",
    "index_key",
    "make_hits",
    "read_meta",
    "select_top_k",
    "with_progress",
]

# Bump when the on-disk layout or the tokenizer changes, so old caches are not reused.
INDEX_FORMAT = 1


@dataclass(frozen=True)
class Doc:
    """One corpus document."""

    id: str
    title: str
    text: str


@dataclass(frozen=True)
class Hit:
    """One retrieved document with its score (higher is better)."""

    doc_id: str
    title: str
    text: str
    score: float


@runtime_checkable
class Retriever(Protocol):
    """What a retrieving env needs: the top `k` documents for a query, best first.

    A blank query (or one made only of stopwords, for BM25) returns no hits;
    fewer than `k` hits come back when fewer documents match.
    """

    def search(self, query: str, k: int = 3) -> list[Hit]: ...

    def search_batch(self, queries: Sequence[str], k: int = 3) -> list[list[Hit]]: ...


def default_cache_dir() -> Path:
    """``$ENVGYM_CACHE/search`` when ENVGYM_CACHE is set, else ``~/.cache/envgym/search``
    (named from when retrieval lived in the search env; kept, so built indexes are reused)."""
    root = os.environ.get("ENVGYM_CACHE")
    if root:
        return Path(root).expanduser() / "search"
    return Path.home() / ".cache" / "envgym" / "search"


def docs_fingerprint(docs: Sequence[Doc]) -> str:
    """SHA-256 of every document's id, title and text, in order."""
    h = hashlib.sha256()
    h.update(f"envgym-docs/{len(docs)}\n".encode())
    chunk: list[str] = []
    for i, doc in enumerate(docs):
        # Length prefixes keep the encoding unambiguous whatever the fields contain.
        for field in (doc.id, doc.title, doc.text):
            chunk.append(f"{len(field)}:{field}")
        if i % 1024 == 1023:
            h.update("\x00".join(chunk).encode("utf-8", "surrogatepass"))
            chunk = []
    h.update("\x00".join(chunk).encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def index_key(docs_hash: str, settings: dict[str, Any]) -> str:
    """The cache key of an index: the documents' fingerprint and the retriever's settings."""
    blob = json.dumps({"docs": docs_hash, **settings}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


# ------------------------------------------------------------------- top-k
def select_top_k(doc_idx: np.ndarray, scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The `k` best (doc_idx, score) pairs, best first; equal scores in corpus order,
    so the result never depends on how numpy's partition happens to break ties."""
    n = len(scores)
    if n > k:
        kth = np.partition(scores, n - k)[n - k]  # the k-th largest score
        keep = scores >= kth
        doc_idx, scores = doc_idx[keep], scores[keep]
    order = np.lexsort((doc_idx, -scores))[:k]
    return doc_idx[order], scores[order]


def make_hits(docs: Sequence[Doc], doc_idx: np.ndarray, scores: np.ndarray) -> list[Hit]:
    """`Hit`s for the documents at `doc_idx` with their scores."""
    hits = []
    for i, s in zip(doc_idx.tolist(), scores.tolist(), strict=True):
        d = docs[i]
        hits.append(Hit(d.id, d.title, d.text, float(s)))
    return hits


def check_k(k: int) -> int:
    """`k` as an int when it is a whole number of at least 1, else a clear error."""
    if isinstance(k, bool) or not isinstance(k, int | np.integer):
        raise TypeError(f"k must be a whole number, got {k!r}")
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    return int(k)


def with_progress(iterable: Iterable[Any], total: int, desc: str, show: bool) -> Iterable[Any]:
    """`iterable` with a progress bar on stderr when `show` (tqdm, or one line without it)."""
    if not show:
        return iterable
    try:
        from tqdm.auto import tqdm
    except ImportError:
        print(f"{desc} ({total} documents)...", file=sys.stderr, flush=True)
        return iterable
    return tqdm(iterable, total=total, desc=desc, unit="doc", file=sys.stderr, mininterval=1.0)


class IndexDir:
    """Build an index in a private temporary folder, then rename it into place, so a
    half-written index is never loaded and concurrent builders do not collide."""

    def __init__(self, final: Path) -> None:
        self.final = final
        final.parent.mkdir(parents=True, exist_ok=True)
        self.tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=final.parent))

    def commit(self) -> None:
        try:
            os.replace(self.tmp, self.final)
        except OSError:
            # Another process finished the same index first; theirs is identical.
            shutil.rmtree(self.tmp, ignore_errors=True)

    def abort(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)


def read_meta(index_dir: Path) -> dict[str, Any] | None:
    """The ``meta.json`` of a cached index, or None when there is none (or it is damaged)."""
    try:
        return json.loads((index_dir / "meta.json").read_text())
    except (OSError, ValueError):
        return None
