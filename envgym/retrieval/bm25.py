"""BM25 retrieval: the tokenizer and `BM25Retriever` (bm25s).

bm25s builds, saves and loads the index (``BM25.index``, ``save``, ``load``);
queries are scored here, from the index's postings, because bm25s's own
``retrieve`` / ``get_scores_from_ids`` score every document of the corpus for
every query (see `_postings`).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from envgym.extras import require
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
    with_progress,
)

__all__ = ["ENGLISH_STOPWORDS", "BM25Retriever", "tokenize"]

# --------------------------------------------------------------- tokenizer
# Function words that carry no topic, including the question words that start
# most search queries ("who directed ...", "when did ...").
ENGLISH_STOPWORDS = frozenset(
    """
    a about above after again against all also am an and any are as at be because been
    before being below between both but by can could did do does doing down during each
    few for from further had has have having he her here hers herself him himself his how
    i if in into is it its itself just me more most my myself no nor not now of off on once
    only or other our ours ourselves out over own same she should so some such than that the
    their theirs them themselves then there these they this those through to too under until
    up very was we were what when where which while who whom whose why will with would you
    your yours yourself yourselves
    """.split()
)

_WORD = re.compile(r"[^\W_]+")


@lru_cache(maxsize=1)
def _stemmer() -> Any:
    """PyStemmer's English Snowball stemmer when it is installed, else None (no stemming)."""
    try:
        import Stemmer  # type: ignore[import-not-found]
    except ImportError:
        return None
    return Stemmer.Stemmer("english")


def tokenize(text: str, stem: bool | None = None) -> list[str]:
    """Lowercased alphanumeric runs without English stopwords, stemmed when PyStemmer
    is installed (or as `stem` says; stemming without PyStemmer raises)."""
    words = [w for w in _WORD.findall(text.lower()) if w not in ENGLISH_STOPWORDS]
    stemmer = _stemmer()
    if stem is None:
        stem = stemmer is not None
    if stem:
        if stemmer is None:
            raise ImportError("stemming needs PyStemmer: pip install PyStemmer")
        words = stemmer.stemWords(words)
    return words


# -------------------------------------------------------------------- index
class BM25Retriever:
    """BM25 (Lucene variant, k1=1.5, b=0.75) over `docs`, indexed with bm25s.

    The title and text of a document are indexed together. A query's words are
    deduplicated; documents that share no word with the query are never returned.
    `docs_hash` names the documents' content when the caller already knows it
    (else `docs_fingerprint` reads every document). Attributes: `index_dir`
    (the cached index), `index_hash`, `from_cache` (whether the index was
    loaded rather than built).
    """

    kind = "bm25"

    def __init__(
        self,
        docs: Sequence[Doc],
        cache_dir: str | Path | None = None,
        *,
        k1: float = 1.5,
        b: float = 0.75,
        show_progress: bool = False,
        docs_hash: str | None = None,
    ) -> None:
        bm25s = require("bm25s", extra="search", purpose="BM25 retrieval")
        if not docs:
            raise ValueError("cannot index an empty corpus: pass at least one Doc")
        self.docs = docs
        self.settings = {
            "kind": "bm25",
            "format": INDEX_FORMAT,
            "k1": k1,
            "b": b,
            "method": "lucene",
            # The tokenizer itself, so editing the word pattern or the stopwords
            # invalidates old indexes.
            "words": _WORD.pattern,
            "stopwords": hashlib.sha256(" ".join(sorted(ENGLISH_STOPWORDS)).encode()).hexdigest(),
            "stemmer": "snowball-english" if _stemmer() is not None else None,
        }
        self._stem = _stemmer() is not None
        # A caller whose documents are generated from a known recipe names them by
        # that recipe's hash, so they are not all rendered just to be hashed.
        self.docs_hash = docs_fingerprint(docs) if docs_hash is None else docs_hash
        self.index_hash = index_key(self.docs_hash, self.settings)
        root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        self.index_dir = root / f"bm25-{self.index_hash[:32]}"
        meta = read_meta(self.index_dir)
        self.from_cache = meta is not None and meta.get("index_hash") == self.index_hash
        if self.from_cache:
            model = bm25s.BM25.load(str(self.index_dir), load_vocab=True)
        else:
            model = self._build(bm25s, show_progress)
        self._vocab: dict[str, int] = model.vocab_dict
        self._data, self._indices, self._indptr, self._n = _postings(bm25s, model)
        if self._n != len(docs):
            raise RuntimeError(
                f"index {self.index_dir} holds {self._n} documents, not {len(docs)}; "
                "delete that folder and try again"
            )

    def _build(self, bm25s: Any, show_progress: bool) -> Any:
        vocab: dict[str, int] = {}
        corpus_ids: list[list[int]] = []
        for doc in with_progress(self.docs, len(self.docs), "BM25 tokenize", show_progress):
            tokens = tokenize(f"{doc.title}\n{doc.text}", stem=self._stem)
            # setdefault returns the int object stored in vocab, so the lists share ints.
            corpus_ids.append([vocab.setdefault(t, len(vocab)) for t in tokens])
        if not vocab:
            vocab[""] = 0  # every document is stopwords only; keep the index well-formed
        model = bm25s.BM25(k1=self.settings["k1"], b=self.settings["b"], method="lucene")
        model.index((corpus_ids, vocab), show_progress=show_progress)
        del corpus_ids
        target = IndexDir(self.index_dir)
        try:
            model.save(str(target.tmp), show_progress=False)
            meta = {
                "index_hash": self.index_hash,
                "docs_hash": self.docs_hash,
                "num_docs": len(self.docs),
                "settings": self.settings,
                "bm25s_version": getattr(bm25s, "__version__", "?"),
            }
            (target.tmp / "meta.json").write_text(json.dumps(meta, indent=1))
        except BaseException:
            target.abort()
            raise
        target.commit()
        return model

    def __len__(self) -> int:
        return self._n

    def _query_token_ids(self, query: str) -> np.ndarray:
        ids = {self._vocab[t] for t in tokenize(query, stem=self._stem) if t in self._vocab}
        ids.discard(self._vocab.get("", -1))
        # Sorted, so word order in the query cannot change float sums (and tie order).
        return np.array(sorted(ids), dtype=np.int64)

    def _top(self, token_ids: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The `k` best (doc indices, summed scores) among the documents holding any of
        the tokens, best first, ties in corpus order."""
        starts, ends = self._indptr[token_ids], self._indptr[token_ids + 1]
        postings = int((ends - starts).sum())
        if len(token_ids) == 1:
            s, e = int(starts[0]), int(ends[0])
            return select_top_k(self._indices[s:e], self._data[s:e], k)
        if postings * 8 < self._n:
            # Few postings: sum them per document by sorting, never touching all N docs.
            idx = np.concatenate([self._indices[s:e] for s, e in zip(starts, ends, strict=True)])
            val = np.concatenate([self._data[s:e] for s, e in zip(starts, ends, strict=True)])
            order = np.argsort(idx, kind="stable")
            idx, val = idx[order], val[order]
            first = np.flatnonzero(np.r_[True, idx[1:] != idx[:-1]])
            return select_top_k(idx[first], np.add.reduceat(val, first), k)
        dense = np.zeros(self._n, dtype=np.float32)
        for s, e in zip(starts.tolist(), ends.tolist(), strict=True):
            # Within one term's postings every document appears once, so plain fancy
            # indexing adds correctly (and far faster than np.add.at).
            dense[self._indices[s:e]] += self._data[s:e]
        # Listing every matching document would cost more than the scoring. The
        # documents of the rarest terms are real matches, so the k-th best of their
        # scores bounds the true k-th score from below: only documents at or above
        # it can be in the top k.
        seeds, count = [], 0
        for j in np.argsort(ends - starts, kind="stable").tolist():
            seeds.append(self._indices[starts[j] : ends[j]])
            count += len(seeds[-1])
            if count >= 4 * k:
                break
        seed_idx = np.unique(np.concatenate(seeds))
        if len(seed_idx) >= k:
            seed_scores = dense[seed_idx]
            kth = np.partition(seed_scores, len(seed_idx) - k)[len(seed_idx) - k]
            idx = np.flatnonzero(dense >= kth)
            return select_top_k(idx, dense[idx], k)
        idx = np.flatnonzero(dense)  # fewer than k documents match
        return select_top_k(idx, dense[idx], k)

    def search(self, query: str, k: int = 3) -> list[Hit]:
        k = check_k(k)
        if not isinstance(query, str):
            raise TypeError(f"query must be a string, got {type(query).__name__}")
        token_ids = self._query_token_ids(query)
        if len(token_ids) == 0:
            return []
        idx, scores = self._top(token_ids, k)
        return make_hits(self.docs, idx, scores)

    def search_batch(self, queries: Sequence[str], k: int = 3) -> list[list[Hit]]:
        if isinstance(queries, str):
            raise TypeError("search_batch takes a list of queries; use search() for one")
        return [self.search(q, k) for q in queries]


def _postings(bm25s: Any, model: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """The index's postings in CSC form (scores, document indices, column pointers:
    column t lists the documents holding token t with their BM25 weights) and its
    document count.

    bm25s has no public call that lists a token's postings; its ``retrieve`` and
    ``get_scores_from_ids`` fill a score for every document of the corpus on every
    query (2-3x slower on the 100,000-document world, summing in another order, and
    ``retrieve`` does not break ties in corpus order). So this reads the eager score
    matrix ``BM25.scores`` that ``index`` / ``load`` fill (the same layout in bm25s
    0.3.6 to 0.3.16, the versions tested; pyproject.toml's range should match).
    """
    try:
        scores = model.scores
        data = np.asarray(scores["data"], dtype=np.float32)
        indices = np.asarray(scores["indices"])
        indptr = np.asarray(scores["indptr"], dtype=np.int64)
        return data, indices, indptr, int(scores["num_docs"])
    except (AttributeError, KeyError, TypeError) as exc:
        version = getattr(bm25s, "__version__", "?")
        raise RuntimeError(
            f"bm25s {version} keeps its index in a layout envgym does not know ({exc!r}); "
            "install a version it supports: pip install 'bm25s>=0.3.6,<0.4'"
        ) from None
