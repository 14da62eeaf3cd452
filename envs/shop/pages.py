"""The shop's pages: one `PageView` model, rendered as WebShop's text mode here and
as HTML in `html.py`, so the text agent, the HTML agent and a person in a browser
see the same page with the same buttons.

Pages, as in WebShop: ``search`` (the instruction and a search box), ``results``
(10 products per page, up to 50, with ``Next >`` / ``< Prev``), ``item`` (title,
price, rating, option buttons per group, ``Description``, ``Features``,
``Reviews``, ``Buy Now``), ``description`` / ``features`` / ``reviews`` (an item's
sub-pages, ``< Prev`` goes back to the item) and ``done`` (the reward).
`PageView.clickables` lists every button of a page, in page order: what
``click[...]`` accepts there.
"""

from __future__ import annotations

from dataclasses import dataclass

from envgym.envs.shop.model import Product, format_price
from envgym.envs.shop.reward import ShopReward
from envgym.text import OBSERVATION_MAX_LENGTH, to_ascii

__all__ = [
    "BACK_TO_SEARCH",
    "BUY_NOW",
    "NEXT_PAGE",
    "PAGE_SIZE",
    "PREV_PAGE",
    "SUB_PAGES",
    "PageView",
    "ResultRow",
    "render_text",
]

PAGE_SIZE = 10
BACK_TO_SEARCH = "Back to Search"
NEXT_PAGE = "Next >"
PREV_PAGE = "< Prev"
BUY_NOW = "Buy Now"
#: An item's sub-pages: button text -> page kind.
SUB_PAGES = {"Description": "description", "Features": "features", "Reviews": "reviews"}
SEP = " [SEP] "
#: Longest description or review text on a page (the observation has a size limit).
MAX_TEXT = 2000


@dataclass(frozen=True)
class ResultRow:
    """One product on a results page."""

    asin: str
    title: str
    price: float


@dataclass(frozen=True)
class PageView:
    """Everything one page shows. `kind` is the page; the other fields are filled
    where that page shows them. `message` is feedback on the last action (an
    invalid click, an empty search), shown above the page."""

    kind: str
    instruction: str
    query: str = ""
    page: int = 1
    total: int = 0
    rows: tuple[ResultRow, ...] = ()
    product: Product | None = None
    selected: tuple[tuple[str, str], ...] = ()
    reward: ShopReward | None = None
    paid: float = 0.0
    message: str = ""

    @property
    def has_search_bar(self) -> bool:
        return self.kind == "search"

    @property
    def has_next(self) -> bool:
        return self.kind == "results" and self.page * PAGE_SIZE < self.total

    @property
    def has_prev(self) -> bool:
        return self.kind in ("item", *SUB_PAGES.values()) or (
            self.kind == "results" and self.page > 1
        )

    @property
    def clickables(self) -> tuple[str, ...]:
        """Every button of the page, in page order (the text ``click[...]`` takes)."""
        if self.kind in ("search", "done"):
            return ()
        buttons = [BACK_TO_SEARCH]
        if self.kind == "results":
            if self.has_prev:
                buttons.append(PREV_PAGE)
            if self.has_next:
                buttons.append(NEXT_PAGE)
            buttons.extend(row.asin for row in self.rows)
            return tuple(buttons)
        buttons.append(PREV_PAGE)
        if self.kind == "item" and self.product is not None:
            for _, values in self.product.options:
                buttons.extend(values)
            buttons.extend(SUB_PAGES)
            buttons.append(BUY_NOW)
        return tuple(buttons)


def render_text(view: PageView) -> str:
    """The page in WebShop's text mode: its parts joined by `` [SEP] ``, after the
    instruction (printable ASCII, at most `OBSERVATION_MAX_LENGTH` characters)."""
    parts = ["Instruction:", view.instruction]
    if view.message:
        parts.insert(0, view.message)
    if view.kind == "search":
        parts.append("Search")
    elif view.kind == "results":
        parts.append(BACK_TO_SEARCH)
        parts.append(f"Page {view.page} (Total results: {view.total})")
        if view.has_prev:
            parts.append(PREV_PAGE)
        if view.has_next:
            parts.append(NEXT_PAGE)
        for row in view.rows:
            parts += [row.asin, row.title, format_price(row.price)]
        if not view.rows:
            parts.append(f"No products match {view.query!r}.")
    elif view.kind == "item":
        parts += _item_parts(view)
    elif view.kind in SUB_PAGES.values():
        parts += [BACK_TO_SEARCH, PREV_PAGE, *_sub_page_parts(view)]
    elif view.kind == "done":
        parts += _done_parts(view)
    text = to_ascii(SEP.join(p.replace("\n", " ") for p in parts))
    if len(text) > OBSERVATION_MAX_LENGTH:
        # Only a loaded product with hundreds of long options gets here; every
        # button is still in info["admissible_actions"].
        text = text[: OBSERVATION_MAX_LENGTH - 3] + "..."
    return text


def _item_parts(view: PageView) -> list[str]:
    product = view.product
    assert product is not None
    parts = [BACK_TO_SEARCH, PREV_PAGE]
    for group, values in product.options:
        parts.append(group)
        parts.extend(values)
    if view.selected:
        chosen = ", ".join(f"{group}: {value}" for group, value in view.selected)
        parts.append(f"Selected: {chosen}")
    parts.append(product.title)
    parts.append(f"Price: {format_price(product.price)}")
    parts.append(f"Rating: {_rating(product)}")
    parts.extend(SUB_PAGES)
    parts.append(BUY_NOW)
    return parts


def _sub_page_parts(view: PageView) -> list[str]:
    product = view.product
    assert product is not None
    if view.kind == "description":
        return [_cut(product.description) or "No description."]
    if view.kind == "features":
        return [_cut(b) for b in product.bullets] or ["No features listed."]
    reviews = [f"{r.score}/5 {_cut(r.title, 200)}: {_cut(r.body, 500)}" for r in product.reviews]
    return reviews or ["No reviews yet."]


def _done_parts(view: PageView) -> list[str]:
    product, reward = view.product, view.reward
    assert product is not None and reward is not None
    chosen = ", ".join(f"{group}: {value}" for group, value in view.selected) or "none"
    return [
        "Thank you for shopping with us!",
        f"You bought {product.asin}: {product.title}",
        f"Options: {chosen}",
        f"Paid: {format_price(view.paid)}",
        f"Your score (min 0.0, max 1.0): {reward.value:.4f}",
    ]


def _rating(product: Product) -> str:
    return "N.A." if product.rating is None else f"{product.rating:.1f}"


def _cut(text: str, limit: int = MAX_TEXT) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."
