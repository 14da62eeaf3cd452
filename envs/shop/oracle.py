"""The Shop oracle: shops from the observations alone, as a careful person would.

It never reads ``info["privileged"]`` or the catalogue. From the instruction it
reads the price bound and, with the shop's public vocabulary (the product
types, attribute phrases and option values any shopper sees on the site), the
type, attributes and options asked for. It searches with the instruction's
words, opens results under the price bound whose title names the type, checks
an item's options on its page and its attributes in the title, the features
and the description, chooses the options and buys; an item that falls short
sends it back to the results for the next one. The buttons it clicks come from
``info["admissible_actions"]``, which lists what the page shows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from html.parser import HTMLParser
from typing import Any

from envgym.envs.shop.pages import BACK_TO_SEARCH, BUY_NOW, NEXT_PAGE, PREV_PAGE

__all__ = ["ShopOracle", "ShopVocabulary", "page_parts"]

_PRICE_BOUND = re.compile(r"price lower than ([0-9]+(?:\.[0-9]+)?) dollars")
_PRICE_CLAUSE = re.compile(r",?\s*and price lower than [0-9.]+ dollars\.?")
_PRICE = re.compile(r"^(?:Price: )?\$([0-9]+(?:\.[0-9]+)?)")
_CLICK = re.compile(r"^click\[(.*)\]$", re.DOTALL)


@dataclass(frozen=True)
class ShopVocabulary:
    """The phrases a shopper can tell apart in an instruction: product types,
    attributes and option values (longest first, so the longest phrase wins)."""

    types: tuple[str, ...]
    attributes: tuple[str, ...]
    option_values: tuple[str, ...]


@lru_cache(maxsize=1)
def generated_vocabulary() -> ShopVocabulary:
    """The generated catalogue's vocabulary, from its public category tables."""
    from envgym.envs.shop.categories import vocabulary

    types, attributes, values = vocabulary()
    by_length = lambda phrases: tuple(sorted(set(phrases), key=lambda p: (-len(p), p)))  # noqa: E731
    return ShopVocabulary(by_length(types), by_length(attributes), by_length(values))


class _TextNodes(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag in ("style", "script", "title"):
            self._skip += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in ("style", "script", "title") and self._skip:
            self._skip -= 1

    def handle_data(self, data: str) -> None:
        text = " ".join(data.split())
        if text and not self._skip:
            self.parts.append(text)


def page_parts(observation: str) -> list[str]:
    """A page's parts in order: the text mode's `` [SEP] `` pieces, or an HTML page's
    text nodes."""
    if observation.lstrip().startswith("<"):
        parser = _TextNodes()
        parser.feed(observation)
        return parser.parts
    return [part.strip() for part in observation.split("[SEP]")]


def _found(phrases: tuple[str, ...], text: str) -> list[str]:
    """The phrases that occur in `text` as whole words, longest first; a phrase that
    only occurs inside a longer one already found does not count."""
    found: list[str] = []
    taken: list[tuple[int, int]] = []
    for phrase in phrases:
        for match in re.finditer(rf"(?<![a-z0-9]){re.escape(phrase)}(?![a-z0-9])", text):
            start, end = match.span()
            if all(end <= a or start >= b for a, b in taken):
                found.append(phrase)
                taken.append((start, end))
                break
    return found


@dataclass
class _Wanted:
    query: str
    bound: float
    product_type: str | None
    attributes: list[str]
    options: list[str]


@dataclass
class _Item:
    asin: str
    title: str = ""
    price: float = 0.0
    text: str = ""
    read: set[str] = field(default_factory=set)
    chosen: set[str] = field(default_factory=set)


class ShopOracle:
    """Buys a product that meets the instruction, reading only what the pages show
    (see the module docstring)."""

    name = "oracle"

    def __init__(self, env: Any = None, vocabulary: ShopVocabulary | None = None) -> None:
        self._vocabulary = vocabulary
        self.reset()

    @property
    def vocabulary(self) -> ShopVocabulary:
        if self._vocabulary is None:
            self._vocabulary = generated_vocabulary()
        return self._vocabulary

    def reset(self) -> None:
        self._wanted: _Wanted | None = None
        self._visited: set[str] = set()
        self._item: _Item | None = None

    # ---------------------------------------------------------------- reading
    def _read_instruction(self, parts: list[str]) -> _Wanted:
        instruction = parts[parts.index("Instruction:") + 1] if "Instruction:" in parts else ""
        text = instruction.lower()
        bound = _PRICE_BOUND.search(text)
        query = _PRICE_CLAUSE.sub("", text).strip()
        vocab = self.vocabulary
        types = _found(vocab.types, query)
        attributes = _found(vocab.attributes, query)
        options = [v for v in _found(vocab.option_values, query) if v not in attributes]
        return _Wanted(
            query=query,
            bound=float(bound.group(1)) if bound else float("inf"),
            product_type=types[0] if types else None,
            attributes=attributes,
            options=options,
        )

    # ---------------------------------------------------------------- acting
    def act(self, observation: str, info: dict[str, Any]) -> str:
        parts = page_parts(observation)
        actions = info.get("admissible_actions") or []
        if self._wanted is None:
            self._wanted = self._read_instruction(parts)
        wanted = self._wanted
        if actions and actions[0].startswith("search["):
            return f"search[{wanted.query}]"
        buttons = [m.group(1) for a in actions if (m := _CLICK.match(a))]
        if BUY_NOW in buttons:
            return self._on_item(parts, buttons)
        if any(p.startswith("Page ") and "Total results" in p for p in parts):
            return self._on_results(parts, buttons)
        if self._item is not None and PREV_PAGE in buttons:
            # An item's sub-page: remember what it says, go back to the item.
            start = parts.index(PREV_PAGE) + 1 if PREV_PAGE in parts else 0
            self._item.text += " " + " ".join(parts[start:]).lower()
            return f"click[{PREV_PAGE}]"
        return f"click[{BACK_TO_SEARCH}]"

    def _on_results(self, parts: list[str], buttons: list[str]) -> str:
        wanted = self._wanted
        assert wanted is not None
        rows = []
        for i, part in enumerate(parts[:-2]):
            if part in buttons and part not in (BACK_TO_SEARCH, PREV_PAGE, NEXT_PAGE):
                price = _PRICE.match(parts[i + 2])
                if price is not None:
                    rows.append((part, parts[i + 1], float(price.group(1))))
        candidates = []
        for rank, (asin, title, price) in enumerate(rows):
            if asin in self._visited or price > wanted.bound:
                continue
            title_l = title.lower()
            if wanted.product_type and wanted.product_type not in title_l:
                continue
            # The search's own order: its score counts every word of the item's
            # page (features, description, options), not just the title's.
            candidates.append((rank, asin, title, price))
        if candidates:
            _, asin, title, price = min(candidates)
            self._visited.add(asin)
            self._item = _Item(asin, title, price, title.lower())
            return f"click[{asin}]"
        if NEXT_PAGE in buttons:
            return f"click[{NEXT_PAGE}]"
        # Nothing left that fits: take the first result not yet seen, else give up on it.
        for asin, title, price in rows:
            if asin not in self._visited:
                self._visited.add(asin)
                self._item = _Item(asin, title, price, title.lower())
                return f"click[{asin}]"
        return f"click[{rows[0][0]}]" if rows else f"click[{BACK_TO_SEARCH}]"

    def _on_item(self, parts: list[str], buttons: list[str]) -> str:
        wanted, item = self._wanted, self._item
        assert wanted is not None
        if item is None:
            item = self._item = _Item(asin="?")
        offered = {b.lower(): b for b in buttons}
        missing_options = [v for v in wanted.options if v not in offered]
        if missing_options or item.price > wanted.bound:
            return f"click[{PREV_PAGE}]"
        missing = [a for a in wanted.attributes if a not in item.text]
        if missing:
            # The features list a product's attributes; a shop's description
            # repeats them.
            if "features" not in item.read:
                item.read.add("features")
                return "click[Features]"
            return f"click[{PREV_PAGE}]"
        for value in wanted.options:
            if value not in item.chosen:
                item.chosen.add(value)
                return f"click[{offered[value]}]"
        return f"click[{BUY_NOW}]"
