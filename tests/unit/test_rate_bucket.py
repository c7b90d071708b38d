"""The token buckets a tenant's publishes draw on (ingress batches and direct publishes alike): each
publish takes one payment token and its body's bytes, in order, and the first that does not fit stops."""

import pytest

from app.tenancy.limits import Bucket


@pytest.mark.parametrize(
    ("tokens", "sizes", "taken"),
    [
        (2.0, [100, 100], 2),  # at: the last token
        (2.9, [100, 100, 100], 2),  # a fraction of a token is not a payment
        (3.0, [100, 100], 2),  # below
        (1.0, [100, 100], 1),  # above
        (0.0, [100], 0),
    ],
)
def test_one_payment_token_per_publish(tokens: float, sizes: list[int], taken: int) -> None:
    assert Bucket(tokens, 1_000_000).take(sizes)[0] == taken


@pytest.mark.parametrize(
    ("byte_tokens", "taken"),
    [(599.0, 0), (600.0, 1), (601.0, 1), (1199.0, 1), (1200.0, 2)],
)
def test_bytes_are_taken_whole(byte_tokens: float, taken: int) -> None:
    assert Bucket(100, byte_tokens).take([600, 600])[0] == taken


def test_the_first_publish_that_does_not_fit_stops_the_rest() -> None:
    taken, left = Bucket(10, 1000).take([400, 700, 100])
    assert taken == 1  # the 100-byte one waits behind the 700-byte one: arrival order is kept
    assert left == Bucket(9, 600)
