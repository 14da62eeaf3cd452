"""The retrieval server: one index in one process, shared by many env workers.

    envgym search serve --corpus wiki.jsonl --port 8300
    envgym search serve --docs 100000 --world-seed 0 --uds /tmp/envgym-search.sock

Endpoints (JSON over HTTP, on 127.0.0.1 or a Unix socket):

    GET  /health   -> {"status": "ok"}
    GET  /info     -> {"kind": "bm25", "num_docs": 100000, "index_hash": "...", ...}
    POST /search   {"queries": ["q1", "q2"], "k": 3}
                   -> {"results": [[{"doc_id", "title", "text", "score"}, ...], ...]}

A request with too many queries, a `k` out of range or a query that is not a
string is answered 422 with ``{"error": "...", "detail": [...]}`` saying what to
fix. `envgym.envs.search.retrieval.RemoteRetriever` is the client.
"""

import json
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

from envgym.serving import AppServer, BackgroundServer, socket_url
from envgym.sockets import listening_socket

from .retrieval import Retriever, _require

__all__ = ["MAX_BATCH", "MAX_K", "RetrievalServer", "bind_socket", "create_app", "serve"]

MAX_BATCH = 1024  # queries in one POST /search
MAX_K = 100  # documents per query
MAX_QUERY_CHARS = 4096


def create_app(retriever: Retriever, info: dict[str, Any] | None = None) -> Any:
    """A FastAPI app answering /health, /info and /search with `retriever`."""
    fastapi = _require("fastapi", "the retrieval server")
    pydantic = _require("pydantic", "the retrieval server")
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse, Response

    # No `from __future__ import annotations` in this module: FastAPI must see these
    # annotations as objects, since the model is local to this function.
    Query = Annotated[str, pydantic.StringConstraints(max_length=MAX_QUERY_CHARS, strict=True)]

    class SearchRequest(pydantic.BaseModel):
        model_config = pydantic.ConfigDict(extra="forbid")
        queries: Annotated[list[Query], pydantic.Field(max_length=MAX_BATCH)]
        k: Annotated[int, pydantic.Field(ge=1, le=MAX_K, strict=True)] = 3

    details = {
        "kind": getattr(retriever, "kind", type(retriever).__name__),
        "num_docs": _len_or_none(retriever),
        "index_hash": getattr(retriever, "index_hash", None),
        "max_batch": MAX_BATCH,
        "max_k": MAX_K,
        **(info or {}),
    }
    app = fastapi.FastAPI(title="envgym retrieval server", version="1")

    @app.exception_handler(RequestValidationError)
    async def invalid_request(_request: Any, exc: RequestValidationError) -> JSONResponse:
        problems = []
        for err in exc.errors():
            where = ".".join(str(p) for p in err.get("loc", ()) if p != "body") or "body"
            problems.append(f"{where}: {err.get('msg')}")
        message = (
            "; ".join(problems)
            + f' (send {{"queries": [up to {MAX_BATCH} strings], "k": 1..{MAX_K}}})'
        )
        detail = [{"loc": list(e.get("loc", ())), "msg": e.get("msg")} for e in exc.errors()]
        return JSONResponse(status_code=422, content={"error": message, "detail": detail})

    @app.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/info")
    async def get_info() -> dict[str, Any]:
        return details

    @app.post("/search")
    def search(request: SearchRequest) -> Response:
        hits = retriever.search_batch(request.queries, request.k)
        results = [
            [{"doc_id": h.doc_id, "title": h.title, "text": h.text, "score": h.score} for h in row]
            for row in hits
        ]
        # Serialised here: FastAPI would validate and re-encode every hit on the way out.
        body = json.dumps({"results": results}, ensure_ascii=False)
        return Response(content=body.encode("utf-8"), media_type="application/json")

    return app


def _len_or_none(retriever: Any) -> int | None:
    try:
        return len(retriever)
    except TypeError:
        return None


def bind_socket(
    *, host: str = "127.0.0.1", port: int | None = None, uds: str | Path | None = None
) -> socket.socket:
    """A listening socket on host:port (port 0 picks a free one) or at the Unix socket
    path `uds` (a stale socket file left by a dead server is replaced); a
    `envgym.sockets.ListenError` (an OSError) says why not."""
    return listening_socket(host, port, uds)


def _app_server(
    retriever: Retriever,
    *,
    host: str = "127.0.0.1",
    port: int | None = None,
    uds: str | Path | None = None,
    info: dict[str, Any] | None = None,
    on_ready: Callable[[str], None] | None = None,
    log_level: str = "warning",
) -> AppServer:
    """The retrieval app on a freshly bound socket (`envgym.serving`, as ``envgym serve``)."""
    _require("uvicorn", "the retrieval server")
    app = create_app(retriever, info)  # before binding: a missing fastapi leaves no socket
    sock = bind_socket(host=host, port=port, uds=uds)
    address = socket_url(sock)
    return AppServer(
        app,
        sock,
        on_ready=None if on_ready is None else (lambda: on_ready(address)),
        log_level=log_level,
        lifespan="off",
        timeout_keep_alive=600,
    )


def serve(
    retriever: Retriever,
    *,
    host: str = "127.0.0.1",
    port: int | None = None,
    uds: str | Path | None = None,
    info: dict[str, Any] | None = None,
    on_ready: Callable[[str], None] | None = None,
    log_level: str = "warning",
) -> None:
    """Serve `retriever` until interrupted (Ctrl-C; SIGTERM stops it cleanly).
    `on_ready(address)` is called once the server accepts requests
    (``http://127.0.0.1:PORT`` or ``unix:/path``)."""
    server = _app_server(
        retriever,
        host=host,
        port=port,
        uds=uds,
        info=info,
        on_ready=on_ready,
        log_level=log_level,
    )
    server.run()


class RetrievalServer(BackgroundServer):
    """The retrieval server on a background thread of this process (tests, benchmarks,
    notebooks). Use as a context manager; `address`, `url` and `uds` say where it is.

        with RetrievalServer(retriever) as server:           # 127.0.0.1, free port
            RemoteRetriever(url=server.url).search("...")
    """

    thread_name = "envgym-retrieval-server"

    def __init__(
        self,
        retriever: Retriever,
        *,
        port: int | None = None,
        uds: str | Path | None = None,
        info: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(_app_server(retriever, port=port, uds=uds, info=info), uds)


def main_serve(
    retriever: Retriever,
    *,
    port: int | None,
    uds: str | None,
    info: dict[str, Any] | None = None,
) -> None:
    """`envgym search serve`'s last step: print the address, then serve until Ctrl-C."""

    def ready(address: str) -> None:
        client = f'RemoteRetriever(uds="{uds}")' if uds else f'RemoteRetriever(url="{address}")'
        print(f"serving {info.get('kind') if info else 'retrieval'} on {address}", flush=True)
        print(f"connect with {client}; Ctrl-C stops", flush=True)

    try:
        serve(retriever, port=port, uds=uds, info=info, on_ready=ready)
    except KeyboardInterrupt:
        pass
    print("retrieval server stopped", file=sys.stderr)


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
    from .retrieval import Doc

    try:
        from .world import load_world
    except ImportError as exc:
        raise ImportError(
            f"the generated corpus needs envgym.envs.search.world ({exc}); "
            "pass --corpus JSONL instead"
        ) from None
    world = load_world(seed, num_docs, distractors, None if cache_dir is None else str(cache_dir))
    return [
        Doc(doc_id, title, text)
        for doc_id, title, text in zip(world.doc_ids, world.titles, world.texts, strict=True)
    ]


def run_serve_command(args: Any) -> None:
    """`envgym search serve`: load or generate the corpus, build or load the index
    (with progress on stderr), print the address and serve until Ctrl-C."""
    from .retrieval import make_retriever, read_corpus_jsonl

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
