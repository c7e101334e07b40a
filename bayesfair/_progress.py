"""A progress bar for long resampling loops, through rich (PyMC's own progress bars; a
PyMC dependency), shown in a terminal and in a notebook alike.  In a terminal it is drawn
on standard error, so that a command's standard output holds only its results (the
``bayesfair audit`` table)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from ._validation import check_flag


@contextmanager
def progress_bar(
    total: int, description: str, progressbar: bool
) -> Iterator[Callable[[int], None] | None]:
    """A bar of ``total`` steps: yields ``advance(steps)``, or None when ``progressbar`` is
    False (the caller then reports nothing)."""
    if not check_flag(progressbar, "progressbar"):
        yield None
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=Console(stderr=True)) as bar:
        task = bar.add_task(description, total=total)
        yield lambda steps: bar.advance(task, steps)
