"""Progress of long work: a rich bar on a terminal, plain lines where nobody watches a bar (a pipe, a log
file, CI). `remit dlq replay`, `remit reconcile` and `remit submit` share it.

It writes to stderr, so what a command prints on stdout (its report, its --json) stays clean. A plain line
is printed when a task starts, each time it passes another tenth of its total (every EVERY items when the
total is not known), and when it finishes, with the time it took.
"""

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Protocol

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn

from app.cli.common import err_console

EVERY = 1000  # items between plain lines when the total is not known
TENTHS = 10


class Task(Protocol):
    def advance(self, n: int = 1, *, total: int | None = None) -> None:
        """n more items done; `total` when it becomes known (or changes)."""

    def finish(self, note: str = "") -> None:
        """Done; `note` says what came of it (e.g. how many rows)."""


class Tracker(Protocol):
    def task(self, label: str, total: int | None = None) -> Task: ...


@contextmanager
def progress(console: Console = err_console, enabled: bool = True) -> Iterator[Tracker]:
    """Disabled, its tasks say nothing: for a command whose work is short, or whose caller reads JSON."""
    if not enabled:
        yield _Silent()
        return
    if not console.is_terminal:
        yield _Lines(console)
        return
    columns = (
        SpinnerColumn(),
        TextColumn("{task.description}", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console) as bars:
        yield _Bars(bars)


class _Silent:
    def task(self, label: str, total: int | None = None) -> Task:
        return self

    def advance(self, n: int = 1, *, total: int | None = None) -> None:
        pass

    def finish(self, note: str = "") -> None:
        pass


class _Bars:
    def __init__(self, bars: Progress) -> None:
        self._bars = bars

    def task(self, label: str, total: int | None = None) -> Task:
        return _BarTask(self._bars, self._bars.add_task(label, total=total), label)


class _BarTask:
    def __init__(self, bars: Progress, task_id: TaskID, label: str) -> None:
        self._bars, self._id, self._label = bars, task_id, label

    def advance(self, n: int = 1, *, total: int | None = None) -> None:
        if total is not None:
            self._bars.update(self._id, total=total)
        self._bars.update(self._id, advance=n)

    def finish(self, note: str = "") -> None:
        task = self._bars.tasks[self._id]
        done = task.total if task.total is not None else max(task.completed, 1)
        label = f"{self._label} ({note})" if note else self._label
        self._bars.update(self._id, total=done, completed=done, description=label)


class _Lines:
    def __init__(self, console: Console) -> None:
        self._console = console

    def _write(self, line: str) -> None:
        self._console.print(line, markup=False, highlight=False, soft_wrap=True)

    def task(self, label: str, total: int | None = None) -> Task:
        self._write(f"{label} ...")
        return _LineTask(label, total, self._write, time.monotonic)


class _LineTask:
    def __init__(self, label: str, total: int | None, write: Callable[[str], None], clock: Callable[[], float]) -> None:
        self._label, self._total, self._write, self._clock = label, total, write, clock
        self._done = 0
        self._mark = 0  # the last tenth (or multiple of EVERY) a line was printed for
        self._started = clock()

    def advance(self, n: int = 1, *, total: int | None = None) -> None:
        self._total = total if total is not None else self._total
        self._done += n
        mark = self._done * TENTHS // self._total if self._total else self._done // EVERY
        if mark > self._mark:
            self._mark = mark
            self._write(f"{self._label}: {self._count()}")

    def finish(self, note: str = "") -> None:
        counted = f", {self._count()}" if self._done else ""
        noted = f", {note}" if note else ""
        self._write(f"{self._label}: done in {self._clock() - self._started:.1f}s{counted}{noted}")

    def _count(self) -> str:
        if not self._total:
            return f"{self._done:,}"
        return f"{self._done:,}/{self._total:,} ({100 * self._done // self._total}%)"
