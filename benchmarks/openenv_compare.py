"""The openenv section of `benchmarks/remote.py`: which servers it starts, and its report.

`openenv_servers` gives the command of each server compared: ``envgym serve``
(declared-fast steps on its event loop), ``envgym serve --calls threads``,
and OpenEnv's own server in its default and async modes
(``benchmarks/openenv_server.py``). `openenv_report` writes the table of
medians over rounds and the verdicts against OpenEnv.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass
class Measured:
    """One server at one session count in one round of the openenv section."""

    server: str
    sessions: int
    steps_per_s: float
    p50: float
    p99: float
    #: the server process's CPU seconds per 1,000 steps, and the client's
    cpu_per_1k: float
    client_cpu_per_1k: float
    errors: int


def openenv_servers(env_id: str, most: int) -> dict[str, list[str]]:
    """The servers the openenv section compares, each the command that starts it."""
    from envgym.remote.launcher import serve_command

    cli = [sys.executable, "-m", "envgym"]
    script = [sys.executable, str(Path(__file__).resolve().parent / "openenv_server.py")]
    limit = ["--port", "0", "--max-sessions", str(most)]
    return {
        "envgym serve": cli + serve_command(env_id, port=0, max_sessions=most),
        "envgym --calls threads": cli
        + serve_command(env_id, port=0, max_sessions=most, calls="threads"),
        "openenv sync": script + ["sync", *limit],
        "openenv async": script + ["async", *limit],
    }


def openenv_report(env_id: str, results: list[Measured]) -> list[str]:
    """The openenv section's table (medians over rounds) and its verdicts."""

    def median(name: str, count: int, field: str) -> float:
        return float(
            np.median(
                [getattr(m, field) for m in results if (m.server, m.sessions) == (name, count)]
            )
        )

    names = list(dict.fromkeys(m.server for m in results))
    counts = sorted({m.sessions for m in results})
    rounds = len(results) // max(len(names) * len(counts), 1)
    lines = [
        f"OpenEnv comparison ({env_id}, TCP, median of {rounds} interleaved rounds):",
        "",
        "| server | sessions | steps/s | p50 ms | p99 ms | server CPU s / 1k steps "
        "| client CPU s / 1k steps | errors |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for count in counts:
        for name in names:
            errors = sum(m.errors for m in results if (m.server, m.sessions) == (name, count))
            lines.append(
                f"| {name} | {count} | {median(name, count, 'steps_per_s'):,.0f} | "
                f"{median(name, count, 'p50'):.2f} | {median(name, count, 'p99'):.2f} | "
                f"{median(name, count, 'cpu_per_1k'):.3f} | "
                f"{median(name, count, 'client_cpu_per_1k'):.3f} | {errors} |"
            )
    lines.append("")
    for count in counts:
        for rival in ("openenv async", "openenv sync"):
            if rival not in names or "envgym serve" not in names:
                continue
            speed = median("envgym serve", count, "steps_per_s") / median(
                rival, count, "steps_per_s"
            )
            p99 = median("envgym serve", count, "p99") / median(rival, count, "p99")
            met = "at or above" if speed >= 1.0 and p99 <= 1.0 else "NOT at or above"
            ours = [m for m in results if (m.server, m.sessions) == ("envgym serve", count)]
            theirs = [m for m in results if (m.server, m.sessions) == (rival, count)]
            rounds_ = ", ".join(
                f"{a.steps_per_s / b.steps_per_s:.2f}" for a, b in zip(ours, theirs, strict=True)
            )
            lines.append(
                f"- {count} sessions: envgym serve {speed:.2f}x {rival}'s steps/s, p99 "
                f"{p99:.2f}x its p99: {met} (steps/s ratio by round: {rounds_})"
            )
    return lines
