"""envgym/WebShop-v0: the Shop env on WebShop's own product and instruction files.

Same pages, actions and reward as `ShopEnv`; the products and the human
instructions come from the files `webshop.py` reads. Named apart from
``envgym/Shop-v0`` so a score on the generated catalogue is never taken for a
WebShop score.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from envgym.core import Preset, check_int, short_repr
from envgym.envs.shop.index import shared
from envgym.envs.shop.model import Catalogue, Goal
from envgym.envs.shop.shop import BaseShopEnv

__all__ = ["SPLITS", "WebShopEnv"]

#: WebShop's goal splits after its shuffle (random.seed(233)): test, eval, train.
SPLITS = {"test": (0, 500), "eval": (500, 1500), "train": (1500, None), "all": (0, None)}


@dataclass(frozen=True)
class WebShopPreset(Preset):
    """WebShop has one level; only the turn limit is set."""


class WebShopEnv(BaseShopEnv):
    """WebShop: the Shop env on WebShop's own products and human instructions.

    ## Description
    WebShop's task (Yao et al., 2022) on its released data: 1.18 million
    products (or the 1,000-product development file) and about 12,000 human
    instructions. envgym reads the JSON files; it needs no Java, no Lucene
    and no spaCy: search is BM25 (bm25s) and the reward matches words
    deterministically (`envgym.envs.shop.reward`). The files are not shipped:
    without them, making the env raises an error that says which WebShop
    files to download and where to put them (``data_dir=``, else
    ``$ENVGYM_WEBSHOP_DATA``, else ``~/.cache/envgym/webshop``).

    ## Action Space, Observation Space, Rewards, Episode End, Info
    As `envgym.envs.shop.ShopEnv` (``envgym info envgym/Shop-v0``). A product's
    price is the low end of its price range (WebShop draws one at random
    inside it), and instruction price bounds are drawn by envgym's seeded
    rule from WebShop's price steps, so a price clause can differ from
    WebShop's. ``privileged["satisfying_asins"]`` counts the products of the
    goal's search query only.

    ## Starting State
    An instruction drawn by the seed from the ``split`` (or
    ``options["task_id"]``: ``"ASIN-K"``, the K-th instruction written for
    that product).

    ## Arguments
    ``data_dir``: the folder with the files. ``split``: WebShop's goal split
    after its shuffle with seed 233: ``"test"`` (the first 500 goals, the
    default), ``"eval"`` (the next 1,000), ``"train"`` (the rest) or
    ``"all"``. ``num_products``: keep only the first N products, as WebShop's
    ``num_products``. ``observation``, ``index_url`` / ``index_uds``,
    ``cache_dir``, ``max_turns`` as in Shop-v0.

    ## Version History
    * v0: initial version.
    """

    presets: ClassVar[dict[str, WebShopPreset]] = {"standard": WebShopPreset(max_turns=15)}

    def __init__(
        self,
        *,
        difficulty: str = "standard",
        data_dir: str | Path | None = None,
        split: str = "test",
        num_products: int | None = None,
        observation: str = "text",
        index_url: str | None = None,
        index_uds: str | Path | None = None,
        cache_dir: str | Path | None = None,
        max_turns: int | None = None,
        render_mode: str | None = None,
    ) -> None:
        from envgym.envs.shop.webshop import find_webshop_files

        super().__init__(
            difficulty=difficulty,
            observation=observation,
            index_url=index_url,
            index_uds=index_uds,
            cache_dir=cache_dir,
            max_turns=max_turns,
            render_mode=render_mode,
        )
        if split not in SPLITS:
            raise ValueError(f"split must be one of {', '.join(SPLITS)}, not {short_repr(split)}")
        if num_products is not None:
            num_products = check_int(num_products, "num_products", 1, 10**8, "products kept")
        # Here, not at the first reset: a missing download is said when the env is made.
        self._files = find_webshop_files(data_dir)
        self.data_dir = None if data_dir is None else str(data_dir)
        self.split = split
        self.num_products = num_products
        self._goals: list[Goal] | None = None

    snapshot_exclude: ClassVar[tuple[str, ...]] = (
        *BaseShopEnv.snapshot_exclude,
        "_files",
        "_goals",
    )

    def _loaded(self) -> tuple[Catalogue, list[Goal]]:
        from envgym.envs.shop.webshop import load_webshop

        def load() -> tuple[Catalogue, list[Goal]]:
            catalogue, goals = load_webshop(self.data_dir, num_products=self.num_products)
            order = list(goals)
            random.Random(233).shuffle(order)
            start, end = SPLITS[self.split]
            return catalogue, order[start:end]

        return shared(("webshop", str(self._files), self.num_products, self.split), load)

    def _load_catalogue(self) -> Catalogue:
        return self._loaded()[0]

    def _make_goal(self, options: dict[str, Any]) -> Goal:
        catalogue, goals = self._loaded()
        self._catalogue = catalogue
        if not goals:
            raise ValueError(
                f"the {self.split!r} split of the WebShop files in {self._files} holds no "
                "instructions; use split='all' or the full files"
            )
        if "task_id" in options:
            task_id = options["task_id"]
            for goal in goals:
                if goal.task_id == task_id:
                    return goal
            raise ValueError(
                f"task_id {short_repr(task_id)} is not in the {self.split!r} split; use an id "
                "from info['task_id']"
            )
        return goals[int(self.np_random.integers(len(goals)))]
