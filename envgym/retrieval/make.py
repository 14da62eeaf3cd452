"""`make_retriever`: a BM25 or dense retriever over a list of documents, by name."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from envgym.retrieval.base import Doc
from envgym.retrieval.bm25 import BM25Retriever
from envgym.retrieval.dense import DenseRetriever

__all__ = ["RETRIEVER_KINDS", "make_retriever"]

RETRIEVER_KINDS = ("bm25", "dense")


def make_retriever(
    docs: Sequence[Doc],
    kind: str = "bm25",
    cache_dir: str | Path | None = None,
    *,
    show_progress: bool = False,
) -> BM25Retriever | DenseRetriever:
    """A retriever over `docs`: ``"bm25"`` (default) or ``"dense"``.

    The index is loaded from `cache_dir` (default: `default_cache_dir()`) when one
    was built for exactly these documents and settings, else built and saved there.
    """
    if kind == "bm25":
        return BM25Retriever(docs, cache_dir, show_progress=show_progress)
    if kind == "dense":
        return DenseRetriever(docs, cache_dir, show_progress=show_progress)
    raise ValueError(f"unknown retriever kind {kind!r}; choose one of {', '.join(RETRIEVER_KINDS)}")
