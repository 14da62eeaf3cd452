"""What one step costs for a hostile reply at the reply bound, per env.

Every env reads replies of up to `envgym.text.ACTION_MAX_LENGTH` characters
(512 Ki) and its parsers are linear, so a reply at the bound should cost
milliseconds. This steps each registered env once with each of a set of
replies built to trip a parser that rescans the text (an opening tag repeated
with no closing one, nested braces, commands without their bracket, ...),
each exactly at the bound, and prints the slowest per env; then the same at
1/16 of the bound, whose ratio to the full size shows linear growth (about
16x) or worse (about 256x for a quadratic parser). Code runs go to the
sandbox (``ENVGYM_SANDBOX``), so the Code and PythonMath rows include one job.

    python benchmarks/reply_bound.py [--ids envgym/Shop-v0 ...]
"""

from __future__ import annotations

import argparse
import time
import warnings

import gymnasium as gym

import envgym
from envgym.cli.output import print_table, stdout_console
from envgym.text import ACTION_MAX_LENGTH

#: Patterns repeated to the size, and (prefix, pattern, suffix) wrapped ones.
REPEATED = (
    "x",
    "<answer>",
    "</answer>",
    "<think>",
    "\\boxed{",
    "{",
    "[",
    "<",
    " \n",
    "```\n",
    "<python>x",
    "<search>q",
    "<information>",
    "<tool_call>{",
    '<tool_call>{"name": ',
    "<answer>1</answer>",
    "search[",
    "click[",
    "offer: give ",
    "Up || ",
)
WRAPPED = (
    ("<answer>", "```py\nx", "</answer>"),
    ("<answer>", "click[x", "</answer>"),
    ("<answer>put ", "x in ", "</answer>"),
    ("<python>", "```\n ", "</python>"),
    ("<tool_call>", "[", "</tool_call>"),
)


def replies(size: int) -> dict[str, str]:
    """Each hostile reply, exactly ``size`` characters long."""

    def fill(pattern: str, room: int) -> str:
        return (pattern * (room // len(pattern) + 1))[:room]

    out = {pattern.strip() or repr(pattern): fill(pattern, size) for pattern in REPEATED}
    for prefix, pattern, suffix in WRAPPED:
        out[f"{prefix}{pattern.strip()}...{suffix}"] = (
            prefix + fill(pattern, size - len(prefix) - len(suffix)) + suffix
        )
    return out


def slowest(env: gym.Env, size: int) -> tuple[float, str]:
    """The slowest step's seconds and reply name among `replies` of ``size``."""
    worst = (0.0, "")
    for name, reply in replies(size).items():
        env.reset(seed=0)
        start = time.perf_counter()
        env.step(reply)
        worst = max(worst, (time.perf_counter() - start, name))
    return worst


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ids", nargs="+", help="env ids (default: every registered one)")
    args = parser.parse_args(argv)
    ids = args.ids or [spec.id for spec in envgym.list_envs() if "WebShop" not in spec.id]
    console = stdout_console()
    rows = []
    for env_id in ids:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            env = gym.make(env_id)
            slowest(env, 1024)  # warm-up: starts the sandbox of the envs that use one
            full, name = slowest(env, ACTION_MAX_LENGTH)
            small, _ = slowest(env, ACTION_MAX_LENGTH // 16)
            env.close()
        rows.append(
            [env_id, f"{full * 1000:.1f}", name[:24], f"{small * 1000:.2f}", f"{full / small:.0f}x"]
        )
        if not console.is_terminal:
            print(f"{env_id} done", flush=True)
    console.print(f"\nslowest step for a reply of {ACTION_MAX_LENGTH:,} characters (the bound)")
    headers = ["env", "ms at the bound", "reply", "ms at 1/16", "growth"]
    print_table(headers, rows, right=[headers[1], headers[3], headers[4]], console=console)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
