"""The generated shop catalogue and its instructions: table rules that keep the
reward's matching exact, determinism, `satisfying` against a brute-force scan
with the reward itself, and the task ids."""

from __future__ import annotations

import hashlib
import itertools
import os
import pickle
import re
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest

from envgym.envs.shop.catalogue import (
    MAX_PRODUCTS,
    MIN_PRODUCTS,
    TEMPLATE_TEXTS,
    GeneratedCatalogue,
)
from envgym.envs.shop.categories import CATEGORIES, TYPES
from envgym.envs.shop.goals import format_task_id, goal_from_task_id, make_goal
from envgym.envs.shop.model import Catalogue, Goal
from envgym.envs.shop.reward import content_words, shop_reward, type_reward, words

VOCABULARY = sorted({a for t in TYPES for a in t.attributes})
SHAPES = [(0, 0), (1, 1), (2, 2), (3, 3), (4, 3), (2, 0), (0, 2), (1, 3)]


@pytest.fixture(scope="module")
def small() -> GeneratedCatalogue:
    return GeneratedCatalogue(2000, seed=3)


def best_reward(product, goal: Goal) -> float:
    """The reward with the best choice of one offered value per option group."""
    groups = [name for name, _ in product.options]
    return max(
        shop_reward(product, dict(zip(groups, combo, strict=True)), product.price, goal).value
        for combo in itertools.product(*(values for _, values in product.options))
    )


def brute_force(catalogue: GeneratedCatalogue, goal: Goal) -> np.ndarray:
    found = []
    for i in range(len(catalogue)):
        p = catalogue.product(i)
        r = shop_reward(p, {}, p.price, goal)
        if r.r_type == 1.0 and r.attributes_matched == r.attributes_wanted and r.price_ok:
            if best_reward(p, goal) == 1.0:
                found.append(i)
    return np.array(found, dtype=np.int64)


# -- the tables ----------------------------------------------------------------------


def test_at_least_20_categories_each_with_3_to_6_types() -> None:
    assert len(CATEGORIES) >= 20
    assert len({c.key for c in CATEGORIES}) == len(CATEGORIES)
    for category in CATEGORIES:
        assert 3 <= len(category.types) <= 6, category.key
        assert category.brands


def test_each_type_has_a_pool_of_attributes_option_groups_and_a_price_range() -> None:
    assert len({t.phrase for t in TYPES}) == len(TYPES)
    for t in TYPES:
        assert 8 <= len(t.attributes) <= 12, t.phrase
        assert len(set(t.attributes)) == len(t.attributes), t.phrase
        assert 1 <= len(t.options) <= 3, t.phrase
        for group in t.options:
            assert 4 <= len(group.values) <= 7, (t.phrase, group.name)
        assert 0 < t.price_low < t.price_high, t.phrase
        phrases = [t.phrase, *t.attributes, *(v for g in t.options for v in g.values)]
        assert all(p == p.lower().strip() and "," not in p for p in phrases), t.phrase


def test_no_attribute_or_option_value_is_a_word_subset_of_another_in_its_type() -> None:
    for t in TYPES:
        for a, b in itertools.permutations(t.attributes, 2):
            assert not words(a) <= words(b), (t.phrase, a, b)
        values = [v for g in t.options for v in g.values]
        for a, b in itertools.permutations(values, 2):
            assert not words(a) <= words(b), (t.phrase, a, b)


def test_no_attribute_occurs_in_fixed_text() -> None:
    fixed = [t.phrase for t in TYPES]
    fixed += [b.lower() for c in CATEGORIES for b in c.brands]
    fixed += [v for t in TYPES for g in t.options for v in g.values]
    fixed += [text.lower() for text in TEMPLATE_TEXTS]
    clashes = [(a, f) for a in VOCABULARY for f in fixed if a in f]
    assert not clashes


def test_no_two_pieces_that_meet_at_a_space_spell_an_attribute() -> None:
    """Titles and templates put brands, attributes, type phrases and values side by side
    with a space between; no attribute phrase may straddle such a join."""
    straddles: dict[str, set[str]] = {}  # "led" -> {"light"}: "led light" straddles there
    for g in VOCABULARY:
        for k, ch in enumerate(g):
            if ch == " ":
                straddles.setdefault(g[:k], set()).add(g[k + 1 :])
    starts = [text.split(" ", 1)[0].lower() for text in TEMPLATE_TEXTS if text and text[0] != "{"]
    for t in TYPES:
        brands = [b.lower() for b in t.brands]
        values = [v for g in t.options for v in g.values]
        joins = [  # (left, right) pairs that appear with one space between them
            *itertools.product(brands, [*t.attributes, t.phrase, "designed", "checks", "every"]),
            *itertools.product(t.attributes, [t.phrase, "-", ":"]),
            *itertools.product([*t.attributes, t.phrase, *values], starts),
            *itertools.product(["x", "the", "new", "on", "pick"], [*brands, t.phrase]),
        ]
        for left, right in joins:
            tails = [left[-k:] for k in range(1, len(left) + 1) if left[-k:] in straddles]
            spelled = [(tail, h) for tail in tails for h in straddles[tail] if right.startswith(h)]
            assert not spelled, (t.phrase, left, right, spelled)


def test_no_option_value_reads_as_part_of_an_attribute_or_type_phrase() -> None:
    """So a reader of an instruction can tell an option value from the phrases around it."""
    phrases = [t.phrase for t in TYPES] + VOCABULARY
    for value in {v for t in TYPES for g in t.options for v in g.values}:
        pattern = re.compile(rf"(?<![a-z0-9]){re.escape(value)}(?![a-z0-9])")
        assert not [p for p in phrases if p != value and pattern.search(p)], value


def test_different_types_get_type_reward_zero() -> None:
    for s, u in itertools.combinations(TYPES, 2):
        assert not content_words(s.phrase) & content_words(u.phrase), (s.phrase, u.phrase)
    catalogue = GeneratedCatalogue(MIN_PRODUCTS, seed=0)
    goal = make_goal(catalogue, 0, 1, 1)
    goal_type = int(catalogue.type_id[catalogue.index_of(goal.asin)])
    for i in range(len(catalogue)):
        same = int(catalogue.type_id[i]) == goal_type
        assert type_reward(catalogue.product(i), goal) == (1.0 if same else 0.0)


# -- products --------------------------------------------------------------------------


def test_texts_mention_every_own_attribute_and_no_other(small: GeneratedCatalogue) -> None:
    for i in range(len(small)):
        p = small.product(i)
        text = " ".join((p.title, " ".join(p.bullets), p.description)).lower()
        assert all(a in text for a in p.attributes), i
        stray = [g for g in VOCABULARY if g in text and not any(g in a for a in p.attributes)]
        assert not stray, (i, stray, text)


def test_products_are_well_formed(small: GeneratedCatalogue) -> None:
    assert isinstance(small, Catalogue)
    asins = [small.product(i).asin for i in range(len(small))]
    assert len(set(asins)) == len(asins)
    for i, asin in enumerate(asins):
        assert len(asin) == 10 and asin.startswith("B0") and asin.isalnum() and asin.isupper()
        assert small.index_of(asin) == i
    for i in range(0, len(small), 97):
        p = small.product(i)
        t = TYPES[int(small.type_id[i])]
        assert p.query == p.product_type == t.phrase and p.category == t.category
        assert p.product_category.split(" › ")[:2] == [t.root, t.subcategory]
        assert 2 <= len(p.attributes) <= 4 and set(p.attributes) <= set(t.attributes)
        assert [name for name, _ in p.options] == [g.name for g in t.options]
        assert all(2 <= len(values) <= 5 for _, values in p.options)
        assert 3 <= len(p.bullets) <= 5 and len(p.reviews) <= 3
        assert t.price_low <= p.price < t.price_high + 1
        title, text = small.search_text(i)
        assert title == p.title and p.description in text
        assert all(f"{name}: {', '.join(values)}" in text for name, values in p.options)


def test_index_of_rejects_what_is_not_an_asin_here(small: GeneratedCatalogue) -> None:
    for asin in ("", "B0", "b000000000", "B0000000!!", "X012345678", None):
        assert small.index_of(asin) is None
    bigger = GeneratedCatalogue(5000, seed=3)
    assert small.index_of(bigger.product(4999).asin) is None
    with pytest.raises(IndexError):
        small.product(len(small))


@pytest.mark.parametrize("bad", [0, MIN_PRODUCTS - 1, MAX_PRODUCTS + 1, 1.5, "100"])
def test_num_products_out_of_range_says_the_range(bad) -> None:
    with pytest.raises(ValueError, match=f"{MIN_PRODUCTS} to {MAX_PRODUCTS}"):
        GeneratedCatalogue(bad)


def test_same_arguments_same_shop_other_seed_other_shop(small: GeneratedCatalogue) -> None:
    again = GeneratedCatalogue(2000, seed=3)
    assert again.fingerprint == small.fingerprint
    assert [again.product(i) for i in range(50)] == [small.product(i) for i in range(50)]
    other = GeneratedCatalogue(2000, seed=4)
    assert other.fingerprint != small.fingerprint
    assert other.product(0) != small.product(0)
    assert GeneratedCatalogue(2001, seed=3).fingerprint != small.fingerprint
    restored = pickle.loads(pickle.dumps(small))
    assert restored.product(7) == small.product(7)


_CHILD = """
import hashlib
from envgym.envs.shop.catalogue import GeneratedCatalogue
from envgym.envs.shop.goals import goal_from_task_id
c = GeneratedCatalogue(2000, seed=3)
h = hashlib.sha256()
for i in range(0, 2000, 13):
    h.update(repr(c.product(i)).encode())
    h.update(repr(c.search_text(i)).encode())
h.update(repr(goal_from_task_id(c, "a2o2-9")).encode())
print(c.fingerprint, h.hexdigest())
"""


def test_same_products_in_another_process_and_hash_seed(small: GeneratedCatalogue) -> None:
    h = hashlib.sha256()
    for i in range(0, 2000, 13):
        h.update(repr(small.product(i)).encode())
        h.update(repr(small.search_text(i)).encode())
    h.update(repr(goal_from_task_id(small, "a2o2-9")).encode())
    env = {**os.environ, "PYTHONHASHSEED": "4242"}
    out = subprocess.run(
        [sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == [small.fingerprint, h.hexdigest()]


# -- goals -----------------------------------------------------------------------------


def test_satisfying_equals_a_brute_force_scan_with_the_reward(small: GeneratedCatalogue) -> None:
    goals = [make_goal(small, seed, a, o) for seed in range(8) for a, o in SHAPES]
    base = goals[3]
    goals += [  # goals the generator does not write: unbounded, other words, another type's
        replace(base, price_upper=float("inf")),
        replace(base, attributes=("lasting",), options=(("", "oz"),)),
        replace(base, attributes=(VOCABULARY[5],), options=()),
        replace(base, attributes=("",), price_upper=20.0),
    ]
    for goal in goals:
        assert np.array_equal(small.satisfying(goal), brute_force(small, goal)), goal


def test_goal_target_satisfies_and_instruction_names_every_phrase() -> None:
    catalogue = GeneratedCatalogue(MIN_PRODUCTS * 5, seed=1)
    for seed in range(40):
        a, o = SHAPES[seed % len(SHAPES)]
        goal = make_goal(catalogue, seed, a, o)
        target = catalogue.index_of(goal.asin)
        assert target in catalogue.satisfying(goal)
        assert len(goal.attributes) == a and len(goal.options) == o
        text = goal.instruction
        assert text == text.lower() and goal.product_type in text
        assert all(attribute in text for attribute in goal.attributes)
        assert all(value in text for _, value in goal.options)
        product = catalogue.product(target)
        assert all(product.option_values(group) for group, _ in goal.options)
        if np.isfinite(goal.price_upper):
            assert f"price lower than {goal.price_upper:.2f} dollars" in text
            assert product.price < goal.price_upper <= product.price + 40
        else:
            assert "price" not in text


def test_goals_have_several_satisfying_products_and_near_misses() -> None:
    catalogue = GeneratedCatalogue(20_000, seed=0)
    counts, near_misses = [], 0
    for seed in range(20):
        goal = make_goal(catalogue, seed, 2, 2)
        satisfying = set(catalogue.satisfying(goal).tolist())
        counts.append(len(satisfying))
        target_type = catalogue.type_id[catalogue.index_of(goal.asin)]
        same_type = np.flatnonzero(catalogue.type_id == target_type)
        total = len(goal.attributes) + len(goal.options) + 1
        near_misses += any(
            best_reward(catalogue.product(i), goal) == (total - 1) / total
            for i in same_type[:200]
            if i not in satisfying
        )
    assert np.median(counts) >= 2
    assert near_misses == 20


def test_task_ids_round_trip_and_bad_ones_say_the_format(small: GeneratedCatalogue) -> None:
    goal = goal_from_task_id(small, "a2o1-17")
    assert goal.task_id == "a2o1-17" == format_task_id(2, 1, 17)
    assert goal == make_goal(small, 17, 2, 1) == goal_from_task_id(small, goal.task_id)
    assert goal != goal_from_task_id(small, "a2o1-18")
    assert len(goal_from_task_id(small, "a1o7-2").options) == 3  # clamped to the most groups
    for bad in ("a2o1", "2o1-3", "a2o1-x", "a2o1--3", " a2o1-3", "A2O1-3"):
        with pytest.raises(ValueError, match="a<attributes>o<options>-<seed>"):
            goal_from_task_id(small, bad)
    with pytest.raises(ValueError, match="at most 4"):
        goal_from_task_id(small, "a5o1-3")
