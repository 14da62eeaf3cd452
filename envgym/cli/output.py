"""What the commands print: tables of results on stdout and episode progress
on stderr, both drawn by rich.

On a terminal rich styles and redraws. Anywhere else (a pipe, a file, CI) rich
writes no escape codes; there a table is plain ASCII whose cells are never cut
or wrapped, and progress is a line now and then instead of a redrawn bar.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Sequence
from types import TracebackType
from typing import Any

from rich import box
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Column, Table
from rich.text import Text

# The header rule of the terminal's SIMPLE_HEAD box in ASCII, with a gap between
# columns, so piped tables read like the plain tables scripts already parse.
_ASCII_HEAD = box.Box("    \n    \n -  \n    \n    \n    \n    \n    \n", ascii=True)

# Wide enough that no line is wrapped or cut in a file or pipe.
_UNLIMITED_WIDTH = 1_000_000


def _console(*, stderr: bool) -> Console:
    """A console on stdout or stderr as they are now (tests swap them), as wide
    as the terminal, or unlimited when the stream is not one."""
    console = Console(stderr=stderr, highlight=False)
    if not console.is_terminal:
        console = Console(stderr=stderr, highlight=False, width=_UNLIMITED_WIDTH)
    return console


def stdout_console() -> Console:
    """The console tables are printed on."""
    return _console(stderr=False)


def print_table(
    headers: Sequence[str],
    rows: Sequence[Sequence[Any]],
    *,
    right: Collection[str] = (),
    console: Console | None = None,
) -> None:
    """Print `rows` under `headers` (on stdout unless `console` is given).

    Columns whose header is in `right` are right-aligned (numbers). On a
    terminal too narrow for the table the widest cells wrap within their
    column; no cell is ever cut.
    """
    console = console if console is not None else stdout_console()
    terminal = console.is_terminal
    table = Table(
        box=box.SIMPLE_HEAD if terminal else _ASCII_HEAD,
        show_edge=False,
        pad_edge=False,
        padding=(0, 1, 0, 0),
        header_style="bold" if terminal else None,
    )
    for header in headers:
        table.add_column(
            Text(header), justify="right" if header in right else "left", overflow="fold"
        )
    for row in rows:
        if len(row) != len(headers):
            raise ValueError(f"every row needs {len(headers)} cells, got {list(row)!r}")
        # Text, not str: a cell such as "[b]" or ":x:" is shown as it is, never as markup.
        table.add_row(*(Text(str(cell)) for cell in row))
    with console.capture() as captured:
        console.print(table)
    lines = captured.get().splitlines()
    console.file.write("".join(line.rstrip() + "\n" for line in lines))
    console.file.flush()


class EpisodeProgress:
    """Episodes done, on stderr, as a rich progress bar.

    On a terminal the bar is redrawn live. Elsewhere (a log file, a pipe, CI)
    the same line is printed when another tenth is done and at least
    `log_every_s` seconds have passed, and once at the end, so logs stay short.
    Nothing is shown before the first `update`, so a run refused before it
    starts prints only its error. Use it as a context manager; `update` fits
    `evaluate(progress=...)`.
    """

    def __init__(
        self,
        total: int,
        description: str,
        *,
        console: Console | None = None,
        log_every_s: float = 5.0,
    ) -> None:
        self.console = console if console is not None else _console(stderr=True)
        self.interactive = self.console.is_terminal and not self.console.is_dumb_terminal
        self.log_every_s = log_every_s
        # On a narrow terminal the description and the bar give up room (the
        # description wraps); the counts and times keep theirs.
        fixed = Column(no_wrap=True)
        self._progress = Progress(
            TextColumn("{task.description}", markup=False, table_column=Column(overflow="fold")),
            BarColumn(),
            MofNCompleteColumn(table_column=fixed),
            TextColumn("episodes,", table_column=fixed),
            TimeElapsedColumn(table_column=fixed),
            TextColumn("elapsed,", table_column=fixed),
            TimeRemainingColumn(table_column=fixed),
            TextColumn("left", table_column=fixed),
            console=self.console,
            auto_refresh=self.interactive,
        )
        self._task = self._progress.add_task(description, total=max(int(total), 1))
        self._shown = False
        self._logged_tenth = 0
        self._logged_at = time.monotonic()

    def __enter__(self) -> EpisodeProgress:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def total(self) -> int:
        """Episodes in all."""
        return int(self._progress.tasks[0].total or 1)

    def describe(self, description: str) -> None:
        """Change the text in front of the bar (the run now going)."""
        self._progress.update(self._task, description=description)

    def update(self, done: int, total: int | None = None) -> None:
        """Show `done` episodes of `total` (default: the total given at construction)."""
        if total is not None:
            self._progress.update(self._task, total=max(int(total), 1))
        done = min(int(done), self.total)
        self._progress.update(self._task, completed=done)
        if self.interactive:
            if not self._shown:
                self._progress.start()  # rich redraws it ten times a second from here on
                self._shown = True
            return
        self._shown = True
        now = time.monotonic()
        tenth = done * 10 // self.total
        due = tenth > self._logged_tenth and now - self._logged_at >= self.log_every_s
        if due and done < self.total:
            self._logged_tenth, self._logged_at = tenth, now
            self._print_line()

    def close(self) -> None:
        """Leave the final state on screen (or in the log), once."""
        if not self._shown:
            return
        self._shown = False
        if self.interactive:
            self._progress.stop()
        else:
            self._print_line()

    def _print_line(self) -> None:
        self.console.print(self._progress.get_renderable())
