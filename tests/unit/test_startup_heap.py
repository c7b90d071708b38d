"""The consumer's start-up heap frozen before its first delivery (app/startup_heap.py): what start-up left as
garbage is collected first, and what lives on is out of every later collection's walk."""

import gc
import weakref
from collections.abc import Iterator

import pytest

from app.startup_heap import freeze_startup_heap


class Node:
    def __init__(self) -> None:
        self.other: Node | None = None


@pytest.fixture
def unfrozen() -> Iterator[None]:
    yield
    gc.unfreeze()  # the next test's heap is its own again


@pytest.mark.usefixtures("unfrozen")
def test_start_up_garbage_is_collected_and_what_lives_on_is_left_out_of_collections() -> None:
    garbage, kept = Node(), Node()
    garbage.other, kept.other = garbage, kept  # cycles: only the collector frees them
    gone = weakref.ref(garbage)
    del garbage

    frozen = freeze_startup_heap()

    assert gone() is None, "start-up garbage is collected before the freeze, never frozen"
    assert frozen == gc.get_freeze_count() > 0
    assert not any(o is kept for o in gc.get_objects()), "a frozen object is in no generation a collection walks"
