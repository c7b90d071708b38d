"""The peak resident memory of a process while a test runs, sampled from outside with psutil."""

import asyncio
import contextlib

import psutil


class PeakRss:
    """Samples a process's RSS (children included) until stopped; `peak` is the highest seen, in bytes."""

    def __init__(self, pid: int, every: float = 0.02) -> None:
        self._process = psutil.Process(pid)
        self._every = every
        self.peak = 0
        self._task: asyncio.Task[None] | None = None

    def now(self) -> int:
        processes = [self._process, *self._process.children(recursive=True)]
        return sum(p.memory_info().rss for p in processes)

    async def __aenter__(self) -> "PeakRss":
        self.peak = self.now()
        self._task = asyncio.create_task(self._sample())
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    async def _sample(self) -> None:
        while True:
            with contextlib.suppress(psutil.Error):
                self.peak = max(self.peak, self.now())
            await asyncio.sleep(self._every)
