"""The ``summary`` block of a results file: success rate and mean return with 95% intervals,
and pass^k when each seed ran several trials.

A Student-t interval for the mean return and a Wilson interval for the
success rate, computed with the standard library only. `pass_k` is tau-bench's
pass^k: for a seed run n times with c successes, the chance that k trials
drawn from its n all succeed is C(c, k) / C(n, k); pass^k is its mean over
the seeds, for k = 1 .. n (pass^1 is the success rate).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["mean_ci95", "pass_k", "summarize", "t_critical_95", "trial_counts", "wilson_ci95"]

# Two-sided 95% critical values of Student's t for 1 to 30 degrees of freedom.
_T_975 = (
    12.706205, 4.302653, 3.182446, 2.776445, 2.570582, 2.446912, 2.364624, 2.306004,
    2.262157, 2.228139, 2.200985, 2.178813, 2.160369, 2.144787, 2.131450, 2.119905,
    2.109816, 2.100922, 2.093024, 2.085963, 2.079614, 2.073873, 2.068658, 2.063899,
    2.059539, 2.055529, 2.051831, 2.048407, 2.045230, 2.042272,
)  # fmt: skip


def t_critical_95(df: int) -> float:
    """The two-sided 95% critical value of Student's t with `df` degrees of freedom.

    A table up to 30; beyond it the Cornish-Fisher expansion around the normal
    quantile, which is within 0.001 of the exact value there.
    """
    if df < 1:
        raise ValueError(f"degrees of freedom must be >= 1, got {df}")
    if df <= len(_T_975):
        return _T_975[df - 1]
    z = 1.959964
    return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)


def mean_ci95(values: Sequence[float]) -> tuple[float, float, float]:
    """(mean, low, high): the 95% t interval for the mean of `values`.

    With fewer than two values, or none that differ, the interval is the mean.
    """
    if not values:
        raise ValueError("mean_ci95 needs at least one value")
    mean = statistics.fmean(values)
    if len(values) < 2:
        return mean, mean, mean
    sd = statistics.stdev(values)
    if sd == 0.0 or not math.isfinite(sd):
        return mean, mean, mean
    half = t_critical_95(len(values) - 1) * sd / math.sqrt(len(values))
    return mean, mean - half, mean + half


def wilson_ci95(successes: float, n: int) -> tuple[float, float]:
    """The Wilson score 95% interval for a success rate of `successes` out of `n`.

    `successes` may be fractional: over seeds run several trials each, it is
    the sum of the seeds' success rates, and `n` the number of seeds.
    """
    if n < 1:
        raise ValueError("wilson_ci95 needs n >= 1")
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be between 0 and n={n}, got {successes}")
    z = statistics.NormalDist().inv_cdf(0.975)
    p = successes / n
    denom = 1.0 + z * z / n
    center = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    # At 0 or n successes the bound is exactly 0 or 1; rounding would leave 1e-17.
    low = 0.0 if successes == 0 else max(0.0, center - half)
    high = 1.0 if successes == n else min(1.0, center + half)
    return low, high


def trial_counts(episodes: Sequence[Mapping[str, Any]]) -> dict[int, tuple[int, int]]:
    """``{seed: (trials, successes)}`` over `episodes` (each record one trial of its seed)."""
    counts: dict[int, tuple[int, int]] = {}
    for ep in episodes:
        n, c = counts.get(int(ep["seed"]), (0, 0))
        counts[int(ep["seed"])] = (n + 1, c + (1 if ep["success"] else 0))
    return counts


def pass_k(episodes: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """tau-bench's pass^k of `episodes` for k = 1 .. n, as ``{"1": ..., "n": ...}``.

    Every seed must have run the same number n of trials (its records);
    pass^k is the mean over seeds of C(c, k) / C(n, k), c being the seed's
    successes: the chance that k of its trials, drawn without replacement,
    all succeed. pass^1 is the success rate; pass^k never grows with k.
    """
    counts = trial_counts(episodes)
    if not counts:
        raise ValueError("pass_k needs at least one episode")
    sizes = {n for n, _ in counts.values()}
    if len(sizes) != 1:
        raise ValueError(
            f"pass_k needs the same number of trials for every seed, got {sorted(sizes)}"
        )
    n = sizes.pop()
    return {
        str(k): statistics.fmean(math.comb(c, k) / math.comb(n, k) for _, c in counts.values())
        for k in range(1, n + 1)
    }


def summarize(episodes: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The ``summary`` block of a results file for these episode records.

    Where each seed ran more than once (records with ``trial``), it also
    holds ``pass_k`` (`pass_k`), and the intervals are over seeds: the trials
    of one seed are not independent draws, so each seed counts once, with its
    mean return and its success rate (more trials narrow them only as far as
    they pin each seed down). The point figures are over every episode.
    """
    if not episodes:
        raise ValueError("summarize needs at least one episode")
    returns = [float(ep["return"]) for ep in episodes]
    successes = sum(1 for ep in episodes if ep["success"])
    n = len(episodes)
    trials = any("trial" in ep for ep in episodes)
    if trials:
        by_seed: dict[int, list[Mapping[str, Any]]] = {}
        for ep in episodes:
            by_seed.setdefault(int(ep["seed"]), []).append(ep)
        seed_returns = [statistics.fmean(float(e["return"]) for e in g) for g in by_seed.values()]
        seed_rates = [sum(1 for e in g if e["success"]) / len(g) for g in by_seed.values()]
        _, low, high = mean_ci95(seed_returns)
        mean = statistics.fmean(returns)
        s_low, s_high = wilson_ci95(min(math.fsum(seed_rates), len(by_seed)), len(by_seed))
    else:
        mean, low, high = mean_ci95(returns)
        s_low, s_high = wilson_ci95(successes, n)
    summary: dict[str, Any] = {
        "episodes": n,
        "success_rate": successes / n,
        "mean_return": mean,
        "ci95": [low, high],
        "success_ci95": [s_low, s_high],
        "mean_turns": statistics.fmean(int(ep["turns"]) for ep in episodes),
    }
    if trials:
        summary["pass_k"] = pass_k(episodes)
    return summary
