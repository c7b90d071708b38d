"""A costly refresh made by one process of a deployment on this host at a time, its result shared through a file.

`faststream run --workers N` starts N consumer processes of one deployment on one host, and each refreshed the
queue gauges itself: the same management API call and, per queue with messages waiting, the same broker peek,
whose CLI costs about 0.45 s of CPU to start (docs/queues.md). All N did it at once when they started, which
is when a backlog waits for them. Now the process that finds the snapshot older than the interval takes the
lock file and refreshes; the others use the snapshot the file holds, or none while the first one is still
being taken (their gauges then wait for the next interval).

The files live in a directory of this user's own (0700); if that directory is not this user's, nothing is
shared and every process refreshes for itself, as before.
"""

import fcntl
import hashlib
import json
import logging
import os
import stat
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

log = logging.getLogger("remit.metrics")

Json = Any  # what json.dumps takes and json.loads gives back


def private_directory(parent: Path | None = None) -> Path | None:
    """`remit-<uid>` under the temporary directory, this user's own and nobody else's; None if it is not."""
    directory = (parent or Path(tempfile.gettempdir())) / f"remit-{os.getuid()}"
    try:
        directory.mkdir(mode=0o700, exist_ok=True)
        info = directory.lstat()
    except OSError:
        return None
    mine = stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o077
    if not mine:
        log.warning("%s is not this user's own directory: each process refreshes its gauges itself", directory)
    return directory if mine else None


class SharedSnapshot:
    def __init__(self, deployment: str, max_age_seconds: float, directory: Path | None) -> None:
        """`deployment` names what the snapshot describes (the broker's vhost and the database): processes of
        another deployment on the same host never read it. No directory: nothing shared."""
        name = f"gauges-{hashlib.sha256(deployment.encode()).hexdigest()[:24]}"
        self._files = None if directory is None else (directory / f"{name}.json", directory / f"{name}.lock")
        self._max_age = max_age_seconds
        self.file_name = f"{name}.json"

    async def get(self, take: Callable[[], Awaitable[Json]]) -> Json | None:
        """A snapshot younger than the interval; else a new one taken by this process (`take`) if no other is
        taking one, else the last one there is (None if there is none yet)."""
        if self._files is None:
            return await take()
        snapshot, lock_file = self._files
        fresh = _read(snapshot, self._max_age)
        if fresh is not None:
            return fresh
        lock = os.open(lock_file, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return _read(snapshot, None)
            fresh = _read(snapshot, self._max_age)  # another process may have finished one just before the lock
            if fresh is not None:
                return fresh
            value = await take()
            _write(snapshot, value)
            return value
        finally:
            os.close(lock)  # and with it the lock


def _read(path: Path, max_age: float | None) -> Json | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd) as file:
        if max_age is not None and time.time() - os.fstat(fd).st_mtime >= max_age:
            return None
        try:
            return json.load(file)
        except ValueError:
            return None


def _write(path: Path, value: Json) -> None:
    partial = path.with_name(f"{path.stem}.{os.getpid()}.tmp")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as file:
        json.dump(value, file)
    os.replace(partial, path)  # a reader sees the old snapshot or the new one, never half of one
