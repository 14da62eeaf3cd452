"""The shop's pages as HTML: what ``envgym shop serve`` shows a person or a browser
agent, and the observation of ``ShopEnv(observation="html")``.

`render_html` is a pure function of a `PageView` (the page model `pages.py`
renders as text), so the HTML and the text agent see the same page with the
same buttons. Every button is a submit button of one form posted to
``{base}act`` with ``name="action"`` and ``value="click[BUTTON]"`` (the env's own
action); the search page's form sends ``action=search`` and ``query``. Elements
a test or a browser agent looks for keep stable ids and classes: ``#instruction``,
``#message``, ``#search-query``, ``#search-button``, ``.result``, ``.option``
(``.selected`` with ``aria-pressed="true"`` when chosen), ``#buy-now``,
``#reward``.

Everything that comes from a product, a query or an instruction is escaped
(queries are attacker-controlled and echoed). The page is printable ASCII and
at most `OBSERVATION_MAX_LENGTH` characters: long texts are cut, more the
larger the page, so the worst product still fits.
"""

from __future__ import annotations

import html
from collections.abc import Iterator
from dataclasses import dataclass

from envgym.envs.shop.model import Product, format_price
from envgym.envs.shop.pages import (
    BACK_TO_SEARCH,
    BUY_NOW,
    MAX_TEXT,
    NEXT_PAGE,
    PREV_PAGE,
    SUB_PAGES,
    PageView,
)
from envgym.text import OBSERVATION_MAX_LENGTH, to_ascii

__all__ = ["render_html"]

_STYLE = (
    "body{font-family:sans-serif;max-width:52em;margin:1em auto;padding:0 1em}"
    "button{margin:2px;cursor:pointer}.selected{background:#2a6;color:#fff}"
    "#message{color:#a30}#instruction{background:#eef;padding:.5em}"
    ".result{margin:.4em 0}.price{font-weight:bold}"
)


@dataclass(frozen=True)
class _Limits:
    """How much of a page's long text to show: `text` characters per description,
    feature or review, `items` features or reviews, `title` characters per title,
    instruction or message, and `options` option buttons (None: all)."""

    text: int
    items: int
    title: int
    options: int | None = None


# Tried in order until the page fits; the first is the text mode's own cuts.
_LEVELS = (
    _Limits(MAX_TEXT, 1000, 100_000),
    _Limits(1000, 30, 1000),
    _Limits(400, 15, 400),
    _Limits(150, 8, 200),
    _Limits(60, 4, 100),
    _Limits(0, 0, 60),
    _Limits(0, 0, 40, options=200),
    _Limits(0, 0, 30, options=50),
    _Limits(0, 0, 20, options=0),
)


def render_html(view: PageView, *, base: str = "", start_url: str | None = None) -> str:
    """`view` as a complete HTML5 page whose form posts to ``{base}act``.

    `start_url`, when given, adds a link to start a new session (the web site's
    pages; the env's observation has none). The result is printable ASCII and at
    most `OBSERVATION_MAX_LENGTH` characters.
    """
    page = ""
    for limits in _LEVELS:
        page = "\n".join(_page(view, base, start_url, limits))
        if len(page) <= OBSERVATION_MAX_LENGTH:
            return page
    # Unreachable with the last level's limits but for absurd asins or option
    # names; a short page that says so still keeps the observation's bound.
    return "\n".join(_too_large(view, base))


def _t(text: str, limit: int | None = None) -> str:
    """`text` on one line, cut to `limit` characters, in printable ASCII, escaped."""
    text = " ".join(to_ascii(text).split())
    if limit is not None and len(text) > limit:
        text = text[: max(limit - 3, 0)].rstrip() + "..." if limit > 0 else ""
    return html.escape(text, quote=True)


def _button(label: str, *, css: str = "", element_id: str = "", pressed: bool | None = None) -> str:
    attrs = f' id="{element_id}"' if element_id else ""
    attrs += f' class="{css}"' if css else ""
    if pressed is not None:
        attrs += f' aria-pressed="{"true" if pressed else "false"}"'
    value = _t(f"click[{label}]")
    return f'<button type="submit" name="action" value="{value}"{attrs}>{_t(label)}</button>'


def _head(view: PageView) -> list[str]:
    return [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>envgym shop: {_t(view.kind)}</title>",
        f"<style>{_STYLE}</style></head>",
        f'<body data-page="{_t(view.kind)}">',
    ]


def _page(view: PageView, base: str, start_url: str | None, limits: _Limits) -> Iterator[str]:
    yield from _head(view)
    if view.message:
        yield f'<p id="message" role="alert">{_t(view.message, limits.title)}</p>'
    yield '<section id="instruction"><h2>Instruction:</h2>'
    yield f'<p id="instruction-text">{_t(view.instruction, limits.title)}</p></section>'
    yield f'<form id="page" method="post" action="{_t(base)}act">'
    if view.kind == "search":
        yield (
            '<p><input type="text" id="search-query" name="query" size="60" maxlength="500" '
            'autofocus required aria-label="search query">'
        )
        yield (
            '<button type="submit" id="search-button" name="action" value="search">'
            "Search</button></p>"
        )
    elif view.kind == "results":
        yield from _results(view, limits)
    elif view.kind == "item":
        yield from _item(view, limits)
    elif view.kind in SUB_PAGES.values():
        yield from _sub_page(view, limits)
    elif view.kind == "done":
        yield from _done(view, limits)
    yield "</form>"
    if start_url is not None:
        yield f'<p><a id="new-session" href="{_t(start_url)}">Start a new session</a></p>'
    yield "</body></html>"


def _nav(view: PageView) -> Iterator[str]:
    yield f"<nav>{_button(BACK_TO_SEARCH, element_id='back-to-search')}"
    if view.has_prev:
        yield _button(PREV_PAGE, element_id="prev")
    if view.has_next:
        yield _button(NEXT_PAGE, element_id="next")
    yield "</nav>"


def _results(view: PageView, limits: _Limits) -> Iterator[str]:
    yield from _nav(view)
    yield f'<p id="page-number">Page {view.page} (Total results: {view.total})</p>'
    if not view.rows:
        yield f'<p id="no-results">No products match {_t(repr(view.query), limits.title)}.</p>'
        return
    yield '<ol id="results">'
    for row in view.rows:
        yield (
            f'<li class="result" data-asin="{_t(row.asin)}">{_button(row.asin, css="asin")} '
            f'<span class="title">{_t(row.title, limits.title)}</span> '
            f'<span class="price">{format_price(row.price)}</span></li>'
        )
    yield "</ol>"


def _item(view: PageView, limits: _Limits) -> Iterator[str]:
    product = view.product
    assert product is not None
    yield from _nav(view)
    chosen = set(view.selected)
    left = limits.options
    hidden = 0
    for group, values in product.options:
        yield f'<div class="option-group" data-group="{_t(group)}">'
        yield f'<span class="group-name">{_t(group)}</span>'
        for value in values:
            if left is not None and left <= 0:
                hidden += 1
                continue
            picked = (group, value) in chosen
            css = "option selected" if picked else "option"
            yield _button(value, css=css, pressed=picked)
            left = None if left is None else left - 1
        yield "</div>"
    if hidden:
        yield f'<p id="options-hidden">{hidden} more options not shown.</p>'
    if view.selected:
        shown = ", ".join(f"{group}: {value}" for group, value in view.selected)
        yield f'<p id="selected">Selected: {_t(shown, limits.title)}</p>'
    yield f'<h1 id="title">{_t(product.title, limits.title)}</h1>'
    yield f'<p id="price" class="price">Price: {format_price(product.price)}</p>'
    yield f'<p id="rating">Rating: {_rating(product)}</p>'
    yield "<p>" + "".join(_button(b, element_id=f"show-{b.lower()}") for b in SUB_PAGES) + "</p>"
    yield f"<p>{_button(BUY_NOW, element_id='buy-now')}</p>"


def _sub_page(view: PageView, limits: _Limits) -> Iterator[str]:
    product = view.product
    assert product is not None
    yield from _nav(view)
    yield f'<h1 id="title">{_t(product.title, limits.title)}</h1>'
    if view.kind == "description":
        text = _t(product.description, limits.text) if limits.text else ""
        shown = text or ("No description." if not product.description.strip() else "(cut)")
        yield f'<section id="description"><p>{shown}</p></section>'
    elif view.kind == "features":
        yield '<section id="features"><ul>'
        if not product.bullets:
            yield "<li>No features listed.</li>"
        for bullet in product.bullets[: limits.items]:
            yield f'<li class="feature">{_t(bullet, limits.text)}</li>'
        yield from _more(len(product.bullets) - limits.items, "features")
        yield "</ul></section>"
    else:
        yield '<section id="reviews"><ul>'
        if not product.reviews:
            yield "<li>No reviews yet.</li>"
        for review in product.reviews[: limits.items]:
            title = _t(review.title, min(200, limits.text))
            body = _t(review.body, min(500, limits.text))
            yield f'<li class="review">{review.score}/5 {title}: {body}</li>'
        yield from _more(len(product.reviews) - limits.items, "reviews")
        yield "</ul></section>"


def _more(count: int, what: str) -> Iterator[str]:
    if count > 0:
        yield f'<li class="more">{count} more {what} not shown.</li>'


def _done(view: PageView, limits: _Limits) -> Iterator[str]:
    product, reward = view.product, view.reward
    assert product is not None and reward is not None
    chosen = ", ".join(f"{group}: {value}" for group, value in view.selected) or "none"
    yield "<h1>Thank you for shopping with us!</h1>"
    yield (
        f'<p id="bought" data-asin="{_t(product.asin)}">You bought {_t(product.asin)}: '
        f"{_t(product.title, limits.title)}</p>"
    )
    yield f'<p id="bought-options">Options: {_t(chosen, limits.title)}</p>'
    yield f'<p id="paid">Paid: {format_price(view.paid)}</p>'
    yield (
        '<p id="score">Your score (min 0.0, max 1.0): '
        f'<span id="reward">{reward.value:.4f}</span></p>'
    )


def _rating(product: Product) -> str:
    return "N.A." if product.rating is None else f"{product.rating:.1f}"


def _too_large(view: PageView, base: str) -> Iterator[str]:
    yield from _head(view)
    yield '<p id="message" role="alert">This page is too large to show.</p>'
    yield f'<form id="page" method="post" action="{_t(base, 200)}act">'
    yield _button(BACK_TO_SEARCH, element_id="back-to-search")
    yield "</form></body></html>"
