"""``envgym search serve``: the retrieval server (`envgym.retrieval.server`) over a
JSONL corpus or Search's generated world, so many env workers share one index.

    envgym search serve --corpus wiki.jsonl --port 8300
    envgym search serve --docs 100000 --world-seed 0 --uds /tmp/envgym-search.sock
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from envgym.retrieval import Doc, make_retriever, read_corpus_jsonl
from envgym.retrieval.server import main_serve

__all__ = ["DEFAULT_PORT", "generated_docs", "run_serve_command"]

DEFAULT_PORT = 8300
# The search env's defaults (SearchEnv num_docs, distractors), so a plain
# `envgym search serve` holds the corpus a default `envgym/Search-v0` asks about.
DEFAULT_GENERATED_DOCS = 100_000
DEFAULT_DISTRACTORS = 0.5


def generated_docs(
    num_docs: int,
    seed: int = 0,
    distractors: float = DEFAULT_DISTRACTORS,
    cache_dir: str | Path | None = None,
) -> list[Any]:
    """The search env's generated world (`world.load_world`, cached on disk) as `Doc`s."""
    from envgym.envs.search.world import load_world

    world = load_world(seed, num_docs, distractors, None if cache_dir is None else str(cache_dir))
    return [
        Doc(doc_id, title, text)
        for doc_id, title, text in zip(world.doc_ids, world.titles, world.texts, strict=True)
    ]


def run_serve_command(args: Any) -> None:
    """`envgym search serve`: load or generate the corpus, build or load the index
    (with progress on stderr), print the address and serve until Ctrl-C."""
    if args.corpus and args.docs:
        raise ValueError("give --corpus or --docs (a generated corpus), not both")
    if args.corpus:
        path = Path(args.corpus)
        if not path.is_file():
            raise ValueError(f"no corpus file at {path}")
        print(f"reading {path}", file=sys.stderr, flush=True)
        docs = read_corpus_jsonl(path)
        source = {"corpus": str(path)}
    else:
        num_docs = args.docs or DEFAULT_GENERATED_DOCS
        distractors = getattr(args, "distractors", DEFAULT_DISTRACTORS)
        print(
            f"generating the world: {num_docs} documents, seed {args.world_seed}, "
            f"distractors {distractors:g}",
            file=sys.stderr,
            flush=True,
        )
        docs = generated_docs(num_docs, args.world_seed, distractors, args.cache_dir)
        source = {
            "corpus": "generated",
            "world_seed": args.world_seed,
            "distractors": distractors,
        }
    if not docs:
        raise ValueError("the corpus is empty")
    print(f"indexing {len(docs)} documents ({args.kind})", file=sys.stderr, flush=True)
    retriever = make_retriever(docs, args.kind, args.cache_dir, show_progress=True)
    how = "loaded from cache" if retriever.from_cache else "built"
    print(f"index {how}: {retriever.index_dir}", file=sys.stderr, flush=True)
    port = args.port if args.port is not None or args.uds else DEFAULT_PORT
    main_serve(retriever, port=port, uds=args.uds, info={"kind": args.kind, **source})
