"""The original WebShop data (princeton-nlp/WebShop) as a `Catalogue` and a goal
list, for ``envgym/WebShop-v0``. The files, as WebShop's own code reads them:

* ``setup.sh`` fetches them with ``gdown`` from Google Drive into ``data/``:
  ``items_shuffle_1000.json`` (products) and ``items_ins_v2_1000.json`` (attributes)
  with ``-d small``, ``items_shuffle.json`` and ``items_ins_v2.json`` with ``-d all``,
  ``items_human_ins.json`` always; ``web_agent_site/utils.py`` names the ``_1000`` ones.
* Products (``engine/engine.py``, ``load_products``): a JSON list of records, skipped
  when ``asin`` is ``'nan'``, over 10 characters or seen before (``num_products`` cuts
  the raw list first). ``name`` is the title, ``full_description`` the description,
  ``small_description`` the bullet points (a list or one string); ``query`` is
  lower-cased and stripped. ``pricing`` is dollar amounts (``"$10.99$15.99"``) split on
  ``$``, all but digits and dots dropped; empty or missing means $100.
  ``customization_options`` maps a group to ``[{"value", "image"}, ...]`` (None:
  skipped); groups lower-cased, values stripped, lower-cased, ``/`` written `` | ``.
* Attributes (``items_ins_v2*.json``): an object asin -> record; its ``attributes``
  list, else ``['DUMMY_ATTR']``. Human instructions (``items_human_ins.json``): asin
  -> list of ``{instruction, instruction_attributes, instruction_options, ...}``.
* Goals (``engine/goal.py``, ``get_human_goals``): none for an instruction without
  attributes; of the first four of ``PRICE_RANGE = [10, 20, ..., 990]`` above the
  price two are sampled and the larger is the bound, ``", and price lower than X.XX
  dollars"`` going after ``instruction.strip('.')`` (under two candidates: no bound, no
  clause). ``get_reward`` takes ``goal_options`` as a list or a dict group -> value.
* Search documents (``search_engine/convert_product_file_format.py``): title,
  description, first bullet point, "group: v1, v2" per group joined by ", and ".

Where envgym differs: WebShop draws each price inside its ``pricing`` range at start
(``generate_product_prices``); envgym charges the low end, so no reward hangs on a
draw. No bound is ``inf`` (WebShop: 1000000); bounds use numpy seeded by (`seed`, goal
position). No reviews (``reviews.json`` is not downloaded); repeated option values
are listed once. Files are read record by record (the full products file is GBs).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import astuple, dataclass, replace
from decimal import Decimal, InvalidOperation
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from envgym.envs.shop.json_stream import JsonStream
from envgym.envs.shop.model import Goal, Product, price_bound
from envgym.envs.shop.reward import option_matches, shop_reward

__all__ = [
    "WebShopCatalogue",
    "WebShopDataMissing",
    "WebShopFiles",
    "WebShopFormatError",
    "find_webshop_files",
    "load_webshop",
    "load_webshop_goals",
    "webshop_data_dir",
]

LOADER_FORMAT = 1  # bump when a conversion rule changes: it re-keys cached search indexes
PRODUCT_FILES = ("items_shuffle.json", "items_shuffle_1000.json")
ATTRIBUTE_FILES = ("items_ins_v2.json", "items_ins_v2_1000.json")
HUMAN_FILE = "items_human_ins.json"
_FILES = {"products": PRODUCT_FILES, "attributes": ATTRIBUTE_FILES, "instructions": (HUMAN_FILE,)}
_ENV_VAR = "ENVGYM_WEBSHOP_DATA"


class WebShopDataMissing(FileNotFoundError):
    """WebShop's data files are not in the folder envgym looked in."""


class WebShopFormatError(ValueError):
    """A WebShop data file is not in WebShop's format (the message says where)."""


def webshop_data_dir(data_dir: str | Path | None = None) -> Path:
    """`data_dir`, else ``$ENVGYM_WEBSHOP_DATA``, else ``~/.cache/envgym/webshop``."""
    if data_dir is None:
        data_dir = os.environ.get(_ENV_VAR) or Path.home() / ".cache" / "envgym" / "webshop"
    return Path(data_dir).expanduser()


@dataclass(frozen=True)
class WebShopFiles:
    """The three files one WebShop shop is made of."""

    products: Path
    attributes: Path
    human_instructions: Path


def _fail(file: Path, where: str, what: str) -> WebShopFormatError:
    return WebShopFormatError(f"{file}: {where}: {what}")


def _missing_message(folder: Path, source: str, missing: Sequence[str]) -> str:
    return (
        f"WebShop data missing in {folder} ({source}): no {'; no '.join(missing)}.\n"
        "envgym/WebShop-v0 runs on the original WebShop files (github.com/princeton-nlp/"
        "WebShop), which its setup.sh downloads with gdown from Google Drive: "
        "items_shuffle_1000.json and items_ins_v2_1000.json (`setup.sh -d small`, 1,000 "
        "products) or items_shuffle.json and items_ins_v2.json (`-d all`, the full set), "
        f"and items_human_ins.json in both cases. Put them in {folder}, or put them in "
        f"another folder and pass data_dir= or set ${_ENV_VAR} to it "
        "(default: ~/.cache/envgym/webshop). For a shop that needs no download, use "
        "envgym/Shop-v0."
    )


def find_webshop_files(data_dir: str | Path | None = None) -> WebShopFiles:
    """The WebShop files in `data_dir` (see `webshop_data_dir`); the full set's files
    are preferred over the 1,000-product ones. Raises `WebShopDataMissing`."""
    folder = webshop_data_dir(data_dir)
    found = {
        k: next(filter(Path.is_file, map(folder.joinpath, v)), None) for k, v in _FILES.items()
    }
    missing = [f"{' or '.join(_FILES[k])} ({k})" for k, path in found.items() if path is None]
    if missing:
        if data_dir is not None:
            source = "the folder given as data_dir="
        elif os.environ.get(_ENV_VAR):
            source = f"from ${_ENV_VAR}"
        else:
            source = f"the default folder; neither data_dir= nor ${_ENV_VAR} was given"
        raise WebShopDataMissing(_missing_message(folder, source, missing))
    return WebShopFiles(*found.values())  # type: ignore[arg-type]


# --------------------------------------------------------------- product conversion
def _text(
    record: Mapping[str, Any], key: str, where: str, file: Path, *, none: bool = False
) -> str:
    value = record.get(key, ...)  # ... marks a missing field, None a null one
    if value is ...:
        raise _fail(file, where, f"no {key!r} field")
    if not isinstance(value, str) and not (value is None and none):
        raise _fail(file, where, f"{key!r} is {value!r}, not a string")
    return value or ""


def _price(pricing: Any, where: str, file: Path) -> float:
    """The low end of WebShop's ``pricing`` ("$10.99", "$10.99$15.99"); $100 when empty."""
    if not pricing:
        return 100.0  # WebShop's price for a product without pricing
    if isinstance(pricing, list) and all(isinstance(p, int | float) for p in pricing):
        return float(min(pricing[:2]))  # some WebShop derivatives store parsed prices
    if isinstance(pricing, str):
        try:
            amounts = [float(Decimal(re.sub(r"[^\d.]", "", p))) for p in pricing.split("$")[1:]]
        except InvalidOperation:
            amounts = []
        if amounts:
            return min(amounts[:2])
    raise _fail(file, where, f"'pricing' is {pricing!r}, not like '$10.99' or '$10.99$15.99'")


def _options(raw: Any, where: str, file: Path) -> tuple[tuple[str, tuple[str, ...]], ...]:
    if not raw:
        return ()
    if not isinstance(raw, dict):
        raise _fail(file, where, "'customization_options' is not an object")
    groups: dict[str, tuple[str, ...]] = {}
    for name, contents in raw.items():
        if contents is None:
            continue
        if not isinstance(contents, list) or not all(
            isinstance(c, dict) and isinstance(c.get("value"), str) for c in contents
        ):
            raise _fail(file, where, f"option group {name!r} is not a list of {{'value': ...}}")
        values = (c["value"].strip().replace("/", " | ").lower() for c in contents)
        # A later group with the same lower-cased name replaces the earlier, as in WebShop.
        groups[name.lower()] = tuple(dict.fromkeys(values))
    return tuple(groups.items())


def _product(record: Any, n: int, file: Path) -> Product | None:
    """WebShop's conversion of one product record; None for one it skips."""
    if not isinstance(record, dict):
        raise _fail(file, f"record {n}", "not a JSON object")
    asin = _text(record, "asin", f"record {n}", file)
    if asin == "nan" or len(asin) > 10:
        return None
    where = f"record {n} (asin {asin})"
    bullets = record.get("small_description")
    if isinstance(bullets, str):
        bullets = [bullets]
    if bullets is None or not all(isinstance(b, str) for b in bullets):
        raise _fail(file, where, f"'small_description' is {bullets!r}, not text")
    name = _text(record, "name", where, file)
    return Product(
        asin=asin,
        title=name,
        category=_text(record, "category", where, file, none=True),
        product_category=_text(record, "product_category", where, file, none=True),
        query=_text(record, "query", where, file).lower().strip(),
        product_type=name,
        description=_text(record, "full_description", where, file, none=True),
        bullets=tuple(bullets),
        attributes=("DUMMY_ATTR",),
        options=_options(record.get("customization_options"), where, file),
        price=_price(record.get("pricing"), where, file),
    )


def _strings(value: Any, what: str, where: str, file: Path) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _fail(file, where, f"{what} is {value!r}, not a list of strings")
    return tuple(value)


# ------------------------------------------------------------------- the catalogue
class WebShopCatalogue:
    """WebShop's products as a `Catalogue` (see the module docstring for the rules)."""

    name = "webshop"

    def __init__(self, products: Sequence[Product], fingerprint: str) -> None:
        self._products = tuple(products)
        self.fingerprint = fingerprint
        self._positions = {p.asin: i for i, p in enumerate(self._products)}
        self._by_query: dict[str, list[int]] = {}
        for i, p in enumerate(self._products):
            self._by_query.setdefault(p.query, []).append(i)
        self._satisfying: dict[Goal, np.ndarray] = {}

    def __len__(self) -> int:
        return len(self._products)

    def product(self, i: int) -> Product:
        return self._products[i]

    def asin(self, i: int) -> str:
        return self._products[i].asin

    def index_of(self, asin: str) -> int | None:
        return self._positions.get(asin)

    def search_text(self, i: int) -> tuple[str, str]:
        """(title, the rest of WebShop's search document: description, first bullet
        point, "group: v1, v2" per group joined by ", and ")."""
        p = self._products[i]
        option_text = ", and ".join(f"{g}: {', '.join(vs)}" for g, vs in p.options)
        first_bullet = p.bullets[0] if p.bullets else ""
        return p.title, " ".join((p.description, first_bullet, option_text))

    def best_options(self, i: int, goal: Goal) -> dict[str, str]:
        """Options of product `i` for `goal`: per goal option not yet matched, the first
        unchosen group offering a matching value (greedy: misses only contested groups)."""
        chosen: dict[str, str] = {}
        for _, wanted in goal.options:
            if option_matches(chosen.values(), [wanted]):
                continue
            for group, values in self._products[i].options:
                if group in chosen:
                    continue
                value = next((v for v in values if option_matches([v], [wanted])), None)
                if value is not None:
                    chosen[group] = value
                    break
        return chosen

    def best_reward(self, i: int, goal: Goal) -> float:
        """The reward for buying product `i` at its price with `best_options`."""
        p = self._products[i]
        return shop_reward(p, self.best_options(i, goal), p.price, goal).value

    def satisfying(self, goal: Goal) -> np.ndarray:
        """Positions of the products with `goal`'s query that earn reward 1 at their
        price with `best_options`. Only the goal's query is examined (the full set is a
        million products), though the type reward accepts some products of others."""
        cached = self._satisfying.get(goal)
        if cached is None:
            ps, bound = self._products, goal.price_upper  # price first: cheap, rules out most
            fits = [i for i in self._by_query.get(goal.query, ()) if ps[i].price <= bound]
            hits = [i for i in fits if self.best_reward(i, goal) >= 1 - 1e-9]
            cached = np.array(hits, dtype=np.int64)
            cached.setflags(write=False)
            self._satisfying[goal] = cached
        return cached


# ------------------------------------------------------------------------ goals
def _goal_options(raw: Any, where: str, file: Path) -> tuple[tuple[str, str], ...]:
    pairs = list(raw.items()) if isinstance(raw, dict) else [("", v) for v in raw or ()]
    if not isinstance(raw, dict | list) or not all(isinstance(v, str) for _, v in pairs):
        raise _fail(file, where, f"'instruction_options' is {raw!r}, not a list or an object")
    return tuple((k, v.strip()) for k, v in pairs if v.strip())


def load_webshop_goals(
    catalogue: WebShopCatalogue, files: WebShopFiles, seed: int = 0
) -> list[Goal]:
    """WebShop's human goals (``get_human_goals``) for the products of `catalogue`, in
    catalogue order (see the module docstring)."""
    file = files.human_instructions
    with JsonStream(file, hashlib.sha256(), lambda **_: None, _fail) as reader:
        instructions = dict(reader.entries("object"))
    goals: list[Goal] = []
    for i in range(len(catalogue)):
        product = catalogue.product(i)
        records = instructions.get(product.asin)
        if records is None:
            continue
        if not isinstance(records, list):
            raise _fail(file, f"entry {product.asin!r}", "not a list of records")
        for k, record in enumerate(records):
            where = f"entry {product.asin!r}, instruction {k}"
            if not isinstance(record, dict):
                raise _fail(file, where, "not a JSON object")
            attributes = _strings(
                record.get("instruction_attributes"), "'instruction_attributes'", where, file
            )
            if not attributes:
                continue  # WebShop skips instructions without attributes
            text = _text(record, "instruction", where, file)
            options = _goal_options(record.get("instruction_options", []), where, file)
            bound = price_bound(product.price, np.random.default_rng([seed, len(goals)]))
            clause = "" if bound == float("inf") else f", and price lower than {bound:.2f} dollars"
            goals.append(
                Goal(
                    task_id=f"{product.asin}-{k}",
                    asin=product.asin,
                    instruction=text.strip(".") + clause,
                    query=product.query,
                    category=product.category,
                    product_category=product.product_category,
                    product_type=product.product_type,
                    attributes=attributes,
                    options=options,
                    price_upper=bound,
                )
            )
    return goals


# ------------------------------------------------------------------------ loading
_CACHE: dict[tuple, tuple[WebShopCatalogue, list[Goal]]] = {}


def load_webshop(
    data_dir: str | Path | None = None,
    *,
    num_products: int | None = None,
    seed: int = 0,
    show_progress: bool | None = None,
) -> tuple[WebShopCatalogue, list[Goal]]:
    """The WebShop catalogue and its human goals from the files in `data_dir` (see
    `find_webshop_files`), read once per process for the same files and arguments.

    `num_products` keeps the first N product records (before WebShop's filtering, as
    WebShop does). `show_progress` shows a progress bar on stderr; by default, when
    the files add up to more than 64 MiB. Raises `WebShopDataMissing` when files are
    missing and `WebShopFormatError` when one is not in WebShop's format.
    """
    if num_products is not None and num_products < 1:
        raise ValueError(f"num_products must be a positive number or None, not {num_products}")
    files = find_webshop_files(data_dir)
    stats = {p.resolve(): p.stat() for p in astuple(files)}
    key = (tuple((p, s.st_mtime_ns, s.st_size) for p, s in stats.items()), num_products, seed)
    if key not in _CACHE:
        total = sum(s.st_size for s in stats.values())
        show = total > (64 << 20) if show_progress is None else show_progress
        if len(_CACHE) >= 4:
            _CACHE.pop(next(iter(_CACHE)))
        _CACHE[key] = _read_all(files, num_products, seed, total, show)
    return _CACHE[key]


def _read_all(
    files: WebShopFiles, num_products: int | None, seed: int, total: int, show: bool
) -> tuple[WebShopCatalogue, list[Goal]]:
    from rich.console import Console
    from rich.progress import DownloadColumn, Progress

    hasher = hashlib.sha256(f"envgym-webshop/{LOADER_FORMAT}/{num_products}\n".encode())
    columns = (*Progress.get_default_columns(), DownloadColumn())
    progress = Progress(*columns, console=Console(stderr=True), disable=not show, transient=True)
    with progress:
        task = progress.add_task("reading WebShop files", total=total)

        def stream(path: Path) -> JsonStream:
            progress.update(task, description=path.name)
            return JsonStream(path, hasher, partial(progress.update, task), _fail)

        products: dict[str, Product] = {}
        with stream(files.products) as reader:
            for n, record in reader.entries("list"):
                if num_products is not None and n >= num_products:
                    break  # the bytes read so far are hashed: they hold every record kept
                product = _product(record, n, files.products)
                if product is not None and product.asin not in products:
                    products[product.asin] = product
        with stream(files.attributes) as reader:
            for asin, record in reader.entries("object"):
                if asin in products and isinstance(record, dict) and "attributes" in record:
                    have = _strings(record["attributes"], "'attributes'", asin, files.attributes)
                    products[asin] = replace(products[asin], attributes=have)
        hasher.update(files.human_instructions.read_bytes())  # a few MB; goals read it again
        progress.update(task, description="WebShop files read", completed=total)
    catalogue = WebShopCatalogue(list(products.values()), hasher.hexdigest())
    return catalogue, load_webshop_goals(catalogue, files, seed)
