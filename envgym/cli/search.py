"""``envgym search serve``: the search env's retrieval index behind one HTTP
server, so many env workers share it."""

from __future__ import annotations

import argparse
from typing import Any

from envgym.cli.arguments import EXIT_OK, UserError, command_group, port, positive_int, seed


def add_commands(sub: Any) -> None:
    """Add ``search serve`` to the ``envgym`` subparsers `sub`."""
    search_sub = command_group(sub, "search", help="the search env's retrieval server")
    p = search_sub.add_parser(
        "serve",
        help="serve a BM25 or dense index over HTTP (127.0.0.1 or a Unix socket)",
        description="Build (or load from the cache) a retrieval index and serve it, so many "
        "env workers share one index: RemoteRetriever(url=...) or RemoteRetriever(uds=...). "
        "The corpus is a JSONL file (--corpus) or the search env's generated world.",
    )
    p.add_argument(
        "--corpus",
        metavar="JSONL",
        help='Search-R1 corpus: {"id", "contents": "\\"Title\\"\\ntext"}',
    )
    p.add_argument(
        "--docs",
        metavar="N",
        type=positive_int,
        help="generated world's size, without --corpus (default: 100000, as the env)",
    )
    p.add_argument("--world-seed", metavar="S", type=seed, default=0, help="generated world seed")
    p.add_argument(
        "--distractors",
        metavar="F",
        type=float,
        default=0.5,
        help="generated world's distractor share, 0 to 1 (default: 0.5, as the env)",
    )
    p.add_argument("--kind", choices=("bm25", "dense"), default="bm25", help="default: bm25")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--port", metavar="P", type=port, help="default: 8300")
    where.add_argument("--uds", metavar="PATH", help="listen on this Unix socket instead")
    p.add_argument(
        "--cache-dir",
        metavar="DIR",
        help="index and world cache (default: $ENVGYM_CACHE/search or ~/.cache/envgym/search)",
    )
    p.set_defaults(handler=run_search_serve)


def run_search_serve(args: argparse.Namespace) -> int:
    from envgym.envs.search.server import run_serve_command

    try:
        run_serve_command(args)
    except (ImportError, OSError, ValueError) as exc:
        raise UserError(str(exc)) from None
    return EXIT_OK
