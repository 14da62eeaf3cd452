"""The leaderboard's pages, static export and committed baselines
(`envgym.leaderboard.page`, `.trajectory`, `.export`, `.baselines`).

What a reader of the pages would notice: hostile agent and model names show as
text and never run; a table sorts as its header links say; each env's plot has
one point per entry, drawn at its value with its 95% interval; a trajectory
shows every reply and reward beside the observation the env gives on replay;
the exported site's links all lead to files it wrote. And the committed
baselines cover every env and pass the server's verification.
"""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from envgym.evaluation import make_text_env
from envgym.evaluation.verify import verify_submission
from envgym.leaderboard.baselines import (
    BASELINES_DIR,
    baseline_file_name,
    load_baseline_entries,
    load_baseline_results,
    make_baselines,
)
from envgym.leaderboard.export import export_command, export_site
from envgym.leaderboard.page import render_env, render_index
from envgym.leaderboard.ranking import installed_identity
from envgym.leaderboard.trajectory import render_trajectory
from envgym.registry import list_envs, missing_data

HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>"\'&'


class _Tags(HTMLParser):
    """Every start tag with its attributes, and the text inside each element."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _parse(page: str) -> _Tags:
    parser = _Tags()
    parser.feed(page)
    return parser


def _elements(page: str, tag: str, cls: str | None = None) -> list[dict[str, str | None]]:
    return [
        attrs
        for name, attrs in _parse(page).tags
        if name == tag and (cls is None or cls in (attrs.get("class") or "").split())
    ]


def _current(env_id: str) -> dict[str, Any]:
    """The version and hash of the installed env: an entry made now has them."""
    version, digest = installed_identity(env_id) or (None, None)
    return {"env_version": version, "env_hash": digest}


def _entry(entry_id: str, success: float, ret: float, date: str, **more: Any) -> dict[str, Any]:
    """A verified run on a ticket's seeds, on the installed env: one that ranks."""
    entry = {
        "id": entry_id,
        "env_id": "envgym/Sokoban-v0",
        "difficulty": "easy",
        "agent": "random",
        "model": None,
        "submitter": "someone",
        "episodes": 20,
        "success_rate": success,
        "success_ci95": [max(0.0, success - 0.2), min(1.0, success + 0.1)],
        "mean_return": ret,
        "ci95": [ret - 1.5, ret + 0.5],
        "created_at": date,
        "verified": True,
        "status": "accepted",
        "seed": 2**40 + 7,
        "ticketed": True,
    }
    entry.update(more)
    return {**_current(str(entry["env_id"])), **entry}


ENTRIES = [
    _entry("a", 0.50, 3.0, "2026-01-03T00:00:00+00:00"),
    _entry("b", 0.90, -1.0, "2026-01-01T00:00:00+00:00", agent="oracle"),
    _entry("c", 0.10, 7.0, "2026-01-02T00:00:00+00:00", model="tiny-llm"),
    _entry("d", 0.70, 1.0, "2026-01-04T00:00:00+00:00", env_id="envgym/GuessNumber-v0"),
]


def _row_ids(page: str, table: str = "results") -> list[str | None]:
    """The entry ids of the ranked table (``results``) or of the ``unranked`` one."""
    ranked, _, unranked = page.partition('<table id="unranked-')
    page = ranked if table == "results" else unranked
    return [attrs.get("data-entry-id") for attrs in _elements(page, "tr", "entry")]


def _assert_inert(page: str) -> None:
    for tag, attrs in _parse(page).tags:
        assert tag not in ("script", "img", "iframe", "object"), (tag, attrs)
        assert not any(name.startswith("on") for name in attrs), (tag, attrs)
        for name in ("href", "src"):
            assert not (attrs.get(name) or "").lower().startswith("javascript:"), attrs


def test_hostile_names_show_as_text_on_every_page() -> None:
    hostile = [
        _entry(HOSTILE, 0.4, 1.0, HOSTILE, agent=HOSTILE, model=HOSTILE, difficulty=HOSTILE),
        _entry("x", 0.6, 2.0, "2026-01-01", env_id=f"envgym/{HOSTILE}", submitter=HOSTILE),
    ]
    index = render_index(hostile, submitters=[(HOSTILE, 2, 1)])
    env_page = render_env("envgym/Sokoban-v0", hostile)
    meta = {
        "env_id": "envgym/Sokoban-v0",
        "env_kwargs": {"difficulty": "easy"},
        "agent": {"name": HOSTILE, "model": HOSTILE},
    }
    episode = {
        "seed": 0,
        "actions": [HOSTILE, "up"],
        "rewards": [0.0, 0.0],
        "return": 0.0,
        "success": False,
        "turns": 2,
    }
    trajectory = render_trajectory(meta, episode, 0, entry_id=HOSTILE)
    for page in (index, env_page, trajectory):
        _assert_inert(page)
        assert HOSTILE in "".join(_parse(page).text)  # shown, as text
    assert "".join(_parse(env_page).text).count(HOSTILE) >= 3  # agent, model, difficulty
    submitters = index[index.index('<table id="submitters"') :]
    assert HOSTILE in "".join(_parse(submitters).text)  # a submitter's name, as text
    # The hostile id reaches the trajectory link only URL-quoted.
    links = _elements(env_page, "a", "trajectory")
    assert any("%3Cscript%3E" in (a.get("href") or "") for a in links)


def test_the_table_sorts_as_its_header_links_say() -> None:
    env_id = "envgym/Sokoban-v0"
    assert _row_ids(render_env(env_id, ENTRIES)) == ["b", "a", "c"]  # rank: lower bounds
    assert _row_ids(render_env(env_id, ENTRIES, "success", "asc")) == ["c", "a", "b"]
    assert _row_ids(render_env(env_id, ENTRIES, "return", "desc")) == ["c", "a", "b"]
    assert _row_ids(render_env(env_id, ENTRIES, "date", "desc")) == ["a", "c", "b"]
    assert _row_ids(render_env(env_id, ENTRIES, "date", "asc")) == ["b", "c", "a"]
    # An unknown sort from a hand-typed URL shows the default order, not an error.
    assert _row_ids(render_env(env_id, ENTRIES, "bogus", "sideways")) == ["b", "a", "c"]

    page = render_env(env_id, ENTRIES, "success", "desc")
    hrefs = {a["data-sort"]: a["href"] for a in _elements(page, "a", "sort")}
    # The active column's link flips its order; the others start high to low.
    assert hrefs == {
        "rank": "/envs/Sokoban-v0?sort=rank&order=desc",
        "success": "/envs/Sokoban-v0?sort=success&order=asc",
        "return": "/envs/Sokoban-v0?sort=return&order=desc",
        "date": "/envs/Sokoban-v0?sort=date&order=desc",
    }
    table = _elements(page, "table")
    assert table[0]["id"] == "results-Sokoban-v0"
    trajectory_links = [a["href"] for a in _elements(page, "a", "trajectory")]
    assert trajectory_links == [f"/submissions/{i}/episodes/0" for i in ("b", "a", "c")]


def test_the_plot_has_one_point_per_entry_at_its_value_with_its_interval() -> None:
    env_id = "envgym/Sokoban-v0"
    mine = {e["id"]: e for e in ENTRIES if e["env_id"] == env_id}
    page = render_env(env_id, ENTRIES)
    tags = _parse(page).tags
    plot_at = next(
        i for i, (t, a) in enumerate(tags) if t == "svg" and a.get("id") == "plot-Sokoban-v0"
    )
    end = next(i for i, (t, _) in enumerate(tags) if t == "svg" and i > plot_at)
    inside = tags[plot_at:end]
    frame = next(a for t, a in inside if t == "rect" and a.get("class") == "frame")
    top, height = float(frame["y"]), float(frame["height"])

    def value_at(y: str | None) -> float:  # success axis: 0 at the bottom, 1 at the top
        return 1 - (float(y or "nan") - top) / height

    points = [a for t, a in inside if t == "circle" and a.get("class") == "point"]
    bars = {a["data-entry-id"]: a for t, a in inside if a.get("class") == "interval"}
    assert [p["data-entry-id"] for p in points] == _row_ids(page)  # the table's order
    for point in points:
        entry = mine[point["data-entry-id"]]
        assert value_at(point["cy"]) == pytest.approx(entry["success_rate"], abs=0.01)
        bar = bars[point["data-entry-id"]]
        assert bar["x1"] == point["cx"]
        low, high = sorted((value_at(bar["y1"]), value_at(bar["y2"])))
        assert (low, high) == pytest.approx(tuple(entry["success_ci95"]), abs=0.01)
    texts = "".join(_parse(page).text)
    assert "success rate (95% CI)" in texts and "mean return (95% CI)" in texts
    returns = _elements(page, "svg")[1]
    assert returns["id"] == "plot-return-Sokoban-v0"


def test_the_index_shows_each_agents_best_success_per_env_and_links_to_env_pages() -> None:
    page = render_index(ENTRIES + [_entry("e", 0.2, 0.0, "2026-01-05", agent="oracle")])
    text = "".join(_parse(page).text)
    for label in ("oracle", "random", "random (tiny-llm)"):
        assert label in text
    assert "90%" in text and "70%" in text  # oracle's best on Sokoban, random's on GuessNumber
    assert "20%" not in text  # oracle's weaker entry is not its best
    links = [a["href"] for a in _elements(page, "a", "env-link")]
    assert links == ["/envs/GuessNumber-v0", "/envs/Sokoban-v0"]


def test_a_trajectory_shows_each_reply_and_reward_beside_the_replayed_observation() -> None:
    results = load_baseline_results()["Sokoban-v0_easy_random"]
    episode = results["episodes"][0]
    page = render_trajectory(results, episode, 0, entry_id="Sokoban-v0_easy_random")

    env = make_text_env(results["env_id"], results["env_kwargs"])
    obs, _ = env.reset(seed=episode["seed"])
    seen = [obs]
    for action in episode["actions"]:
        obs, *_ = env.step(action)
        seen.append(obs)
    env.close()

    sections: list[list[str]] = []
    capturing = False

    class Turns(HTMLParser):
        """Each ``section.turn`` as ["observation:...", "reply:...", "reward:..."]."""

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            nonlocal capturing
            classes = (dict(attrs).get("class") or "").split()
            if tag == "section" and "turn" in classes:
                sections.append([])
            if tag in ("pre", "span") and classes and sections:
                sections[-1].append(classes[0] + ":")
                capturing = True

        def handle_endtag(self, tag: str) -> None:
            nonlocal capturing
            if tag in ("pre", "span"):
                capturing = False

        def handle_data(self, data: str) -> None:
            if capturing:
                sections[-1][-1] += data

    Turns(convert_charrefs=True).feed(page)
    turns = [s for s in sections if any(x.startswith("reply:") for x in s)]
    assert len(turns) == len(episode["actions"]) == episode["turns"]
    for i, parts in enumerate(turns):
        assert f"observation:{seen[i]}" in parts
        assert f"reply:{episode['actions'][i]}" in parts
        assert f"reward:{episode['rewards'][i]:g}" in parts
    assert f"observation:{seen[-1]}" in sections[-1]  # what the last reply led to
    assert 'rel="next" href="/submissions/Sokoban-v0_easy_random/episodes/1"' in page


@pytest.mark.parametrize(
    "env_kwargs",
    [{"difficulty": "easy", "backend": "docker"}, {"difficulty": "easy", "world_seed": "/etc"}],
)
def test_a_trajectory_with_arguments_a_scored_run_may_not_set_is_not_replayed(
    env_kwargs: dict[str, Any],
) -> None:
    meta = {"env_id": "envgym/Sokoban-v0", "env_kwargs": env_kwargs, "agent": {"name": "x"}}
    episode = {"seed": 0, "actions": ["up"], "rewards": [0.5], "success": False, "turns": 1}
    page = render_trajectory(meta, episode, 0)
    assert "not replayed" in page
    assert not _elements(page, "pre", "observation")
    assert _elements(page, "pre", "reply") and "0.5" in page


def test_export_writes_a_site_whose_links_all_lead_to_its_files(tmp_path: Path) -> None:
    results = load_baseline_results()
    entries = [e for e in load_baseline_entries() if e.env_id == "envgym/GuessNumber-v0"]
    entries += [e for e in load_baseline_entries() if e.id == "Sokoban-v0_easy_oracle"]
    written = export_site(entries, tmp_path, results)
    assert set(written) == {p for p in tmp_path.rglob("*.html")}
    assert (tmp_path / "index.html").is_file()
    assert (tmp_path / "env" / "Sokoban-v0.html").is_file()
    assert (tmp_path / "env" / "GuessNumber-v0--return-asc.html").is_file()
    assert (tmp_path / "episodes" / "Sokoban-v0_easy_oracle" / "0.html").is_file()
    for page in written:
        for link in _elements(page.read_text(encoding="utf-8"), "a"):
            href = link["href"] or ""
            assert not href.startswith("/"), (page, href)  # relative, so file:// works
            assert (page.parent / href).resolve().is_file(), (page, href)
    sokoban = (tmp_path / "env" / "Sokoban-v0.html").read_text(encoding="utf-8")
    assert _row_ids(sokoban) == ["Sokoban-v0_easy_oracle"]


def test_the_committed_baselines_cover_every_env_and_difficulty() -> None:
    names = {p.name for p in BASELINES_DIR.glob("*.json")}
    for spec in list_envs():
        if missing_data(spec) is not None and spec.data_check is not None:
            continue
        if spec.id == "envgym/WebShop-v0":
            continue  # needs WebShop's own files, which the repo cannot ship
        for difficulty in spec.difficulties:
            for agent in ("random", "oracle") if spec.oracle else ("random",):
                assert baseline_file_name(spec.id, difficulty, agent) in names
    entries = load_baseline_entries()
    assert len(entries) == len(names)
    assert all(e.status == "baseline" and e.verified is False for e in entries)
    oracle = next(e for e in entries if e.id == "Sokoban-v0_hard_oracle")
    assert oracle.success_rate == 1.0 and oracle.agent == "oracle"


@pytest.mark.parametrize(
    "name", ["Sokoban-v0_easy_oracle", "Sokoban-v0_medium_random", "TicTacToe-v0_hard_random"]
)
def test_committed_baselines_pass_the_servers_verification(name: str) -> None:
    results = json.loads((BASELINES_DIR / f"{name}.json").read_text(encoding="utf-8"))
    verdict = verify_submission(results)
    assert verdict.accepted, verdict.reason
    assert verdict.checked_episodes == results["num_episodes"]


def test_make_baselines_writes_one_file_per_difficulty_and_agent(tmp_path: Path) -> None:
    written = make_baselines(tmp_path, episodes=2, seed=5, envs=["envgym/GuessNumber-v0"])
    assert sorted(p.name for p in written) == sorted(
        f"GuessNumber-v0_{d}_{a}.json"
        for d in ("easy", "medium", "hard")
        for a in ("random", "oracle")
    )
    entries = load_baseline_entries(tmp_path)
    assert {e.difficulty for e in entries} == {"easy", "medium", "hard"}
    assert all(e.episodes == 2 for e in entries)
    results = load_baseline_results(tmp_path)["GuessNumber-v0_hard_oracle"]
    assert [ep["seed"] for ep in results["episodes"]] == [5, 6]


def test_export_command_needs_a_source_and_exports_a_database(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="--db URL .* or --baselines"):
        export_command(tmp_path / "none")
    pytest.importorskip("sqlalchemy")
    written = export_command(tmp_path / "site", db_url=f"sqlite:///{tmp_path / 'board.db'}")
    assert written == [tmp_path / "site" / "index.html"]
    assert "No entries yet" in written[0].read_text(encoding="utf-8")


def test_a_run_with_other_env_settings_is_marked_as_such():
    from envgym.leaderboard.page import render_env, settings_text

    assert settings_text({"difficulty": "easy"}) is None
    assert settings_text({"difficulty": "easy", "slippery": True}) == "slippery=True"
    base = {
        "id": 1,
        "env_id": "envgym/FrozenLake-v0",
        "difficulty": "easy",
        "agent": "oracle",
        "episodes": 10,
        "success_rate": 1.0,
        "success_ci95": [0.7, 1.0],
        "mean_return": 1.0,
        "ci95": [1.0, 1.0],
        "verified": True,
        "status": "accepted",
    }
    slippery = {**base, "id": 2, "settings": "slippery=True, <b>=1"}
    page = render_env("envgym/FrozenLake-v0", [base, slippery])
    assert page.count('class="settings') == 1
    assert "[slippery=True, &lt;b&gt;=1]" in page


# ------------------------------------------------------------ honest ranking
def _overview_text(page: str) -> str:
    return "".join(_parse(page[page.index('<table id="overview"') :]).text)


def _success_entry(entry_id: str, successes: int, episodes: int, **more: Any) -> dict[str, Any]:
    """An entry whose figures are what `summarize` gives for these episodes."""
    from envgym.evaluation.summary import summarize

    summary = summarize(
        [
            {"return": float(i < successes), "success": i < successes, "turns": 1}
            for i in range(episodes)
        ]  # fmt: skip
    )
    return _entry(
        entry_id,
        summary["success_rate"],
        summary["mean_return"],
        "2026-01-01T00:00:00+00:00",
        episodes=episodes,
        success_ci95=summary["success_ci95"],
        ci95=summary["ci95"],
        **more,
    )


def test_a_lucky_short_run_never_outranks_a_long_steady_one() -> None:
    """One lucky episode (100%) and three lucky ones are not ranked above 20
    episodes at 90%: the short ones are provisional, and between ranked runs
    the lower bound of the interval decides, not the point estimate."""
    env_id = "envgym/Sokoban-v0"
    oracle = _success_entry("oracle20", 18, 20, agent="oracle")
    lucky1 = _success_entry("lucky1", 1, 1, agent="lucky")
    lucky3 = _success_entry("lucky3", 3, 3, agent="lucky")
    near = _success_entry("near25", 24, 25, agent="steady")  # 96% of 25
    shaky = _success_entry("shaky20", 19, 20, agent="shaky")  # 95% of 20
    perfect = _success_entry("perfect20", 20, 20, agent="perfect")  # 100%, bound 0.84
    many = _success_entry("many50", 48, 50, agent="many")  # 96%, bound 0.87: ranks higher
    page = render_env(env_id, [lucky1, lucky3, oracle, near, shaky, perfect, many])
    assert _row_ids(page) == ["many50", "perfect20", "near25", "shaky20", "oracle20"]
    assert set(_row_ids(page, "unranked")) == {"lucky1", "lucky3"}
    assert "provisional: 1 episodes, ranking needs 20" in page
    # A one-episode run shows no return interval at all, not a zero-width one.
    lucky_row = page[page.index('data-entry-id="lucky1"') :]
    lucky_return = lucky_row[lucky_row.index('class="num return"') :].split("</td>")[0]
    assert 'class="ci"' not in lucky_return
    overview = _overview_text(render_index([lucky1, lucky3, oracle]))
    assert "90%" in overview and "100%" not in overview  # the lucky runs are no agent's best


def test_runs_off_a_track_are_listed_apart_with_the_reason() -> None:
    env_id = "envgym/FrozenLake-v0"
    base = _success_entry("ticketed", 10, 20, env_id=env_id, agent="random")
    trivial = {**_success_entry("trivial", 20, 20, env_id=env_id, agent="random"),
               "settings": "hole_fraction=0, size=2"}  # fmt: skip
    own_seeds = {**_success_entry("own", 20, 20, env_id=env_id), "ticketed": False}
    old = {**_success_entry("old", 20, 20, env_id=env_id), "env_hash": "sha256:" + "0" * 64}
    unverified = {**_success_entry("pending", 20, 20, env_id=env_id), "verified": False,
                  "status": "pending"}  # fmt: skip
    page = render_env(env_id, [base, trivial, own_seeds, old, unverified])
    assert _row_ids(page) == ["ticketed"]
    text = "".join(_parse(page).text)
    for reason in ("custom settings", "own seeds (no ticket)", "previous version", "not verified"):
        assert reason in text
    overview = _overview_text(render_index([base, trivial, own_seeds, old]))
    assert "50%" in overview and "100%" not in overview


def test_the_overview_compares_agents_per_level_never_best_of_levels() -> None:
    easy = _success_entry("easy", 20, 20, agent="oracle", difficulty="easy")
    hard = _success_entry("hard", 4, 20, agent="oracle", difficulty="hard")
    page = render_index([easy, hard])
    rows = {
        (attrs.get("data-env"), attrs.get("data-difficulty"))
        for attrs in _elements(page, "tr", "env")
    }
    assert rows == {("envgym/Sokoban-v0", "easy"), ("envgym/Sokoban-v0", "hard")}
    hard_row = page[page.index('data-difficulty="hard"') :].split("</tr>")[0]
    assert "20%" in hard_row and "100%" not in hard_row


def test_the_table_names_the_submitter_and_the_seeds() -> None:
    entry = _success_entry("mine", 10, 20, submitter="alice-lab", agent="gpt-5")
    page = render_env("envgym/Sokoban-v0", [entry])
    text = "".join(_parse(page).text)
    assert "alice-lab" in text and "agent (as claimed)" in text
    assert f"{2**40 + 7}..{2**40 + 26}" in text
    baselines = render_env("envgym/Sokoban-v0", load_baseline_entries())
    assert "0..19" in "".join(_parse(baselines).text)  # baselines show their seeds


def test_a_trajectory_page_is_bounded_whatever_the_replies() -> None:
    """100 replies of 100,000 characters: the page shows each cut and stops
    adding turns past its size bound, instead of growing to 10 MB."""
    meta = {"env_id": "envgym/GuessNumber-v0", "env_kwargs": {"difficulty": "easy"}}
    episode = {
        "seed": 0,
        "actions": ["<" * 100_000] * 100,
        "rewards": [0.0] * 100,
        "return": 0.0,
        "success": False,
        "turns": 100,
    }
    page = render_trajectory(meta, episode, 0, replay=False)
    assert len(page) < 1_500_000
    assert "more turns are not shown" in page and "more chars" in page
