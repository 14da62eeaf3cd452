"""``envgym eval`` and ``envgym baselines``: run agents for many episodes,
show their progress, print a summary table and write results files.

``eval`` runs every env id and difficulty asked for in one batch
(`envgym.evaluation.batch.evaluate_many`); ``baselines`` runs
`envgym.evaluation.baselines.run_baselines` (the loop that makes the committed
baselines too), one evaluation per env, difficulty and agent, so one broken env
costs only its own rows. Both name their files by
`envgym.evaluation.results_file.results_file_name`."""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Any

from envgym.agents import agent_forms
from envgym.cli.arguments import (
    EXIT_FAILED,
    EXIT_OK,
    ID_HELP,
    UserError,
    parse_kwarg,
    positive_int,
    resolve_env_id,
    seed,
)
from envgym.cli.output import EpisodeProgress, print_table
from envgym.evaluation import load_results, prepare_output_dir, prepare_output_path, write_results
from envgym.evaluation.baselines import BASELINE_AGENTS, baseline_jobs, run_baselines
from envgym.evaluation.batch import BATCH_WORKERS, evaluate_many
from envgym.evaluation.play import MAX_TRIALS
from envgym.evaluation.results_file import results_file_name
from envgym.registry import get_spec

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
        help="evaluate an agent on one or more envs and write results files",
        description=(
            "Run an agent for N episodes with seeds S .. S+N-1 (each seed --trials times) on "
            "each env id and difficulty asked for, --num-envs episodes at a time, and print a "
            "summary table."
        ),
    )
    p.add_argument("env_ids", metavar="ID", nargs="+", help=ID_HELP + " (one or more)")
    p.add_argument(
        "--agent",
        default="random",
        help=f"agent to run: {', '.join(agent_forms())} (default: random)",
    )
    p.add_argument(
        "--episodes",
        metavar="N",
        type=positive_int,
        help="episodes per env id and difficulty (default: 10)",
    )
    p.add_argument("--seed", metavar="S", type=seed, help="seed of the first episode (default: 0)")
    p.add_argument(
        "--trials",
        metavar="K",
        type=trials_count,
        default=1,
        help=f"run each seed K times (1 .. {MAX_TRIALS}) and report pass^1 .. pass^K, the "
        "chance that k trials of a task all succeed (default: 1)",
    )
    p.add_argument(
        "--ticket",
        metavar="FILE",
        help="run a leaderboard ticket (from envgym leaderboard ticket): its env, difficulty, "
        "seeds and episode count; the results file names it, so the run can rank",
    )
    levels = p.add_mutually_exclusive_group()
    levels.add_argument(
        "--difficulty",
        metavar="LEVEL",
        nargs="+",
        help="difficulty level(s), e.g. easy medium hard (default: each env's own default)",
    )
    levels.add_argument(
        "--all-difficulties",
        action="store_true",
        help="every difficulty each env offers",
    )
    p.add_argument(
        "--kwarg",
        action="append",
        type=parse_kwarg,
        metavar="KEY=VALUE",
        help="extra env argument (repeatable); VALUE is read as JSON when it parses",
    )
    p.add_argument(
        "--num-envs",
        metavar="K",
        type=positive_int,
        default=8,
        help="episodes in flight at once, over all runs (default: 8)",
    )
    p.add_argument(
        "--workers",
        choices=BATCH_WORKERS,
        default="sync",
        help="where the envs run: this process or worker processes (default: sync)",
    )
    out = p.add_mutually_exclusive_group()
    out.add_argument("--out", metavar="FILE", help="write the results file (JSON) here (one run)")
    out.add_argument(
        "--out-dir", metavar="DIR", help="write one results file per env id and difficulty here"
    )
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
    p.add_argument(
        "--out-dir",
        metavar="DIR",
        help="write one results file per run here (leaderboard/baselines refreshes the "
        "committed ones; envgym leaderboard export --baselines DIR publishes them)",
    )
    p.set_defaults(handler=run_baselines_command)


def trials_count(text: str) -> int:
    """An argparse type: a trial count, 1 .. `MAX_TRIALS`."""
    value = positive_int(text)
    if value > MAX_TRIALS:
        raise argparse.ArgumentTypeError(
            f"at most {MAX_TRIALS} trials per seed, got {value}; run more seeds instead"
        )
    return value


def pass_k_cell(results: dict[str, Any]) -> str:
    """``pass^1/pass^2/...`` of a results file as one compact cell ("-" for one trial)."""
    pass_k = results["summary"].get("pass_k")
    if not pass_k:
        return "-"
    return "/".join(f"{pass_k[k]:.2f}" for k in sorted(pass_k, key=int))


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


def _eval_jobs(args: argparse.Namespace) -> list[tuple[str, dict[str, Any]]]:
    """The (env id, kwargs) runs asked for, checked before any episode runs."""
    extra = dict(args.kwarg or [])
    if "difficulty" in extra and (args.difficulty or args.all_difficulties):
        raise UserError("give the difficulty with --difficulty, not also as --kwarg difficulty=")
    jobs: list[tuple[str, dict[str, Any]]] = []
    for text in args.env_ids:
        env_id = resolve_env_id(text)
        spec = get_spec(env_id)
        if args.all_difficulties:
            levels: list[str | None] = list(spec.difficulties)
        elif args.difficulty:
            levels = list(dict.fromkeys(args.difficulty))
            for level in levels:
                if level not in spec.difficulties:
                    raise UserError(
                        f"{env_id} has no difficulty {level!r}; choose one of "
                        f"{', '.join(spec.difficulties)}"
                    )
        else:
            levels = [None]
        for level in levels:
            kwargs = dict(extra) if level is None else {**extra, "difficulty": level}
            if (env_id, kwargs) not in jobs:
                jobs.append((env_id, kwargs))
    return jobs


def _apply_ticket(args: argparse.Namespace) -> str | None:
    """Fill the run's settings from ``--ticket FILE``; its code, or None without one."""
    if args.ticket is None:
        args.seed = 0 if args.seed is None else args.seed
        args.episodes = 10 if args.episodes is None else args.episodes
        return None
    try:
        with open(args.ticket, encoding="utf-8") as f:
            ticket = json.load(f)
        code, env_id, level = ticket["ticket"], ticket["env_id"], ticket["difficulty"]
        first, count = int(ticket["seed"]), int(ticket["num_episodes"])
        settings = dict(ticket.get("settings") or {})
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UserError(
            f"--ticket {args.ticket}: not a ticket file ({exc}); write one with "
            "envgym leaderboard ticket ID --out FILE"
        ) from None
    asked = [resolve_env_id(text) for text in args.env_ids]
    clashes = [
        (asked != [env_id], f"env {' '.join(asked)} (the ticket is for {env_id})"),
        (bool(args.kwarg), "--kwarg (a ticket's run has the track's settings)"),
        (args.all_difficulties, "--all-difficulties"),
        (args.difficulty not in (None, [level]), f"--difficulty (the ticket's is {level})"),
        (args.seed not in (None, first), f"--seed (the ticket's is {first})"),
        (args.episodes not in (None, count), f"--episodes (the ticket's is {count})"),
    ]
    for clash, what in clashes:
        if clash:
            raise UserError(f"--ticket fixes the run; drop {what}")
    args.difficulty, args.seed, args.episodes = [level], first, count
    args.kwarg = list(settings.items())
    return str(code)


def run_eval(args: argparse.Namespace) -> int:
    ticket = _apply_ticket(args)
    jobs = _eval_jobs(args)
    if args.out and len(jobs) > 1:
        raise UserError(
            f"--out names one file but {len(jobs)} runs were asked for; "
            "use --out-dir DIR for one results file per env id and difficulty"
        )
    out = prepare_output_path(args.out) if args.out else None
    out_dir = prepare_output_dir(args.out_dir) if args.out_dir else None
    title = jobs[0][0] if len(jobs) == 1 else f"{len(jobs)} runs"
    total = len(jobs) * args.episodes * args.trials  # seeds x trials
    with EpisodeProgress(total, f"{title} {args.agent}") as progress:
        all_results = evaluate_many(
            jobs,
            args.agent,
            episodes=args.episodes,
            seed=args.seed,
            num_envs=args.num_envs,
            workers=args.workers,
            progress=progress.update,
            trials=args.trials,
        )
    if ticket is not None:
        all_results[0]["ticket"] = ticket  # checked by the leaderboard that issued it
    episodes = str(args.episodes) if args.trials == 1 else f"{args.episodes} x {args.trials}"
    rows = [
        [r["env_id"], _difficulty_of(r), args.agent, episodes, *summary_cells(r)]
        for r in all_results
    ]
    headers = SUMMARY_HEADERS
    if args.trials > 1:  # pass^k of every run: the chance that k trials of a seed all succeed
        headers = [*SUMMARY_HEADERS, f"pass^1/.../pass^{args.trials}"]
        rows = [[*row, pass_k_cell(r)] for row, r in zip(rows, all_results, strict=True)]
    print_table(headers, rows, right=headers[3:])
    if out is not None:
        write_results(all_results[0], out)
        print(f"wrote {out}")
    if out_dir is not None:
        names = [
            results_file_name(r["env_id"], r.get("difficulty"), args.agent) for r in all_results
        ]
        if len(set(names)) < len(names):  # the same id and difficulty with other --kwarg
            names = [f"{n[:-5]}_{k}.json" for k, n in enumerate(names)]
        for results, name in zip(all_results, names, strict=True):
            write_results(results, out_dir / name)
        print(f"wrote {len(names)} results files to {out_dir}")
    return EXIT_OK


def run_baselines_command(args: argparse.Namespace) -> int:
    wanted = [resolve_env_id(e) for e in args.env] if args.env else None
    jobs, skipped = baseline_jobs(wanted, args.agent or BASELINE_AGENTS)
    # Envs on downloaded data (WebShop-v0) are left out, with a note, where it is
    # missing; one asked for by name is an error.
    if wanted and skipped:
        raise UserError(f"{skipped[0][0]} cannot run here: {skipped[0][1]}")
    if not jobs:
        raise UserError("nothing to run: no env matches with the agents asked for")
    out_dir = prepare_output_dir(args.out_dir) if args.out_dir else None
    with EpisodeProgress(len(jobs) * args.episodes, "baselines") as progress:
        runs = run_baselines(
            jobs,
            args.episodes,
            args.seed,
            out_dir,
            progress=progress.update,
            describe=lambda text: progress.describe(f"baselines: {text}"),
        )
    rows = []
    for run in runs:
        if run.error is not None:
            rows.append([run.env_id, run.difficulty, run.agent, "0", "error", "-", "-"])
            continue
        # The table is read back from the files, so it shows exactly what they hold.
        results = load_results(run.path) if run.path is not None else run.results
        cells = summary_cells(results)
        rows.append([run.env_id, run.difficulty, run.agent, str(args.episodes), *cells])
    print_table(SUMMARY_HEADERS, rows, right=_NUMBER_HEADERS)
    failures = [run.error for run in runs if run.error is not None]
    if out_dir is not None:
        print(f"wrote {len(runs) - len(failures)} results files to {out_dir}")
    for env_id, reason in skipped:
        print(f"skipped {env_id}: {reason}", file=sys.stderr)
    for failure in failures:
        print(f"envgym: error: {failure}", file=sys.stderr)
    return EXIT_FAILED if failures else EXIT_OK
