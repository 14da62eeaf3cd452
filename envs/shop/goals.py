"""Instructions for the generated catalogue, written the way WebShop's are.

A goal is drawn from a target product: some of its attributes, one offered value
from some of its option groups, and a price bound set as WebShop sets it (the
larger of two draws among the first four multiples of $10 above the price).
The instruction names every goal attribute, option value and the type phrase
verbatim ("i want a powder coated water bottle in size 24 oz and sport cap lid,
and price lower than 60.00 dollars"), so a careful reader can find the goal;
other products of the type may satisfy it too, and near-misses (one attribute
or option short, or over the bound) are common.

Task ids read ``a<attributes>o<options>-<seed>``: ``a2o1-17`` asks for two
attributes and one option, drawn with seed 17.
"""

from __future__ import annotations

import math
import re

import numpy as np

from envgym.envs.shop.catalogue import GeneratedCatalogue
from envgym.envs.shop.categories import TYPES
from envgym.envs.shop.model import PRICE_RANGE, Goal, price_bound

__all__ = [
    "MAX_GOAL_ATTRIBUTES",
    "PRICE_RANGE",
    "format_task_id",
    "goal_from_task_id",
    "make_goal",
]

MAX_GOAL_ATTRIBUTES = 4
"""Products carry 2 to 4 attributes, so a goal asks for at most 4."""

_MAX_GROUPS = max(len(t.options) for t in TYPES)
_TASK_ID = re.compile(r"a(\d+)o(\d+)-(\d+)")
_TASK_ID_FORMAT = "'a<attributes>o<options>-<seed>', e.g. 'a2o1-17'"

# How each option group reads in a sentence; other groups read "{v} {group}".
_GROUP_PHRASES = {
    "size": "size {v}",
    "color": "{v} color",
    "flavor": "{v} flavor",
    "scent": "{v} scent",
    "roast": "{v}",
    "count": "{v}",
    "pack": "{v}",
    "pieces": "{v}",
    "weight": "{v}",
    "set": "{v}",
    "edition": "{v}",
    "form": "{v}",
    "voltage": "{v}",
    "metal": "{v}",
    "switch": "{v}",
    "material": "made of {v}",
    "thickness": "{v} thick",
    "power": "powered by {v}",
}
_TEMPLATES = (
    "i need {article}{attrs_before}{noun}{options}{price}",
    "i am looking for {article}{noun}{attrs_after}{options}{price}",
    "i want {article}{attrs_before}{noun}{options}{price}",
    "find me {article}{noun}{attrs_after}{options}{price}",
    "i'd like to buy {article}{attrs_before}{noun}{options}{price}",
    "i'm shopping for {article}{noun}{attrs_after}{options}{price}",
)
_OPTION_LEADS = (" in ", " with ", ", ")


def format_task_id(num_attributes: int, num_options: int, seed: int) -> str:
    """The task id `goal_from_task_id` reads back: ``a2o1-17``."""
    return f"a{num_attributes}o{num_options}-{seed}"


def goal_from_task_id(catalogue: GeneratedCatalogue, task_id: str) -> Goal:
    """The goal a task id names (see the module docstring for the format)."""
    match = _TASK_ID.fullmatch(task_id) if isinstance(task_id, str) else None
    if match is None:
        raise ValueError(f"task id {task_id!r} is not {_TASK_ID_FORMAT}")
    num_attributes, num_options, seed = (int(g) for g in match.groups())
    return make_goal(catalogue, seed, num_attributes, num_options)


def make_goal(
    catalogue: GeneratedCatalogue, seed: int, num_attributes: int, num_options: int
) -> Goal:
    """A goal with `num_attributes` attributes and `num_options` options, from a target
    product drawn with `seed`.

    The target has at least `num_attributes` attributes and at least `num_options`
    option groups; `num_options` above the most groups any type has (3) is clamped
    to that. The target is always among ``catalogue.satisfying(goal)``.
    """
    if not 0 <= num_attributes <= MAX_GOAL_ATTRIBUTES:
        raise ValueError(
            f"num_attributes={num_attributes}: products have at most {MAX_GOAL_ATTRIBUTES} "
            f"attributes; pass 0 to {MAX_GOAL_ATTRIBUTES}"
        )
    if num_options < 0 or seed < 0:
        raise ValueError(f"num_options={num_options}, seed={seed}: pass non-negative ints")
    options_wanted = min(num_options, _MAX_GROUPS)
    rng = np.random.default_rng([seed, num_attributes, num_options])
    for _ in range(100_000):
        i = int(rng.integers(len(catalogue)))
        ptype = TYPES[int(catalogue.type_id[i])]
        enough = int(catalogue.attributes[i]).bit_count() >= num_attributes
        if enough and len(ptype.options) >= options_wanted:
            break
    else:  # every catalogue of 100+ products has one; this guards a broken table
        raise ValueError(f"no product has {num_attributes} attributes and {num_options} options")
    product = catalogue.product(i)
    picked = rng.choice(len(product.attributes), num_attributes, replace=False)
    attributes = tuple(product.attributes[int(k)] for k in picked)
    groups = sorted(int(g) for g in rng.choice(len(product.options), options_wanted, replace=False))
    options = []
    for g in groups:
        name, values = product.options[g]
        options.append((name, values[int(rng.integers(len(values)))]))
    price_upper = price_bound(product.price, rng)
    instruction = _instruction(ptype.phrase, ptype.unit, attributes, options, price_upper, rng)
    return Goal(
        task_id=format_task_id(num_attributes, num_options, seed),
        asin=product.asin,
        instruction=instruction,
        query=product.query,
        category=product.category,
        product_category=product.product_category,
        product_type=product.product_type,
        attributes=attributes,
        options=tuple(options),
        price_upper=price_upper,
    )


def _listing(items: list[str]) -> str:
    """ "a", "a and b", "a, b and c"."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _instruction(
    phrase: str,
    unit: str,
    attributes: tuple[str, ...],
    options: list[tuple[str, str]],
    price_upper: float,
    rng: np.random.Generator,
) -> str:
    template = _TEMPLATES[int(rng.integers(len(_TEMPLATES)))]
    lead = _OPTION_LEADS[int(rng.integers(len(_OPTION_LEADS)))]
    noun = f"{unit} {phrase}" if unit else phrase
    plural = not unit and phrase.endswith("s")
    attrs = _listing(list(attributes)) if attributes else ""
    attrs_before = f"{attrs} " if attrs else ""
    attrs_after = f" that {'are' if plural else 'is'} {attrs}" if attrs else ""
    first = (attrs_before if "{attrs_before}" in template else "") + noun
    article = "" if plural else ("an " if first[0] in "aeiou" else "a ")
    phrases = [
        v if name in v.split() else _GROUP_PHRASES.get(name, "{v} {group}").format(v=v, group=name)
        for name, v in options
    ]
    text = template.format(
        article=article,
        attrs_before=attrs_before,
        attrs_after=attrs_after,
        noun=noun,
        options=lead + _listing(phrases) if phrases else "",
        price=f", and price lower than {price_upper:.2f} dollars"
        if math.isfinite(price_upper)
        else "",
    )
    return text.lower()
