"""The leaderboard's web pages as pure functions from entries to complete HTML.

`render_index` (every env's best entry per agent, as an env x agent matrix),
`render_env` (one env's table, sortable through links, and plots of success
and return with their 95% intervals); `envgym.leaderboard.trajectory`'s
`render_trajectory` shows one episode turn by turn (the observation the agent
saw, its reply and the reward) in the same page frame. The
server (`envgym.leaderboard.app`) serves them and `envgym.leaderboard.export`
writes them as static files; `SiteLinks` says where their links point for each.

Every page is self-contained and printable: inline CSS, no script, no outside
resource, so a strict Content-Security-Policy (``default-src 'none';
style-src 'unsafe-inline'; img-src data:``) serves it. Every value from an entry
or a results file is escaped.

An entry is a dict with keys ``id, env_id, difficulty, agent, model,
submitter, episodes, success_rate, success_ci95, mean_return, ci95,
created_at, verified, status``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any
from urllib.parse import quote

from envgym.leaderboard.plots import PlotPoint, interval_plot

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

#: Columns a table sorts by (``?sort=``), and the two orders (``?order=``).
SORTS: tuple[str, ...] = ("success", "return", "date")
ORDERS: tuple[str, ...] = ("desc", "asc")

_CSS = """
body{font:15px/1.45 system-ui,sans-serif;margin:1.5rem auto;max-width:70rem;padding:0 1rem;
color:#1b1b1b;background:#fff}
h1{font-size:1.5rem;margin:.2rem 0 .8rem}h2{font-size:1.15rem;margin:1.6rem 0 .5rem}
a{color:#0645ad}nav{margin-bottom:.8rem;font-size:.9rem}
table{border-collapse:collapse;width:100%;margin:.4rem 0 1rem;font-variant-numeric:tabular-nums}
th,td{border-bottom:1px solid #ddd;padding:.3rem .5rem;text-align:left;vertical-align:top}
th{background:#f4f4f4}#overview{width:auto;min-width:40%}td.num,th.num{text-align:right}
th a.sort{text-decoration:none}th[aria-sort] a.sort{font-weight:700}
.ci{color:#555;font-size:.85em}.muted{color:#666}.badge{font-size:.8em;padding:0 .3em;
border:1px solid #999;border-radius:3px}
.verified{border-color:#2a7;color:#185}.baseline{border-color:#57a;color:#246}
svg.plot{max-width:100%;height:auto;background:#fff}
svg .frame{fill:none;stroke:#888}svg .grid{stroke:#eee}svg .tick,svg .xlabel{font-size:11px;
fill:#444}svg .axis-label{font-size:12px;fill:#222}svg .point{fill:#1f5fbf}
svg .interval,svg .cap{stroke:#1f5fbf;stroke-width:1.5}svg .empty{fill:#888}
.turn{border:1px solid #ddd;border-radius:4px;margin:.6rem 0;padding:.4rem .6rem;
break-inside:avoid}
.turn h3{font-size:1rem;margin:.1rem 0 .3rem}
pre{white-space:pre-wrap;word-break:break-word;background:#f7f7f7;padding:.4rem;margin:.2rem 0;
max-height:30rem;overflow:auto}
pre.reply{background:#eef4ff}.reward{font-weight:600}.note{background:#fff6e0;padding:.4rem}
dl.meta{display:grid;grid-template-columns:max-content auto;gap:.1rem 1rem}dl.meta dt{color:#555}
@media print{nav,a.sort::after{display:none}pre{max-height:none;overflow:visible}
body{max-width:none}a{color:inherit;text-decoration:none}}
"""

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


def agent_label(entry: Mapping[str, Any]) -> str:
    """``oracle``, or ``openai (gpt-4o)`` when the entry names a model, followed by the
    env arguments the run set besides the difficulty (``[slippery=True]``), so rows
    made with other settings are never read as the standard ones."""
    agent = str(entry.get("agent") or "?")
    model = entry.get("model")
    label = f"{agent} ({model})" if model else agent
    settings = entry.get("settings")
    return f"{label} [{settings}]" if settings else label


def _settings(entry: Mapping[str, Any]) -> str:
    settings = entry.get("settings")
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


def _sort_key(sort: str, entry: Mapping[str, Any]) -> tuple:
    success = _number(entry.get("success_rate"))
    ret = _number(entry.get("mean_return"))
    success = success if math.isfinite(success) else -math.inf
    ret = ret if math.isfinite(ret) else -math.inf
    if sort == "return":
        return (ret, success)
    if sort == "date":
        return (str(entry.get("created_at") or ""),)
    return (success, ret)


def sort_entries(
    entries: Sequence[Mapping[str, Any]], sort: str = "success", order: str = "desc"
) -> list[Mapping[str, Any]]:
    """`entries` ordered by `sort` (``success``, ``return`` or ``date``) in `order`.

    Unknown values fall back to ``success`` and ``desc``. Ties keep a fixed
    order (by id), so a page reads the same on every load.
    """
    sort = sort if sort in SORTS else "success"
    by_id = sorted(entries, key=lambda e: str(e.get("id")))
    return sorted(by_id, key=lambda e: _sort_key(sort, e), reverse=order != "asc")


def _verified_cell(entry: Mapping[str, Any]) -> str:
    if entry.get("verified"):
        return '<span class="badge verified">verified</span>'
    if entry.get("status") == "baseline":
        return (
            '<span class="badge baseline" title="made by envgym\'s baseline script, '
            'not by a submission the server replayed">baseline</span>'
        )
    return f'<span class="muted">{escape(str(entry.get("status") or "no"))}</span>'


def _date(entry: Mapping[str, Any]) -> str:
    stamp = str(entry.get("created_at") or "")
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


def _table(env_id: str, entries: Sequence[Mapping[str, Any]], sort: str, order: str,
           links: SiteLinks) -> str:  # fmt: skip
    slug = env_slug(env_id)
    heads = [
        ("#", None), ("agent", None), ("model", None), ("difficulty", None),
        ("success [95% CI]", "success"), ("mean return [95% CI]", "return"),
        ("episodes", None), ("date", "date"), ("verified", None), ("trajectory", None),
    ]  # fmt: skip
    head = "".join(_header(label, key, sort, order, env_id, links) for label, key in heads)
    rows = []
    for rank, entry in enumerate(entries, start=1):
        entry_id = str(entry.get("id"))
        model = entry.get("model")
        rows.append(
            f'<tr class="entry" data-entry-id="{escape(entry_id)}" '
            f'data-success="{_number(entry.get("success_rate"))!r}" '
            f'data-return="{_number(entry.get("mean_return"))!r}">'
            f'<td class="num">{rank}</td>'
            f'<td class="agent">{escape(str(entry.get("agent") or "?"))}{_settings(entry)}</td>'
            f'<td class="model">{escape(str(model)) if model else "-"}</td>'
            f"<td>{escape(str(entry.get('difficulty') or '-'))}</td>"
            f'<td class="num success">{_pct(entry.get("success_rate"))} '
            f"{_interval(entry.get('success_ci95'), _pct)}</td>"
            f'<td class="num return">{_num(entry.get("mean_return"))} '
            f"{_interval(entry.get('ci95'), _num)}</td>"
            f'<td class="num">{escape(str(entry.get("episodes", "-")))}</td>'
            f"<td>{_date(entry)}</td><td>{_verified_cell(entry)}</td>"
            f'<td><a class="trajectory" href="{escape(links.trajectory(entry_id, 0))}">'
            "episode 0</a></td></tr>"
        )
    body = "".join(rows) or '<tr><td colspan="10" class="muted">no entries yet</td></tr>'
    return (
        f'<table id="results-{escape(slug)}" class="results"><caption class="muted">'
        f"{escape(env_id)}: {len(entries)} entries, sorted by {escape(sort)} "
        f"({'high to low' if order == 'desc' else 'low to high'})</caption>"
        f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    )


def _plot_label(entry: Mapping[str, Any]) -> str:
    difficulty = entry.get("difficulty")
    return f"{agent_label(entry)} {difficulty}" if difficulty else agent_label(entry)


def _points(entries: Sequence[Mapping[str, Any]], value: str, interval: str) -> list[PlotPoint]:
    points = []
    for entry in entries:
        pair = entry.get(interval)
        low, high = (None, None)
        if isinstance(pair, list | tuple) and len(pair) == 2:
            low, high = _number(pair[0]), _number(pair[1])
        points.append(
            PlotPoint(
                str(entry.get("id")), _plot_label(entry), _number(entry.get(value)), low, high
            )
        )
    return points


def render_env(
    env_id: str,
    entries: Sequence[Mapping[str, Any]],
    sort: str = "success",
    order: str = "desc",
    *,
    links: SiteLinks | None = None,
) -> str:
    """One env's page: its entries' table sorted by `sort` and `order` (headers
    link to the other orders), and plots of success rate (``svg#plot-<slug>``)
    and mean return (``svg#plot-return-<slug>``), one point per entry with its
    95% interval, in the table's order. Entries of other envs are left out."""
    links = links or SiteLinks()
    sort = sort if sort in SORTS else "success"
    order = order if order in ORDERS else "desc"
    mine = sort_entries([e for e in entries if e.get("env_id") == env_id], sort, order)
    slug = env_slug(env_id)
    success_plot = interval_plot(
        f"plot-{slug}",
        _points(mine, "success_rate", "success_ci95"),
        y_label="success rate (95% CI)",
        x_label="entry (agent, difficulty)",
        percent=True,
        y_range=(0.0, 1.0),
        title=f"{env_id}: success rate of each entry with its 95% interval",
    )
    return_plot = interval_plot(
        f"plot-return-{slug}",
        _points(mine, "mean_return", "ci95"),
        y_label="mean return (95% CI)",
        x_label="entry (agent, difficulty)",
        title=f"{env_id}: mean return of each entry with its 95% interval",
    )
    body = (
        f"<h1>{escape(env_id)}</h1>"
        f"{_table(env_id, mine, sort, order, links)}"
        f"<h2>Success rate</h2><figure>{success_plot}</figure>"
        f"<h2>Mean return</h2><figure>{return_plot}</figure>"
    )
    return render_page(f"{env_id} - envgym leaderboard", body, links=links)


def _best(entries: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str], Mapping[str, Any]]:
    best: dict[tuple[str, str], Mapping[str, Any]] = {}
    for entry in sort_entries(entries, "success", "desc"):
        best.setdefault((str(entry.get("env_id")), agent_label(entry)), entry)
    return best


def render_index(entries: Sequence[Mapping[str, Any]], *, links: SiteLinks | None = None) -> str:
    """The overview: a matrix of envs (rows, linking to their pages) by agents
    (columns), each cell the success rate of that agent's best entry on that env
    (over its difficulties and submissions), in ``table#overview``."""
    links = links or SiteLinks()
    best = _best(entries)
    env_ids = sorted({str(e.get("env_id")) for e in entries})
    # Agents that succeed most overall come first, so strong agents lead the columns.
    agents = sorted(
        {label for _, label in best},
        key=lambda a: (-sum(_number(best[k].get("success_rate")) for k in best if k[1] == a), a),
    )
    head = "".join(f'<th class="num agent">{escape(a)}</th>' for a in agents)
    rows = []
    for env_id in env_ids:
        cells = []
        for agent in agents:
            entry = best.get((env_id, agent))
            if entry is None:
                cells.append('<td class="num muted">-</td>')
                continue
            title = (
                f"best of {agent} on {env_id}: {entry.get('difficulty') or '-'}, "
                f"{entry.get('episodes', '?')} episodes"
            )
            cells.append(
                f'<td class="num cell" title="{escape(title)}">'
                f"{_pct(entry.get('success_rate'))} "
                f'<span class="ci">{escape(str(entry.get("difficulty") or ""))}</span></td>'
            )
        count = sum(1 for e in entries if e.get("env_id") == env_id)
        rows.append(
            f'<tr class="env" data-env="{escape(env_id)}"><th>'
            f'<a class="env-link" href="{escape(links.env(env_id))}">{escape(env_id)}</a> '
            f'<span class="ci">{count} entries</span></th>{"".join(cells)}</tr>'
        )
    if rows:
        table = (
            '<table id="overview"><caption class="muted">success rate of each agent\'s best '
            "entry per env (its difficulty in grey); open an env for every entry, its "
            f"intervals and plots</caption><thead><tr><th>env</th>{head}</tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>"
        )
    else:
        table = '<p class="muted">No entries yet: submit one with <code>envgym submit</code>.</p>'
    body = (
        "<h1>envgym leaderboard</h1><p>Every number here is recomputed by replaying the "
        "submitted episodes in the installed envs; baselines come from envgym's own "
        "random and oracle agents.</p>" + table
    )
    return render_page("envgym leaderboard", body, links=links)
