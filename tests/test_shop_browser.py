"""A real browser shops on ``envgym shop serve``'s site: headless Chromium (Debian's
``chromium`` and ``chromium-driver``) driven by selenium loads the start page,
searches with the instruction's words, opens a result, chooses the options the
goal asks for, buys, and the reward page shows the reward `ShopEnv` gives for
the same actions.

Skipped when the browser, its driver or selenium is missing, unless
``ENVGYM_REQUIRE_BROWSER=1`` (as ``.ci/run`` sets), which makes that a failure.
"""

from __future__ import annotations

import math
import re
from typing import Any

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")

pytestmark = pytest.mark.browser

PRODUCTS = 2000
SEED = 7


def _make_env() -> Any:
    from envgym.envs.shop.shop import ShopEnv

    return ShopEnv(num_products=PRODUCTS, observation="html")


@pytest.fixture(scope="module")
def site():
    from envgym.envs.shop.site import ShopSite

    with ShopSite(_make_env) as server:
        yield server


def _click(driver: Any, element: Any) -> None:
    """Click a button that loads a new page, and wait until the new page has loaded
    (a click may return before the post/redirect/get has finished). The old page's
    window carries a mark that the new page's lacks; element references are not
    used to tell, since chromedriver may answer a vanished node with an error
    other than StaleElementReferenceException."""
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.support.ui import WebDriverWait

    driver.execute_script("window.envgymOldPage = true;")
    element.click()
    WebDriverWait(driver, 60, ignored_exceptions=(WebDriverException,)).until(
        lambda d: d.execute_script(
            "return !window.envgymOldPage && document.readyState === 'complete';"
        )
    )


def test_a_browser_buys_and_sees_the_reward_the_env_gives(driver, site) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    # The test's oracle: the goal, read from an env made with the same seed.
    oracle = _make_env()
    _, info = oracle.reset(seed=SEED, options={"difficulty": "medium"})
    goal = info["privileged"]["goal"]
    satisfying = set(info["privileged"]["satisfying_asins"])

    driver.get(site.url + "/")
    driver.find_element(By.ID, "seed").send_keys(str(SEED))
    Select(driver.find_element(By.ID, "difficulty")).select_by_value("medium")
    _click(driver, driver.find_element(By.ID, "start"))
    assert re.search(r"/s/[A-Za-z0-9_-]{22}/$", driver.current_url), driver.current_url
    assert driver.find_element(By.ID, "instruction-text").text == goal["instruction"]

    words = re.sub(r",?\s*and price lower than [0-9.]+ dollars\.?$", "", goal["instruction"])
    driver.find_element(By.ID, "search-query").send_keys(words)
    _click(driver, driver.find_element(By.ID, "search-button"))

    results = driver.find_elements(By.CSS_SELECTOR, ".result button.asin")
    asins = [b.text for b in results]
    assert asins, driver.page_source[:2000]
    chosen = next((a for a in asins if a in satisfying), asins[0])
    _click(driver, results[asins.index(chosen)])
    assert driver.find_element(By.ID, "title").text

    for _group, value in goal["options"]:
        buttons = [b for b in driver.find_elements(By.CSS_SELECTOR, "button.option")]
        match = next((b for b in buttons if b.text == value), None)
        if match is None:
            continue  # this product has no such option (a near miss): buy it anyway
        _click(driver, match)
        picked = next(
            b for b in driver.find_elements(By.CSS_SELECTOR, "button.option") if b.text == value
        )
        assert picked.get_attribute("aria-pressed") == "true"
        assert "selected" in picked.get_attribute("class")

    _click(driver, driver.find_element(By.ID, "buy-now"))
    shown = driver.find_element(By.ID, "reward").text
    assert "Your score (min 0.0, max 1.0): " + shown in driver.find_element(By.ID, "score").text

    # The env's reward for the actions the browser took.
    state = httpx.get(driver.current_url + "state.json", timeout=60).json()
    assert state["actions"][0] == f"search[{words}]"
    assert state["actions"][1] == f"click[{chosen}]" and state["actions"][-1] == "click[Buy Now]"
    replay = _make_env()
    replay.reset(seed=SEED, options={"difficulty": "medium"})
    total, terminated = 0.0, False
    for action in state["actions"]:
        _, reward, terminated, _, _ = replay.step(action)
        total += reward
    assert terminated and state["terminated"]
    assert shown == f"{total:.4f}" and math.isclose(state["reward"], total)
    assert total > 0
    if chosen in satisfying and len(state["actions"]) == 3 + len(goal["options"]):
        assert shown == "1.0000"  # the right product with every option asked for
