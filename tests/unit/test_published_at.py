"""The publish stamp a latency is measured from: a finite number of epoch milliseconds, or no stamp at all."""

import pytest

from app.messaging import headers


def test_a_stamp_in_milliseconds_is_read_in_seconds() -> None:
    assert headers.published_at({headers.PUBLISHED_AT: 1_764_300_000_250}) == 1_764_300_000.25


@pytest.mark.parametrize(
    "stamp",
    [float("nan"), float("inf"), float("-inf"), True, "1764300000000", None],
    ids=["nan", "inf", "minus-inf", "bool", "text", "none"],
)
def test_what_is_no_time_is_no_stamp(stamp: object) -> None:
    assert headers.published_at({headers.PUBLISHED_AT: stamp}) is None
    assert headers.published_at({}) is None
