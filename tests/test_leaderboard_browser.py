"""A real browser reads the leaderboard: headless Chromium (Debian's ``chromium``
and ``chromium-driver``) driven by selenium opens the overview, goes to
Sokoban's page, finds the committed baseline rows, sorts them by success both
ways, sees the plot with a point per row, and opens a trajectory whose turns
are the episode's replies and rewards.

The pages are served by the leaderboard server itself (on an empty SQLite
database, so the rows are the committed baselines), under the strict
Content-Security-Policy it sends, so the test also shows the pages need no
script to work.

Skipped when the browser, its driver or selenium is missing, unless
``ENVGYM_REQUIRE_BROWSER=1`` (as ``.ci/run`` sets), which makes that a failure.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

pytestmark = pytest.mark.browser

SOKOBAN = "envgym/Sokoban-v0"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The leaderboard server itself (`envgym leaderboard serve`'s app) on an empty
    SQLite database: its pages show the committed baselines."""
    from envgym.leaderboard.app import LeaderboardServer

    db = tmp_path_factory.mktemp("board") / "board.db"
    with LeaderboardServer(f"sqlite:///{db}", workers=0) as running:
        yield running


def _click(driver: Any, element: Any) -> None:
    """Click a link and wait until the page it opens has loaded: the old page's
    window carries a mark that the new page's lacks."""
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.support.ui import WebDriverWait

    driver.execute_script("window.envgymOldPage = true;")
    element.click()
    WebDriverWait(driver, 60, ignored_exceptions=(WebDriverException,)).until(
        lambda d: d.execute_script(
            "return !window.envgymOldPage && document.readyState === 'complete';"
        )
    )


def _column(driver: Any, name: str) -> list[float]:
    from selenium.webdriver.common.by import By

    rows = driver.find_elements(By.CSS_SELECTOR, "#results-Sokoban-v0 tr.entry")
    return [float(row.get_attribute(f"data-{name}")) for row in rows]


def test_a_browser_finds_sorts_plots_and_opens_the_sokoban_baselines(driver, site) -> None:
    from selenium.webdriver.common.by import By

    from envgym.leaderboard.baselines import load_baseline_results

    driver.get(site.url + "/")
    overview = driver.find_element(By.ID, "overview")
    assert SOKOBAN in overview.text
    link = next(a for a in driver.find_elements(By.CSS_SELECTOR, "a.env-link") if a.text == SOKOBAN)
    _click(driver, link)
    assert driver.current_url.endswith("/envs/Sokoban-v0"), driver.current_url

    # The inline style applies under the strict CSP: the header row is shaded.
    header = driver.find_element(By.CSS_SELECTOR, "#results-Sokoban-v0 th")
    assert header.value_of_css_property("background-color") == "rgba(244, 244, 244, 1)"

    rows = driver.find_elements(By.CSS_SELECTOR, "#results-Sokoban-v0 tr.entry")
    found = {
        (
            row.find_element(By.CLASS_NAME, "agent").text,
            row.find_elements(By.TAG_NAME, "td")[4].text,
        )
        for row in rows
    }
    assert found == {(a, d) for a in ("random", "oracle") for d in ("easy", "medium", "hard")}
    assert all("baseline" in row.text for row in rows)

    # Ranked level by level; the success header sorts by success, high to low,
    # then flips it, and back.
    ranks = [row.find_element(By.CLASS_NAME, "rank").text for row in rows]
    assert ranks == ["1", "2"] * 3, ranks
    _click(driver, driver.find_element(By.CSS_SELECTOR, "a.sort[data-sort='success']"))
    assert _column(driver, "success") == sorted(_column(driver, "success"), reverse=True)
    _click(driver, driver.find_element(By.CSS_SELECTOR, "a.sort[data-sort='success']"))
    assert "order=asc" in driver.current_url
    ascending = _column(driver, "success")
    assert ascending == sorted(ascending) and ascending[0] < ascending[-1]
    _click(driver, driver.find_element(By.CSS_SELECTOR, "a.sort[data-sort='success']"))
    assert _column(driver, "success") == sorted(ascending, reverse=True)
    _click(driver, driver.find_element(By.CSS_SELECTOR, "a.sort[data-sort='return']"))
    returns = _column(driver, "return")
    assert returns == sorted(returns, reverse=True)

    plot = driver.find_element(By.ID, "plot-Sokoban-v0")
    assert plot.is_displayed() and plot.size["width"] > 200
    points = plot.find_elements(By.CSS_SELECTOR, "circle.point")
    assert len(points) == len(rows) and all(p.is_displayed() for p in points)
    assert len(plot.find_elements(By.CSS_SELECTOR, "line.interval")) == len(rows)

    first = driver.find_element(By.CSS_SELECTOR, "#results-Sokoban-v0 tr.entry")
    entry_id = first.get_attribute("data-entry-id")
    _click(driver, first.find_element(By.CSS_SELECTOR, "a.trajectory"))
    assert driver.current_url.endswith(f"/submissions/{entry_id}/episodes/0")
    episode = load_baseline_results()[entry_id]["episodes"][0]
    turns = driver.find_elements(By.CSS_SELECTOR, "section.turn:not(.final)")
    assert len(turns) == len(episode["actions"])
    for turn, reply, reward in zip(turns, episode["actions"], episode["rewards"], strict=True):
        assert turn.find_element(By.CSS_SELECTOR, "pre.reply").text == reply.strip()
        assert turn.find_element(By.CSS_SELECTOR, ".reward").text == f"{reward:g}"
        assert turn.find_element(By.CSS_SELECTOR, "pre.observation").text.strip()
