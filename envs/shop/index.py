"""The shop's search engine: BM25 over a catalogue, one per process or one server
for many envs.

The index is Search's `BM25Retriever` (bm25s) over each product's title,
description, bullet points and options (what WebShop's Lucene index holds).
It is built once and cached on disk under ``$ENVGYM_CACHE/shop`` (or
``~/.cache/envgym/shop``), keyed by the catalogue's fingerprint, so a later
process loads it in a fraction of the build time; every env of a process
shares one catalogue and one index (`shared_catalogue`, `shop_index`).
`envgym shop index-serve` puts the same index behind Search's retrieval
server, and ``ShopEnv(index_url=...)`` searches through it
(`RemoteRetriever`), checking that the server holds the same catalogue.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, overload

from envgym.envs.shop.model import Catalogue
from envgym.per_process import PerProcess
from envgym.retrieval import Doc

__all__ = [
    "RESULTS_LIMIT",
    "CatalogueDocs",
    "check_server_catalogue",
    "default_shop_cache",
    "remote_index",
    "shared",
    "shop_index",
]

#: Search results kept per query, as WebShop (10 per page, 5 pages).
RESULTS_LIMIT = 50

#: Catalogues, indexes and loaded files, one per key in this process.
shared = PerProcess().get


def default_shop_cache() -> Path:
    """``$ENVGYM_CACHE/shop`` when ENVGYM_CACHE is set, else ``~/.cache/envgym/shop``."""
    root = os.environ.get("ENVGYM_CACHE")
    base = Path(root).expanduser() if root else Path.home() / ".cache" / "envgym"
    return base / "shop"


class CatalogueDocs(Sequence[Doc]):
    """A catalogue seen as the search index's documents, rendered on demand."""

    def __init__(self, catalogue: Catalogue) -> None:
        self.catalogue = catalogue

    def __len__(self) -> int:
        return len(self.catalogue)

    @overload
    def __getitem__(self, i: int) -> Doc: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[Doc]: ...
    def __getitem__(self, i: int | slice) -> Doc | Sequence[Doc]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        title, text = self.catalogue.search_text(i)
        return Doc(self.catalogue.product(i).asin, title, text)

    def __iter__(self):  # type: ignore[override]
        for i in range(len(self)):
            yield self[i]


def shop_index(
    catalogue: Catalogue, cache_dir: str | Path | None = None, *, show_progress: bool = False
) -> Any:
    """The BM25 index of `catalogue`, loaded from the disk cache or built and saved
    there, shared by every env of this process."""
    from envgym.retrieval import BM25Retriever

    root = Path(cache_dir) if cache_dir is not None else default_shop_cache()
    return shared(
        ("index", catalogue.fingerprint, str(root)),
        lambda: BM25Retriever(
            CatalogueDocs(catalogue),
            root,
            show_progress=show_progress,
            docs_hash=catalogue.fingerprint,
        ),
    )


def remote_index(url: str | None, uds: str | None, catalogue: Catalogue) -> Any:
    """A client of `envgym shop index-serve`, checked to hold `catalogue`."""
    from envgym.retrieval import RemoteRetriever

    def connect() -> Any:
        client = RemoteRetriever(url, uds=uds)
        check_server_catalogue(client.info(), catalogue)
        return client

    return shared(("remote", url, uds, catalogue.fingerprint), connect)


def check_server_catalogue(info: dict[str, Any], catalogue: Catalogue) -> None:
    """Refuse a server whose index is of another catalogue: its results would name
    products this env does not have."""
    theirs = info.get("catalogue_fingerprint")
    if theirs != catalogue.fingerprint:
        described = info.get("catalogue") or "not a shop catalogue"
        raise ValueError(
            f"the index server holds another catalogue ({described}); start it with the "
            f"env's catalogue (`envgym shop index-serve` with the same --products and "
            f"--catalogue-seed), or make the env to match the server"
        )
