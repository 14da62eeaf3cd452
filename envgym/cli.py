"""The ``envgym`` command: list and read about envs, play one, evaluate agents.

    envgym list                          every env id with tags and difficulties
    envgym info envgym/Sokoban-v0        the env's manual
    envgym play envgym/FrozenLake-v0     play it yourself in the terminal
    envgym eval ID --agent oracle --episodes 20 --out results.json
    envgym baselines                     random and oracle agents on every env
    envgym search serve --port 8300      a retrieval server for the search env
    envgym serve ID --port 8000          serve an env over WebSocket (OpenEnv protocol)

User errors (unknown id, bad arguments, an output path that cannot be written)
print one line to stderr and exit with status 2; they never show a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import math
import os
import random
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any, TextIO

import gymnasium as gym

import envgym
from envgym.agents import AGENT_NAMES
from envgym.evaluation import (
    EvaluationError,
    ResultsFileError,
    evaluate,
    make_text_env,
    prepare_output_dir,
    prepare_output_path,
    write_results,
)
from envgym.registry import EnvSpec, get_spec, list_envs

__all__ = ["ProgressBar", "format_table", "main", "parse_kwarg"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


class UserError(Exception):
    """Something the user can fix; printed as one line, exit status 2."""


# ------------------------------------------------------------------ output
def format_table(
    headers: Sequence[str],
    rows: Sequence[Sequence[Any]],
    *,
    align: str | None = None,
    max_width: int | None = None,
) -> str:
    """Plain-text table with aligned columns.

    `align` holds one ``<`` or ``>`` per column; by default columns whose cells
    all start like numbers are right-aligned. With `max_width` the last column
    is shortened so every line fits.
    """
    cells = [[str(c) for c in row] for row in rows]
    ncols = len(headers)
    if any(len(row) != ncols for row in cells):
        raise ValueError(f"every row needs {ncols} cells")
    if align is None:
        align = "".join(
            ">" if cells and all(_looks_numeric(row[i]) for row in cells) else "<"
            for i in range(ncols)
        )
    widths = [max([len(headers[i])] + [len(row[i]) for row in cells]) for i in range(ncols)]
    if max_width is not None and ncols > 1:
        used = sum(widths[:-1]) + 2 * (ncols - 1)
        room = max(len(headers[-1]), max_width - used)
        if widths[-1] > room:
            widths[-1] = room
            for row in cells:
                if len(row[-1]) > room:
                    row[-1] = row[-1][: max(room - 3, 0)] + "..."

    def line(values: Sequence[str]) -> str:
        parts = [
            v.rjust(w) if a == ">" else v.ljust(w)
            for v, w, a in zip(values, widths, align, strict=True)
        ]
        return "  ".join(parts).rstrip()

    out = [line(headers), line(["-" * w for w in widths])]
    out += [line(row) for row in cells]
    return "\n".join(out)


def _looks_numeric(text: str) -> bool:
    head = text.split(" ", 1)[0].rstrip("%")
    try:
        float(head)
    except ValueError:
        return False
    return True


class ProgressBar:
    """A text progress bar on stderr.

    On a terminal it redraws one line with ``\\r``. Elsewhere (a log file, a
    pipe, CI) it prints a line when a tenth more is done and at least
    `log_every_s` seconds have passed, and one at the end, so logs stay short.
    """

    def __init__(
        self,
        total: int,
        label: str = "",
        stream: TextIO | None = None,
        width: int = 24,
        log_every_s: float = 5.0,
    ) -> None:
        self.total = max(int(total), 1)
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.width = width
        self.log_every_s = log_every_s
        isatty = getattr(self.stream, "isatty", None)
        self.interactive = bool(isatty and isatty())
        self._start = time.monotonic()
        self._last_logged = self._start
        self._done = 0
        self._last_tenth = 0
        self._logged_end = False
        self._drawn = False

    def update(self, done: int, total: int | None = None) -> None:
        """Show `done` of `total` (default: the total given at construction)."""
        if total is not None:
            self.total = max(int(total), 1)
        self._done = min(int(done), self.total)
        if self.interactive:
            self.stream.write("\r" + self._text() + "\033[K")
            self.stream.flush()
            self._drawn = True
            return
        now = time.monotonic()
        tenth = self._done * 10 // self.total
        finished = self._done == self.total
        due = tenth > self._last_tenth and now - self._last_logged >= self.log_every_s
        if (finished and not self._logged_end) or (due and not finished):
            self._logged_end = finished
            self._last_tenth = tenth
            self._last_logged = now
            self.stream.write(self._text() + "\n")
            self.stream.flush()

    def close(self) -> None:
        """End the bar's line (on a terminal)."""
        if self.interactive and self._drawn:
            self.stream.write("\n")
            self.stream.flush()
            self._drawn = False

    def _text(self) -> str:
        elapsed = time.monotonic() - self._start
        fraction = self._done / self.total
        filled = int(round(self.width * fraction))
        bar = "#" * filled + "-" * (self.width - filled)
        text = f"{self.label} [{bar}] {self._done}/{self.total} episodes"
        if self._done and self._done < self.total:
            eta = elapsed / self._done * (self.total - self._done)
            text += f", {elapsed:.0f}s elapsed, ~{eta:.0f}s left"
        else:
            text += f", {elapsed:.1f}s"
        return text.strip()


def _fmt(value: float, digits: int = 3) -> str:
    return f"{value:.{digits}f}" if math.isfinite(value) else str(value)


def _summary_cells(results: dict[str, Any]) -> list[str]:
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


_SUMMARY_HEADERS = [
    "env",
    "difficulty",
    "agent",
    "episodes",
    "success [95% CI]",
    "mean return +/- 95% CI",
    "turns",
]
_SUMMARY_ALIGN = "<<<>>>>"


# --------------------------------------------------------------- arguments
def parse_kwarg(text: str) -> tuple[str, Any]:
    """``key=value`` -> (key, value); the value is read as JSON when it parses
    (``3``, ``0.5``, ``true``, ``[1, 2]``), else kept as a string."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected key=value, got {text!r}")
    if not key.isidentifier():
        raise argparse.ArgumentTypeError(f"{key!r} is not a valid keyword argument name")
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    return key, value


def _env_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    kwargs = dict(args.kwarg or [])
    if getattr(args, "difficulty", None) is not None:
        kwargs["difficulty"] = args.difficulty
    return kwargs


def _resolve_env_id(text: str) -> str:
    """The registered id for `text`; ``Sokoban-v0`` is accepted for ``envgym/Sokoban-v0``."""
    if text in gym.registry:
        return text
    if "/" not in text and f"envgym/{text}" in gym.registry:
        return f"envgym/{text}"
    try:
        return get_spec(text).id
    except KeyError as exc:
        raise UserError(exc.args[0]) from None


def _int_at_least(minimum: int, complaint: str) -> Callable[[str], int]:
    """An argparse type: a whole number no smaller than `minimum`."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{complaint}, got {value}")
        return value

    return parse


_positive_int = _int_at_least(1, "must be at least 1")
_seed = _int_at_least(0, "a seed is >= 0")


def _add_env_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--difficulty", metavar="LEVEL", help="difficulty level, e.g. easy, medium, hard"
    )
    parser.add_argument(
        "--kwarg",
        action="append",
        type=parse_kwarg,
        metavar="KEY=VALUE",
        help="extra env argument (repeatable); VALUE is read as JSON when it parses",
    )


_ID_HELP = "env id, e.g. envgym/Sokoban-v0 or Sokoban-v0 (see `envgym list`)"


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="envgym",
        description="Gymnasium-compatible text environments for LLM agents.",
        epilog="Run `envgym COMMAND --help` for a command's options.",
    )
    parser.add_argument("--version", action="version", version=f"envgym {envgym.__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("list", help="list every env id with its tags and difficulties")
    p.add_argument("--tag", help="only envs carrying this tag")
    p.set_defaults(handler=_cmd_list)

    p = sub.add_parser("info", help="print an env's manual")
    p.add_argument("env_id", metavar="ID", help=_ID_HELP)
    p.set_defaults(handler=_cmd_info)

    p = sub.add_parser(
        "play",
        help="play an env yourself, one line per turn",
        description="Play an env in the terminal. Each line you type is one turn; a line "
        "without tags is sent as <answer>LINE</answer>. Type 'quit' (or end the input) to stop.",
    )
    p.add_argument("env_id", metavar="ID", help=_ID_HELP)
    p.add_argument(
        "--seed", metavar="S", type=_seed, help="task seed (default: a random one, printed)"
    )
    _add_env_options(p)
    p.set_defaults(handler=_cmd_play)

    p = sub.add_parser(
        "eval",
        help="evaluate an agent and write a results file",
        description="Run an agent for N episodes with seeds S, S+1, ... and print a summary.",
    )
    p.add_argument("env_id", metavar="ID", help=_ID_HELP)
    p.add_argument(
        "--agent",
        default="random",
        help=f"agent to run: {', '.join(AGENT_NAMES)} (default: random)",
    )
    p.add_argument(
        "--episodes",
        metavar="N",
        type=_positive_int,
        default=10,
        help="number of episodes (default: 10)",
    )
    p.add_argument(
        "--seed", metavar="S", type=_seed, default=0, help="seed of the first episode (default: 0)"
    )
    _add_env_options(p)
    p.add_argument("--out", metavar="FILE", help="write the results file (JSON) here")
    p.set_defaults(handler=_cmd_eval)

    p = sub.add_parser(
        "baselines",
        help="evaluate the random and oracle agents on every env and difficulty",
    )
    p.add_argument(
        "--episodes",
        metavar="N",
        type=_positive_int,
        default=20,
        help="episodes per run (default: 20)",
    )
    p.add_argument(
        "--seed", metavar="S", type=_seed, default=0, help="seed of the first episode (default: 0)"
    )
    p.add_argument("--env", action="append", metavar="ID", help="only this env (repeatable)")
    p.add_argument(
        "--agent",
        action="append",
        choices=("random", "oracle"),
        help="only this agent (repeatable; default: both)",
    )
    p.add_argument("--out-dir", metavar="DIR", help="write one results file per run here")
    p.set_defaults(handler=_cmd_baselines)

    _add_search_parser(sub)
    _add_serve_parser(sub)
    _add_sandbox_parser(sub)
    return parser


def _add_sandbox_parser(sub: Any) -> None:
    sandbox = sub.add_parser("sandbox", help="build, check and clean up code sandboxes")
    sandbox_sub = sandbox.add_subparsers(dest="sandbox_command", metavar="SUBCOMMAND")
    sandbox.set_defaults(handler=lambda _args: sandbox.print_help() or EXIT_OK)
    p = sandbox_sub.add_parser(
        "build",
        help="build the sandbox images from Debian packages (root, Docker daemon)",
        description="debootstrap a minimal Debian with python3 and numpy, import it as the base "
        "image, then build the sandbox and runtime images from it with --network none.",
    )
    p.add_argument("--rebuild", action="store_true", help="debootstrap the root filesystem again")
    p.add_argument("--no-runtime", action="store_true", help="skip the runtime (env server) image")
    p.set_defaults(handler=_cmd_sandbox_build)
    p = sandbox_sub.add_parser("doctor", help="say which sandbox backends work here, and why not")
    p.set_defaults(handler=_cmd_sandbox_doctor)
    p = sandbox_sub.add_parser("gc", help="remove every envgym sandbox container")
    p.add_argument(
        "--dead-owners",
        action="store_true",
        help="only containers whose owning process on this host has exited",
    )
    p.set_defaults(handler=_cmd_sandbox_gc)


def _add_search_parser(sub: Any) -> None:
    search = sub.add_parser("search", help="the search env's retrieval server")
    search_sub = search.add_subparsers(dest="search_command", metavar="SUBCOMMAND")
    search.set_defaults(handler=lambda _args: search.print_help() or EXIT_OK)
    p = search_sub.add_parser(
        "serve",
        help="serve a BM25 or dense index over HTTP (127.0.0.1 or a Unix socket)",
        description="Build (or load from the cache) a retrieval index and serve it, so many "
        "env workers share one index: RemoteRetriever(url=...) or RemoteRetriever(uds=...). "
        "The corpus is a JSONL file (--corpus) or the search env's generated world.",
    )
    p.add_argument(
        "--corpus",
        metavar="JSONL",
        help='Search-R1 corpus: {"id", "contents": "\\"Title\\"\\ntext"}',
    )
    p.add_argument(
        "--docs",
        metavar="N",
        type=_positive_int,
        help="generated world's size, without --corpus (default: 100000, as the env)",
    )
    p.add_argument("--world-seed", metavar="S", type=_seed, default=0, help="generated world seed")
    p.add_argument(
        "--distractors",
        metavar="F",
        type=float,
        default=0.5,
        help="generated world's distractor share, 0 to 1 (default: 0.5, as the env)",
    )
    p.add_argument("--kind", choices=("bm25", "dense"), default="bm25", help="default: bm25")
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--port", metavar="P", type=_int_at_least(0, "a port is >= 0"), help="default: 8300"
    )
    where.add_argument("--uds", metavar="PATH", help="listen on this Unix socket instead")
    p.add_argument(
        "--cache-dir",
        metavar="DIR",
        help="index and world cache (default: $ENVGYM_CACHE/search or ~/.cache/envgym/search)",
    )
    p.set_defaults(handler=_cmd_search_serve)


def _add_serve_parser(sub: Any) -> None:
    p = sub.add_parser(
        "serve",
        help="serve an env over WebSocket at /ws (OpenEnv's protocol; RemoteEnv connects)",
        description="Serve one env id: each WebSocket connection at /ws is one env instance, "
        "in OpenEnv's message format, so envgym.remote.RemoteEnv and OpenEnv's GenericEnvClient "
        "both drive it. GET /health and GET /schema describe the server. Clients get each "
        "observation's info without info['privileged'] (gold answers, solutions) unless "
        "--send-privileged is given; a Unix socket is made owner-only (0600).",
    )
    p.add_argument("env_id", metavar="ID", help=_ID_HELP)
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--port",
        metavar="P",
        type=_int_at_least(0, "a port is >= 0"),
        help="TCP port (default: 8000; 0 picks a free one, printed at start)",
    )
    where.add_argument("--uds", metavar="PATH", help="listen on this Unix socket instead")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    p.add_argument(
        "--max-sessions",
        metavar="N",
        type=_positive_int,
        default=256,
        help="sessions served at once; more are refused (default: 256)",
    )
    p.add_argument(
        "--idle-timeout",
        metavar="S",
        type=_non_negative_float,
        default=3600.0,
        help="close a session that sends nothing for S seconds; 0: never (default: 3600)",
    )
    p.add_argument(
        "--exit-after",
        metavar="N",
        type=_positive_int,
        help="stop once N sessions have been served and none is open (a server for one "
        "client that may die; default: serve until stopped)",
    )
    p.add_argument(
        "--kwargs",
        metavar="JSON",
        type=_json_object,
        help='env arguments as one JSON object, e.g. \'{"difficulty": "hard"}\'',
    )
    _add_env_options(p)
    p.add_argument(
        "--send-privileged",
        action="store_true",
        help="send info['privileged'] (gold answers, solutions, hidden state) to clients, for "
        "a trainer that needs it; serve it only where no one else can connect (default: left "
        "out)",
    )
    p.add_argument(
        "--call-timeout",
        metavar="S",
        type=_non_negative_float,
        default=60.0,
        help="close a session whose env call (reset, step) takes longer than S seconds, with "
        "a CALL_TIMEOUT error; the call finishes in the background; 0: no limit (default: 60)",
    )
    p.add_argument(
        "--max-message-bytes",
        metavar="N",
        type=_int_at_least(1024, "a message limit is >= 1024 bytes"),
        help="close a session that sends a message longer than N bytes (code 1009) "
        "(default: the env's longest action, JSON-escaped, plus 64 KiB)",
    )
    p.add_argument(
        "--ping-interval",
        metavar="S",
        type=_non_negative_float,
        default=20.0,
        help="WebSocket keep-alive ping every S seconds; 0: none (default: 20)",
    )
    p.add_argument(
        "--ping-timeout",
        metavar="S",
        type=_non_negative_float,
        default=20.0,
        help="drop a client that does not answer a ping within S seconds (default: 20)",
    )
    p.add_argument(
        "--log-level",
        choices=("critical", "error", "warning", "info", "debug"),
        default="warning",
        help="server log level (default: warning)",
    )
    p.set_defaults(handler=_cmd_serve)


def _non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}")
    return value


def _json_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not valid JSON ({exc}): {text!r}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object, got {text!r}")
    return value


# ---------------------------------------------------------------- commands
def _terminal_width(stream: TextIO) -> int | None:
    isatty = getattr(stream, "isatty", None)
    if isatty and isatty():
        return shutil.get_terminal_size().columns
    return None


def _cmd_list(args: argparse.Namespace) -> int:
    specs = list_envs(args.tag)
    if not specs:
        tags = sorted({t for s in list_envs() for t in s.tags})
        raise UserError(f"no env has the tag {args.tag!r}; tags in use: {', '.join(tags)}")
    rows = [(s.id, ", ".join(s.difficulties), ", ".join(s.tags), s.description) for s in specs]
    headers = ["id", "difficulties", "tags", "description"]
    print(format_table(headers, rows, align="<<<<", max_width=_terminal_width(sys.stdout)))
    return EXIT_OK


def _manual(spec: EnvSpec) -> tuple[str | None, str | None]:
    """(manual, problem): the env class's own docstring, or why it is unavailable."""
    module_name, _, class_name = spec.entry_point.partition(":")
    try:
        env_cls = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError) as exc:
        return None, f"cannot import {spec.entry_point} ({exc})"
    doc = env_cls.__dict__.get("__doc__")
    if not doc:
        return None, f"{class_name} has no docstring"
    return inspect.cleandoc(doc), None


def _cmd_info(args: argparse.Namespace) -> int:
    env_id = _resolve_env_id(args.env_id)
    try:
        spec = get_spec(env_id)
    except KeyError as exc:
        raise UserError(exc.args[0]) from None
    manual, problem = _manual(spec)
    print(f"{spec.id}: {spec.description}")
    print()
    print(f"  difficulties  {', '.join(spec.difficulties)} (default: {spec.default_difficulty})")
    print(f"  tags          {', '.join(spec.tags)}")
    print(f"  oracle agent  {'yes' if spec.oracle else 'no'}")
    print(f"  entry point   {spec.entry_point}")
    print()
    if manual is None:
        print(f"envgym: error: no manual for {spec.id}: {problem}", file=sys.stderr)
        return EXIT_FAILED
    print(manual)
    return EXIT_OK


def _read_line(prompt: str) -> str | None:
    """One line from stdin (None at end of input), echoed when stdin is not a terminal."""
    if sys.stdin.isatty():
        try:
            return input(prompt)  # line editing where the readline module is available
        except EOFError:
            sys.stdout.write("\n")
            return None
    sys.stdout.write(prompt)
    sys.stdout.flush()
    line = sys.stdin.readline()
    if not line:
        sys.stdout.write("\n")
        return None
    line = line.rstrip("\r\n")
    # Piped input is not echoed by a terminal; show it so the transcript reads right.
    sys.stdout.write(line + "\n")
    return line


def _cmd_play(args: argparse.Namespace) -> int:
    env_id = _resolve_env_id(args.env_id)
    env = make_text_env(env_id, _env_kwargs(args))
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**31)
    total, turns = 0.0, 0
    terminated = truncated = False
    try:
        obs, info = env.reset(seed=seed)
        difficulty = getattr(env.unwrapped, "difficulty", None)
        header = f"{env_id}  seed {seed}"
        if isinstance(difficulty, str):
            header += f"  difficulty {difficulty}"
        print(header)
        print("Type a move and press Enter (sent as <answer>MOVE</answer> unless it has tags);")
        print("'quit' or end of input stops.")
        while True:
            print()
            print(obs)
            if terminated or truncated:
                break
            moves = info.get("admissible_actions")
            if moves:
                print(f"(legal moves: {', '.join(str(m) for m in moves)})")
            line = _read_line("> ")
            while line is not None and not line.strip():
                line = _read_line("> ")
            if line is None or line.strip().lower() == "quit":
                break
            text = line.strip()
            action = text if "<" in text else f"<answer>{text}</answer>"
            obs, reward, terminated, truncated, info = env.step(action)
            total += float(reward)
            turns += 1
            report = f"reward {float(reward):+g}"
            components = info.get("reward_components") or {}
            if len(components) > 1 and any(components.values()):
                report += " (" + ", ".join(f"{k} {v:+g}" for k, v in components.items()) + ")"
            if info.get("action_valid") is False:
                report += "  [invalid action]"
            print(report)
    except KeyboardInterrupt:
        print()
        print(f"Interrupted after {turns} turn{'' if turns == 1 else 's'}: return {total:+g}")
        return EXIT_INTERRUPTED
    finally:
        env.close()
    success = bool(info.get("success", False))
    if terminated:
        ending = "Episode over"
    elif truncated:
        ending = "Episode over (turn limit reached)"
    else:
        ending = f"Stopped after {turns} turn{'' if turns == 1 else 's'}"
    print(f"{ending}: return {total:+g}, success {'yes' if success else 'no'}, turns {turns}")
    return EXIT_OK


def _difficulty_of(results: dict[str, Any]) -> str:
    return str(results.get("difficulty") or results["env_kwargs"].get("difficulty") or "-")


def _cmd_eval(args: argparse.Namespace) -> int:
    env_id = _resolve_env_id(args.env_id)
    out = prepare_output_path(args.out) if args.out else None
    bar = ProgressBar(args.episodes, label=f"{env_id} {args.agent}")
    try:
        results = evaluate(
            env_id,
            agent_name=args.agent,
            episodes=args.episodes,
            seed=args.seed,
            env_kwargs=_env_kwargs(args),
            progress=bar.update,
            out=out,
        )
    finally:
        bar.close()
    row = [
        env_id,
        _difficulty_of(results),
        args.agent,
        str(args.episodes),
        *_summary_cells(results),
    ]
    print(format_table(_SUMMARY_HEADERS, [row], align=_SUMMARY_ALIGN))
    if out is not None:
        print(f"wrote {out}")
    return EXIT_OK


def _cmd_baselines(args: argparse.Namespace) -> int:
    specs = list_envs()
    if args.env:
        wanted = [_resolve_env_id(e) for e in args.env]
        specs = [s for s in specs if s.id in wanted]
    agents = args.agent or ["random", "oracle"]
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
    bar = ProgressBar(len(jobs) * args.episodes, label="baselines")
    rows, failures = [], []
    try:
        for j, (spec, difficulty, agent) in enumerate(jobs):
            offset = j * args.episodes
            bar.label = f"baselines: {spec.id} {difficulty} {agent}"

            def progress(done: int, _total: int, offset: int = offset) -> None:
                bar.update(offset + done)

            try:
                results = evaluate(
                    spec.id,
                    agent_name=agent,
                    episodes=args.episodes,
                    seed=args.seed,
                    env_kwargs={"difficulty": difficulty},
                    progress=progress,
                )
            except Exception as exc:  # one broken env must not lose every other row
                failures.append(
                    f"{spec.id} {difficulty} {agent} failed: {type(exc).__name__}: {exc} "
                    f"(run `envgym eval {spec.id} --agent {agent} --difficulty {difficulty}` "
                    "to see the traceback)"
                )
                rows.append([spec.id, difficulty, agent, "0", "error", "-", "-"])
                bar.update(offset + args.episodes)
                continue
            if out_dir is not None:
                name = f"{spec.id.replace('/', '_')}_{difficulty}_{agent}.json"
                write_results(results, out_dir / name)
            rows.append([spec.id, difficulty, agent, str(args.episodes), *_summary_cells(results)])
    finally:
        bar.close()
    print(format_table(_SUMMARY_HEADERS, rows, align=_SUMMARY_ALIGN))
    if out_dir is not None:
        print(f"wrote {len(rows) - len(failures)} results files to {out_dir}")
    for failure in failures:
        print(f"envgym: error: {failure}", file=sys.stderr)
    return EXIT_FAILED if failures else EXIT_OK


def _cmd_serve(args: argparse.Namespace) -> int:
    try:
        from envgym.remote.server import ServerStartError, ready_line, serve
    except ImportError as exc:
        raise UserError(
            f"{exc}; `envgym serve` needs fastapi, uvicorn and websockets: "
            "pip install 'envgym[remote]'"
        ) from None
    env_id = _resolve_env_id(args.env_id)
    kwargs = dict(args.kwargs or {})
    kwargs.update(_env_kwargs(args))
    idle = args.idle_timeout or None
    call = args.call_timeout or None

    def ready(address: Any) -> None:
        print(ready_line(env_id, address), flush=True)
        idle_text = f"{idle:g} s" if idle else "off"
        call_text = f"{call:g} s" if call else "off"
        privileged = "sent" if args.send_privileged else "left out (--send-privileged sends it)"
        print(
            f"  up to {args.max_sessions} sessions, idle timeout {idle_text}, call timeout "
            f"{call_text}; info['privileged'] {privileged}; GET /health, GET /schema; Ctrl+C stops",
            flush=True,
        )

    try:
        serve(
            env_id,
            kwargs,
            host=args.host,
            port=8000 if args.port is None else args.port,
            uds=args.uds,
            max_sessions=args.max_sessions,
            idle_timeout_s=idle,
            send_privileged=args.send_privileged,
            call_timeout_s=call,
            max_message_bytes=args.max_message_bytes,
            ping_interval_s=args.ping_interval or None,
            ping_timeout_s=args.ping_timeout or None,
            exit_after_sessions=args.exit_after,
            log_level=args.log_level,
            on_ready=ready,
        )
    except (ServerStartError, ImportError) as exc:
        raise UserError(str(exc)) from None
    return EXIT_OK


def _cmd_search_serve(args: argparse.Namespace) -> int:
    try:
        from envgym.envs.search.server import run_serve_command
    except ImportError as exc:
        raise UserError(f"{exc}; install the search extra: pip install envgym[search]") from None
    try:
        run_serve_command(args)
    except (ImportError, OSError, ValueError) as exc:
        raise UserError(str(exc)) from None
    return EXIT_OK


def _cmd_sandbox_build(args: argparse.Namespace) -> int:
    from envgym.sandbox import SandboxError
    from envgym.sandbox.images import build_images

    try:
        build_images(rebuild_rootfs=args.rebuild, runtime=not args.no_runtime)
    except (SandboxError, subprocess.CalledProcessError) as exc:
        raise UserError(str(exc)) from None
    return EXIT_OK


def _cmd_sandbox_doctor(args: argparse.Namespace) -> int:
    from envgym.sandbox import doctor

    rows = doctor()
    print(
        format_table(
            ["check", "ok", "detail"], [[n, "yes" if ok else "NO", d] for n, ok, d in rows]
        )
    )
    return EXIT_OK if any(n == "auto picks" and ok for n, ok, _ in rows) else EXIT_FAILED


def _cmd_sandbox_gc(args: argparse.Namespace) -> int:
    from envgym.sandbox import SandboxError, gc

    try:
        removed = gc(only_dead_owners=args.dead_owners)
    except SandboxError as exc:
        raise UserError(str(exc)) from None
    print(
        f"removed {len(removed)} sandbox container(s)"
        + (": " + ", ".join(removed) if removed else "")
    )
    return EXIT_OK


# -------------------------------------------------------------------- main
def main(argv: Sequence[str] | None = None) -> int:
    """Run ``envgym`` with `argv` (default: ``sys.argv[1:]``); return the exit status."""
    parser = _build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version and usage errors
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    if args.command is None:
        parser.print_help()
        return EXIT_OK
    try:
        return args.handler(args)
    except (UserError, EvaluationError, ResultsFileError) as exc:
        print(f"envgym: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("\nenvgym: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (`envgym list | head`); stop quietly.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_FAILED
