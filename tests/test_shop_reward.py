"""WebShop's reward on hand-built products and goals, and the shop's action parser."""

from __future__ import annotations

import math

import pytest

from envgym.envs.shop.model import Goal, Product
from envgym.envs.shop.reward import option_matches, shop_reward, type_reward
from envgym.envs.shop.shop import parse_shop_action

PERFUME = Product(
    asin="B000TEST01",
    title="Maison Lune Long Lasting Eau de Toilette",
    category="beauty",
    product_category="Beauty & Personal Care › Fragrance › Eau de Toilette",
    query="eau de toilette",
    product_type="eau de toilette",
    description="A fresh citrus scent for every day.",
    bullets=("Travel friendly bottle", "Made in France"),
    attributes=("long lasting", "travel friendly"),
    options=(("size", ("3.4 fl oz", "6.76 fl oz")), ("scent", ("citrus", "vanilla"))),
    price=64.98,
)
MUG = Product(
    asin="B000TEST02",
    title="Hearth Co Ceramic Coffee Mug",
    category="home",
    product_category="Home & Kitchen › Kitchen & Dining › Coffee Mugs",
    query="coffee mug",
    product_type="coffee mug",
    description="A mug.",
    bullets=("Dishwasher safe",),
    attributes=("dishwasher safe", "long lasting"),
    options=(("size", ("6.76 fl oz", "12 fl oz")),),
    price=12.0,
)
GOAL = Goal(
    task_id="t",
    asin=PERFUME.asin,
    instruction="i need a long lasting and travel friendly eau de toilette in 6.76 fl oz, "
    "citrus scent, and price lower than 100.00 dollars",
    query="eau de toilette",
    category="beauty",
    product_category=PERFUME.product_category,
    product_type="eau de toilette",
    attributes=("long lasting", "travel friendly"),
    options=(("size", "6.76 fl oz"), ("scent", "citrus")),
    price_upper=100.0,
)


def test_all_match_is_one():
    reward = shop_reward(PERFUME, {"size": "6.76 fl oz", "scent": "citrus"}, 64.98, GOAL)
    assert reward.value == 1.0
    assert math.isclose(sum(reward.components().values()), 1.0)


def test_a_missing_option_loses_its_share():
    # 2 attributes + 1 of 2 options + price: 4 of 5.
    reward = shop_reward(PERFUME, {"size": "3.4 fl oz", "scent": "citrus"}, 64.98, GOAL)
    assert reward.options_matched == 1
    assert math.isclose(reward.value, 4 / 5)
    assert math.isclose(sum(reward.components().values()), reward.value)
    # No options chosen at all: 3 of 5.
    assert math.isclose(shop_reward(PERFUME, {}, 64.98, GOAL).value, 3 / 5)


def test_price_over_the_bound_loses_its_share():
    reward = shop_reward(PERFUME, {"size": "6.76 fl oz", "scent": "citrus"}, 100.01, GOAL)
    assert not reward.price_ok
    assert math.isclose(reward.value, 4 / 5)
    assert reward.components()["price"] == 0.0


def test_the_wrong_product_type_scores_zero():
    # The mug has one of the attributes and the size, under the price: without the
    # type factor that would be 3 of 5.
    reward = shop_reward(MUG, {"size": "6.76 fl oz"}, 12.0, GOAL)
    assert reward.attributes_matched == 1 and reward.options_matched == 1 and reward.price_ok
    assert reward.r_type == 0.0
    assert reward.value == 0.0


def test_type_reward_follows_webshops_steps():
    # No type word in common is 0, even with the same query (WebShop's last rule).
    same_query = Product(**{**PERFUME.__dict__, "product_type": "spray", "asin": "B1"})
    assert type_reward(same_query, GOAL) == 0.0
    # One type word in six (10-20%), no shared query or category levels: 0.5;
    # with the query shared: 1.0.
    long_goal = Goal(**{**GOAL.__dict__, "product_type": "long lasting eau de toilette spray"})
    bottle = Product(
        **{**MUG.__dict__, "product_type": "spray bottle", "product_category": "Tools › Garden"}
    )
    assert type_reward(bottle, long_goal) == 0.5
    same_query_bottle = Product(**{**bottle.__dict__, "query": GOAL.query})
    assert type_reward(same_query_bottle, long_goal) == 1.0
    # Another type that shares one of three type words: more than 20%, so 1.0 ...
    parfum = Product(
        **{
            **MUG.__dict__,
            "product_type": "eau de parfum",
            "query": "eau de parfum",
            "product_category": "Beauty › Perfume",
        }
    )
    assert type_reward(parfum, GOAL) == 1.0
    # ... a type with no words in common scores 0 even in the same category path.
    lotion = Product(
        **{**PERFUME.__dict__, "product_type": "body lotion", "query": "body lotion", "asin": "B2"}
    )
    assert type_reward(lotion, GOAL) == 0.0


def test_attributes_match_in_title_bullets_or_description():
    goal = Goal(**{**GOAL.__dict__, "attributes": ("made in france", "citrus scent")})
    reward = shop_reward(PERFUME, {"size": "6.76 fl oz", "scent": "citrus"}, 10.0, goal)
    assert reward.attributes_matched == 2


def test_option_matching_is_word_subsets_either_way():
    assert option_matches(["6.76 fl oz (pack of 1)"], ["6.76 fl oz"]) == 1
    assert option_matches(["6.76 fl oz"], ["6.76 fl oz (pack of 1)"]) == 1
    assert option_matches(["3.4 fl oz"], ["6.76 fl oz"]) == 0
    assert option_matches([], ["red"]) == 0


def test_no_price_bound_always_counts_the_price():
    goal = Goal(**{**GOAL.__dict__, "price_upper": float("inf")})
    assert shop_reward(PERFUME, {}, 1e9, goal).price_ok


@pytest.mark.parametrize(
    "reply,parsed",
    [
        ("search[long lasting perfume]", ("search", "long lasting perfume")),
        ("<think>x</think><answer>click[Buy Now]</answer>", ("click", "Buy Now")),
        ("I will click[Next >] now", ("click", "Next >")),
        ("CLICK[  b000test01 ]", ("click", "b000test01")),
        ("<think>search[wrong]</think>click[< Prev]", ("click", "< Prev")),
        ("buy it", None),
        ("", None),
        ("click[", None),
    ],
)
def test_parse_shop_action(reply, parsed):
    assert parse_shop_action(reply) == parsed


def test_a_text_page_of_a_huge_product_still_fits_the_observation_space():
    from envgym.envs.shop.pages import PageView, render_text
    from envgym.text import OBSERVATION_MAX_LENGTH

    options = (("size", tuple(f"size {i} " + "x" * 80 for i in range(400))),)
    huge = Product(**{**PERFUME.__dict__, "options": options, "title": "t" * 5000})
    text = render_text(PageView("item", "i need it", product=huge))
    assert len(text) <= OBSERVATION_MAX_LENGTH and text.endswith("...")
