"""The leaderboard's web pages as pure functions from entries to complete HTML.

`render_index` (a matrix of tracks, an env at one level, by agents: each
agent's best ranked run), `render_env` (one env's ranked entries, sortable
through links, the entries that do not rank with the reason, and plots of
success and return with their 95% intervals); `envgym.leaderboard.trajectory`'s
`render_trajectory` shows one episode turn by turn in the same page frame.
Which entries rank, and in what order, is `envgym.leaderboard.ranking`'s. The
server (`envgym.leaderboard.app`) serves them and `envgym.leaderboard.export`
writes them as static files; `SiteLinks` says where their links point for each.

The markup is in Jinja2 templates in ``templates/`` (``page.html`` the frame and
its stylesheet ``style.css``, ``index.html``, ``env.html``, ``trajectory.html``, and
``plot.svg`` for `envgym.leaderboard.plots`), rendered by `render_page` through
`envgym.templating` with autoescape: every value from an entry or a results file
is escaped. This module decides what the pages show; the templates, how.
Every page is self-contained and printable: inline CSS, no script, no outside
resource, so a strict Content-Security-Policy (``default-src 'none';
style-src 'unsafe-inline'; img-src data:``) serves it.

An entry is a dict with keys ``id, env_id, difficulty, agent, model,
submitter, episodes, success_rate, success_ci95, mean_return, ci95,
created_at, verified, status`` and, for ranking, ``env_version, env_hash,
seed, ticketed`` (and ``replies_label`` when verification recognised the
replies; ``trials`` and ``pass_k`` for a run of several trials per seed, whose
success cell shows pass^1 .. pass^K and whose seeds cell says ``x K trials``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from markupsafe import Markup

from envgym.evaluation.tracks import MIN_RANKED_EPISODES
from envgym.leaderboard.models import Entry, as_entry
from envgym.leaderboard.plots import PlotPoint, interval_plot
from envgym.leaderboard.ranking import Identity, installed_identity, rank_entries, track_label
from envgym.templating import render_template

__all__ = [
    "ORDERS",
    "SORTS",
    "SiteLinks",
    "agent_label",
    "settings_text",
    "env_slug",
    "render_env",
    "render_index",
    "render_page",
    "sort_entries",
]

#: Columns a table sorts by (``?sort=``), and the two orders (``?order=``). ``rank``
#: is each track's rank (by the lower bounds of the 95% intervals), level by level.
SORTS: tuple[str, ...] = ("rank", "success", "return", "date")
ORDERS: tuple[str, ...] = ("desc", "asc")


class SiteLinks:
    """Where the pages link: the server's routes. `envgym.leaderboard.export`
    subclasses this for static files.

    ``/`` the index, ``/envs/<slug>`` an env's page (``?sort=&order=``) and
    ``/submissions/<id>/episodes/<i>`` an episode.
    """

    def index(self) -> str:
        return "/"

    def env(self, env_id: str, sort: str | None = None, order: str | None = None) -> str:
        url = f"/envs/{quote(env_slug(env_id), safe='')}"
        return url if sort is None else f"{url}?sort={sort}&order={order or 'desc'}"

    def trajectory(self, entry_id: str, index: int) -> str:
        return f"/submissions/{quote(str(entry_id), safe='')}/episodes/{index}"


def env_slug(env_id: str) -> str:
    """``envgym/Sokoban-v0`` -> ``Sokoban-v0``; other ids with every character
    outside ``[A-Za-z0-9_.-]`` made ``_`` (safe in an id, a URL and a file name)."""
    name = env_id.removeprefix("envgym/")
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name) or "_"


def agent_label(entry: Entry) -> str:
    """``oracle``, or ``openai (gpt-4o)`` when the entry names a model, followed by the
    env arguments the run set besides the difficulty (``[slippery=True]``), so rows
    made with other settings are never read as the standard ones."""
    agent = entry.agent or "?"
    model = entry.model
    label = f"{agent} ({model})" if model else agent
    settings = entry.settings
    return f"{label} [{settings}]" if settings else label


def settings_text(env_kwargs: Any) -> str | None:
    """The env arguments of a run other than its difficulty, as ``k=v, ...`` (None
    when there are none)."""
    if not isinstance(env_kwargs, Mapping):
        return None
    pairs = [f"{k}={v!r}" for k, v in sorted(env_kwargs.items()) if k != "difficulty"]
    return ", ".join(pairs)[:500] or None


def _number(value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return math.nan
    return number


def _pct(value: Any) -> str:
    number = _number(value)
    return f"{number:.0%}" if math.isfinite(number) else "-"


def _num(value: Any) -> str:
    number = _number(value)
    return f"{number:.3g}" if math.isfinite(number) else "-"


def _pass_k_text(pass_k: Any) -> str:
    """pass^1 .. pass^K as ``0.42/0.33/0.25`` (k in order); "-" for anything else."""
    if not isinstance(pass_k, Mapping) or not pass_k:
        return "-"
    try:
        ordered = sorted(pass_k.items(), key=lambda item: int(item[0]))
    except (TypeError, ValueError):
        return "-"
    values = [_number(value) for _, value in ordered]
    return "/".join(f"{v:.2f}" if math.isfinite(v) else "-" for v in values)


def _difficulty_order(env_id: str) -> dict[str, int]:
    try:
        from envgym.registry import get_spec

        return {d: i for i, d in enumerate(get_spec(env_id).difficulties)}
    except Exception:  # an id this install does not know: alphabetical
        return {}


def _sort_key(sort: str, entry: Entry, levels: Mapping[str, int]) -> tuple:
    success = _number(entry.success_rate)
    ret = _number(entry.mean_return)
    success = success if math.isfinite(success) else -math.inf
    ret = ret if math.isfinite(ret) else -math.inf
    if sort == "rank":  # ascending is the board's order: track by track, best first
        difficulty = str(entry.difficulty)
        level = levels.get(difficulty, len(levels))
        return (level, difficulty, entry.settings or "", entry.rank or math.inf, -success)
    if sort == "return":
        return (ret, success)
    if sort == "date":
        return (str(entry.created_at or ""),)
    return (success, ret)


def sort_entries(entries: Sequence[Entry], sort: str = "rank", order: str = "desc") -> list[Entry]:
    """`entries` ordered by `sort` (``rank``, ``success``, ``return`` or ``date``) in
    `order`; ``rank`` needs the ``rank`` that `rank_entries` adds.

    Unknown values fall back to ``rank`` and ``desc``. Ties keep a fixed
    order (by id), so a page reads the same on every load.
    """
    sort = sort if sort in SORTS else "rank"
    levels = _difficulty_order(entries[0].env_id) if entries else {}
    by_id = sorted(entries, key=lambda e: str(e.id))
    # "desc" means best first: high values, except ranks, where 1 is best.
    best_first = (order != "asc") != (sort == "rank")
    return sorted(by_id, key=lambda e: _sort_key(sort, e, levels), reverse=best_first)


@dataclass(frozen=True)
class _Column:
    """A table column's header: `sort` the ``?sort=`` it links to (None: it does
    not sort), `href` where a click goes, `active` when the table sorts by it."""

    label: str
    sort: str | None = None
    href: str = ""
    active: bool = False


_COLUMNS: tuple[tuple[str, str | None], ...] = (
    ("#", "rank"), ("agent (as claimed)", None), ("model (as claimed)", None),
    ("submitter", None), ("difficulty", None), ("success [95% CI]", "success"),
    ("mean return [95% CI]", "return"), ("episodes", None), ("seeds", None),
    ("date", "date"), ("verified", None), ("trajectory", None),
)  # fmt: skip


def _columns(env_id: str, sort: str, order: str, links: SiteLinks) -> list[_Column]:
    columns = []
    for label, key in _COLUMNS:
        if key is None:
            columns.append(_Column(label))
            continue
        active = key == sort
        # A click on the active column flips its order; on another it starts high-to-low.
        next_order = ("asc" if order == "desc" else "desc") if active else "desc"
        columns.append(_Column(label, key, links.env(env_id, key, next_order), active))
    return columns


def render_page(template: str, title: str, *, links: SiteLinks, **context: Any) -> str:
    """The leaderboard page `template` (in ``templates/``, extending the frame
    ``page.html``) titled `title`, its values escaped; the templates may call
    ``number``, ``pct``, ``num`` and ``pass_k_text`` to show a value."""
    return render_template(
        "envgym.leaderboard",
        template,
        title=title,
        links=links,
        number=_number,
        pct=_pct,
        num=_num,
        pass_k_text=_pass_k_text,
        **context,
    )


def _plot_label(entry: Entry) -> str:
    difficulty = entry.difficulty
    return f"{agent_label(entry)} {difficulty}" if difficulty else agent_label(entry)


def _points(entries: Sequence[Entry], value: str, interval: str) -> list[PlotPoint]:
    points = []
    for entry in entries:
        pair = getattr(entry, interval)
        low, high = (None, None)
        if isinstance(pair, list | tuple) and len(pair) == 2:
            low, high = _number(pair[0]), _number(pair[1])
        points.append(
            PlotPoint(str(entry.id), _plot_label(entry), _number(getattr(entry, value)), low, high)
        )
    return points


def render_env(
    env_id: str,
    entries: Sequence[Entry | Mapping[str, Any]],
    sort: str = "rank",
    order: str = "desc",
    *,
    links: SiteLinks | None = None,
    identity: Identity = installed_identity,
) -> str:
    """One env's page: the ranked entries of its tracks (one per difficulty) in
    ``table#results-<slug>``, sorted by `sort` and `order` (rank by default:
    each level's best lower bound first; headers link to the other orders),
    the entries that do not rank, each with its reason, in
    ``table#unranked-<slug>``, and plots of success rate (``svg#plot-<slug>``)
    and mean return (``svg#plot-return-<slug>``) of the ranked entries with
    their 95% intervals, in the table's order. Other envs' entries are left out."""
    links = links or SiteLinks()
    sort = sort if sort in SORTS else "rank"
    order = order if order in ORDERS else "desc"
    ranked, unranked = rank_entries(
        [e for e in map(as_entry, entries) if e.env_id == env_id], identity
    )
    mine = sort_entries(ranked, sort, order)
    others = sort_entries(unranked, "date", "desc")
    slug = env_slug(env_id)
    success_plot = interval_plot(
        f"plot-{slug}",
        _points(mine, "success_rate", "success_ci95"),
        y_label="success rate (95% CI)",
        x_label="entry (agent, difficulty)",
        percent=True,
        y_range=(0.0, 1.0),
        title=f"{env_id}: success rate of each ranked entry with its 95% interval",
    )
    return_plot = interval_plot(
        f"plot-return-{slug}",
        _points(mine, "mean_return", "ci95"),
        y_label="mean return (95% CI)",
        x_label="entry (agent, difficulty)",
        title=f"{env_id}: mean return of each ranked entry with its 95% interval",
    )
    order_words = "high to low" if order == "desc" else "low to high"
    ranked_caption = (
        f"{env_id}: {len(mine)} ranked entries, sorted by {sort} ({order_words}); each "
        "level is a track, ranked by the lower bound of the 95% success interval, then of "
        f"the return interval; a ranked run used board-issued seeds, the level's own "
        f"settings and at least {MIN_RANKED_EPISODES} episodes"
    )
    return render_page(
        "env.html",
        f"{env_id} - envgym leaderboard",
        links=links,
        env_id=env_id,
        slug=slug,
        order=order,
        ranked=mine,
        ranked_caption=ranked_caption,
        columns=_columns(env_id, sort, order, links),
        unranked=others,
        unranked_columns=[_Column(label) for label, _ in _COLUMNS]
        + [_Column("not ranked because")],
        success_plot=Markup(success_plot),
        return_plot=Markup(return_plot),
    )


def _best(
    ranked: Sequence[Entry],
) -> dict[tuple[str, str, str], Entry]:
    """Each agent's (name and model) best ranked entry per track (env id, level
    and track settings)."""
    best: dict[tuple[str, str, str], Entry] = {}
    for entry in ranked:  # in rank order
        agent = agent_label(entry.model_copy(update={"settings": None}))
        best.setdefault((str(entry.env_id), track_label(entry), agent), entry)
    return best


def render_index(
    entries: Sequence[Entry | Mapping[str, Any]],
    *,
    links: SiteLinks | None = None,
    identity: Identity = installed_identity,
    submitters: Sequence[tuple[str, int, int]] = (),
) -> str:
    """The overview: a matrix of tracks (rows: env and difficulty, linking to the
    env's page) by agents (columns), each cell that agent's best ranked entry on
    that track: its success rate and, in grey, the lower bound it ranks by, in
    ``table#overview``. Levels are never mixed: an agent's hard row holds only
    hard runs. `submitters` (name, tickets issued, tickets used) become
    ``table#submitters``: a submitter who takes many tickets and submits few
    is keeping the best of several runs, and shows."""
    links = links or SiteLinks()
    entries = [as_entry(e) for e in entries]
    ranked, _ = rank_entries(entries, identity)
    best = _best(ranked)
    tracks: list[tuple[str, str]] = []
    for env_id in sorted({str(e.env_id) for e in entries}):
        levels = _difficulty_order(env_id)
        mine = [e for e in entries if e.env_id == env_id]
        found = {(levels.get(str(e.difficulty), 99), track_label(e)) for e in mine}
        tracks += [(env_id, label) for _, label in sorted(found)]
    # Agents that do best overall come first, so strong agents lead the columns.
    agents = sorted(
        {label for *_, label in best},
        key=lambda a: (-sum(_number(best[k].success_rate) for k in best if k[2] == a), a),
    )
    rows = []
    for env_id, difficulty in tracks:
        cells: list[dict[str, str] | None] = []
        for agent in agents:
            entry = best.get((env_id, difficulty, agent))
            if entry is None:
                cells.append(None)
                continue
            pair = entry.success_ci95
            low = pair[0] if isinstance(pair, list | tuple) and len(pair) == 2 else None
            title = (
                f"best ranked run of {agent} on {env_id} {difficulty}: "
                f"{entry.episodes if entry.episodes is not None else '?'} episodes, "
                f"lower bound {_pct(low)}"
            )
            cells.append({"title": title, "success": _pct(entry.success_rate), "low": _pct(low)})
        count = sum(1 for e in entries if e.env_id == env_id and track_label(e) == difficulty)
        rows.append({"env_id": env_id, "difficulty": difficulty, "count": count, "cells": cells})
    return render_page(
        "index.html",
        "envgym leaderboard",
        links=links,
        agents=agents,
        tracks=rows,
        submitters=list(submitters),
    )
