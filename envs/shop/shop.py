"""envgym/Shop-v0: find and buy what an instruction asks for, WebShop style.

The env holds one shopping session: the page it is on, the last search, the
product it shows and the options chosen. Pages are built as `PageView`s
(`pages.py`) and rendered as WebShop's text mode or as HTML (`html.py`); the
catalogue and the search index are shared by every env of a process
(`index.py`). `WebShopEnv` (`webshop_env.py`) is the same env on WebShop's own
files.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, ClassVar

from envgym.core import Preset, TextEnv, Turn, check_int, setting
from envgym.envs.shop.index import RESULTS_LIMIT, remote_index, shared, shop_index
from envgym.envs.shop.model import Catalogue, Goal
from envgym.envs.shop.pages import (
    BACK_TO_SEARCH,
    BUY_NOW,
    NEXT_PAGE,
    PAGE_SIZE,
    PREV_PAGE,
    SUB_PAGES,
    PageView,
    ResultRow,
    render_text,
)
from envgym.envs.shop.reward import shop_reward
from envgym.parsing import first_tag, strip_think
from envgym.text import quote_for_feedback

__all__ = ["OBSERVATION_MODES", "BaseShopEnv", "ShopEnv", "ShopPreset", "parse_shop_action"]

OBSERVATION_MODES = ("text", "html")
MAX_QUERY_CHARS = 500
#: Products listed in info["privileged"]["satisfying_asins"] at most.
MAX_LISTED = 1000

#: Where a command starts; its argument runs to the first ``]`` after it.
_COMMAND = re.compile(r"\b(search|click)\[", re.IGNORECASE)
_HINT = (
    "Reply with search[your query] on the search page, or click[a button on the page], "
    "alone or inside <answer>...</answer>."
)


def parse_shop_action(reply: str) -> tuple[str, str] | None:
    """``("search", query)`` or ``("click", button)`` from a reply, or None.

    The command may stand alone or inside ``<answer>...</answer>``; ``<think>``
    blocks are ignored; the first command counts. A button may contain ``]``
    only as its last character, as in ``click[Next >]``.
    """
    text = strip_think(reply)
    tag, content = first_tag(text, ("answer",))
    if tag == "answer":
        text = content
    # Found in one forward pass: a lazy "(.*?)]" retried from every "click[" of a
    # reply without a "]" after it would read the reply over and over.
    match = _COMMAND.search(text)
    end = text.find("]", match.end()) if match is not None else -1
    if end == -1:
        return None
    return match.group(1).lower(), " ".join(text[match.end() : end].split())


def _norm(text: str) -> str:
    return " ".join(text.split()).lower()


@dataclass(frozen=True)
class ShopPreset(Preset):
    """A Shop difficulty level: how many attributes and options an instruction asks for."""

    attributes: int = setting(1, 1, 3, "goal attributes per instruction")
    options: int = setting(1, 0, 3, "goal options per instruction")


class BaseShopEnv(TextEnv):
    """What every shop env shares: the pages, the actions, the search index and the
    reward. A subclass says where the products and the instructions come from
    (`_load_catalogue`, `_make_goal`): `ShopEnv` generates them, `WebShopEnv`
    reads WebShop's files. Its manual is `ShopEnv`'s."""

    system_prompt: ClassVar[str] = (
        "You are shopping online for what the instruction asks. On the search page, reply "
        "search[your query]; on any other page, reply click[button] with one of the page's "
        "buttons: a product id in the results, an option value, Description, Features, "
        "Reviews, < Prev, Next >, Back to Search, or Buy Now. Choose the options the "
        "instruction asks for before you click Buy Now. You may think inside "
        "<think>...</think> first."
    )
    snapshot_exclude: ClassVar[tuple[str, ...]] = ("_catalogue", "_index", "_source")

    def __init__(
        self,
        *,
        difficulty: str,
        observation: str = "text",
        index_url: str | None = None,
        index_uds: str | Path | None = None,
        cache_dir: str | Path | None = None,
        max_turns: int | None = None,
        render_mode: str | None = None,
        **settings: Any,
    ) -> None:
        super().__init__(
            difficulty=difficulty, render_mode=render_mode, max_turns=max_turns, **settings
        )
        if observation not in OBSERVATION_MODES:
            raise ValueError(f"observation must be 'text' or 'html', not {observation!r}")
        if index_url is not None and index_uds is not None:
            raise ValueError("give index_url= or index_uds=, not both")
        self.observation_mode = observation
        self._source = (index_url, None if index_uds is None else str(index_uds), cache_dir)
        self._catalogue: Catalogue | None = None
        self._index: Any = None
        self._goal: Goal | None = None
        self._satisfying: tuple[str, ...] = ()
        self._satisfying_count = 0
        self._view = PageView(kind="search", instruction="")
        self._results: tuple[int, ...] = ()
        self._searches = 0
        self._purchase: dict[str, Any] | None = None

    # ------------------------------------------------------------ sources
    @property
    def catalogue(self) -> Catalogue:
        """The catalogue, generated once per process and shared."""
        if self._catalogue is None:
            self._catalogue = self._load_catalogue()
        return self._catalogue

    @property
    def index(self) -> Any:
        """The search index: in this process (loaded from the disk cache or built), or a
        client of an index server."""
        if self._index is None:
            url, uds, cache_dir = self._source
            if url is not None or uds is not None:
                self._index = remote_index(url, uds, self.catalogue)
            else:
                self._index = shop_index(self.catalogue, cache_dir)
        return self._index

    @property
    def page(self) -> PageView:
        """The page the env is on, as the observation shows it (the web site renders it
        with its own links)."""
        return self._view

    def _load_catalogue(self) -> Catalogue:
        """The products, loaded once per process (`index.shared`)."""
        raise NotImplementedError

    def _make_goal(self, options: dict[str, Any]) -> Goal:
        """The episode's goal: ``options["task_id"]``'s, else one drawn with `np_random`."""
        raise NotImplementedError

    # ------------------------------------------------------------ episode
    def _new_task(self, options: dict[str, Any]) -> str:
        goal = self._make_goal(options)
        catalogue = self.catalogue
        self.index  # noqa: B018 - load the index at reset, not in the first search step
        satisfying = catalogue.satisfying(goal)
        self._goal = goal
        self.task_id = goal.task_id
        self._satisfying = tuple(catalogue.asin(int(i)) for i in satisfying[:MAX_LISTED])
        self._satisfying_count = len(satisfying)
        self._results = ()
        self._searches = 0
        self._purchase = None
        self._view = PageView(kind="search", instruction=goal.instruction)
        return self._render()

    def _render(self) -> str:
        if self.observation_mode == "html":
            from envgym.envs.shop.html import render_html

            return render_html(self._view)
        return render_text(self._view)

    def _act(self, action: str) -> Turn:
        components = {"attributes": 0.0, "options": 0.0, "price": 0.0}
        view = replace(self._view, message="")
        parsed = parse_shop_action(action)
        if parsed is None:
            return self._invalid(view, components, "Invalid action. " + _HINT)
        command, argument = parsed
        if command == "search":
            if not view.has_search_bar:
                return self._invalid(
                    view, components, f"There is no search box on this page; {_back_hint(view)}"
                )
            if not argument:
                return self._invalid(view, components, "The search query is empty. " + _HINT)
            self._search(view, argument[:MAX_QUERY_CHARS])
            return Turn(self._render(), components)
        button = self._button(view, argument)
        if button is None:
            shown = ", ".join(view.clickables) or "none: use search[...]"
            return self._invalid(
                view,
                components,
                f"There is no button {quote_for_feedback(argument, 60)} on this page. "
                f"Buttons: {shown[:600]}.",
            )
        if button == BUY_NOW:
            return self._buy(view, components)
        self._view = self._click(view, button)
        return Turn(self._render(), components)

    def _invalid(self, view: PageView, components: dict[str, float], message: str) -> Turn:
        self._view = replace(view, message=message)
        return Turn(self._render(), components, action_valid=False)

    def _button(self, view: PageView, argument: str) -> str | None:
        wanted = _norm(argument)
        for button in view.clickables:
            if _norm(button) == wanted:
                return button
        return None

    def _search(self, view: PageView, query: str) -> None:
        # Lone surrogates and the like never reach the index or a server.
        query = query.encode("utf-8", "replace").decode("utf-8")
        hits = self.index.search(query, k=RESULTS_LIMIT)
        self._searches += 1
        catalogue = self.catalogue
        positions = []
        for hit in hits:
            i = catalogue.index_of(hit.doc_id)
            if i is not None:
                positions.append(i)
        self._results = tuple(positions)
        self._view = self._results_page(view, query, 1)

    def _results_page(self, view: PageView, query: str, page: int) -> PageView:
        rows = []
        for i in self._results[(page - 1) * PAGE_SIZE : page * PAGE_SIZE]:
            product = self.catalogue.product(i)
            rows.append(ResultRow(product.asin, product.title, product.price))
        return PageView(
            kind="results",
            instruction=view.instruction,
            query=query,
            page=page,
            total=len(self._results),
            rows=tuple(rows),
        )

    def _click(self, view: PageView, button: str) -> PageView:
        if button == BACK_TO_SEARCH:
            self._results = ()
            return PageView(kind="search", instruction=view.instruction)
        if view.kind == "results":
            if button == NEXT_PAGE:
                return self._results_page(view, view.query, view.page + 1)
            if button == PREV_PAGE:
                return self._results_page(view, view.query, view.page - 1)
            position = self.catalogue.index_of(button)
            return replace(view, kind="item", product=self.catalogue.product(position), selected=())
        if view.kind == "item":
            if button == PREV_PAGE:
                return self._results_page(view, view.query, view.page)
            if button in SUB_PAGES:
                return replace(view, kind=SUB_PAGES[button])
            return replace(view, selected=_select(view, button))
        # An item's sub-page: "< Prev" is the only other button.
        return replace(view, kind="item")

    def _buy(self, view: PageView, components: dict[str, float]) -> Turn:
        product = view.product
        assert product is not None and self._goal is not None
        chosen = dict(view.selected)
        reward = shop_reward(product, chosen, product.price, self._goal)
        components.update(reward.components())
        self._purchase = {
            "asin": product.asin,
            "options": chosen,
            "price": product.price,
            "reward": reward.value,
            **reward.details(),
        }
        self._view = replace(view, kind="done", reward=reward, paid=product.price)
        success = math.isclose(reward.value, 1.0)
        return Turn(self._render(), components, terminated=True, success=success)

    # --------------------------------------------------------------- info
    def _task_info(self) -> dict[str, Any]:
        goal = self._goal
        if goal is None:
            return {}
        view = self._view
        if view.has_search_bar:
            actions = [f"search[{_instruction_query(goal.instruction)}]"]
        else:
            actions = [f"click[{button}]" for button in view.clickables]
        asin = view.product.asin if view.product is not None else ""
        chosen = ",".join(f"{g}={v}" for g, v in view.selected)
        query = view.query if view.kind != "search" else ""
        page = view.page if view.kind == "results" else 0
        info: dict[str, Any] = {
            "admissible_actions": actions,
            "state_key": f"{goal.task_id}|{view.kind}|{query}|{page}|{asin}|{chosen}",
            "cost": {"searches": self._searches},
            "privileged": {
                "goal": {
                    **asdict(goal),
                    "options": [list(pair) for pair in goal.options],
                    "attributes": list(goal.attributes),
                    "price_upper": None if math.isinf(goal.price_upper) else goal.price_upper,
                },
                "satisfying_asins": list(self._satisfying),
                "satisfying_count": self._satisfying_count,
            },
        }
        if self._purchase is not None:
            info["purchase"] = dict(self._purchase)
        return info

    def _render_text(self) -> str:
        return render_text(self._view)


class ShopEnv(BaseShopEnv):
    """Shop: find and buy the product an instruction describes (WebShop's task).

    ## Description
    Each episode is one instruction, e.g. "i need a long lasting 6.76 fl oz
    bottle of eau de toilette, and price lower than 100.00 dollars", and a shop
    of ``num_products`` generated products (default 50,000) in 24 categories,
    each with a title, description, bullet points, attributes, option groups
    and a price. The agent searches (BM25 over titles, descriptions, bullet
    points and options), reads results and item pages, chooses options and
    buys. Several products can satisfy an instruction, and near misses (one
    attribute or option short, or over the price) sit beside them.

    ## Action Space
    Text, WebShop's commands: ``search[query]`` on the search page and
    ``click[button]`` with any button of the page (matched without regard to
    case or spacing). The command may stand inside ``<answer>...</answer>``;
    ``<think>`` is ignored; the first command counts. Anything else is invalid:
    the page comes back with feedback, and the turn is used.

    ## Observation Space
    Text. ``observation="text"`` (default): WebShop's text mode, the page's
    parts joined by `` [SEP] ``: the instruction, then the page. ``"html"``: the
    same page as the HTML ``envgym shop serve`` shows (a search form, result
    links, option buttons, ``Buy Now``). Pages: search; results (10 per page, at
    most 50, ``Next >`` / ``< Prev``); item (options by group, title, price,
    rating, ``Description`` / ``Features`` / ``Reviews``, ``Buy Now``); the item's
    sub-pages; done (the score). ``Back to Search`` is on every page but search
    and done; ``< Prev`` goes back one page.

    ## Starting State
    The search page with an instruction made from a target product chosen by
    the seed (or ``options["task_id"]``, e.g. ``"a2o2-123"``).

    ## Rewards
    WebShop's, on ``Buy Now`` only: ``r_type * (matched attributes + matched
    options + price ok) / (goal attributes + goal options + 1)``, with
    deterministic matching (`envgym.envs.shop.reward`). ``reward_components``
    holds the ``attributes``, ``options`` and ``price`` shares (already times
    ``r_type``); they sum to the reward. Every other step pays 0.

    ## Episode End
    Terminated on ``Buy Now``; ``info["success"]`` is True when the reward is
    1. Truncated after ``max_turns`` turns (default 15).

    ## Info
    ``admissible_actions``: ``click[...]`` for every button of the page; on the
    search page, one search with the instruction's words. ``state_key``: the
    task, the page, the search, the product and the options chosen.
    ``cost``: ``searches``. ``purchase`` (after ``Buy Now``): what was bought
    and every part of the reward. ``privileged``: the goal (attributes,
    options, price bound, target asin) and ``satisfying_asins``, every product
    that earns reward 1 (at most 1,000 listed; ``satisfying_count`` has all).

    ## Arguments
    ``difficulty``: ``easy`` (1 attribute, 1 option), ``medium`` (2 and 2),
    ``hard`` (3 and 3); 15 turns each. ``attributes`` (1-3) and ``options``
    (0-3) override the level's (an option count above a product's groups
    takes what it has). ``num_products`` (100 to 1,000,000, default 50,000)
    and ``catalogue_seed`` (default 0) choose the catalogue. ``observation``:
    ``"text"`` or ``"html"``. ``index_url`` / ``index_uds``: search through
    ``envgym shop index-serve`` instead of an index in this process;
    ``cache_dir``: where indexes are kept. ``max_turns`` (1 to 200).

    ## Version History
    * v0: initial version.
    """

    presets: ClassVar[dict[str, ShopPreset]] = {
        "easy": ShopPreset(attributes=1, options=1, max_turns=15),
        "medium": ShopPreset(attributes=2, options=2, max_turns=15),
        "hard": ShopPreset(attributes=3, options=3, max_turns=15),
    }

    def __init__(
        self,
        *,
        difficulty: str = "easy",
        attributes: int | None = None,
        options: int | None = None,
        num_products: int = 50_000,
        catalogue_seed: int = 0,
        observation: str = "text",
        index_url: str | None = None,
        index_uds: str | Path | None = None,
        cache_dir: str | Path | None = None,
        max_turns: int | None = None,
        render_mode: str | None = None,
    ) -> None:
        super().__init__(
            difficulty=difficulty,
            observation=observation,
            index_url=index_url,
            index_uds=index_uds,
            cache_dir=cache_dir,
            max_turns=max_turns,
            render_mode=render_mode,
            attributes=attributes,
            options=options,
        )
        from envgym.envs.shop.catalogue import MAX_PRODUCTS, MIN_PRODUCTS

        self.num_products = check_int(
            num_products, "num_products", MIN_PRODUCTS, MAX_PRODUCTS, "products in the catalogue"
        )
        self.catalogue_seed = check_int(catalogue_seed, "catalogue_seed", 0, 2**63 - 1)

    def _load_catalogue(self) -> Catalogue:
        from envgym.envs.shop.catalogue import GeneratedCatalogue

        n, seed = self.num_products, self.catalogue_seed
        return shared(("generated", n, seed), lambda: GeneratedCatalogue(n, seed))

    def _make_goal(self, options: dict[str, Any]) -> Goal:
        from envgym.envs.shop.goals import goal_from_task_id, make_goal

        catalogue = self.catalogue
        if "task_id" in options:
            return goal_from_task_id(catalogue, options["task_id"])
        seed = int(self.np_random.integers(0, 2**62))
        return make_goal(catalogue, seed, self.config.attributes, self.config.options)


def _select(view: PageView, value: str) -> tuple[tuple[str, str], ...]:
    """The options chosen after clicking `value`: it replaces its group's choice."""
    assert view.product is not None
    for group, values in view.product.options:
        if value in values:
            kept = tuple((g, v) for g, v in view.selected if g != group)
            return (*kept, (group, value))
    return view.selected


def _back_hint(view: PageView) -> str:
    if view.kind == "done":
        return "the episode is over."
    return f"click[{BACK_TO_SEARCH}] first, then search[your query]."


_PRICE_CLAUSE = re.compile(r",?\s*and price lower than [0-9.]+ dollars\.?$")


def _instruction_query(instruction: str) -> str:
    """The instruction's words without the price clause: the search the admissible
    list offers on the search page."""
    return _PRICE_CLAUSE.sub("", instruction).strip()
