"""The retrieval server: one index in one process, shared by many env workers.

Any `Retriever` can be served; ``envgym search serve`` serves a corpus (or
Search's generated world) and ``envgym shop index-serve`` a shop catalogue:

    envgym search serve --corpus wiki.jsonl --port 8300
    envgym search serve --docs 100000 --world-seed 0 --uds /tmp/envgym-search.sock

Endpoints (JSON over HTTP, on 127.0.0.1 or a Unix socket):

    GET  /health   -> {"status": "ok"}
    GET  /info     -> {"kind": "bm25", "num_docs": 100000, "index_hash": "...", ...}
    POST /search   {"queries": ["q1", "q2"], "k": 3}
                   -> {"results": [[{"doc_id", "title", "text", "score"}, ...], ...]}

A request with too many queries, a `k` out of range or a query that is not a
string is answered 422 with ``{"error": "...", "detail": [...]}`` saying what to
fix. `envgym.retrieval.RemoteRetriever` is the client.
"""

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

from envgym.extras import require
from envgym.retrieval.base import Retriever
from envgym.serving import AppServer, BackgroundServer, app_server

__all__ = [
    "MAX_BATCH",
    "MAX_K",
    "RetrievalServer",
    "create_app",
    "main_serve",
    "serve",
]

MAX_BATCH = 1024  # queries in one POST /search
MAX_K = 100  # documents per query
MAX_QUERY_CHARS = 4096


def create_app(retriever: Retriever, info: dict[str, Any] | None = None) -> Any:
    """A FastAPI app answering /health, /info and /search with `retriever`."""
    fastapi = require("fastapi", extra="search", purpose="the retrieval server")
    pydantic = require("pydantic", extra="search", purpose="the retrieval server")
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
    require("uvicorn", extra="search", purpose="the retrieval server")
    app = create_app(retriever, info)  # before binding: a missing fastapi leaves no socket
    return app_server(
        app,
        host=host,
        port=port,
        uds=uds,
        on_ready=on_ready,
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
