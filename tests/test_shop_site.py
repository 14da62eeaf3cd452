"""The shop as HTML and as a web site: `render_html` on hand-built pages (escaping,
the size bound), the site for real on 127.0.0.1 (a whole purchase whose reward is
the env's, hostile input, sessions), ``envgym shop serve`` and ``envgym shop
index-serve`` (searched through by ``ShopEnv(index_uds=...)``)."""

from __future__ import annotations

import math
import os
import re
import signal
import string
import subprocess
import sys
import threading
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")

from envgym.envs.shop.html import render_html  # noqa: E402
from envgym.envs.shop.model import Product, Review  # noqa: E402
from envgym.envs.shop.pages import PageView, ResultRow  # noqa: E402
from envgym.envs.shop.reward import ShopReward  # noqa: E402
from envgym.text import OBSERVATION_MAX_LENGTH  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
PRODUCTS = 2000  # a small catalogue: fast to generate and index
ATTACK = "<script>alert('pwned')</script>"


def product(**changes: Any) -> Product:
    fields: dict[str, Any] = {
        "asin": "B00TEST001",
        "title": "Long lasting eau de toilette for men",
        "category": "beauty",
        "product_category": "Beauty › Fragrance",
        "query": "eau de toilette",
        "product_type": "eau de toilette",
        "description": "A fresh scent.",
        "bullets": ("Lasts all day", "Made in France"),
        "attributes": ("long lasting",),
        "options": (("size", ("3.4 fl oz", "6.76 fl oz")), ("color", ("amber", "blue"))),
        "price": 42.5,
        "rating": 4.3,
        "reviews": (Review(5, "Lovely", "I wear it every day."),),
    }
    fields.update(changes)
    return Product(**fields)


class Page(HTMLParser):
    """A page's submit buttons (name, value, attributes) and element ids."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.buttons: list[dict[str, str]] = []
        self.ids: dict[str, str] = {}
        self._open: str | None = None
        self.text = text
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "button":
            self.buttons.append(a)
        if "id" in a:
            self.ids[a["id"]] = ""
            self._open = a["id"]

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            self.ids[self._open] += data

    def handle_endtag(self, tag: str) -> None:
        self._open = None

    def clicks(self) -> list[str]:
        return [b["value"] for b in self.buttons if b.get("value", "").startswith("click[")]


def check_page(text: str) -> None:
    assert len(text) <= OBSERVATION_MAX_LENGTH
    assert set(text) <= set(string.printable)
    assert text.startswith("<!DOCTYPE html>") and text.rstrip().endswith("</html>")


# --------------------------------------------------------------- render_html
def test_every_page_offers_the_text_pages_buttons_as_the_envs_clicks() -> None:
    item = product()
    views = [
        PageView(
            "results", "i need x", query="x", page=2, total=25, rows=(ResultRow("B1", "t", 1),)
        ),
        PageView("item", "i need x", product=item, selected=(("size", "6.76 fl oz"),)),
        PageView("description", "i need x", product=item),
        PageView("features", "i need x", product=item),
        PageView("reviews", "i need x", product=item),
    ]
    for view in views:
        html = render_html(view, base="/s/abc/")
        check_page(html)
        assert Page(html).clicks() == [f"click[{b}]" for b in view.clickables]
        assert 'action="/s/abc/act"' in html
    page = Page(render_html(views[1]))
    pressed = {
        b["value"]: b["aria-pressed"] for b in page.buttons if "option" in b.get("class", "")
    }
    assert pressed == {
        "click[3.4 fl oz]": "false",
        "click[6.76 fl oz]": "true",
        "click[amber]": "false",
        "click[blue]": "false",
    }
    assert "buy-now" in page.ids and page.ids["price"] == "Price: $42.50"


def test_the_search_page_has_a_search_form_and_the_done_page_the_reward() -> None:
    search = Page(render_html(PageView("search", "i need tea")))
    assert {"search-query", "search-button"} <= set(search.ids)
    assert search.buttons[0]["value"] == "search" and search.ids["instruction-text"] == "i need tea"
    reward = ShopReward(0.5, 1, 2, 1, 1, True)
    done = render_html(
        PageView("done", "i", product=product(), selected=(("size", "3.4 fl oz"),), reward=reward),
        start_url="/",
    )
    check_page(done)
    page = Page(done)
    assert page.ids["reward"] == f"{reward.value:.4f}" == "0.3750"
    assert "Your score (min 0.0, max 1.0): 0.3750" in re.sub(r"<[^>]+>", "", done)
    assert page.clicks() == [] and "new-session" in page.ids


def test_everything_from_products_queries_and_instructions_is_escaped() -> None:
    evil = product(
        asin='B"><script>',
        title=ATTACK,
        description=ATTACK,
        bullets=(ATTACK,),
        options=(("size" + ATTACK, (ATTACK, '" onclick="x')),),
        reviews=(Review(1, ATTACK, ATTACK),),
    )
    views = [
        PageView("search", ATTACK, message=ATTACK),
        PageView("results", ATTACK, query=ATTACK, total=0),
        PageView("results", ATTACK, query="q", total=1, rows=(ResultRow(evil.asin, ATTACK, 1),)),
        *(PageView(k, ATTACK, product=evil) for k in ("item", "description", "features")),
        PageView("reviews", ATTACK, product=evil),
        PageView("done", ATTACK, product=evil, reward=ShopReward(1, 0, 0, 0, 0, True)),
    ]
    for view in views:
        html = render_html(view, base='/s/x"/')
        assert "<script" not in html and 'onclick="' not in html
        assert "&lt;script&gt;" in html
    # The button still sends the exact value, unescaped by the browser.
    item = Page(render_html(views[3]))
    assert f"click[{ATTACK}]" in item.clicks() and 'click[" onclick="x]' in item.clicks()


def test_the_largest_pages_still_fit_and_keep_their_buttons() -> None:
    huge = product(
        title="t" * 20_000 + " ünïcode ✓",
        description="word " * 50_000,
        bullets=tuple("bullet " * 2000 for _ in range(200)),
        reviews=tuple(Review(5, "title " * 500, "body " * 5000) for _ in range(500)),
        options=tuple((f"group{g}", tuple(f"value {g} {v}" for v in range(30))) for g in range(4)),
    )
    for kind in ("item", "description", "features", "reviews"):
        view = PageView(kind, "i " * 3000, product=huge, message="m" * 5000)
        html = render_html(view, base="/s/abc/")
        check_page(html)
        assert Page(html).clicks() == [f"click[{b}]" for b in view.clickables], kind
    rows = tuple(ResultRow(f"B{i:09d}", "t" * 10_000, 1.0) for i in range(10))
    view = PageView("results", "i", query="q" * 500, total=50, rows=rows)
    html = render_html(view)
    check_page(html)
    assert Page(html).clicks() == [f"click[{b}]" for b in view.clickables]
    # Absurd option lists are cut rather than overflow the page.
    absurd = product(options=(("size", tuple(f"v{i} " + "x" * 200 for i in range(500))),))
    check_page(render_html(PageView("item", "i", product=absurd)))


# ----------------------------------------------------------------- the site
def _make_env() -> Any:
    from envgym.envs.shop.shop import ShopEnv

    return ShopEnv(num_products=PRODUCTS, observation="html")


@pytest.fixture(scope="module")
def site():
    from envgym.envs.shop.site import ShopSite

    with ShopSite(_make_env) as server:
        yield server


@pytest.fixture
def client(site):
    with httpx.Client(base_url=site.url, timeout=60) as c:
        yield c


def start(client: Any, seed: int, difficulty: str = "easy") -> str:
    r = client.get("/start", params={"seed": seed, "difficulty": difficulty})
    assert r.status_code == 303, r.text
    return r.headers["location"]


def act(client: Any, path: str, **form: str) -> Page:
    r = client.post(path + "act", data=form)
    assert r.status_code == 303, r.text
    return page(client, path)


def page(client: Any, path: str) -> Page:
    r = client.get(path)
    assert r.status_code == 200
    check_page(r.text)
    return Page(r.text)


def goal_of(seed: int, difficulty: str = "easy") -> tuple[Any, dict[str, Any]]:
    env = _make_env()
    _, info = env.reset(seed=seed, options={"difficulty": difficulty})
    return env, info


def test_a_purchase_on_the_site_earns_the_envs_reward_for_the_same_actions(client) -> None:
    seed = 11
    env, info = goal_of(seed, "medium")
    goal, satisfying = info["privileged"]["goal"], set(info["privileged"]["satisfying_asins"])
    path = start(client, seed, "medium")
    sid_base = path
    first = page(client, path)
    assert first.ids["instruction-text"] == goal["instruction"]
    query = info["admissible_actions"][0][len("search[") : -1]
    results = act(client, path, action="search", query=query)
    asins = [b["value"][6:-1] for b in results.buttons if "asin" in b.get("class", "")]
    assert asins, "the instruction's words found nothing"
    chosen = next((a for a in asins if a in satisfying), asins[0])
    item = act(client, path, action=f"click[{chosen}]")
    for _group, value in goal["options"]:
        if f"click[{value}]" in item.clicks():
            item = act(client, path, action=f"click[{value}]")
    done = act(client, path, action="click[Buy Now]")
    state = client.get(path + "state.json").json()
    assert state["terminated"] and not state["truncated"]
    assert set(state) == {
        "seed",
        "difficulty",
        "reward",
        "terminated",
        "truncated",
        "turn",
        "actions",
    }

    # The same actions in a fresh env: the same pages, step by step, and the same reward.
    total = 0.0
    for action in state["actions"]:
        _, reward, terminated, _, _ = env.step(action)
        total += reward
    assert terminated and state["turn"] == env.turn == len(state["actions"])
    assert done.ids["reward"] == f"{total:.4f}" and math.isclose(state["reward"], total)
    assert done.text == render_html(env.page, base=sid_base, start_url="/")
    if chosen in satisfying:
        assert total > 0
    # After the purchase the done page stays; more posts change nothing.
    after = act(client, path, action="click[Back to Search]")
    assert after.ids["reward"] == done.ids["reward"]
    assert client.get(path + "state.json").json()["actions"] == state["actions"]


def test_every_page_matches_the_env_and_shows_nothing_privileged(client) -> None:
    seed = 4
    env, info = goal_of(seed)
    hidden = set(info["privileged"]["satisfying_asins"]) | {info["privileged"]["goal"]["asin"]}
    path = start(client, seed)
    query = info["admissible_actions"][0][len("search[") : -1]
    steps = [
        {"action": "search", "query": query},
        {"action": "click[Next >]"},
        {"action": "click[< Prev]"},
    ]
    env.step(f"search[{query}]")
    first_result = next(b for b in env.page.clickables if b not in ("Back to Search", "Next >"))
    steps += [{"action": f"click[{first_result}]"}, {"action": "click[Features]"}]
    for form in steps:
        shown = act(client, path, **form)
        text = shown.text
        # Only the asins the page lists, never the goal's list of satisfying products.
        listed = {b["value"][6:-1] for b in shown.buttons if "asin" in b.get("class", "")}
        for asin in hidden - listed - {first_result}:
            assert asin not in text
        assert "privileged" not in text and "satisfying" not in text
    state = client.get(path + "state.json").json()
    assert "privileged" not in str(state)
    replay = _make_env()
    replay.reset(seed=seed, options={"difficulty": "easy"})
    for action in state["actions"]:
        replay.step(action)
    assert shown.text == render_html(replay.page, base=path, start_url="/")


def test_a_hostile_query_comes_back_escaped(client) -> None:
    path = start(client, 1)
    results = act(client, path, action="search", query=ATTACK + " zzqqxx")
    assert "<script" not in results.text
    shown = act(client, path, action=f"click[{ATTACK}]")  # no such button: the env says so
    text = shown.text
    assert "<script" not in text and "&lt;script&gt;" in text and "message" in shown.ids
    r = client.get("/start", params={"seed": ATTACK})
    assert r.status_code == 400 and "<script" not in r.text
    assert r.headers["content-security-policy"].startswith("default-src 'none'")


def test_bad_requests_are_refused_with_what_to_do(client) -> None:
    path = start(client, 2)
    huge = b"action=search&query=" + b"a" * 20_000
    form = {"content-type": "application/x-www-form-urlencoded"}
    assert client.post(path + "act", content=huge, headers=form).status_code == 413

    def chunks():
        yield b"action=search&query="
        for _ in range(40):
            yield b"a" * 1024

    assert client.post(path + "act", content=chunks(), headers=form).status_code == 413
    assert (
        client.post(path + "act", data={"action": "search", "query": "q" * 501}).status_code == 400
    )
    assert client.post(path + "act", data={"action": "rm -rf"}).status_code == 400
    assert client.post(path + "act", json={"action": "click[x]"}).status_code == 415
    assert client.get(path + "state.json").json()["actions"] == []
    made_up = "/s/" + "A" * 22 + "/"
    r = client.get(made_up)
    assert r.status_code == 404 and "start a new session" in r.text and 'href="/"' in r.text
    assert client.post(made_up + "act", data={"action": "click[x]"}).status_code == 404
    assert client.get(made_up + "state.json").status_code == 404
    assert client.get("/start", params={"difficulty": "impossible"}).status_code == 400
    assert client.get("/start", params={"seed": -1}).status_code == 400


def test_concurrent_posts_to_one_session_step_it_one_at_a_time(client, site) -> None:
    path = start(client, 3)
    act(client, path, action="search", query="soap")
    codes: list[int] = []

    def post() -> None:
        with httpx.Client(base_url=site.url, timeout=60) as c:
            codes.append(c.post(path + "act", data={"action": "click[Next >]"}).status_code)

    threads = [threading.Thread(target=post) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert codes == [303] * 8
    state = client.get(path + "state.json").json()
    assert state["turn"] == len(state["actions"]) == 9


def test_the_least_recently_used_sessions_are_evicted() -> None:
    from envgym.envs.shop.site import ShopSite

    with ShopSite(_make_env, max_sessions=2) as small, httpx.Client(base_url=small.url) as c:
        a, b = start(c, 1), start(c, 2)
        assert c.get(a).status_code == 200  # a is now the most recently used
        third = start(c, 3)
        assert c.get(b).status_code == 404
        assert c.get(a).status_code == 200 and c.get(third).status_code == 200


# ---------------------------------------------------------------------- CLI
def _launch(tmp_path: Path, *args: str) -> tuple[subprocess.Popen, str]:
    """Start `envgym shop ARGS`; return the process and the address it printed."""
    env = {**os.environ, "ENVGYM_CACHE": str(tmp_path / "cache")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "envgym", "shop", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=REPO,
    )
    line = proc.stdout.readline()  # type: ignore[union-attr]
    if not line.startswith("serving"):
        proc.kill()
        raise AssertionError(f"no address printed: {line!r} {proc.stderr.read()}")  # type: ignore[union-attr]
    return proc, line.split(" on ", 1)[1].strip()


def _stop(proc: subprocess.Popen) -> str:
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    return err


def test_envgym_shop_serve_serves_the_site(tmp_path: Path) -> None:
    proc, address = _launch(tmp_path, "serve", "--products", str(PRODUCTS), "--port", "0")
    try:
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/", address)
        with httpx.Client(base_url=address, timeout=60) as c:
            assert 'id="difficulty"' in c.get("/").text
            shown = page(c, start(c, 0, "hard"))
            assert "search-query" in shown.ids
    finally:
        _stop(proc)


def test_envs_search_through_envgym_shop_index_serve(tmp_path: Path) -> None:
    from envgym.envs.shop.shop import ShopEnv

    sock = tmp_path / "index.sock"
    proc, address = _launch(
        tmp_path, "index-serve", "--products", str(PRODUCTS), "--uds", str(sock)
    )
    try:
        assert address == f"unix:{sock}"
        remote = ShopEnv(num_products=PRODUCTS, index_uds=sock)
        local = ShopEnv(num_products=PRODUCTS)
        for seed in (0, 1, 2):
            obs_r, info_r = remote.reset(seed=seed)
            obs_l, info_l = local.reset(seed=seed)
            assert obs_r == obs_l
            for action in (info_l["admissible_actions"][0], "click[Next >]"):
                assert remote.step(action)[0] == local.step(action)[0]
    finally:
        _stop(proc)


def test_an_index_server_of_another_catalogue_is_refused(tmp_path: Path) -> None:
    from envgym.envs.shop.shop import ShopEnv

    sock = tmp_path / "other.sock"
    args = ("index-serve", "--products", str(PRODUCTS), "--catalogue-seed", "1", "--uds", str(sock))
    proc, _ = _launch(tmp_path, *args)
    try:
        env = ShopEnv(num_products=PRODUCTS, catalogue_seed=0, index_uds=sock)
        with pytest.raises(ValueError, match=r"another catalogue \(generated 2000 seed 1\)"):
            env.reset(seed=0)
    finally:
        _stop(proc)


def test_the_shop_commands_say_what_is_wrong(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "envgym", "shop", "serve", "--products", "5"],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert out.returncode == 2 and "--products must be from" in out.stderr
    assert "Traceback" not in out.stderr
