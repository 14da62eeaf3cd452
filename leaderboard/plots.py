"""Interval plots drawn as inline SVG for the leaderboard's pages.

`interval_plot` draws one point per entry with its 95% interval as a vertical
bar, axis labels and ticks: plain SVG elements a browser shows, a printer
prints and a test can count (``circle.point``, ``line.interval``), with no
plotting library and no script. This module places them; the markup is the
template ``templates/plot.svg`` (autoescaped, like every page).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from envgym.templating import render_template

__all__ = ["PlotPoint", "interval_plot", "nice_ticks"]

_WIDTH = 720
_HEIGHT = 320
_LEFT, _RIGHT, _TOP, _BOTTOM = 64, 16, 16, 96
_MAX_LABEL = 22


@dataclass(frozen=True)
class PlotPoint:
    """One entry on a plot: its value and 95% interval (None when unknown)."""

    entry_id: str
    label: str
    value: float
    low: float | None = None
    high: float | None = None


def _finite(x: float | None) -> bool:
    return x is not None and math.isfinite(x)


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values covering ``[low, high]`` (steps of 1, 2 or 5 times a power of ten)."""
    if not (_finite(low) and _finite(high)) or high <= low:
        centre = low if _finite(low) else 0.0
        low, high = centre - 1.0, centre + 1.0
    raw = (high - low) / max(count - 1, 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.floor(low / step) * step
    ticks = []
    value = first
    while value <= high + step * 1e-9:
        ticks.append(round(value, 12))
        value += step
    if ticks[-1] < high:
        ticks.append(round(value, 12))
    return ticks


def _fmt(value: float, percent: bool) -> str:
    if percent:
        return f"{value:.0%}"
    return f"{value:g}" if abs(value) >= 1e-3 or value == 0 else f"{value:.1e}"


def _short(label: str) -> str:
    return label if len(label) <= _MAX_LABEL else label[: _MAX_LABEL - 1] + "\u2026"


def interval_plot(
    plot_id: str,
    points: Sequence[PlotPoint],
    *,
    y_label: str,
    x_label: str = "entry",
    percent: bool = False,
    y_range: tuple[float, float] | None = None,
    title: str = "",
) -> str:
    """An ``<svg id=plot_id>`` with one ``circle.point`` per point and its interval bar.

    The y axis spans `y_range`, or every value and interval bound; `percent`
    labels ticks as percentages. Labels are escaped; each point carries its
    entry id (``data-entry-id``) and a tooltip with its label, value and interval.
    """
    plot_w = _WIDTH - _LEFT - _RIGHT
    plot_h = _HEIGHT - _TOP - _BOTTOM
    if y_range is not None:
        ticks = nice_ticks(*y_range)
        y_min, y_max = y_range
    else:
        bounds = [v for p in points for v in (p.value, p.low, p.high) if _finite(v)]
        ticks = nice_ticks(min(bounds, default=0.0), max(bounds, default=1.0))
        y_min, y_max = ticks[0], ticks[-1]

    def y_of(value: float) -> float:
        clamped = min(max(value, y_min), y_max)
        return _TOP + plot_h * (1 - (clamped - y_min) / (y_max - y_min))

    slot = plot_w / max(len(points), 1)
    shown_ticks = [
        {"y": f"{y_of(t):.1f}", "text_y": f"{y_of(t) + 4:.1f}", "label": _fmt(t, percent)}
        for t in ticks
        if y_min - 1e-12 <= t <= y_max + 1e-12
    ]
    shown_points = []
    for i, point in enumerate(points):
        x = _LEFT + slot * (i + 0.5)
        tip = f"{point.label}: {_fmt(point.value, percent) if _finite(point.value) else '-'}"
        shown: dict[str, Any] = {
            "entry_id": point.entry_id,
            "label": _short(point.label),
            "x": f"{x:.1f}",
            "x_left": f"{x - 5:.1f}",
            "x_right": f"{x + 5:.1f}",
            "y": f"{y_of(point.value):.1f}" if _finite(point.value) else None,
            "interval": _finite(point.low) and _finite(point.high),
        }
        if shown["interval"]:
            shown["y_lo"], shown["y_hi"] = f"{y_of(point.low):.1f}", f"{y_of(point.high):.1f}"  # type: ignore[arg-type]
            tip += f" [{_fmt(point.low, percent)}, {_fmt(point.high, percent)}]"  # type: ignore[arg-type]
        shown["tip"] = tip
        shown_points.append(shown)
    return render_template(
        "envgym.leaderboard",
        "plot.svg",
        plot_id=plot_id,
        title=title or y_label,
        width=_WIDTH,
        height=_HEIGHT,
        left=_LEFT,
        top=_TOP,
        right=_LEFT + plot_w,
        plot_w=plot_w,
        plot_h=plot_h,
        ticks=shown_ticks,
        points=shown_points,
        label_y=_TOP + plot_h + 12,
        centre_x=f"{_LEFT + plot_w / 2:.0f}",
        centre_y=f"{_TOP + plot_h / 2:.0f}",
        x_label=x_label,
        y_label=y_label,
    )
