"""Small WebShop data files for the tests, in WebShop's own JSON format.

The products are the first ones of a generated catalogue and the human
instructions are written from them, so ``envgym/WebShop-v0`` has a few hundred
real-format products and instructions to play on (WebShop's files cannot be
downloaded here). `conftest.py` writes them once per test session and points
``ENVGYM_WEBSHOP_DATA`` at them.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from envgym.envs.shop.catalogue import GeneratedCatalogue
from envgym.envs.shop.goals import make_goal

_PRICE_CLAUSE = re.compile(r",?\s*and price lower than [0-9.]+ dollars$")


def write_webshop_files(folder: Path, num_products: int = 400, seed: int = 7) -> Path:
    """Write items_shuffle_1000.json, items_ins_v2_1000.json and items_human_ins.json
    into `folder`; return it."""
    catalogue = GeneratedCatalogue(max(num_products, 100), seed)
    products, attributes = [], {}
    for i in range(num_products):
        p = catalogue.product(i)
        products.append(
            {
                "asin": p.asin,
                "name": p.title,
                "full_description": p.description,
                "small_description": list(p.bullets),
                "pricing": f"${p.price:.2f}",
                "customization_options": {
                    group: [{"value": value, "image": None} for value in values]
                    for group, values in p.options
                },
                "category": p.category,
                "query": p.query,
                "product_category": p.product_category,
                "images": [""],
            }
        )
        attributes[p.asin] = {"attributes": list(p.attributes)}
    human: dict[str, list[dict]] = {}
    asins = {p["asin"] for p in products}
    for task_seed in range(num_products):
        goal = make_goal(catalogue, task_seed, 1 + task_seed % 2, 1 + task_seed % 3)
        if goal.asin not in asins:
            continue
        human.setdefault(goal.asin, []).append(
            {
                "asin": goal.asin,
                "instruction": _PRICE_CLAUSE.sub("", goal.instruction),
                "instruction_attributes": list(goal.attributes),
                "instruction_options": [value for _, value in goal.options],
            }
        )
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "items_shuffle_1000.json").write_text(json.dumps(products))
    (folder / "items_ins_v2_1000.json").write_text(json.dumps(attributes))
    (folder / "items_human_ins.json").write_text(json.dumps(human))
    return folder
