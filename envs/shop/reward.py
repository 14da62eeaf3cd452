"""WebShop's reward, with deterministic matching.

    reward = r_type * (matched attributes + matched options + price ok)
                    / (goal attributes + goal options + 1)

as in WebShop's ``get_reward`` (``web_agent_site/engine/goal.py``). WebShop
matches with spaCy noun chunks and fuzzy string ratios; here every match is a
plain function of the words, so a reward never depends on a model or a
library version:

* **type** (`type_reward`): WebShop's rule. 1.0 when the purchased product
  has the goal's query, shares at least two levels of its category path, or
  shares more than 20% of the goal type's words; 0.5 otherwise; 0.1 when it
  shares under 10% of those words; 0.0 when it shares none. A type's words
  are its lower-case alphanumeric words without English stopwords (WebShop
  keeps nouns by part-of-speech tagging).
* **attributes**: a goal attribute matches when its words are a subset of a
  product attribute's words or the other way round (WebShop: fuzzy token-set
  ratio above 85), or when it occurs in the title, the bullet points or the
  description (as in WebShop).
* **options**: a goal option matches when its words and a chosen option's
  words are subsets one of the other (WebShop: the same fuzzy ratio).
* **price**: the price is at most the goal's bound.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache

from envgym.envs.shop.model import Goal, Product
from envgym.retrieval import ENGLISH_STOPWORDS

__all__ = ["ShopReward", "content_words", "option_matches", "shop_reward", "type_reward", "words"]

_WORD = re.compile(r"[a-z0-9]+(?:\.[0-9]+)?")


@lru_cache(maxsize=65536)
def words(text: str) -> frozenset[str]:
    """The lower-case words (numbers with decimals kept whole) of `text`."""
    return frozenset(_WORD.findall(text.lower()))


@lru_cache(maxsize=65536)
def content_words(text: str) -> frozenset[str]:
    """`words` without English stopwords."""
    return words(text) - ENGLISH_STOPWORDS


def _subset_either_way(a: str, b: str) -> bool:
    wa, wb = words(a), words(b)
    return bool(wa) and bool(wb) and (wa <= wb or wb <= wa)


@dataclass(frozen=True)
class ShopReward:
    """A purchase's reward and its parts (`components()` goes in ``reward_components``)."""

    r_type: float
    attributes_matched: int
    attributes_wanted: int
    options_matched: int
    options_wanted: int
    price_ok: bool

    @property
    def value(self) -> float:
        total = self.attributes_wanted + self.options_wanted + 1
        hits = self.attributes_matched + self.options_matched + int(self.price_ok)
        return self.r_type * hits / total

    def components(self) -> dict[str, float]:
        """The reward split into parts that sum to it: each part's share of the
        formula's numerator, scaled by the type factor."""
        total = self.attributes_wanted + self.options_wanted + 1
        scale = self.r_type / total
        return {
            "attributes": scale * self.attributes_matched,
            "options": scale * self.options_matched,
            "price": scale * int(self.price_ok),
        }

    def details(self) -> dict[str, float | int | bool]:
        """Every part, for ``info`` and the reward page."""
        return {
            "r_type": self.r_type,
            "attributes_matched": self.attributes_matched,
            "attributes_wanted": self.attributes_wanted,
            "options_matched": self.options_matched,
            "options_wanted": self.options_wanted,
            "price_ok": self.price_ok,
        }


def type_reward(product: Product, goal: Goal) -> float:
    """WebShop's type factor (see the module docstring)."""
    query_match = product.query == goal.query
    ours = {level.strip() for level in product.product_category.split("›")} - {""}
    theirs = {level.strip() for level in goal.product_category.split("›")} - {""}
    category_match = len(ours & theirs) >= 2
    desired = content_words(goal.product_type)
    if not desired:
        title_score = 0.2
    else:
        title_score = len(desired & content_words(product.product_type)) / len(desired)
    r_type = 1.0
    if not (query_match or category_match or title_score > 0.2):
        r_type = 0.5
    if title_score < 0.1:
        r_type = 0.1
    if title_score == 0.0:
        r_type = 0.0
    return r_type


def attribute_matches(product: Product, attributes: Iterable[str]) -> int:
    """How many of `attributes` the product has (see the module docstring)."""
    text = None
    count = 0
    for wanted in attributes:
        if any(_subset_either_way(wanted, have) for have in product.attributes):
            count += 1
            continue
        if text is None:
            text = " ".join((product.title, " ".join(product.bullets), product.description)).lower()
        if wanted.lower() in text:
            count += 1
    return count


def option_matches(chosen: Iterable[str], wanted: Iterable[str]) -> int:
    """How many `wanted` option values some `chosen` value matches."""
    chosen = list(chosen)
    return sum(1 for w in wanted if any(_subset_either_way(w, c) for c in chosen))


def shop_reward(
    product: Product, chosen: Mapping[str, str], price: float, goal: Goal
) -> ShopReward:
    """The reward for buying `product` at `price` with options `chosen` (group -> value)."""
    bound = goal.price_upper
    return ShopReward(
        r_type=type_reward(product, goal),
        attributes_matched=attribute_matches(product, goal.attributes),
        attributes_wanted=len(goal.attributes),
        options_matched=option_matches(chosen.values(), (value for _, value in goal.options)),
        options_wanted=len(goal.options),
        price_ok=math.isinf(bound) or price <= bound,
    )
