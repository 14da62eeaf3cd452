"""The client of a retrieval server: `RemoteRetriever`.

It speaks to a retrieval server (`envgym.retrieval.server`, started by
``envgym search serve`` or ``envgym shop index-serve``) over HTTP on 127.0.0.1
or a Unix socket, so many env workers share one index. httpx (the ``search``
extra) is imported on the first request.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from envgym.extras import require
from envgym.retrieval.base import Hit
from envgym.sockets import http_client

__all__ = ["RemoteRetriever", "RetrievalServerError", "RetrievalServerUnavailable"]


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
                self._client = http_client(
                    self.url,
                    uds=self.uds,
                    timeout=self.timeout_s,
                    extra="search",
                    purpose="RemoteRetriever",
                )
            return self._client

    def _request(self, method: str, path: str, payload: Any = None) -> Any:
        httpx = require("httpx", extra="search", purpose="RemoteRetriever")
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
