"""Retrieval shared by the envs that search (Search, Shop): BM25 and dense indexes,
a retrieval server and its client.

    from envgym.retrieval import Doc, make_retriever

    retriever = make_retriever(docs)                    # BM25 (bm25s), cached on disk
    retriever.search("who founded the city", k=3)      # -> [Hit(doc_id, title, text, score)]
    retriever.search_batch(["q1", "q2"], k=3)

    dense = make_retriever(docs, kind="dense")          # MiniLM embeddings + faiss

An index is built once and saved under the cache directory (``$ENVGYM_CACHE`` or
``~/.cache/envgym/search``), keyed by a content hash of the documents and the
retriever's settings; a later `make_retriever` call with the same documents
loads it instead of indexing again, and any change to a document builds a new one.

`RemoteRetriever` has the same two methods and talks to a retrieval server
(`envgym.retrieval.server`, which ``envgym search serve`` runs), so many env
workers share one index.

Each piece lives in its own module: the protocol, types and index cache in
`base`, the retrievers in `bm25`, `dense` and `client`, `make_retriever` in
`make`, corpus reading in `corpus`, the server in `server`. Heavy dependencies
(faiss, sentence-transformers, httpx, fastapi) are imported inside the functions
that need them; install them with ``pip install 'envgym[search]'`` (the server
and its client) and ``'envgym[dense]'`` (dense retrieval). Nothing here imports
an env.
"""

from envgym.retrieval.base import Doc, Hit, Retriever, default_cache_dir, docs_fingerprint
from envgym.retrieval.bm25 import ENGLISH_STOPWORDS, BM25Retriever, tokenize
from envgym.retrieval.client import (
    RemoteRetriever,
    RetrievalServerError,
    RetrievalServerUnavailable,
)
from envgym.retrieval.corpus import read_corpus_jsonl
from envgym.retrieval.dense import DenseRetriever
from envgym.retrieval.make import RETRIEVER_KINDS, make_retriever

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
    "default_cache_dir",
    "docs_fingerprint",
    "make_retriever",
    "read_corpus_jsonl",
    "tokenize",
]
