"""What checking one final answer costs: generated problems' exact reader against
loaded problems' math-verify check.

Generated PythonMath problems read an answer with a few regular expressions
(`answers.read_answer`); loaded ones (``problems=``) send it to a math-verify
worker process (`latex_answers.check_latex_answer`). This times, in interleaved
rounds (median of each), per answer: the exact reader, a math-verify check the
worker has not seen (a new number each time, so the per-process cache misses),
and one it has (a cache hit), for a few kinds of gold answer; and the worker's
start (sympy and math-verify imported). Ratios are to the exact reader, measured
in the same run: the machine's load moves the absolute times.

    python benchmarks/math_answers.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import time

from envgym.cli.output import print_table
from envgym.envs.python_math.answers import read_answer
from envgym.envs.python_math.latex_answers import _CHECKER, check_latex_answer

#: (kind, gold, a right answer written differently, a template for a fresh wrong one).
CASES = [
    ("integer", "72", "72.0", "{n}"),
    ("fraction", "\\frac{5}{6}", "5/6", "\\frac{{{n}}}{{7}}"),
    ("radical", "\\frac{\\sqrt{3}}{2}", "\\frac{1}{2}\\sqrt{3}", "{n}\\sqrt{{3}}"),
    ("interval", "[2, 5)", "[2,5)", "[2, {n})"),
    ("polynomial", "x^2+2x+1", "1+2x+x^2", "x^2+{n}x+1"),
]
_fresh = itertools.count(1000)


def _time(call, calls: list[tuple]) -> float:
    """Seconds per ``call(*args)``, over the argument tuples of `calls`."""
    start = time.perf_counter()
    for args in calls:
        call(*args)
    return (time.perf_counter() - start) / len(calls)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (median kept)")
    args = parser.parse_args()
    start = time.perf_counter()
    check_latex_answer("1", "1", "q")
    started = time.perf_counter() - start
    samples: dict[str, dict[str, list[float]]] = {kind: {} for kind, *_ in CASES}
    for _ in range(args.rounds):
        for kind, gold, right, wrong in CASES:
            times = samples[kind]
            times.setdefault("exact", []).append(_time(read_answer, [("72",)] * 200))
            fresh = [(wrong.format(n=next(_fresh)), gold, "q") for _ in range(3)]
            times.setdefault("fresh", []).append(_time(check_latex_answer, fresh))
            check_latex_answer(right, gold, "q")
            cached = [(right, gold, "q")] * 200
            times.setdefault("cached", []).append(_time(check_latex_answer, cached))
    rows = []
    for kind, times in samples.items():
        exact, fresh, cached = (statistics.median(times[k]) for k in ("exact", "fresh", "cached"))
        rows.append(
            [
                kind,
                f"{exact * 1e6:.1f}",
                f"{fresh * 1e3:.1f}",
                f"{fresh / exact:,.0f}x",
                f"{cached * 1e6:.1f}",
                f"{cached / exact:.1f}x",
            ]
        )
    headers = ["gold", "exact us", "math-verify ms", "ratio", "cached us", "ratio "]
    print_table(headers, rows, right=headers[1:])
    load = os.getloadavg()[0]
    print(f"worker start: {started:.2f} s; load average {load:.2f} on {os.cpu_count()} cores")
    _CHECKER.close()


if __name__ == "__main__":
    main()
