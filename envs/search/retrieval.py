"""Retrieval for the search env: `make_retriever`, and the names callers import.

    from envgym.envs.search.retrieval import Doc, make_retriever

    retriever = make_retriever(docs)                    # BM25 (bm25s), cached on disk
    retriever.search("who founded the city", k=3)      # -> [Hit(doc_id, title, text, score)]
    retriever.search_batch(["q1", "q2"], k=3)

    dense = make_retriever(docs, kind="dense")          # MiniLM embeddings + faiss

An index is built once and saved under the cache directory (``$ENVGYM_CACHE`` or
``~/.cache/envgym/search``), keyed by a content hash of the documents and the
retriever's settings; a later `make_retriever` call with the same documents
loads it instead of indexing again, and any change to a document builds a new one.

`RemoteRetriever` has the same two methods and talks to a retrieval server
(`envgym search serve`, see `server.py`), so many env workers share one index.

Each piece lives in its own module: the protocol, types and index cache in
`retrieval_base`, the retrievers in `bm25`, `dense` and `client`, corpus
reading in `loaders`. Heavy dependencies (bm25s, faiss, sentence-transformers,
httpx) are imported inside the functions that need them; install them with
``pip install envgym[search]`` (BM25, the server and its client) and
``envgym[dense]`` (dense retrieval).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from envgym.envs.search.bm25 import ENGLISH_STOPWORDS, BM25Retriever, tokenize
from envgym.envs.search.client import (
    RemoteRetriever,
    RetrievalServerError,
    RetrievalServerUnavailable,
)
from envgym.envs.search.dense import DenseRetriever
from envgym.envs.search.loaders import read_corpus_jsonl
from envgym.envs.search.retrieval_base import (
    Doc,
    Hit,
    Retriever,
    SearchDependencyMissing,
    default_cache_dir,
    docs_fingerprint,
    require_extra,
)

__all__ = [
    "ENGLISH_STOPWORDS",
    "RETRIEVER_KINDS",
    "BM25Retriever",
    "DenseRetriever",
    "Doc",
    "Hit",
    "RemoteRetriever",
    "RetrievalServerError",
    "RetrievalServerUnavailable",
    "Retriever",
    "SearchDependencyMissing",
    "default_cache_dir",
    "docs_fingerprint",
    "make_retriever",
    "read_corpus_jsonl",
    "require_extra",
    "tokenize",
]

RETRIEVER_KINDS = ("bm25", "dense")

#: The old name of `require_extra`, which server.py imports from here.
_require = require_extra


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
