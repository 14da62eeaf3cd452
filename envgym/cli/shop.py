"""``envgym shop serve`` (the shop as a web site) and ``envgym shop index-serve``
(the shop's search index behind one server, for many env workers)."""

from __future__ import annotations

import argparse
import sys
import time
from functools import partial
from typing import Any

from envgym.cli.arguments import EXIT_OK, UserError, command_group, port, positive_int, seed
from envgym.extras import MissingExtra, require_all

DEFAULT_PRODUCTS = 50_000  # ShopEnv's default catalogue
DEFAULT_INDEX_PORT = 8401


def add_commands(sub: Any) -> None:
    """Add ``shop serve`` and ``shop index-serve`` to the ``envgym`` subparsers `sub`."""
    shop_sub = command_group(sub, "shop", help="the shop env as a web site, and its search server")

    p = shop_sub.add_parser(
        "serve",
        help="serve the shop as a web site (127.0.0.1 or a Unix socket)",
        description="Serve envgym/Shop-v0's pages as HTML: a person or a browser agent "
        "searches, opens items, chooses options and buys, and the done page shows the "
        "reward the env gives for the same actions.",
    )
    _catalogue_options(p)
    p.add_argument(
        "--difficulty",
        choices=("easy", "medium", "hard"),
        default="easy",
        help="the start page's preselected level (default: easy)",
    )
    p.add_argument(
        "--max-sessions",
        metavar="N",
        type=positive_int,
        default=1000,
        help="live sessions at most; the least recently used go first (default: 1000)",
    )
    _where(p, "8400")
    p.set_defaults(handler=run_shop_serve)

    p = shop_sub.add_parser(
        "index-serve",
        help="serve the shop's BM25 index, shared by many envs",
        description="Build (or load from the cache) the BM25 index of a generated catalogue "
        "and serve it with the search env's retrieval server; envs search through it "
        "with ShopEnv(index_url=...) or ShopEnv(index_uds=...), made with the same "
        "--products and --catalogue-seed.",
    )
    _catalogue_options(p)
    _where(p, str(DEFAULT_INDEX_PORT))
    p.set_defaults(handler=run_shop_index_serve)


def _catalogue_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--products",
        metavar="N",
        type=positive_int,
        default=DEFAULT_PRODUCTS,
        help=f"products in the generated catalogue (default: {DEFAULT_PRODUCTS}, as the env)",
    )
    p.add_argument(
        "--catalogue-seed", metavar="S", type=seed, default=0, help="catalogue seed (default: 0)"
    )
    p.add_argument(
        "--cache-dir",
        metavar="DIR",
        help="index cache (default: $ENVGYM_CACHE/shop or ~/.cache/envgym/shop)",
    )


def _where(p: argparse.ArgumentParser, default_port: str) -> None:
    where = p.add_mutually_exclusive_group()
    where.add_argument("--port", metavar="P", type=port, help=f"default: {default_port}")
    where.add_argument("--uds", metavar="PATH", help="listen on this Unix socket instead")


def _check_products(n: int) -> None:
    from envgym.envs.shop.catalogue import MAX_PRODUCTS, MIN_PRODUCTS

    if not MIN_PRODUCTS <= n <= MAX_PRODUCTS:
        raise UserError(f"--products must be from {MIN_PRODUCTS} to {MAX_PRODUCTS}, not {n}")


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def run_shop_serve(args: argparse.Namespace) -> int:
    """`envgym shop serve`: make the catalogue and its index (progress on stderr), print
    the address, serve until Ctrl-C."""
    from envgym.envs.shop.index import shop_index
    from envgym.envs.shop.shop import ShopEnv
    from envgym.envs.shop.site import DEFAULT_PORT, serve

    _check_products(args.products)
    _require_web()
    factory = partial(
        ShopEnv,
        num_products=args.products,
        catalogue_seed=args.catalogue_seed,
        cache_dir=args.cache_dir,
        observation="html",
    )
    began = time.perf_counter()
    _say(f"generating the catalogue: {args.products} products, seed {args.catalogue_seed}")
    shop_index(factory().catalogue, args.cache_dir, show_progress=True)
    _say(f"catalogue and index ready in {time.perf_counter() - began:.1f} s")

    def ready(address: str) -> None:
        shown = f"{address}/" if address.startswith("http") else address
        print(f"serving the shop on {shown}", flush=True)
        print("open it in a browser; Ctrl-C stops", flush=True)

    port_ = args.port if args.port is not None or args.uds else DEFAULT_PORT
    try:
        serve(
            factory,
            port=port_,
            uds=args.uds,
            max_sessions=args.max_sessions,
            difficulty=args.difficulty,
            on_ready=ready,
        )
    except KeyboardInterrupt:
        pass
    except OSError as exc:  # the port is taken, the socket path cannot be made
        raise UserError(str(exc)) from None
    _say("shop site stopped")
    return EXIT_OK


def run_shop_index_serve(args: argparse.Namespace) -> int:
    """`envgym shop index-serve`: build or load the catalogue's BM25 index and serve it
    with the retrieval server (`envgym.retrieval.server`), labelled with the
    catalogue's fingerprint."""
    from envgym.envs.shop.catalogue import GeneratedCatalogue
    from envgym.envs.shop.index import shop_index

    _check_products(args.products)
    _require_web()
    from envgym.retrieval.server import main_serve

    _say(f"generating the catalogue: {args.products} products, seed {args.catalogue_seed}")
    catalogue = GeneratedCatalogue(args.products, args.catalogue_seed)
    _say(f"indexing {len(catalogue)} products (bm25)")
    retriever = shop_index(catalogue, args.cache_dir, show_progress=True)
    how = "loaded from cache" if retriever.from_cache else "built"
    _say(f"index {how}: {retriever.index_dir}")
    info = {
        "kind": "bm25",
        "catalogue": f"generated {args.products} seed {args.catalogue_seed}",
        "catalogue_fingerprint": catalogue.fingerprint,
    }
    port_ = args.port if args.port is not None or args.uds else DEFAULT_INDEX_PORT
    try:
        main_serve(retriever, port=port_, uds=args.uds, info=info)
    except OSError as exc:
        raise UserError(str(exc)) from None
    return EXIT_OK


def _require_web() -> None:
    try:
        require_all(["fastapi", "uvicorn"], extra="remote", purpose="this command")
    except MissingExtra as exc:
        raise UserError(str(exc)) from None
