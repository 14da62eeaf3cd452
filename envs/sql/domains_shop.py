"""The ``shop`` domain: an online shop's categories, suppliers, products,
customers, orders, order lines and reviews."""

from __future__ import annotations

from typing import Any

import numpy as np

from envgym.envs.sql.generate import Gen, ids, text_days
from envgym.envs.sql.schema import Column, ForeignKey, Schema, Table

__all__ = ["SCHEMA", "fill"]

C = Column
START, END = "2020-01-01", "2024-12-31"

SCHEMA = Schema(
    name="shop",
    tables=(
        Table(
            "categories",
            (
                C("category_id", "INTEGER", primary_key=True, description="category id"),
                C("name", "TEXT", description="category name"),
                C("parent_id", "INTEGER", True, description="parent category (NULL at the top)"),
            ),
            noun="product category",
        ),
        Table(
            "suppliers",
            (
                C("supplier_id", "INTEGER", primary_key=True, description="supplier id"),
                C("name", "TEXT", description="supplier name"),
                C("city", "TEXT", description="city of the supplier"),
                C("country", "TEXT", description="country of the supplier"),
                C("rating", "REAL", True, description="supplier rating from 1 to 5"),
            ),
            noun="supplier",
        ),
        Table(
            "products",
            (
                C("product_id", "INTEGER", primary_key=True, description="product id"),
                C("name", "TEXT", description="product name"),
                C("category_id", "INTEGER", description="category of the product"),
                C("supplier_id", "INTEGER", True, description="supplier (NULL for own brand)"),
                C("price", "REAL", description="list price in dollars"),
                C("stock", "INTEGER", description="units in stock"),
                C("launch_date", "DATE", description="date the product went on sale"),
            ),
            noun="product",
        ),
        Table(
            "customers",
            (
                C("customer_id", "INTEGER", primary_key=True, description="customer id"),
                C("first_name", "TEXT", description="first name"),
                C("last_name", "TEXT", description="last name"),
                C("email", "TEXT", True, description="email address"),
                C("city", "TEXT", description="city the customer lives in"),
                C("country", "TEXT", description="country the customer lives in"),
                C("signup_date", "DATE", description="date the customer signed up"),
                C("loyalty_tier", "TEXT", description="loyalty tier (bronze to platinum)"),
                C("birth_date", "DATE", True, description="date of birth"),
            ),
            noun="customer",
        ),
        Table(
            "orders",
            (
                C("order_id", "INTEGER", primary_key=True, description="order id"),
                C("customer_id", "INTEGER", description="customer who placed the order"),
                C("order_date", "DATE", description="date the order was placed"),
                C("status", "TEXT", description="order status"),
                C("ship_date", "DATE", True, description="date shipped (NULL if not shipped)"),
                C("shipping_cost", "REAL", description="shipping cost in dollars"),
                C("payment_method", "TEXT", description="how the order was paid"),
            ),
            noun="order",
        ),
        Table(
            "order_items",
            (
                C("order_item_id", "INTEGER", primary_key=True, description="order line id"),
                C("order_id", "INTEGER", description="order the line belongs to"),
                C("product_id", "INTEGER", description="product ordered"),
                C("quantity", "INTEGER", description="units ordered"),
                C("unit_price", "REAL", description="price paid per unit in dollars"),
                C("discount_percent", "INTEGER", True, description="discount in percent"),
            ),
            noun="order line",
        ),
        Table(
            "reviews",
            (
                C("review_id", "INTEGER", primary_key=True, description="review id"),
                C("product_id", "INTEGER", description="product reviewed"),
                C("customer_id", "INTEGER", description="customer who wrote the review"),
                C("rating", "INTEGER", description="stars from 1 to 5"),
                C("review_date", "DATE", description="date of the review"),
                C("title", "TEXT", True, description="review title"),
            ),
            noun="product review",
        ),
    ),
    foreign_keys=(
        ForeignKey("categories", "parent_id", "categories", "category_id"),
        ForeignKey("products", "category_id", "categories", "category_id"),
        ForeignKey("products", "supplier_id", "suppliers", "supplier_id"),
        ForeignKey("orders", "customer_id", "customers", "customer_id"),
        ForeignKey("order_items", "order_id", "orders", "order_id"),
        ForeignKey("order_items", "product_id", "products", "product_id"),
        ForeignKey("reviews", "product_id", "products", "product_id"),
        ForeignKey("reviews", "customer_id", "customers", "customer_id"),
    ),
)

# Top-level category: (its subcategories with the items they sell, median price).
CATEGORIES: dict[str, dict[str, tuple[tuple[str, ...], float]]] = {
    "Electronics": {
        "Phones": (("Smartphone", "Phone Case", "Charger"), 180.0),
        "Laptops": (("Laptop", "Notebook", "Docking Station"), 650.0),
        "Audio": (("Headphones", "Speaker", "Earbuds"), 80.0),
        "Cameras": (("Camera", "Lens", "Tripod"), 240.0),
    },
    "Home": {
        "Kitchen": (("Blender", "Kettle", "Pan", "Knife Set"), 45.0),
        "Furniture": (("Desk", "Chair", "Bookcase", "Lamp"), 140.0),
        "Bedding": (("Pillow", "Duvet", "Sheet Set"), 35.0),
    },
    "Clothing": {
        "Shoes": (("Sneakers", "Boots", "Sandals"), 60.0),
        "Outerwear": (("Jacket", "Raincoat", "Parka"), 90.0),
        "Basics": (("T-Shirt", "Hoodie", "Socks"), 18.0),
    },
    "Sports": {
        "Fitness": (("Yoga Mat", "Dumbbells", "Jump Rope"), 30.0),
        "Cycling": (("Bike Helmet", "Bike Light", "Water Bottle"), 28.0),
    },
    "Toys": {
        "Games": (("Board Game", "Puzzle", "Card Game"), 22.0),
        "Building": (("Block Set", "Model Kit"), 40.0),
    },
    "Beauty": {
        "Skincare": (("Moisturizer", "Sunscreen", "Face Wash"), 16.0),
        "Hair": (("Shampoo", "Hair Dryer", "Brush"), 20.0),
    },
}
BRANDS = (
    "Apex", "Nova", "Orbit", "Summit", "Cedar", "Pulse", "Vertex", "Lumen", "Harbor", "Atlas",
    "Zephyr", "Ember", "Maple", "Quartz", "Riva", "Sol",
)  # fmt: skip
SUPPLIER_SUFFIXES = ("Trading", "Supply", "Imports", "Goods", "Wholesale", "Distribution")
SUPPLIER_LAST = (
    "Baker", "Carter", "Diaz", "Evans", "Fischer", "Grant", "Hughes", "Ito", "Jensen", "Khan",
    "Lowe", "Morales", "Nash", "Ortiz", "Price", "Quinn", "Reyes", "Stone", "Tran", "Vega",
)  # fmt: skip
TIERS = ("bronze", "silver", "gold", "platinum")
STATUSES = ("delivered", "shipped", "processing", "cancelled", "returned")
PAYMENTS = ("credit card", "debit card", "paypal", "gift card", "bank transfer")
TITLES = (
    "Great value", "Works as described", "Not worth it", "Love it", "Broke quickly",
    "Good quality", "Too small", "Fast delivery", "Would buy again", "Disappointed",
)  # fmt: skip


def fill(g: Gen) -> dict[str, dict[str, list[Any]]]:
    """Every table's columns for one seed."""
    rng = g.rng
    out: dict[str, dict[str, list[Any]]] = {}

    # Categories: the top levels first, so a child's parent is already inserted.
    names: list[str] = list(CATEGORIES)
    parents: list[int | None] = [None] * len(names)
    leaves: list[tuple[int, tuple[str, ...], float]] = []
    for top, subs in enumerate(CATEGORIES.values(), start=1):
        for sub, (items, median) in subs.items():
            names.append(sub)
            parents.append(top)
            leaves.append((len(names), items, median))
    out["categories"] = {"category_id": ids(len(names)), "name": names, "parent_id": parents}

    n_sup = g.count(20, 40)
    sup_pairs = [(a, b) for a in SUPPLIER_LAST for b in SUPPLIER_SUFFIXES]
    picked = rng.choice(len(sup_pairs), size=n_sup, replace=False).tolist()
    sup_cities = g.cities(n_sup, 0.5)
    out["suppliers"] = {
        "supplier_id": ids(n_sup),
        "name": [" ".join(sup_pairs[i]) for i in picked],
        "city": [c for c, _ in sup_cities],
        "country": [k for _, k in sup_cities],
        "rating": g.nullify(g.decimals(n_sup, 1.5, 5.0), 0.15),
    }

    n_prod = g.count(300, 600)
    leaf_index = g.zipf(n_prod, list(range(len(leaves))), 0.3)
    prod_names: list[str] = []
    seen: set[str] = set()
    for leaf in leaf_index:
        name = ""
        while not name or name in seen:
            model = f"{g.pick('ABCDEFGHJKLMNPRSTVXZ')}{int(rng.integers(1, 100)) * 10}"
            name = f"{g.pick(BRANDS)} {g.pick(leaves[leaf][1])} {model}"
        seen.add(name)
        prod_names.append(name)
    medians = np.asarray([leaves[leaf][2] for leaf in leaf_index])
    out["products"] = {
        "product_id": ids(n_prod),
        "name": prod_names,
        "category_id": [leaves[leaf][0] for leaf in leaf_index],
        "supplier_id": g.nullify(g.refs(n_prod, ids(n_sup)), 0.1),
        "price": g.money(n_prod, medians, 0.5, 2.0),
        "stock": np.maximum(0, np.rint(rng.gamma(1.5, 60, n_prod)) - 10).astype(int).tolist(),
        "launch_date": text_days(g.days(n_prod, "2018-01-01", "2024-06-30")),
    }

    n_cust = g.count(1500, 3000)
    first, last = g.first_names(n_cust), g.last_names(n_cust)
    cities = g.cities(n_cust)
    signup = g.days(n_cust, START, "2024-10-31")
    emails = [
        f"{f}.{la}{i}@example.com".lower()
        for i, (f, la) in enumerate(zip(first, last, strict=True), 1)
    ]
    out["customers"] = {
        "customer_id": ids(n_cust),
        "first_name": first,
        "last_name": last,
        "email": g.nullify(emails, 0.12),
        "city": [c for c, _ in cities],
        "country": [k for _, k in cities],
        "signup_date": text_days(signup),
        "loyalty_tier": g.choice(n_cust, TIERS, (60, 25, 11, 4)),
        "birth_date": g.nullify(text_days(g.days(n_cust, "1950-01-01", "2005-12-31")), 0.3),
    }

    n_ord = g.count(5000, 8000)
    buyer = np.asarray(g.refs(n_ord, ids(n_cust), 0.5))
    first_day = signup[buyer - 1]
    span = (np.datetime64(END, "D") - first_day).astype(int)
    order_day = first_day + np.floor(rng.random(n_ord) * (span + 1)).astype(int)
    status = g.choice(n_ord, STATUSES, (72, 8, 5, 9, 6))
    shipped = g.after(order_day, 1, 8)
    free = rng.random(n_ord) < 0.3
    shipping = g.money(n_ord, 7.0, 0.4, 2.99)
    out["orders"] = {
        "order_id": ids(n_ord),
        "customer_id": buyer.tolist(),
        "order_date": text_days(order_day),
        "status": status,
        "ship_date": [
            None if s in ("processing", "cancelled") else d
            for s, d in zip(status, text_days(shipped), strict=True)
        ],
        "shipping_cost": [0.0 if f else s for f, s in zip(free.tolist(), shipping, strict=True)],
        "payment_method": g.choice(n_ord, PAYMENTS, (55, 20, 15, 4, 6)),
    }

    lines = np.clip(rng.geometric(0.5, n_ord), 1, 5)
    n_items = int(lines.sum())
    item_order = np.repeat(np.arange(1, n_ord + 1), lines)
    product = g.refs(n_items, ids(n_prod), 0.8)
    base = np.asarray(out["products"]["price"])[np.asarray(product) - 1]
    drift = rng.choice([1.0, 1.0, 1.0, 0.95, 0.9, 1.05], size=n_items)
    discount = g.choice(n_items, (None, 5, 10, 15, 20, 25, 50), (70, 8, 10, 5, 4, 2, 1))
    out["order_items"] = {
        "order_item_id": ids(n_items),
        "order_id": item_order.tolist(),
        "product_id": product,
        "quantity": g.choice(n_items, (1, 2, 3, 4, 5, 6, 10), (62, 20, 8, 4, 3, 2, 1)),
        "unit_price": (np.rint(base * drift * 100) / 100).tolist(),
        "discount_percent": discount,
    }

    n_rev = g.count(1500, 3500)
    reviewed = g.refs(n_rev, ids(n_prod), 0.9)
    launch = np.asarray(out["products"]["launch_date"], dtype="datetime64[D]")[
        np.asarray(reviewed) - 1
    ]
    late = np.maximum(launch, np.datetime64(START, "D"))
    span = (np.datetime64(END, "D") - late).astype(int)
    review_day = late + np.floor(rng.random(n_rev) * (span + 1)).astype(int)
    out["reviews"] = {
        "review_id": ids(n_rev),
        "product_id": reviewed,
        "customer_id": g.refs(n_rev, ids(n_cust), 0.4),
        "rating": g.choice(n_rev, (5, 4, 3, 2, 1), (40, 28, 13, 8, 11)),
        "review_date": text_days(review_day),
        "title": g.nullify(g.choice(n_rev, TITLES), 0.35),
    }
    return out
