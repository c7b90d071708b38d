"""Pause the cyclic garbage collector while a bank file streams into a batch (app/publisher/accept.py).

A chunk is some 250,000 short-lived objects, none in a reference cycle (reference counting frees them once
the chunk is written), yet every 700 allocations the collector walks the young ones and, as they survive,
the older generations too: 15-20% of the read-and-check loop's time on this machine when it ran, and still
about a sixth of the ingest process's CPU when it was paused only while a chunk was checked (it then walked
the chunks alive in the gaps). So the pause lasts the file; cycles made meanwhile elsewhere in the process
are collected after it. Pauses nest (concurrent uploads, threads), and the collector is enabled again only
by the last one, and only if it was enabled before.
"""

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_holders = 0
_was_enabled = False


@contextmanager
def gc_paused() -> Iterator[None]:
    global _holders, _was_enabled
    with _lock:
        if _holders == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _holders += 1
    try:
        yield
    finally:
        with _lock:
            _holders -= 1
            if _holders == 0 and _was_enabled:
                gc.enable()
