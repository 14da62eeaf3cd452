"""``envgym list``, ``envgym info`` and ``envgym play``: find an env, read its
manual, and play it yourself in the terminal."""

from __future__ import annotations

import argparse
import inspect
import random
import sys
from typing import Any

from envgym.cli.arguments import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    ID_HELP,
    UserError,
    add_env_options,
    env_kwargs,
    resolve_env_id,
    seed,
)
from envgym.cli.output import print_table
from envgym.registry import EnvSpec, get_spec, list_envs, load_entry_point, make_text_env


def add_commands(sub: Any) -> None:
    """Add ``list``, ``info`` and ``play`` to the ``envgym`` subparsers `sub`."""
    p = sub.add_parser("list", help="list every env id with its tags and difficulties")
    p.add_argument("--tag", help="only envs carrying this tag")
    p.set_defaults(handler=run_list)

    p = sub.add_parser("info", help="print an env's manual")
    p.add_argument("env_id", metavar="ID", help=ID_HELP)
    p.set_defaults(handler=run_info)

    p = sub.add_parser(
        "play",
        help="play an env yourself, one line per turn",
        description="Play an env in the terminal. Each line you type is one turn; a line "
        "without tags is sent as <answer>LINE</answer>. Type 'quit' (or end the input) to stop.",
    )
    p.add_argument("env_id", metavar="ID", help=ID_HELP)
    p.add_argument(
        "--seed", metavar="S", type=seed, help="task seed (default: a random one, printed)"
    )
    add_env_options(p)
    p.set_defaults(handler=run_play)


def run_list(args: argparse.Namespace) -> int:
    specs = list_envs(args.tag)
    if not specs:
        tags = sorted({t for s in list_envs() for t in s.tags})
        raise UserError(f"no env has the tag {args.tag!r}; tags in use: {', '.join(tags)}")
    rows = [(s.id, ", ".join(s.difficulties), ", ".join(s.tags), s.description) for s in specs]
    print_table(["id", "difficulties", "tags", "description"], rows)
    return EXIT_OK


def _manual(spec: EnvSpec) -> tuple[str | None, str | None]:
    """(manual, problem): the env class's own docstring, or why it is unavailable."""
    class_name = spec.entry_point.partition(":")[2]
    try:
        env_cls = load_entry_point(spec.entry_point)
    except (ImportError, AttributeError) as exc:
        return None, f"cannot import {spec.entry_point} ({exc})"
    doc = env_cls.__dict__.get("__doc__")
    if not doc:
        return None, f"{class_name} has no docstring"
    manual = inspect.cleandoc(doc)
    appendix = getattr(env_cls, "manual_appendix", None)
    if callable(appendix):  # what the env can only say at run time (ReasoningGym's tasks)
        try:
            manual = f"{manual}\n\n{appendix()}"
        except ImportError as exc:  # MissingExtra: the manual says how to install it
            manual = f"{manual}\n\n{exc}"
    return manual, None


def run_info(args: argparse.Namespace) -> int:
    env_id = resolve_env_id(args.env_id)
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


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def run_play(args: argparse.Namespace) -> int:
    env_id = resolve_env_id(args.env_id)
    env = make_text_env(env_id, env_kwargs(args))
    task_seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**31)
    total, turns = 0.0, 0
    terminated = truncated = False
    try:
        obs, info = env.reset(seed=task_seed)
        difficulty = getattr(env.unwrapped, "difficulty", None)
        header = f"{env_id}  seed {task_seed}"
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
        print(f"Interrupted after {_plural(turns, 'turn')}: return {total:+g}")
        return EXIT_INTERRUPTED
    finally:
        env.close()
    success = bool(info.get("success", False))
    if terminated:
        ending = "Episode over"
    elif truncated:
        ending = "Episode over (turn limit reached)"
    else:
        ending = f"Stopped after {_plural(turns, 'turn')}"
    print(f"{ending}: return {total:+g}, success {'yes' if success else 'no'}, turns {turns}")
    return EXIT_OK
