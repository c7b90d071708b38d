"""Backoff with jitter and one log line per change of state, for loops that retry a dependency."""

import logging

import pytest

from app.observability.outage import Outage


class Clock:
    now = 100.0

    def __call__(self) -> float:
        return self.now


def test_waits_double_with_jitter_up_to_the_cap_and_the_log_says_only_what_changed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = Clock()
    ranges: list[tuple[float, float]] = []

    def jitter(low: float, high: float) -> float:
        ranges.append((low, high))
        return high

    outage = Outage("relay cycle", logging.getLogger("test.outage"), base=0.5, cap=10.0, jitter=jitter, clock=clock)
    caplog.set_level(logging.DEBUG, "test.outage")
    waits = []
    for _ in range(100):  # a long outage
        waits.append(outage.failed(ConnectionError("connection refused")))
        clock.now += waits[-1]

    assert waits[:7] == [0.5, 1.0, 2.0, 4.0, 8.0, 10.0, 10.0]
    assert ranges[:3] == [(0.25, 0.5), (0.5, 1.0), (1.0, 2.0)]  # between half and all of the ceiling
    assert set(waits[5:]) == {10.0}
    outage.worked()
    outage.worked()

    lines = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert lines == [
        ("ERROR", "relay cycle failed: ConnectionError: connection refused; retrying, backing off to every 10s"),
        (
            "WARNING",
            "relay cycle still failing after 6 tries in 16s (ConnectionError: connection refused); "
            "retrying every 10s or so",
        ),
        ("WARNING", "relay cycle works again after 965.5s (100 failed tries)"),
    ]
    # One traceback per outage, not per try. (The record's exc_info may already be text: remit's own masking
    # filter turns it into exc_text when an earlier test in this process configured logging.)
    assert [bool(r.exc_info or r.exc_text) for r in caplog.records] == [True, False, False]


def test_a_new_outage_starts_again_from_the_shortest_wait(caplog: pytest.LogCaptureFixture) -> None:
    outage = Outage("archive", logging.getLogger("test.outage"), base=1.0, cap=8.0, jitter=lambda low, high: high)
    assert [outage.failed(OSError()) for _ in range(5)] == [1.0, 2.0, 4.0, 8.0, 8.0]
    outage.worked()
    assert outage.failed(OSError("again")) == 1.0
    errors = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert errors == [
        "archive failed: OSError; retrying, backing off to every 8s",
        "archive failed: OSError: again; retrying, backing off to every 8s",
    ]
