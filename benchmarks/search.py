"""Retrieval speed for the search env: index build and load time, memory, and query
latency in-process and through the retrieval server (TCP 127.0.0.1 and a Unix socket).

The corpus is the search env's generated world (`envs/search/world.py`, about 35
words a document) and the queries are its questions; `--corpus synthetic`
uses Wikipedia-passage-length documents (about 100 words, Zipfian vocabulary)
with queries of words drawn from a document. The server runs in a forked child
process, so client and server do not share a GIL; the "vs in-process" column is
the ratio to in-process search at the same batch size, measured in this run.
Each latency row is the quietest of `--rounds` rounds (the median decides).

    python benchmarks/search.py                     # 100,000 documents
    python benchmarks/search.py --sizes 100000 1000000
    python benchmarks/search.py --quick             # a small smoke run
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import platform
import resource
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from envgym.retrieval import Doc, RemoteRetriever, make_retriever
from envgym.retrieval.server import create_app
from envgym.serving import AppServer
from envgym.sockets import listening_socket


# ------------------------------------------------------------------- corpora
def world_corpus(num_docs: int, queries: int, seed: int = 0) -> tuple[list[Doc], list, str]:
    """The generated world's documents and questions ((text, gold doc ids) pairs)."""
    from envgym.envs.search.questions import make_question
    from envgym.envs.search.world import build_world

    world = build_world(seed=seed, num_docs=num_docs)  # in memory: no world cache written
    docs = [Doc(*row) for row in zip(world.doc_ids, world.titles, world.texts, strict=True)]
    kinds = [("single", 1), ("bridge", 2), ("comparison", 2)]
    qs = []
    for i in range(queries):
        kind, hops = kinds[i % len(kinds)]
        q = make_question(world, kind, hops, seed=i)
        # Single-hop questions have one supporting document: that one should be found.
        gold = set(q.supporting_ids) if kind == "single" else set()
        qs.append((q.question, gold))
    return docs, qs, "generated world (envs/search/world.py)"


def synthetic_corpus(num_docs: int, queries: int, seed: int = 0) -> tuple[list[Doc], list, str]:
    """Documents of 60-140 words from a 200,000-word Zipfian vocabulary."""
    rng = np.random.default_rng(seed)
    syllables = [a + b for a in "bcdfghklmnprstvz" for b in ["a", "e", "i", "o", "u", "ai", "ou"]]
    vocab = np.array(
        [
            "".join(rng.choice(syllables, size=rng.integers(1, 4))) + str(i % 7)
            for i in range(200_000)
        ]
    )
    lengths = rng.integers(60, 141, size=num_docs)
    words = vocab[np.minimum(rng.zipf(1.1, size=int(lengths.sum())) - 1, len(vocab) - 1)]
    docs, at = [], 0
    for i, n in enumerate(lengths.tolist()):
        chunk = words[at : at + n]
        at += n
        docs.append(Doc(f"s{i}", " ".join(chunk[:2]).title(), " ".join(chunk[2:])))
    qs = []
    for _ in range(queries):
        d = docs[int(rng.integers(num_docs))]
        terms = d.text.split()
        picked = rng.choice(
            len(terms), size=min(len(terms), int(rng.integers(3, 7))), replace=False
        )
        qs.append((" ".join(terms[j] for j in sorted(picked)), {d.id}))
    return docs, qs, "synthetic (~100-word passages, Zipfian words)"


# ------------------------------------------------------------------ measuring
def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def latencies(
    search: Callable[[Sequence[str]], object], queries: list[str], batch: int
) -> list[float]:
    """Seconds per call of `search` over consecutive batches of `queries`."""
    batches = [queries[i : i + batch] for i in range(0, len(queries) - batch + 1, batch)]
    for b in batches[:3]:
        search(b)  # warm up (connections, caches)
    out = []
    for b in batches:
        start = time.perf_counter()
        search(b)
        out.append(time.perf_counter() - start)
    return out


def _serve_child(retriever, sock) -> None:
    AppServer(create_app(retriever), sock, lifespan="off", timeout_keep_alive=600).run()


class ForkedServer:
    """The retrieval server in a forked child process (it inherits the built index)."""

    def __init__(self, retriever, uds: str | None = None) -> None:
        self.sock = listening_socket(port=0, uds=uds)
        address = self.sock.getsockname()
        ctx = multiprocessing.get_context("fork")
        self.proc = ctx.Process(target=_serve_child, args=(retriever, self.sock), daemon=True)
        self.proc.start()
        self.sock.close()
        if uds:
            self.client = RemoteRetriever(uds=uds)
        else:
            self.client = RemoteRetriever(url=f"http://{address[0]}:{address[1]}")
        deadline = time.monotonic() + 60
        while True:
            try:
                self.client.health()
                break
            except ConnectionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def close(self) -> None:
        self.client.close()
        self.proc.terminate()
        self.proc.join(30)


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.array(values), q)) * 1000


def md_table(headers: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---:" for _ in headers) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def bench_size(args: argparse.Namespace, num_docs: int, tmp: Path) -> tuple[list, list, str]:
    make_corpus = world_corpus if args.corpus == "world" else synthetic_corpus
    start = time.perf_counter()
    docs, qs, label = make_corpus(num_docs, args.queries)
    gen_s = time.perf_counter() - start
    words = sum(len(d.text.split()) for d in docs[:5000]) / min(len(docs), 5000)
    print(f"{num_docs:,} docs: {label}, {words:.0f} words/doc, generated in {gen_s:.1f} s")
    cache = tmp / f"cache-{num_docs}"
    rss0 = rss_mb()
    start = time.perf_counter()
    retriever = make_retriever(docs, args.kind, cache, show_progress=args.progress)
    build_s = time.perf_counter() - start
    rss_built = rss_mb()
    assert not retriever.from_cache
    start = time.perf_counter()
    retriever = make_retriever(docs, args.kind, cache)
    load_s = time.perf_counter() - start
    assert retriever.from_cache
    disk_mb = sum(p.stat().st_size for p in retriever.index_dir.rglob("*")) / 2**20
    print(f"  built in {build_s:.1f} s, loaded from cache in {load_s:.2f} s")

    queries = [q for q, _ in qs]
    top = retriever.search_batch(queries, k=3)
    graded = [(hits, gold) for hits, (_, gold) in zip(top, qs, strict=True) if gold]
    recall = sum(bool(gold & {h.doc_id for h in hits}) for hits, gold in graded)
    recall3 = f"{recall / len(graded):.2f}" if graded else "-"
    build_row = [
        f"{num_docs:,}",
        args.kind,
        f"{build_s:.1f}",
        f"{load_s:.2f}",
        f"{rss_built - rss0:,.0f}",
        f"{peak_rss_mb():,.0f}",
        f"{disk_mb:,.0f}",
        recall3,
    ]

    rows = []
    baseline: dict[int, float] = {}

    def measure(mode: str, search: Callable[[Sequence[str]], object]) -> None:
        for batch in args.batch_sizes:
            # The quietest of a few rounds: other work on the machine only adds time.
            rounds = [latencies(search, queries, batch) for _ in range(args.rounds)]
            lat = min(rounds, key=lambda r: float(np.median(r)))
            p50 = pct(lat, 50)
            baseline.setdefault(batch, p50)
            rows.append(
                [
                    f"{num_docs:,}",
                    mode,
                    str(batch),
                    f"{p50 / batch:.3f}",
                    f"{p50:.3f}",
                    f"{pct(lat, 99):.3f}",
                    f"{batch * len(lat) / sum(lat):,.0f}",
                    f"{p50 / baseline[batch]:.2f}",
                ]
            )

    measure("in-process", lambda b: retriever.search_batch(b, k=3))
    if not args.no_server:
        for mode, uds in (("server tcp", None), ("server uds", str(tmp / "bench.sock"))):
            server = ForkedServer(retriever, uds)
            try:
                assert server.client.search_batch(queries[:64]) == top[:64]
                measure(mode, lambda b, c=server.client: c.search_batch(b, k=3))
            finally:
                server.close()
    return build_row, rows, label


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000], help="corpus sizes")
    parser.add_argument("--corpus", choices=("world", "synthetic"), default="world")
    parser.add_argument("--kind", choices=("bm25", "dense"), default="bm25")
    parser.add_argument("--queries", type=int, default=2048, help="queries per measurement")
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 64])
    parser.add_argument("--rounds", type=int, default=3, help="rounds per measurement; best kept")
    parser.add_argument("--no-server", action="store_true", help="in-process only")
    parser.add_argument("--progress", action="store_true", help="show index-building progress")
    parser.add_argument("--quick", action="store_true", help="2,000 docs, 256 queries")
    args = parser.parse_args(argv)
    if args.quick:
        args.sizes, args.queries, args.rounds = [2_000], 256, 1
    print(
        f"python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs; "
        f"{args.queries} queries, k=3, best of {args.rounds} rounds"
    )
    tmp = Path(tempfile.mkdtemp(prefix="envgym-search-bench-"))
    builds, rows, labels = [], [], set()
    try:
        for n in args.sizes:
            build_row, size_rows, label = bench_size(args, n, tmp)
            builds.append(build_row)
            rows += size_rows
            labels.add(label)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print()
    print(f"corpus: {', '.join(sorted(labels))}")
    print()
    headers = [
        "docs",
        "kind",
        "build s",
        "load s",
        "index RAM MB",
        "peak RSS MB",
        "disk MB",
        "recall@3",
    ]
    print(md_table(headers, builds))
    print()
    headers = [
        "docs",
        "mode",
        "batch",
        "p50 ms/query",
        "p50 ms/batch",
        "p99 ms/batch",
        "queries/s",
        "vs in-process",
    ]
    print(md_table(headers, rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
