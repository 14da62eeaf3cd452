"""``envgym eval`` and ``envgym baselines``: run agents for many episodes,
show their progress, print a summary table and write results files."""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any

from envgym.agents import AGENT_NAMES
from envgym.cli.arguments import (
    EXIT_FAILED,
    EXIT_OK,
    ID_HELP,
    UserError,
    add_env_options,
    env_kwargs,
    positive_int,
    resolve_env_id,
    seed,
)
from envgym.cli.output import EpisodeProgress, print_table
from envgym.evaluation import evaluate, prepare_output_dir, prepare_output_path, write_results
from envgym.registry import list_envs, missing_data

SUMMARY_HEADERS = [
    "env",
    "difficulty",
    "agent",
    "episodes",
    "success [95% CI]",
    "mean return +/- 95% CI",
    "turns",
]
_NUMBER_HEADERS = SUMMARY_HEADERS[3:]


def add_commands(sub: Any) -> None:
    """Add ``eval`` and ``baselines`` to the ``envgym`` subparsers `sub`."""
    p = sub.add_parser(
        "eval",
        help="evaluate an agent and write a results file",
        description="Run an agent for N episodes with seeds S, S+1, ... and print a summary.",
    )
    p.add_argument("env_id", metavar="ID", help=ID_HELP)
    p.add_argument(
        "--agent",
        default="random",
        help=f"agent to run: {', '.join(AGENT_NAMES)} (default: random)",
    )
    p.add_argument(
        "--episodes",
        metavar="N",
        type=positive_int,
        default=10,
        help="number of episodes (default: 10)",
    )
    p.add_argument(
        "--seed", metavar="S", type=seed, default=0, help="seed of the first episode (default: 0)"
    )
    add_env_options(p)
    p.add_argument("--out", metavar="FILE", help="write the results file (JSON) here")
    p.set_defaults(handler=run_eval)

    p = sub.add_parser(
        "baselines",
        help="evaluate the random and oracle agents on every env and difficulty",
    )
    p.add_argument(
        "--episodes",
        metavar="N",
        type=positive_int,
        default=20,
        help="episodes per run (default: 20)",
    )
    p.add_argument(
        "--seed", metavar="S", type=seed, default=0, help="seed of the first episode (default: 0)"
    )
    p.add_argument("--env", action="append", metavar="ID", help="only this env (repeatable)")
    p.add_argument(
        "--agent",
        action="append",
        choices=("random", "oracle"),
        help="only this agent (repeatable; default: both)",
    )
    p.add_argument("--out-dir", metavar="DIR", help="write one results file per run here")
    p.set_defaults(handler=run_baselines)


def _fmt(value: float, digits: int = 3) -> str:
    return f"{value:.{digits}f}" if math.isfinite(value) else str(value)


def summary_cells(results: dict[str, Any]) -> list[str]:
    """The success, return and turns cells of a results file's summary row."""
    summary = results["summary"]
    low, high = summary["ci95"]
    half = (high - low) / 2
    success = f"{summary['success_rate']:.0%}"
    if "success_ci95" in summary:
        s_low, s_high = summary["success_ci95"]
        success += f" [{s_low:.0%}, {s_high:.0%}]"
    turns = summary.get("mean_turns")
    return [
        success,
        f"{_fmt(summary['mean_return'])} +/- {_fmt(half)}",
        _fmt(turns, 1) if isinstance(turns, int | float) else "-",
    ]


def _difficulty_of(results: dict[str, Any]) -> str:
    return str(results.get("difficulty") or results["env_kwargs"].get("difficulty") or "-")


def run_eval(args: argparse.Namespace) -> int:
    env_id = resolve_env_id(args.env_id)
    out = prepare_output_path(args.out) if args.out else None
    with EpisodeProgress(args.episodes, f"{env_id} {args.agent}") as progress:
        results = evaluate(
            env_id,
            agent_name=args.agent,
            episodes=args.episodes,
            seed=args.seed,
            env_kwargs=env_kwargs(args),
            progress=progress.update,
            out=out,
        )
    row = [env_id, _difficulty_of(results), args.agent, str(args.episodes)]
    print_table(SUMMARY_HEADERS, [row + summary_cells(results)], right=_NUMBER_HEADERS)
    if out is not None:
        print(f"wrote {out}")
    return EXIT_OK


def run_baselines(args: argparse.Namespace) -> int:
    specs = list_envs()
    if args.env:
        wanted = [resolve_env_id(e) for e in args.env]
        specs = [s for s in specs if s.id in wanted]
    agents = args.agent or ["random", "oracle"]
    # Envs on downloaded data (WebShop-v0) are left out, with a note, where it is
    # missing; one asked for by name is an error.
    missing = {spec.id: missing_data(spec) for spec in specs}
    skipped = [(spec, missing[spec.id]) for spec in specs if missing[spec.id]]
    if args.env and skipped:
        raise UserError(f"{skipped[0][0].id} cannot run here: {skipped[0][1]}")
    specs = [spec for spec in specs if not missing[spec.id]]
    out_dir = prepare_output_dir(args.out_dir) if args.out_dir else None
    jobs = [
        (spec, difficulty, agent)
        for spec in specs
        for difficulty in spec.difficulties
        for agent in agents
        if agent != "oracle" or spec.oracle
    ]
    if not jobs:
        raise UserError("nothing to run: no env matches with the agents asked for")
    rows, failures = [], []
    with EpisodeProgress(len(jobs) * args.episodes, "baselines") as progress:
        for j, (spec, difficulty, agent) in enumerate(jobs):
            offset = j * args.episodes
            progress.describe(f"baselines: {spec.id} {difficulty} {agent}")

            def report(done: int, _total: int, offset: int = offset) -> None:
                progress.update(offset + done)

            try:
                results = evaluate(
                    spec.id,
                    agent_name=agent,
                    episodes=args.episodes,
                    seed=args.seed,
                    env_kwargs={"difficulty": difficulty},
                    progress=report,
                )
            except Exception as exc:  # one broken env must not lose every other row
                failures.append(
                    f"{spec.id} {difficulty} {agent} failed: {type(exc).__name__}: {exc} "
                    f"(run `envgym eval {spec.id} --agent {agent} --difficulty {difficulty}` "
                    "to see the traceback)"
                )
                rows.append([spec.id, difficulty, agent, "0", "error", "-", "-"])
                progress.update(offset + args.episodes)
                continue
            if out_dir is not None:
                name = f"{spec.id.replace('/', '_')}_{difficulty}_{agent}.json"
                write_results(results, out_dir / name)
            rows.append([spec.id, difficulty, agent, str(args.episodes), *summary_cells(results)])
    print_table(SUMMARY_HEADERS, rows, right=_NUMBER_HEADERS)
    if out_dir is not None:
        print(f"wrote {len(rows) - len(failures)} results files to {out_dir}")
    for spec, reason in skipped:
        print(f"skipped {spec.id}: {reason}", file=sys.stderr)
    for failure in failures:
        print(f"envgym: error: {failure}", file=sys.stderr)
    return EXIT_FAILED if failures else EXIT_OK
