"""The generated catalogue: a deterministic shop of 100 to 1,000,000 products over
the product types of `categories`.

The structured part of every product (type, brand, attribute bitmask, one
bitmask of offered values per option group, price, rating, a template variant
number) is drawn at once with numpy from ``np.random.default_rng(seed)``, so
50,000 products take milliseconds and 1,000,000 well under a second. Text
(title, bullets, description, reviews, asin) is rendered on demand by
`GeneratedCatalogue.product` as a pure function of the row, and never mentions
an attribute the product lacks: that, with the table rules in `categories`,
makes `satisfying` an exact bitmask computation of the reward-1 products.
"""

from __future__ import annotations

import hashlib
import itertools
import math
from functools import cached_property, lru_cache
from math import comb
from pathlib import Path

import numpy as np

from envgym.envs.shop import categories
from envgym.envs.shop.categories import TYPES, ProductType
from envgym.envs.shop.model import Goal, Product, Review
from envgym.envs.shop.reward import attribute_matches, type_reward, words

__all__ = ["MAX_PRODUCTS", "MIN_PRODUCTS", "TEMPLATE_TEXTS", "GeneratedCatalogue"]

MIN_PRODUCTS = 100
MAX_PRODUCTS = 1_000_000

# Titles carry at most one value, from the first group that names an amount.
_TITLE_GROUPS = ("size", "count", "pack", "length", "capacity", "weight", "pieces", "thickness")
_ACRONYMS = frozenset(
    "hdmi usb led spf bpa gmo uv rgb tsa lcd pfoa cpr fda msg gan earc hd".split()
)
_SMALL_WORDS = frozenset(("de", "of", "and", "in", "on", "to", "with", "for"))

# Fixed text around the attributes. Every attribute slot sits next to
# punctuation or these words, and no attribute phrase occurs in them (tested),
# so the only attributes a text contains are the product's own.
_ATTRIBUTE_BULLETS = (
    "{ATTR}: {brand} checks every batch for this before it ships.",
    "{ATTR} - one of the reasons customers pick {brand}.",
    "{ATTR}: made with this in mind from the start.",
)
_FEATURE_BULLETS = ("KEY FEATURES: {attrs}.", "HIGHLIGHTS: {attrs}.", "AT A GLANCE: {attrs}.")
_NEUTRAL_BULLETS = (
    "WHAT YOU GET: 1 x {brand} {type}, packed with care.",
    "SHOP WITH CONFIDENCE: our support team answers every question within one business day.",
    "QUALITY CHECKED: every order is inspected before it leaves our warehouse.",
    "GIFT IDEA: a thoughtful pick for birthdays and holidays.",
    "HASSLE FREE RETURNS: send it back within 30 days if it is not right for you.",
)
_DESCRIPTIONS = (
    "{brand} {type}: {attrs}.",
    "Meet the {brand} {type}. Highlights: {attrs}.",
    "{brand} designed the {type} with you in mind: {attrs}.",
    "Need a new {type}? Here is what sets ours apart: {attrs}.",
)
_CLOSINGS = (
    "",
    " It ships in recyclable packaging.",
    " Thousands of customers rely on {brand} every day.",
    " Please check the options before you order.",
)
_REVIEWS = (
    ("Exactly as described", "Arrived quickly and matches the listing."),
    ("Does the job", "I use the {type} every week and have no complaints so far."),
    ("Good value", "For the price the {brand} {type} is hard to beat."),
    ("Would buy again", "Second time ordering from {brand}. Consistent quality."),
    ("Not bad", "It took a few days to get used to, but I am happy with the {type}."),
    ("Gift for my sister", "She was happy with it. Nicely packaged."),
)
TEMPLATE_TEXTS: tuple[str, ...] = (
    *_ATTRIBUTE_BULLETS,
    *_FEATURE_BULLETS,
    *_NEUTRAL_BULLETS,
    *_DESCRIPTIONS,
    *_CLOSINGS,
)
"""The fixed text of titles, bullets and descriptions (for the table rules' tests)."""

_PRICE_ENDINGS = np.array([99, 49, 95, 0, 29], dtype=np.int64)
_ASIN_SPACE = 36**8
# About 36**8 / golden ratio, so neighbouring rows get unrelated-looking asins; odd and
# not a multiple of 3, so the map is invertible modulo 36**8 and `index_of` needs no table.
_ASIN_MULTIPLIER = 1_743_541_808_807
_ASIN_INVERSE = pow(_ASIN_MULTIPLIER, -1, _ASIN_SPACE)
_DIGITS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"

_MAX_POOL = max(len(t.attributes) for t in TYPES)
_MAX_GROUPS = max(len(t.options) for t in TYPES)
_MAX_VALUES = max(len(g.values) for t in TYPES for g in t.options)


def _subset_table(max_n: int, max_k: int) -> tuple[np.ndarray, np.ndarray]:
    """masks[n, k, j]: the j-th k-subset of n bits; counts[n, k]: how many there are."""
    width = max(comb(max_n, k) for k in range(max_k + 1))
    masks = np.zeros((max_n + 1, max_k + 1, width), dtype=np.uint16)
    counts = np.ones((max_n + 1, max_k + 1), dtype=np.int64)
    for n in range(max_n + 1):
        for k in range(min(n, max_k) + 1):
            subsets = [sum(1 << b for b in c) for c in itertools.combinations(range(n), k)]
            masks[n, k, : len(subsets)] = subsets
            counts[n, k] = len(subsets)
    return masks, counts


def _bits(mask: int) -> tuple[int, ...]:
    return tuple(b for b in range(16) if mask >> b & 1)


_BITS = tuple(_bits(m) for m in range(1 << max(_MAX_POOL, _MAX_VALUES)))


def _title_case(phrase: str) -> str:
    out = []
    for w in phrase.split(" "):
        out.append(
            w.upper() if w in _ACRONYMS else w if w in _SMALL_WORDS else w[:1].upper() + w[1:]
        )
    return " ".join(out)


def _draw_subsets(rng: np.random.Generator, pool: np.ndarray, low: int, high: int) -> np.ndarray:
    """Per row, a bitmask of `low`..`high` distinct bits out of `pool[row]` (all of a
    smaller pool)."""
    masks, counts = _SUBSETS
    k = np.minimum(rng.integers(low, high + 1, pool.size), pool)
    pick = (rng.random(pool.size) * counts[pool, k]).astype(np.int64)
    return masks[pool, k, pick]


_SUBSETS = _subset_table(max(_MAX_POOL, _MAX_VALUES), 5)


class GeneratedCatalogue:
    """`num_products` generated products (100 to 1,000,000); same arguments, same shop.

    Implements `model.Catalogue`. Product `i` is rendered when asked for and kept
    in a small cache; `satisfying(goal)` works on the bitmasks without rendering.
    """

    name = "generated"

    def __init__(self, num_products: int = 50_000, seed: int = 0) -> None:
        integral = isinstance(num_products, int | np.integer) and not isinstance(num_products, bool)
        if not integral or not MIN_PRODUCTS <= num_products <= MAX_PRODUCTS:
            raise ValueError(
                f"num_products={num_products!r}: pass an int from {MIN_PRODUCTS} to {MAX_PRODUCTS}"
            )
        if not isinstance(seed, int) or seed < 0:
            raise ValueError(f"seed={seed!r}: pass a non-negative int")
        num_products = int(num_products)
        self.num_products, self.seed = num_products, seed
        n = num_products
        rng = np.random.default_rng(seed)
        pools = np.array([len(t.attributes) for t in TYPES], dtype=np.int64)
        groups = np.array(
            [
                [len(g.values) for g in t.options] + [0] * (_MAX_GROUPS - len(t.options))
                for t in TYPES
            ],
            dtype=np.int64,
        )
        brands = np.array([len(t.brands) for t in TYPES], dtype=np.int64)
        low = np.array([t.price_low for t in TYPES], dtype=np.int64)
        high = np.array([t.price_high for t in TYPES], dtype=np.int64)

        type_id = rng.integers(0, len(TYPES), n)
        self.type_id = type_id.astype(np.uint16)
        self.brand = (rng.random(n) * brands[type_id]).astype(np.uint8)
        self.attributes = _draw_subsets(rng, pools[type_id], 2, 4)
        self.options = np.stack(
            [_draw_subsets(rng, groups[type_id, g], 2, 5) for g in range(_MAX_GROUPS)], axis=1
        ).astype(np.uint8)
        dollars = low[type_id] + (rng.random(n) * (high - low + 1)[type_id]).astype(np.int64)
        ending = _PRICE_ENDINGS[rng.integers(0, _PRICE_ENDINGS.size, n)]
        self.price_cents = (dollars * 100 + ending).astype(np.uint32)
        self.rating_tenths = rng.integers(30, 51, n).astype(np.uint8)
        self.style = rng.integers(0, 2**32, n, dtype=np.uint32)
        self._asin_offset = (seed * 0x9E3779B97F4A7C15 + 0x2545F491) % _ASIN_SPACE
        self._init_caches()

    # -- pickling: caches are rebuilt, not stored ----------------------------------
    def _init_caches(self) -> None:
        self._product = lru_cache(maxsize=4096)(self._render)
        self._rows_by_type: list[np.ndarray] | None = None
        self._type_rows: dict[tuple[str, str, str], tuple[int, ...]] = {}

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        for key in ("_product", "_rows_by_type", "_type_rows"):
            state.pop(key, None)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._init_caches()

    # -- the Catalogue protocol -------------------------------------------------------
    def __len__(self) -> int:
        return self.num_products

    @cached_property
    def fingerprint(self) -> str:
        """sha256 of the structured arrays, the arguments and the source of the tables
        and templates (editing a template changes it); no text is rendered."""
        h = hashlib.sha256(f"generated:{self.num_products}:{self.seed}".encode())
        for array in (self.type_id, self.brand, self.attributes, self.options):
            h.update(np.ascontiguousarray(array).tobytes())
        for array in (self.price_cents, self.rating_tenths, self.style):
            h.update(np.ascontiguousarray(array).tobytes())
        for module_file in (categories.__file__, __file__):
            h.update(Path(module_file).read_bytes())
        return h.hexdigest()

    def product(self, i: int) -> Product:
        return self._product(self._position(i))

    def asin(self, i: int) -> str:
        """Product `i`'s asin: "B0" and 8 base-36 digits of an invertible affine map of `i`."""
        x = (_ASIN_MULTIPLIER * self._position(i) + self._asin_offset) % _ASIN_SPACE
        digits = []
        for _ in range(8):
            x, d = divmod(x, 36)
            digits.append(_DIGITS[d])
        return "B0" + "".join(reversed(digits))

    def index_of(self, asin: str) -> int | None:
        if not isinstance(asin, str) or len(asin) != 10 or not asin.startswith("B0"):
            return None
        x = 0
        for ch in asin[2:]:
            d = _DIGITS.find(ch)
            if d < 0:
                return None
            x = x * 36 + d
        i = (x - self._asin_offset) * _ASIN_INVERSE % _ASIN_SPACE
        return i if i < self.num_products else None

    def search_text(self, i: int) -> tuple[str, str]:
        p = self._render(self._position(i), with_reviews=False)
        lines = [p.description, *p.bullets]
        lines += [f"{group}: {', '.join(values)}" for group, values in p.options]
        return p.title, "\n".join(lines)

    def satisfying(self, goal: Goal) -> np.ndarray:
        """Sorted positions of every product that earns reward 1 for `goal` with the best
        options chosen: type reward 1, every goal attribute, every goal option value
        offered (one value per group), price within the bound."""
        found = []
        known = all(a.lower() in _ATTRIBUTE_VOCABULARY for a in goal.attributes)
        wanted = [value for _, value in goal.options]
        for t in self._types_of_reward_one(goal):
            rows = self._rows(t)
            ok = self._options_ok(TYPES[t], rows, wanted)
            if not math.isinf(goal.price_upper):
                ok &= self.price_cents[rows].astype(np.float64) / 100.0 <= goal.price_upper
            if known:
                for attribute in goal.attributes:
                    mask = _attribute_mask(t, attribute.lower())
                    ok &= (self.attributes[rows] & mask) != 0
                found.append(rows[ok])
            else:  # a goal attribute the table never uses: check the rendered text itself
                wanted_attrs = goal.attributes
                found.append(
                    np.array(
                        [
                            i
                            for i in rows[ok].tolist()
                            if attribute_matches(self.product(i), wanted_attrs) == len(wanted_attrs)
                        ],
                        dtype=np.int64,
                    )
                )
        if not found:
            return np.zeros(0, dtype=np.int64)
        return np.sort(np.concatenate(found).astype(np.int64))

    # -- satisfying's parts -----------------------------------------------------------
    def _rows(self, t: int) -> np.ndarray:
        if self._rows_by_type is None:
            order = np.argsort(self.type_id, kind="stable")
            bounds = np.searchsorted(self.type_id[order], np.arange(len(TYPES) + 1))
            self._rows_by_type = [order[bounds[k] : bounds[k + 1]] for k in range(len(TYPES))]
        return self._rows_by_type[t]

    def _types_of_reward_one(self, goal: Goal) -> tuple[int, ...]:
        key = (goal.query, goal.product_category, goal.product_type)
        if key not in self._type_rows:
            self._type_rows[key] = tuple(
                t for t, proto in enumerate(_PROTOTYPES) if type_reward(proto, goal) == 1.0
            )
        return self._type_rows[key]

    def _options_ok(self, ptype: ProductType, rows: np.ndarray, wanted: list[str]) -> np.ndarray:
        """Whether some choice of one offered value per group matches every wanted value."""
        if not wanted:
            return np.ones(rows.size, dtype=bool)
        offered = self.options[rows]
        # match[h][k]: values of group h matching wanted value k
        match = [
            [sum(1 << j for j, v in enumerate(g.values) if _either_subset(w, v)) for w in wanted]
            for g in ptype.options
        ]
        ok = np.zeros(rows.size, dtype=bool)
        for assignment in itertools.product(range(len(ptype.options)), repeat=len(wanted)):
            cond = np.ones(rows.size, dtype=bool)
            for h in sorted(set(assignment)):
                mask = (1 << 16) - 1
                for k, group in enumerate(assignment):
                    if group == h:
                        mask &= match[h][k]
                cond &= (offered[:, h] & mask) != 0
            ok |= cond
        return ok

    # -- rendering ------------------------------------------------------------------
    def _position(self, i: int) -> int:
        i = int(i)
        if not 0 <= i < self.num_products:
            raise IndexError(
                f"product position {i} is outside the catalogue (0..{self.num_products - 1})"
            )
        return i

    def _render(self, i: int, with_reviews: bool = True) -> Product:
        info = _INFO[int(self.type_id[i])]
        t: ProductType = info.type
        s = int(self.style[i])
        brand = t.brands[int(self.brand[i])]
        attrs = tuple(t.attributes[b] for b in _BITS[int(self.attributes[i])])
        masks = self.options[i]
        options = tuple(
            (g.name, tuple(g.values[j] for j in _BITS[int(masks[h])]))
            for h, g in enumerate(t.options)
        )
        lead = s % len(attrs)
        order = attrs[lead:] + attrs[:lead]
        # Titles carry 1 to 3 of the attributes, as keyword-rich shop titles do; the
        # rest are only in the bullets and description.
        shown = order[: (1, 1, 2, 3)[(s >> 4) & 3]]
        title = f"{brand} {_title_case(shown[0])} {info.title_phrase}"
        title += "".join(f", {_title_case(a)}" for a in shown[1:])
        if info.title_group >= 0 and (s >> 6) & 1:
            title += f", {options[info.title_group][1][0]}"
        fill = {"type": t.phrase, "brand": brand}
        # The feature list comes first: the reward reads title and bullets joined by a
        # space, and a title ending in an attribute next to a bullet starting with one
        # could spell a third ("labeled" + "lightweight" holds "led light").
        bullets = [_FEATURE_BULLETS[(s >> 10) % 3].format(attrs=", ".join(order))]
        bullets += [
            _ATTRIBUTE_BULLETS[((s >> 7) + j) % 3].format(ATTR=a.upper(), **fill)
            for j, a in enumerate(order[: 1 + ((s >> 9) & 1)])
        ]
        start = (s >> 12) % len(_NEUTRAL_BULLETS)
        for j in range(3 + (s >> 15) % 3 - len(bullets)):
            bullets.append(_NEUTRAL_BULLETS[(start + j) % len(_NEUTRAL_BULLETS)].format(**fill))
        description = _DESCRIPTIONS[(s >> 17) % 4].format(attrs=", ".join(attrs), **fill)
        description += _CLOSINGS[(s >> 19) % 4].format(**fill)
        rating = int(self.rating_tenths[i]) / 10
        reviews: tuple[Review, ...] = ()
        if with_reviews:
            first = (s >> 21) % len(_REVIEWS)
            reviews = tuple(
                Review(
                    score=max(1, min(5, round(rating) - ((s >> (25 + j)) & 1))),
                    title=_REVIEWS[(first + j) % len(_REVIEWS)][0],
                    body=_REVIEWS[(first + j) % len(_REVIEWS)][1].format(**fill),
                )
                for j in range((s >> 23) % 4)
            )
        return Product(
            asin=self.asin(i),
            title=title,
            category=t.category,
            product_category=info.breadcrumb,
            query=t.phrase,
            product_type=t.phrase,
            description=description,
            bullets=tuple(bullets),
            attributes=attrs,
            options=options,
            price=int(self.price_cents[i]) / 100,
            rating=rating,
            reviews=reviews,
        )


class _TypeInfo:
    """What rendering needs of a type, computed once."""

    def __init__(self, ptype: ProductType) -> None:
        self.type = ptype
        self.title_phrase = _title_case(ptype.phrase)
        self.breadcrumb = f"{ptype.root} › {ptype.subcategory} › {self.title_phrase}"
        names = [g.name for g in ptype.options]
        self.title_group = next((names.index(n) for n in _TITLE_GROUPS if n in names), -1)


_INFO = tuple(_TypeInfo(t) for t in TYPES)
_PROTOTYPES = tuple(
    Product(
        asin="",
        title="",
        category=t.category,
        product_category=info.breadcrumb,
        query=t.phrase,
        product_type=t.phrase,
        description="",
        bullets=(),
        attributes=(),
        options=(),
        price=0.0,
    )
    for t, info in zip(TYPES, _INFO, strict=True)
)
_ATTRIBUTE_VOCABULARY = frozenset(a for t in TYPES for a in t.attributes)


def _either_subset(a: str, b: str) -> bool:
    wa, wb = words(a), words(b)
    return bool(wa) and bool(wb) and (wa <= wb or wb <= wa)


@lru_cache(maxsize=65536)
def _attribute_mask(t: int, attribute: str) -> int:
    """Bits of type `t`'s pool that make `attribute` match: by words either way, or
    as a substring of the pool phrase (every own phrase is in the product's text)."""
    pool = TYPES[t].attributes
    return sum(
        1 << b
        for b, have in enumerate(pool)
        if _either_subset(attribute, have) or attribute in have
    )
