"""Progress of a file being submitted: a rich bar on a terminal, a plain line every few seconds otherwise
(CI logs, pipes), nothing at all for a file read in less time than that."""

import time
from collections.abc import Iterator
from contextlib import contextmanager

from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeElapsedColumn

from app.cli.common import err_console
from app.publisher.commands import IngestProgress, OnProgress

PLAIN_EVERY_SECONDS = 5.0


@contextmanager
def ingest_progress(name: str) -> Iterator[OnProgress]:
    if not err_console.is_terminal:
        yield _PlainLines(name)
        return
    columns = (
        # The file's name is the task's description: a column's text is a format string, and markup by default.
        TextColumn("reading {task.description}", markup=False),
        BarColumn(),
        DownloadColumn(),
        TextColumn("{task.fields[rows]} rows", markup=False),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=err_console, transient=True) as bar:
        task = bar.add_task(name, total=None, rows=0)

        def update(p: IngestProgress) -> None:
            bar.update(task, completed=p.bytes_read, total=p.total_bytes, rows=p.rows)

        yield update


class _PlainLines:
    def __init__(self, name: str) -> None:
        self._name = name
        self._last = time.monotonic()

    def __call__(self, p: IngestProgress) -> None:
        now = time.monotonic()
        if now - self._last < PLAIN_EVERY_SECONDS:
            return
        self._last = now
        share = f" ({100 * p.bytes_read // p.total_bytes}%)" if p.total_bytes else ""
        err_console.print(f"{self._name}: {p.rows} rows read{share}", highlight=False)
