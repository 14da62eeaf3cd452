"""What a trainer shows while it runs, and its closing summary (rich)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

__all__ = ["TrainProgress", "print_summary"]


class TrainProgress:
    """A progress bar over the steps with the last step's success, return and
    generation speed beside it (or, for the format warm-up, ``label="warm-up"``,
    its loss). Disabled, it prints nothing."""

    def __init__(
        self, total: int, start: int = 0, *, enabled: bool = True, label: str = "step"
    ) -> None:
        self._progress = Progress(
            TextColumn(f"[bold]{label}"),
            MofNCompleteColumn(),
            BarColumn(),
            TextColumn("{task.fields[stats]}"),
            TimeRemainingColumn(),
            disable=not enabled,
            console=Console(stderr=True),
        )
        self._task = self._progress.add_task("train", total=total, completed=start, stats="")

    def update(self, done: int, metrics: Mapping[str, float]) -> None:
        if "warmup/loss" in metrics:
            self._progress.update(
                self._task, completed=done, stats=f"loss {metrics['warmup/loss']:.3f}"
            )
            return
        stats = (
            f"success {metrics.get('charts/success_rate', 0.0):.2f}  "
            f"return {metrics.get('charts/episodic_return', 0.0):+.3f}  "
            f"{metrics.get('rollout/tokens_per_s', 0.0):,.0f} tok/s"
        )
        if "eval/success_rate" in metrics:
            stats += f"  eval {metrics['eval/success_rate']:.2f}"
        self.advance(done, stats)

    def advance(self, done: int, stats: str) -> None:
        """Show ``done`` steps finished, with ``stats`` beside the bar."""
        self._progress.update(self._task, completed=done, stats=stats)

    def __enter__(self) -> TrainProgress:
        self._progress.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._progress.stop()


def print_summary(name: str, summary: Mapping[str, Any], console: Console | None = None) -> None:
    """The run's closing table: final figures and where its files are."""
    table = Table(title=f"{name} run", show_header=False)
    table.add_column(style="bold")
    table.add_column()
    for key, value in summary.items():
        if isinstance(value, float):
            value = f"{value:.3f}"
        elif isinstance(value, list):
            value = "\n".join(map(str, value)) or "-"
        table.add_row(key.replace("_", " "), str(value))
    (console or Console()).print(table)
