"""The leaderboard's web pages as pure functions from entries to complete HTML.

`render_index` (a matrix of tracks, an env at one level, by agents: each
agent's best ranked run), `render_env` (one env's ranked entries, sortable
through links, the entries that do not rank with the reason, and plots of
success and return with their 95% intervals); `envgym.leaderboard.trajectory`'s
`render_trajectory` shows one episode turn by turn in the same page frame.
Which entries rank, and in what order, is `envgym.leaderboard.ranking`'s. The
server (`envgym.leaderboard.app`) serves them and `envgym.leaderboard.export`
writes them as static files; `SiteLinks` says where their links point for each.

Every page is self-contained and printable: inline CSS, no script, no outside
resource, so a strict Content-Security-Policy (``default-src 'none';
style-src 'unsafe-inline'; img-src data:``) serves it. Every value from an entry
or a results file is escaped.

An entry is a dict with keys ``id, env_id, difficulty, agent, model,
submitter, episodes, success_rate, success_ci95, mean_return, ci95,
created_at, verified, status`` and, for ranking, ``env_version, env_hash,
seed, ticketed`` (and ``replies_label`` when verification recognised the
replies).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any
from urllib.parse import quote

from envgym.evaluation.tracks import MIN_RANKED_EPISODES
from envgym.leaderboard.models import Entry, as_entry
from envgym.leaderboard.plots import PlotPoint, interval_plot
from envgym.leaderboard.ranking import Identity, installed_identity, rank_entries, track_label
from envgym.leaderboard.style import CSS as _CSS

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


_ARROWS = {"desc": "\u25bc", "asc": "\u25b2"}


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


def _settings(entry: Entry) -> str:
    settings = entry.settings
    return f' <span class="settings muted">[{escape(str(settings))}]</span>' if settings else ""


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


def _interval(pair: Any, fmt: Any) -> str:
    if isinstance(pair, list | tuple) and len(pair) == 2:
        return f'<span class="ci">[{escape(fmt(pair[0]))}, {escape(fmt(pair[1]))}]</span>'
    return ""


def render_page(title: str, body: str, *, links: SiteLinks | None = None) -> str:
    """A complete HTML document: `title` escaped, `body` already HTML."""
    home = (links or SiteLinks()).index()
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="referrer" content="no-referrer">'
        f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>"
        f'<nav><a href="{escape(home)}">envgym leaderboard</a></nav>'
        f"{body}</body></html>\n"
    )


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


def _verified_cell(entry: Entry) -> str:
    if entry.verified:
        return '<span class="badge verified">verified</span>'
    if entry.status == "baseline":
        return (
            '<span class="badge baseline" title="made by envgym\'s baseline script, '
            'not by a submission the server replayed">baseline</span>'
        )
    return f'<span class="muted">{escape(str(entry.status or "no"))}</span>'


def _date(entry: Entry) -> str:
    stamp = str(entry.created_at or "")
    if not stamp:
        return '<span class="muted">-</span>'
    return f'<time datetime="{escape(stamp)}">{escape(stamp[:10])}</time>'


def _header(label: str, sort: str | None, current: str, order: str, env_id: str,
            links: SiteLinks) -> str:  # fmt: skip
    if sort is None:
        return f"<th>{escape(label)}</th>"
    active = sort == current
    # A click on the active column flips its order; on another it starts high-to-low.
    next_order = ("asc" if order == "desc" else "desc") if active else "desc"
    aria = f' aria-sort="{"descending" if order == "desc" else "ascending"}"' if active else ""
    arrow = f" {_ARROWS[order]}" if active else ""
    href = links.env(env_id, sort, next_order)
    cls = "" if sort == "date" else ' class="num"'
    return (
        f'<th{cls}{aria}><a class="sort" data-sort="{sort}" href="{escape(href)}" '
        f'title="sort by {escape(label)}">{escape(label)}{arrow}</a></th>'
    )


def _seeds(entry: Entry) -> str:
    seed, episodes = entry.seed, entry.episodes
    if not isinstance(seed, int) or not isinstance(episodes, int) or episodes < 1:
        return '<span class="muted">-</span>'
    where = "ticket" if entry.ticketed else "own"
    return (
        f'<span class="seeds" title="{where} seeds">{seed}..{seed + episodes - 1}</span>'
        f' <span class="ci">{where}</span>'
    )


def _return_cell(entry: Entry) -> str:
    # One episode has no interval: none is shown rather than a zero-width one.
    episodes = entry.episodes
    interval = entry.ci95 if isinstance(episodes, int) and episodes >= 2 else None
    return f"{_num(entry.mean_return)} {_interval(interval, _num)}"


def _agent_cell(entry: Entry) -> str:
    label = entry.replies_label
    claimed = (
        f' <span class="badge replies" title="verification found these replies">'
        f"{escape(str(label))}</span>"
        if label
        else ""
    )
    return f"{escape(str(entry.agent or '?'))}{_settings(entry)}{claimed}"


def _table(env_id: str, entries: Sequence[Entry], sort: str, order: str,
           links: SiteLinks, *, table_id: str, caption: str, why: bool = False) -> str:  # fmt: skip
    heads = [
        ("#", "rank"), ("agent (as claimed)", None), ("model (as claimed)", None),
        ("submitter", None), ("difficulty", None), ("success [95% CI]", "success"),
        ("mean return [95% CI]", "return"), ("episodes", None), ("seeds", None),
        ("date", "date"), ("verified", None), ("trajectory", None),
    ]  # fmt: skip
    if why:
        heads = [(label, None) for label, _ in heads] + [("not ranked because", None)]
    head = "".join(_header(label, key, sort, order, env_id, links) for label, key in heads)
    rows = []
    for entry in entries:
        entry_id = str(entry.id)
        model = entry.model
        rank = entry.rank
        reason = f'<td class="why">{escape(str(entry.unranked or ""))}</td>' if why else ""
        rows.append(
            f'<tr class="entry" data-entry-id="{escape(entry_id)}" '
            f'data-success="{_number(entry.success_rate)!r}" '
            f'data-return="{_number(entry.mean_return)!r}">'
            f'<td class="num rank">{rank if rank else "-"}</td>'
            f'<td class="agent">{_agent_cell(entry)}</td>'
            f'<td class="model">{escape(str(model)) if model else "-"}</td>'
            f'<td class="submitter">{escape(str(entry.submitter or "-"))}</td>'
            f"<td>{escape(str(entry.difficulty or '-'))}</td>"
            f'<td class="num success">{_pct(entry.success_rate)} '
            f"{_interval(entry.success_ci95, _pct)}</td>"
            f'<td class="num return">{_return_cell(entry)}</td>'
            f'<td class="num">{"-" if entry.episodes is None else entry.episodes}</td>'
            f"<td>{_seeds(entry)}</td>"
            f"<td>{_date(entry)}</td><td>{_verified_cell(entry)}</td>"
            f'<td><a class="trajectory" href="{escape(links.trajectory(entry_id, 0))}">'
            f"episode 0</a></td>{reason}</tr>"
        )
    span = len(heads)
    body = "".join(rows) or f'<tr><td colspan="{span}" class="muted">no entries yet</td></tr>'
    return (
        f'<table id="{escape(table_id)}" class="results"><caption class="muted">'
        f"{escape(caption)}</caption>"
        f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
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
    body = (
        f"<h1>{escape(env_id)}</h1>"
        + _table(
            env_id, mine, sort, order, links, table_id=f"results-{slug}", caption=ranked_caption
        )  # fmt: skip
        + "<h2>Not ranked</h2>"
        + _table(
            env_id,
            others,
            sort,
            order,
            links,
            table_id=f"unranked-{slug}",
            caption=f"{len(others)} entries listed apart, newest first",
            why=True,
        )  # fmt: skip
        + f"<h2>Success rate</h2><figure>{success_plot}</figure>"
        + f"<h2>Mean return</h2><figure>{return_plot}</figure>"
    )
    return render_page(f"{env_id} - envgym leaderboard", body, links=links)


def _submitters(rows: Sequence[tuple[str, int, int]]) -> str:
    if not rows:
        return ""
    body = "".join(
        f'<tr class="submitter"><td>{escape(name)}</td><td class="num">{issued}</td>'
        f'<td class="num">{used}</td></tr>'
        for name, issued, used in rows
    )
    return (
        '<h2>Submitters</h2><table id="submitters"><caption class="muted">tickets (seeds '
        "issued by the board) each submitter took, and how many they submitted</caption>"
        '<thead><tr><th>submitter</th><th class="num">tickets issued</th>'
        f'<th class="num">submitted</th></tr></thead><tbody>{body}</tbody></table>'
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
    head = "".join(f'<th class="num agent">{escape(a)}</th>' for a in agents)
    rows = []
    for env_id, difficulty in tracks:
        cells = []
        for agent in agents:
            entry = best.get((env_id, difficulty, agent))  # type: ignore[assignment]
            if entry is None:
                cells.append('<td class="num muted">-</td>')
                continue
            pair = entry.success_ci95
            low = pair[0] if isinstance(pair, list | tuple) and len(pair) == 2 else None
            title = (
                f"best ranked run of {agent} on {env_id} {difficulty}: "
                f"{entry.episodes if entry.episodes is not None else '?'} episodes, "
                f"lower bound {_pct(low)}"
            )
            cells.append(
                f'<td class="num cell" title="{escape(title)}">'
                f"{_pct(entry.success_rate)} "
                f'<span class="ci">&ge;{escape(_pct(low))}</span></td>'
            )
        count = sum(1 for e in entries if e.env_id == env_id and track_label(e) == difficulty)
        rows.append(
            f'<tr class="env" data-env="{escape(env_id)}" data-difficulty="{escape(difficulty)}">'
            f'<th><a class="env-link" href="{escape(links.env(env_id))}">{escape(env_id)}</a> '
            f'{escape(difficulty)} <span class="ci">{count} entries</span></th>'
            f"{''.join(cells)}</tr>"
        )
    if rows:
        table = (
            '<table id="overview"><caption class="muted">success rate of each agent\'s best '
            "ranked run per track (an env at one level), with the lower bound of its 95% "
            "interval it ranks by; open an env for every entry, the ones not ranked and "
            f"why, intervals and plots</caption><thead><tr><th>track</th>{head}</tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>"
        )
    else:
        table = '<p class="muted">No entries yet: submit one with <code>envgym submit</code>.</p>'
    body = (
        "<h1>envgym leaderboard</h1><p>Every number here is recomputed by replaying the "
        "submitted episodes in the installed envs; ranked runs played seeds the board "
        "issued; baselines come from envgym's own random and oracle agents. Agent and "
        "model names are as their submitter claimed.</p>" + table + _submitters(submitters)
    )
    return render_page("envgym leaderboard", body, links=links)
