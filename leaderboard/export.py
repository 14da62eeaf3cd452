"""The leaderboard as static HTML files: the server's pages, with links between files.

`export_site` writes ``index.html``, ``env/<slug>.html`` (sorted by success,
high to low) with one file per other sort order (``env/<slug>--return-asc.html``:
the header links point at them, so sorting works without a server), and
``episodes/<entry>/<i>.html`` trajectories, for the first episode of each entry
or all of them. Any static host serves the folder; so does ``file://``.

`export_command` is what ``envgym leaderboard export --out DIR [--db URL |
--baselines]`` runs: entries from the server's database (accepted ones only)
or from the committed baselines.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from envgym.leaderboard.models import Entry, as_entry
from envgym.leaderboard.page import ORDERS, SORTS, SiteLinks, env_slug, render_env, render_index
from envgym.leaderboard.trajectory import render_trajectory

__all__ = ["StaticLinks", "export_command", "export_site", "static_name"]


def static_name(entry_id: Any) -> str:
    """A file-safe name for an entry id: the id itself when it is already safe
    (``Sokoban-v0_easy_oracle``, ``17``), else a cleaned id plus a short hash,
    so two ids never share a folder."""
    text = str(entry_id)
    clean = re.sub(r"[^A-Za-z0-9_.-]", "_", text).strip(".") or "_"
    if clean == text:
        return text
    return f"{clean[:80]}-{hashlib.sha256(text.encode()).hexdigest()[:10]}"


class StaticLinks(SiteLinks):
    """Relative links between the exported files, from a page `depth` folders down."""

    def __init__(self, depth: int) -> None:
        self.up = "../" * depth

    def index(self) -> str:
        return f"{self.up}index.html"

    def env(self, env_id: str, sort: str | None = None, order: str | None = None) -> str:
        return f"{self.up}env/{_env_file(env_id, sort, order)}"

    def trajectory(self, entry_id: str, index: int) -> str:
        return f"{self.up}episodes/{static_name(entry_id)}/{index}.html"


def _env_file(env_id: str, sort: str | None, order: str | None) -> str:
    slug = env_slug(env_id)
    if sort is None or (sort, order or "desc") == ("success", "desc"):
        return f"{slug}.html"
    return f"{slug}--{sort}-{order or 'desc'}.html"


def _write(path: Path, text: str, written: list[Path]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    written.append(path)


def export_site(
    entries: Sequence[Entry | Mapping[str, Any]],
    out_dir: str | Path,
    results_by_id: Mapping[str, Mapping[str, Any]],
    *,
    all_episodes: bool = False,
    replay: bool = True,
    progress: Progress | None = None,
) -> list[Path]:
    """Write the site for `entries` under `out_dir` and return the files written.

    `results_by_id` maps ``str(entry.id)`` to that entry's results file; an
    entry without one gets no trajectory pages. Trajectories are episode 0 of
    each entry, or every episode with `all_episodes`; `replay` replays them to
    show observations (see `envgym.leaderboard.trajectory`).
    """
    out = Path(out_dir)
    entries = [as_entry(e) for e in entries]
    written: list[Path] = []
    _write(out / "index.html", render_index(entries, links=StaticLinks(0)), written)
    env_links = StaticLinks(1)
    for env_id in sorted({str(e.env_id) for e in entries}):
        for sort in SORTS:
            for order in ORDERS:
                page = render_env(env_id, entries, sort, order, links=env_links)
                _write(out / "env" / _env_file(env_id, sort, order), page, written)
    jobs = []
    for entry in entries:
        results = results_by_id.get(str(entry.id))
        if results is None:
            continue
        episodes = list(results.get("episodes") or [])
        shown = len(episodes) if all_episodes else min(1, len(episodes))
        jobs.extend((entry, results, i, shown) for i in range(shown))
    task = progress.add_task("trajectories", total=len(jobs)) if progress is not None else None
    trajectory_links = StaticLinks(2)
    for entry, results, index, shown in jobs:
        page = render_trajectory(
            results,
            results["episodes"][index],
            index,
            entry_id=str(entry.id),
            episode_count=shown,
            replay=replay,
            links=trajectory_links,
        )
        folder = out / "episodes" / static_name(entry.id)
        _write(folder / f"{index}.html", page, written)
        if progress is not None and task is not None:
            progress.advance(task)
    return written


def _database_entries(url: str) -> tuple[list[Entry], dict[str, dict[str, Any]]]:
    # Imported here: the database layer needs SQLAlchemy (the leaderboard extra),
    # which an export of the baselines does not.
    from sqlalchemy import select

    from envgym.leaderboard.db import Database, Submission

    database = Database(url)
    try:
        with database.session() as session:
            query = select(Submission).where(Submission.status == "accepted")
            rows = list(session.scalars(query.order_by(Submission.id)))
            entries = [row.entry() for row in rows]
            results = {str(row.id): json.loads(row.results_json) for row in rows}
    finally:
        database.close()
    return entries, results


def export_command(
    out: str | Path,
    *,
    db_url: str | None = None,
    baselines: bool | str | Path = False,
    all_episodes: bool = False,
    console: Console | None = None,
) -> list[Path]:
    """``envgym leaderboard export``: the accepted submissions in `db_url`, the
    baselines (`baselines` True: the committed ones; a folder: the files
    ``envgym baselines --out-dir`` wrote there), or both, written under `out`.

    Raises ValueError, saying what to pass, when neither source is given.
    """
    if db_url is None and not baselines:
        raise ValueError("nothing to export: pass --db URL (the server's database) or --baselines")
    from envgym.leaderboard.baselines import (
        BASELINES_DIR,
        load_baseline_entries,
        load_baseline_results,
    )

    entries: list[dict[str, Any]] = []
    results: dict[str, dict[str, Any]] = {}
    if baselines:
        folder = BASELINES_DIR if baselines is True else Path(baselines)
        if not folder.is_dir():
            raise ValueError(
                f"--baselines {folder}: no such folder; write it with envgym "
                f"baselines --out-dir {folder}"
            )
        entries += load_baseline_entries(folder)
        results.update(load_baseline_results(folder))
    if db_url is not None:
        db_entries, db_results = _database_entries(db_url)
        entries += db_entries
        results.update(db_results)
    console = console if console is not None else Console(stderr=True)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
    with Progress(*columns, console=console) as progress:
        written = export_site(entries, out, results, all_episodes=all_episodes, progress=progress)
    console.print(
        f"wrote {len(written)} files for {len(entries)} entries; open {Path(out) / 'index.html'}",
        markup=False,
    )
    return written
