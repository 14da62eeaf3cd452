"""What the shop is made of: `Product`, `Goal`, and the `Catalogue` protocol that
the generated catalogue and the WebShop file loader both implement.

A product's fields follow WebShop's product records (``asin``, ``name`` as the
title, ``query``, ``category``, ``product_category``, bullet points, attributes,
option groups, price), so the reward and the pages treat both sources alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

__all__ = ["PRICE_RANGE", "Catalogue", "Goal", "Product", "Review", "format_price", "price_bound"]


@dataclass(frozen=True)
class Review:
    """One customer review: a score out of 5, a title and a body."""

    score: int
    title: str
    body: str


@dataclass(frozen=True)
class Product:
    """One product of the shop.

    `query` is the search phrase the product belongs to (WebShop's ``query``
    field; for the generated catalogue, the product type), `product_type` the
    words the type reward compares (the generated type phrase, or WebShop's
    product name), `product_category` the breadcrumb path with " › " between
    levels. `options` maps each option group ("size", "color", ...) to its
    values in display order; `price` is what the shop charges.
    """

    asin: str
    title: str
    category: str
    product_category: str
    query: str
    product_type: str
    description: str
    bullets: tuple[str, ...]
    attributes: tuple[str, ...]
    options: tuple[tuple[str, tuple[str, ...]], ...]
    price: float
    rating: float | None = None
    reviews: tuple[Review, ...] = ()

    def option_values(self, group: str) -> tuple[str, ...]:
        for name, values in self.options:
            if name == group:
                return values
        return ()


@dataclass(frozen=True)
class Goal:
    """What one instruction asks for.

    `instruction` is the text the agent reads (price clause included);
    `attributes` and `options` are what the reward checks (`options` as
    (group, value) pairs; the group is "" where the source does not say);
    `price_upper` is the price bound (``inf`` when the instruction has none).
    `asin` is the product the instruction was written from; other products may
    satisfy it too. `query`, `product_category` and `product_type` are the
    target's, for the type reward.
    """

    task_id: str
    asin: str
    instruction: str
    query: str
    category: str
    product_category: str
    product_type: str
    attributes: tuple[str, ...]
    options: tuple[tuple[str, str], ...]
    price_upper: float


@runtime_checkable
class Catalogue(Protocol):
    """A shop's products, by position and by asin, and their text for the search index.

    `fingerprint` names the content (a change to any product changes it), and
    keys the on-disk search index. `search_text(i)` is what BM25 indexes for
    product `i`. `satisfying(goal)` lists the positions of every product that
    can earn reward 1 for `goal` (with the right options chosen).
    """

    name: str
    fingerprint: str

    def __len__(self) -> int: ...

    def product(self, i: int) -> Product: ...

    def asin(self, i: int) -> str: ...

    def index_of(self, asin: str) -> int | None: ...

    def search_text(self, i: int) -> tuple[str, str]: ...

    def satisfying(self, goal: Goal) -> np.ndarray: ...


def format_price(price: float) -> str:
    """A price as the pages show it: ``$12.99``."""
    return f"${price:.2f}"


#: WebShop's price bounds: $10 to $990 in steps of $10.
PRICE_RANGE = [10.0 * i for i in range(1, 100)]


def price_bound(price: float, rng: np.random.Generator) -> float:
    """WebShop's price bound for a goal whose product costs `price`: the larger of
    two draws among the first four `PRICE_RANGE` steps above it, or ``inf`` (no
    price clause) when fewer than two are left."""
    candidates = [p for p in PRICE_RANGE if p > price][:4]
    if len(candidates) < 2:
        return float("inf")
    return float(max(rng.choice(candidates, size=2, replace=False)))
