"""The WebShop file loader (`envgym.envs.shop.webshop`) on small files written in
WebShop's own format: conversion, goals, price clauses, satisfying sets, and the
errors a user sees when files are missing or damaged."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from envgym.envs.shop import json_stream
from envgym.envs.shop.model import Catalogue
from envgym.envs.shop.reward import shop_reward
from envgym.envs.shop.webshop import (
    WebShopDataMissing,
    WebShopFormatError,
    find_webshop_files,
    load_webshop,
    webshop_data_dir,
)


def _record(asin: str, name: str, **fields) -> dict:
    """A product record with the keys WebShop's scraped items have."""
    record = {
        "asin": asin,
        "name": name,
        "full_description": f"{name}. A full description.",
        "small_description": [f"{name} feature one", "feature two"],
        "pricing": "$10.00",
        "customization_options": {},
        "category": "grocery",
        "query": "Protein Bars ",
        "product_category": "Grocery & Gourmet Food › Snacks › Protein Bars",
        "images": ["https://example.invalid/a.jpg"],
        "brand": "Acme",  # one of the keys WebShop's clean_product_keys drops
    }
    record.update(fields)
    return record


def _flavours(*values: str) -> list[dict]:
    return [{"value": v, "image": None} for v in values]


PRODUCTS = [
    _record(
        "B000000001",
        "Gluten Free Protein Bars, Chocolate Peanut",
        pricing="$10.99$15.99",
        customization_options={
            "Flavor Name": _flavours("Chocolate/Peanut", "Vanilla"),
            "Size": _flavours("12 Count", "24 Count"),
        },
    ),
    _record("nan", "A record WebShop skips"),
    _record("B000000001", "A duplicate that WebShop skips"),
    _record("B000000002", "Plain Protein Bars", small_description="one bullet string"),
    _record(
        "B000000003",
        "Organic Protein Bars Gluten Free",
        pricing="$12.50",
        customization_options={
            "flavor": _flavours("Chocolate / Peanut"),
            "size": _flavours("12 count"),
            "color": None,
        },
    ),
    _record(
        "B000000004",
        "Gluten Free Protein Bars Vanilla",
        customization_options={"flavor": _flavours("Vanilla"), "size": _flavours("12 Count")},
    ),
    _record("B0000000005X", "An asin over 10 characters"),
    _record(
        "B000000006",
        "Luxury Café Shampoo",
        pricing="$985.00",
        query="shampoo",
        product_category="Beauty › Hair Care › Shampoo",
        category="beauty",
        full_description="Smells of café ™ and citrus",
    ),
]
PRODUCTS[3].pop("pricing")  # no pricing: WebShop charges $100

ATTRIBUTES = {
    "B000000001": {"attributes": ["gluten free", "high protein"], "instruction": "i want bars"},
    "B000000003": {"attributes": ["gluten free"]},
    "B000000004": {"attributes": ["gluten free"]},
    "B000000006": {"attributes": ["sulfate free"]},
}
HUMAN = {
    "B000000001": [
        {
            "asin": "B000000001",
            "instruction": "i need gluten free protein bars, chocolate | peanut, 12 count.",
            "instruction_attributes": ["gluten free"],
            "instruction_options": ["chocolate | peanut", "12 count"],
        },
        {"instruction": "no attributes here", "instruction_attributes": []},
        {
            "instruction": "vanilla gluten free bars",
            "instruction_attributes": ["gluten free"],
            "instruction_options": {"flavor name": "vanilla"},
        },
    ],
    "B000000002": [
        {
            "instruction": "plain protein bars",
            "instruction_attributes": ["protein"],
            "instruction_options": [],
        }
    ],
    "B000000006": [
        {
            "instruction": "a sulfate free shampoo.",
            "instruction_attributes": ["sulfate free"],
            "instruction_options": [],
        }
    ],
    "B999999999": [
        {
            "instruction": "not in the shop",
            "instruction_attributes": ["x"],
            "instruction_options": [],
        }
    ],
}


def _write(folder: Path, products=PRODUCTS, attributes=ATTRIBUTES, human=HUMAN, small=True):
    folder.mkdir(parents=True, exist_ok=True)
    suffix = "_1000" if small else ""
    (folder / f"items_shuffle{suffix}.json").write_text(json.dumps(products, indent=1))
    (folder / f"items_ins_v2{suffix}.json").write_text(json.dumps(attributes))
    (folder / "items_human_ins.json").write_text(json.dumps(human))
    return folder


@pytest.fixture
def shop(tmp_path):
    catalogue, goals = load_webshop(_write(tmp_path / "data"))
    return catalogue, goals


def test_products_are_converted_the_way_webshop_loads_them(shop):
    catalogue, _ = shop
    assert isinstance(catalogue, Catalogue) and catalogue.name == "webshop"
    assert [catalogue.product(i).asin for i in range(len(catalogue))] == [
        "B000000001",
        "B000000002",
        "B000000003",
        "B000000004",
        "B000000006",
    ]
    first = catalogue.product(0)
    assert first.title == first.product_type == "Gluten Free Protein Bars, Chocolate Peanut"
    assert first.query == "protein bars"
    assert first.price == 10.99  # the low end of "$10.99$15.99"
    assert first.options == (
        ("flavor name", ("chocolate | peanut", "vanilla")),
        ("size", ("12 count", "24 count")),
    )
    assert first.attributes == ("gluten free", "high protein")
    assert first.bullets == (
        "Gluten Free Protein Bars, Chocolate Peanut feature one",
        "feature two",
    )
    assert first.reviews == () and first.rating is None
    plain = catalogue.product(catalogue.index_of("B000000002"))
    assert plain.price == 100.0 and plain.attributes == ("DUMMY_ATTR",)
    assert plain.bullets == ("one bullet string",)
    third = catalogue.product(2)
    assert third.options == (("flavor", ("chocolate  |  peanut",)), ("size", ("12 count",)))
    assert catalogue.index_of("nan") is None and catalogue.index_of("B999999999") is None
    title, text = catalogue.search_text(0)
    assert title == first.title
    assert text.endswith(
        "feature one flavor name: chocolate | peanut, vanilla, and size: 12 count, 24 count"
    )
    assert catalogue.product(4).description == "Smells of café ™ and citrus"


def test_human_goals_with_webshop_price_clauses(shop):
    catalogue, goals = shop
    assert [g.task_id for g in goals] == [
        "B000000001-0",
        "B000000001-2",
        "B000000002-0",
        "B000000006-0",
    ]
    first, vanilla, plain, shampoo = goals
    assert first.price_upper in (30.0, 40.0, 50.0)  # two of 20, 30, 40, 50; the larger
    assert first.instruction == (
        "i need gluten free protein bars, chocolate | peanut, 12 count"
        f", and price lower than {first.price_upper:.2f} dollars"
    )
    assert first.options == (("", "chocolate | peanut"), ("", "12 count"))
    assert vanilla.options == (("flavor name", "vanilla"),)
    assert first.attributes == ("gluten free",)
    assert (first.query, first.category) == ("protein bars", "grocery")
    assert first.product_type == catalogue.product(0).title
    assert plain.price_upper in (120.0, 130.0, 140.0)
    assert math.isinf(shampoo.price_upper) and shampoo.instruction == "a sulfate free shampoo"


def test_loading_is_cached_and_deterministic(tmp_path):
    folder = _write(tmp_path / "a")
    first = load_webshop(folder, seed=3)
    assert load_webshop(folder, seed=3) is first
    other = _write(tmp_path / "b")
    catalogue, goals = load_webshop(other, seed=3)
    assert catalogue.fingerprint == first[0].fingerprint
    assert [g.instruction for g in goals] == [g.instruction for g in first[1]]
    bounds = {tuple(g.price_upper for g in load_webshop(folder, seed=s)[1]) for s in range(8)}
    assert len(bounds) > 1  # the seed picks the bounds
    changed = [dict(p) for p in PRODUCTS]
    changed[0]["name"] = "Something Else"
    assert load_webshop(_write(tmp_path / "c", changed))[0].fingerprint != catalogue.fingerprint
    three = load_webshop(folder, num_products=3)[0]  # raw records: 'nan' and the duplicate count
    assert len(three) == 1 and three.fingerprint != catalogue.fingerprint


def test_satisfying_holds_the_products_that_earn_reward_one(shop):
    catalogue, goals = shop
    first = goals[0]
    satisfying = catalogue.satisfying(first).tolist()
    assert satisfying == [0, 2]  # its own product, and the other bars with both options
    own = catalogue.product(0)
    chosen = catalogue.best_options(0, first)
    assert shop_reward(own, chosen, own.price, first).value == 1.0
    vanilla_only = catalogue.index_of("B000000004")
    assert catalogue.best_reward(vanilla_only, first) < 1.0
    assert catalogue.satisfying(goals[1]).tolist() == [0, 3]
    assert catalogue.satisfying(goals[3]).tolist() == [4]


def test_full_set_files_are_preferred(tmp_path):
    folder = _write(tmp_path, small=True)
    _write(tmp_path, small=False)
    files = find_webshop_files(folder)
    assert files.products.name == "items_shuffle.json"
    assert files.attributes.name == "items_ins_v2.json"


def test_missing_files_say_what_to_download_and_where(tmp_path, monkeypatch):
    monkeypatch.delenv("ENVGYM_WEBSHOP_DATA", raising=False)
    (tmp_path / "items_human_ins.json").write_text("{}")
    with pytest.raises(WebShopDataMissing) as caught:
        load_webshop(tmp_path)
    message = str(caught.value)
    assert isinstance(caught.value, FileNotFoundError)
    for name in ("items_shuffle_1000.json", "items_shuffle.json", "items_ins_v2_1000.json"):
        assert name in message
    assert "no items_human_ins.json" not in message
    assert str(tmp_path) in message and "data_dir=" in message
    assert "ENVGYM_WEBSHOP_DATA" in message and "princeton-nlp/WebShop" in message
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert webshop_data_dir() == tmp_path / "home" / ".cache" / "envgym" / "webshop"
    with pytest.raises(WebShopDataMissing, match=re.escape(str(webshop_data_dir()))):
        find_webshop_files()


def test_the_environment_variable_names_the_folder(tmp_path, monkeypatch):
    folder = _write(tmp_path / "elsewhere")
    monkeypatch.setenv("ENVGYM_WEBSHOP_DATA", str(folder))
    assert webshop_data_dir() == folder
    catalogue, goals = load_webshop()
    assert len(catalogue) == 5 and len(goals) == 4
    assert webshop_data_dir(tmp_path) == tmp_path  # data_dir= wins over the variable


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda ps: ps[4].update(pricing=12), r"record 4 \(asin B000000003\): 'pricing' is 12"),
        (lambda ps: ps[5].pop("name"), r"record 5 \(asin B000000004\): no 'name' field"),
        (lambda ps: ps[0].update(customization_options={"Size": "L"}), "option group 'Size'"),
        (lambda ps: ps.__setitem__(1, "text"), "record 1: not a JSON object"),
    ],
)
def test_malformed_products_name_the_file_and_record(tmp_path, change, expected):
    products = [dict(p) for p in PRODUCTS]
    change(products)
    with pytest.raises(WebShopFormatError, match=expected) as caught:
        load_webshop(_write(tmp_path, products))
    assert "items_shuffle_1000.json" in str(caught.value)


def test_damaged_json_is_reported_not_raised_raw(tmp_path, monkeypatch):
    folder = _write(tmp_path)
    text = (folder / "items_shuffle_1000.json").read_text()
    (folder / "items_shuffle_1000.json").write_text(text[: len(text) // 2])
    with pytest.raises(WebShopFormatError, match=r"items_shuffle_1000.json: record \d+: not valid"):
        load_webshop(folder)
    (folder / "items_shuffle_1000.json").write_text(json.dumps({"not": "a list"}))
    with pytest.raises(WebShopFormatError, match="not a JSON list"):
        load_webshop(folder)
    bad_human = {"B000000001": [{"instruction": "x", "instruction_attributes": "gluten free"}]}
    folder = _write(tmp_path / "human", human=bad_human)
    with pytest.raises(WebShopFormatError, match="items_human_ins.json: entry 'B000000001'"):
        load_webshop(folder)


def test_records_split_across_read_chunks(tmp_path, monkeypatch):
    whole = load_webshop(_write(tmp_path / "whole"))
    monkeypatch.setattr(json_stream, "_CHUNK", 5)  # multi-byte characters straddle chunks too
    catalogue, goals = load_webshop(_write(tmp_path / "chunked"))
    assert catalogue.fingerprint == whole[0].fingerprint
    products = [catalogue.product(i) for i in range(len(catalogue))]
    assert products == [whole[0].product(i) for i in range(len(whole[0]))]
    assert goals == whole[1]


def test_progress_is_shown_when_asked(tmp_path, capfd, monkeypatch):
    monkeypatch.setenv("TTY_COMPATIBLE", "1")  # let rich draw on the captured stderr
    monkeypatch.setenv("TTY_INTERACTIVE", "1")
    load_webshop(_write(tmp_path / "quiet"), show_progress=False)
    assert "WebShop" not in capfd.readouterr().err
    load_webshop(_write(tmp_path / "shown"), show_progress=True)
    captured = capfd.readouterr()
    assert "WebShop files" in captured.err and "100%" in captured.err


def test_cli_without_the_files_says_what_to_download(tmp_path, monkeypatch, capsys):
    from envgym.cli import main
    from envgym.registry import get_spec, missing_data

    monkeypatch.setenv("ENVGYM_WEBSHOP_DATA", str(tmp_path / "empty"))
    spec = get_spec("envgym/WebShop-v0")
    assert "items_human_ins.json" in missing_data(spec)
    assert missing_data(get_spec("envgym/Shop-v0")) is None
    code = main(["eval", "envgym/WebShop-v0", "--agent", "random", "--episodes", "1"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert "items_shuffle_1000.json" in err and str(tmp_path / "empty") in err
    # Asked for by name, baselines refuses with the same reason.
    assert main(["baselines", "--env", "envgym/WebShop-v0", "--episodes", "1"]) == 2
    assert "cannot run here" in capsys.readouterr().err
