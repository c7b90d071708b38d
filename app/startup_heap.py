"""A long-running process's start-up objects, kept out of the garbage collector's way.

What a service builds before its first unit of work (modules, pydantic's schemas, SQLAlchemy's metadata, the
metrics registry: most of its heap) lives as long as the process. CPython's full collection walks all of it
each time one runs, and under load the consumer ran one every few seconds at about 80 ms each: 15% of its CPU
a payment (docs/benchmarks.md, "Consumer"). `gc.freeze()` moves every object that exists now into a
generation no collection visits. Objects made later are collected as before; a frozen object whose last
reference goes is still freed at once (reference counting); only a cycle among frozen objects would stay,
and start-up objects live as long as the process anyway.
"""

import gc


def freeze_startup_heap() -> int:
    """Collect start-up garbage first (it would never be collected once frozen), then freeze the rest; returns
    how many objects are frozen."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()
