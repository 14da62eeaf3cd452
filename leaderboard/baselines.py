"""The committed baselines: the random and oracle agents on every env and difficulty.

`make_baselines` writes one results file per run into ``leaderboard/baselines/``
(``Sokoban-v0_easy_oracle.json``) through `envgym.evaluation.baselines.run_baselines`,
the loop ``envgym baselines`` runs too, showing progress with rich. Envs whose
data is not on this machine (WebShop-v0) are left out with a note.
`load_baseline_entries` turns a folder of those files into leaderboard entries,
marked ``"status": "baseline"``: they are made by this script, not verified by
the server (the tests replay them).

Run it with ``python -m envgym.leaderboard.baselines [--episodes N] [--seed S]``
(or ``envgym baselines --out-dir leaderboard/baselines``).
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from envgym.evaluation.baselines import BASELINE_AGENTS, baseline_jobs, run_baselines
from envgym.evaluation.results_file import results_file_name
from envgym.leaderboard.models import Entry
from envgym.leaderboard.page import settings_text

__all__ = [
    "BASELINES_DIR",
    "BASELINE_AGENTS",
    "baseline_file_name",
    "entry_from_results",
    "load_baseline_entries",
    "load_baseline_results",
    "main",
    "make_baselines",
]

#: Where the committed files live: ``leaderboard/baselines/`` beside this module.
BASELINES_DIR = Path(__file__).resolve().parent / "baselines"


def baseline_file_name(env_id: str, difficulty: str, agent: str) -> str:
    """``envgym/Sokoban-v0``, easy, oracle -> ``Sokoban-v0_easy_oracle.json``
    (`envgym.evaluation.results_file.results_file_name`)."""
    return results_file_name(env_id, difficulty, agent)


def make_baselines(
    out_dir: str | Path = BASELINES_DIR,
    episodes: int = 20,
    seed: int = 0,
    *,
    envs: Iterable[str] | None = None,
    agents: Iterable[str] = BASELINE_AGENTS,
    console: Console | None = None,
) -> list[Path]:
    """Evaluate each agent on every env (or those in `envs`) at every difficulty.

    Writes ``out_dir/<Env-vN>_<difficulty>_<agent>.json`` per run and returns
    the paths written. A run that fails is reported and skipped, so one broken
    env does not lose the others; the error names the ``envgym eval`` command
    that shows its traceback.
    """
    console = console if console is not None else Console(stderr=True)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    jobs, skipped = baseline_jobs(envs, agents)
    for env_id, why in skipped:
        console.print(f"skipped {env_id}: {why}", markup=False)
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=console) as progress:
        task = progress.add_task("baselines", total=len(jobs) * episodes)
        runs = run_baselines(
            jobs,
            episodes,
            seed,
            out,
            progress=lambda done, _total: progress.update(task, completed=done),
            describe=lambda text: progress.update(task, description=text),
        )
    for run in runs:
        if run.error is not None:
            console.print(run.error, markup=False)
    written = [run.path for run in runs if run.path is not None]
    slowest = sorted((r for r in runs if r.path is not None), key=lambda r: -r.seconds)[:3]
    if slowest:
        shown = ", ".join(f"{r.env_id} {r.difficulty} {r.agent} {r.seconds:.1f} s" for r in slowest)
        console.print(f"wrote {len(written)} files to {out}; slowest: {shown}", markup=False)
    return written


def _pair(value: Any) -> list[float] | None:
    if isinstance(value, list | tuple) and len(value) == 2:
        return [float(value[0]), float(value[1])]
    return None


def entry_from_results(results: dict[str, Any], entry_id: str, **extra: Any) -> Entry:
    """A leaderboard entry for one results file (`extra` sets more of its fields)."""
    summary = results["summary"]
    agent = results.get("agent") or {}
    difficulty = results.get("difficulty") or (results.get("env_kwargs") or {}).get("difficulty")
    fields = {
        "id": entry_id,
        "env_id": results["env_id"],
        "difficulty": difficulty,
        "agent": str(agent.get("name", "?")),
        "model": agent.get("model"),
        "settings": settings_text(results.get("env_kwargs")),
        "env_version": results.get("env_version"),
        "env_hash": results.get("env_hash"),
        "seed": results.get("seed"),
        "episodes": int(summary["episodes"]),
        "success_rate": float(summary["success_rate"]),
        "success_ci95": _pair(summary.get("success_ci95")),
        "mean_return": float(summary["mean_return"]),
        "ci95": _pair(summary.get("ci95")),
        "trials": results.get("trials"),
        "pass_k": summary.get("pass_k"),
        "created_at": results.get("created_at"),
        "status": "accepted",
    }
    return Entry(**{**fields, **extra})


def load_baseline_results(directory: str | Path = BASELINES_DIR) -> dict[str, dict[str, Any]]:
    """The committed baseline results files by entry id (the file's stem,
    ``Sokoban-v0_easy_oracle``), in name order. The dicts are shared between
    calls: read them, do not change them."""
    found = {}
    for path in sorted(Path(directory).glob("*.json")):
        stat = path.stat()
        found[path.stem] = _read_results(str(path.resolve()), stat.st_mtime_ns, stat.st_size)
    return found


@functools.lru_cache(maxsize=256)
def _read_results(path: str, _mtime_ns: int, _size: int) -> dict[str, Any]:
    # Cached by modification time and size: the server reads the baselines on
    # every page view, and a file rewritten by `make_baselines` is read afresh.
    return json.loads(Path(path).read_text(encoding="utf-8"))


def load_baseline_entries(directory: str | Path = BASELINES_DIR) -> list[Entry]:
    """The committed baseline files as leaderboard entries, ids as in `load_baseline_results`.

    Entries carry ``"status": "baseline"`` and ``"submitter": "envgym baselines"``;
    ``verified`` stays False, since no server verified them (the tests replay a
    sample of them).
    """
    return [
        entry_from_results(results, entry_id, status="baseline", submitter="envgym baselines")
        for entry_id, results in load_baseline_results(directory).items()
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m envgym.leaderboard.baselines",
        description="Evaluate random and oracle on every env and difficulty; write results files.",
    )
    parser.add_argument("--episodes", type=int, default=20, help="episodes per run (default 20)")
    parser.add_argument("--seed", type=int, default=0, help="first episode's seed (default 0)")
    parser.add_argument("--out-dir", default=str(BASELINES_DIR), help="where to write the files")
    parser.add_argument("--env", action="append", metavar="ID", help="only this env (repeatable)")
    args = parser.parse_args(argv)
    written = make_baselines(args.out_dir, args.episodes, args.seed, envs=args.env)
    return 0 if written else 1


if __name__ == "__main__":
    sys.exit(main())
