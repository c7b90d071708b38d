"""The brake on guessing keys (app/admin/brake.py), on a fake clock: each source and each key id has a
bucket of failures, `burst` at once and one more every `refill` seconds; past it a failure is refused with
when to try again. Limits are written out: 20 per source, 10 per key id, 6 s and 30 s."""

import asyncio

import pytest

from app.admin.api_keys import key_id_of
from app.admin.brake import (
    MAX_HELD,
    THROTTLED_KEY,
    THROTTLED_SOURCE,
    WRONG_KEY,
    AuthBrake,
    FailureBuckets,
    source_of,
)
from app.settings import Settings


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def brake(clock: Clock) -> AuthBrake:
    return AuthBrake(Settings(), clock=clock)


def test_the_defaults_are_20_per_source_and_10_per_key() -> None:
    defaults = Settings()
    assert (defaults.admin_auth_source_failures, defaults.admin_auth_source_refill_seconds) == (20, 6.0)
    assert (defaults.admin_auth_key_failures, defaults.admin_auth_key_refill_seconds) == (10, 30.0)
    assert (defaults.admin_auth_refusal_delay_seconds, defaults.admin_auth_tracked) == (1.0, 10_000)
    assert (defaults.admin_max_request_bytes, defaults.admin_max_upload_bytes) == (65_536, 20_971_520)


def test_a_bucket_allows_its_burst_then_one_per_refill() -> None:
    clock = Clock()
    buckets = FailureBuckets(burst=3, refill_seconds=10, tracked=100, clock=clock)
    assert [buckets.take("a") for _ in range(3)] == [0.0, 0.0, 0.0]  # at the burst
    assert buckets.take("a") == pytest.approx(10.0)  # just above: a whole refill to wait
    clock.now += 4
    assert buckets.take("a") == pytest.approx(6.0)  # refused, and a refused failure takes nothing
    clock.now += 5.9
    assert buckets.take("a") == pytest.approx(0.1)  # just below the refill
    clock.now += 0.1
    assert buckets.take("a") == 0.0  # the refill: one more
    assert buckets.take("b") == 0.0  # another name has its own


def test_a_bucket_refills_to_its_burst_and_no_further() -> None:
    clock = Clock()
    buckets = FailureBuckets(burst=2, refill_seconds=1, tracked=100, clock=clock)
    buckets.take("a")
    clock.now += 3600
    assert [buckets.take("a") > 0 for _ in range(3)] == [False, False, True]


def test_at_most_tracked_buckets_are_kept_the_least_recently_failing_go_first() -> None:
    clock = Clock()
    buckets = FailureBuckets(burst=1, refill_seconds=60, tracked=2, clock=clock)
    buckets.take("old")
    buckets.take("kept")
    buckets.take("old")  # fails again: now the most recent
    buckets.take("new")  # one too many: "kept" is forgotten
    assert len(buckets) == 2
    assert buckets.take("old") > 0
    assert buckets.take("kept") == 0.0  # forgotten, so it starts full again


@pytest.mark.parametrize(
    ("host", "source"),
    [
        ("203.0.113.7", "203.0.113.7"),
        ("2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"),
        ("2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:2::/64"),  # the same /64: one host's addresses
        ("2001:db8:1:3::1", "2001:db8:1:3::/64"),
        ("::ffff:203.0.113.7", "203.0.113.7"),  # an IPv4 client on a dual-stack socket
        ("testclient", "testclient"),
        (None, "unknown"),
    ],
)
def test_a_source_is_an_ipv4_address_or_an_ipv6_64(host: str | None, source: str) -> None:
    assert source_of(host) == source


def test_failures_are_refused_past_the_keys_burst_and_past_the_sources() -> None:
    clock = Clock()
    guard = brake(clock)
    answers = [guard.failed("198.51.100.1", "0123456789ab").reason for _ in range(11)]
    assert answers == [WRONG_KEY] * 10 + [THROTTLED_KEY]  # 10 at, the 11th above
    assert guard.failed("198.51.100.1", "0123456789ab").retry_after == 30
    other_keys = [guard.failed("198.51.100.1", f"{n:012x}").reason for n in range(9)]
    # the source has failed 12 times: 8 more are allowed, whatever keys they name
    assert other_keys == [WRONG_KEY] * 8 + [THROTTLED_SOURCE]
    assert guard.failed("198.51.100.2", None).reason == WRONG_KEY  # another source is not held


def test_a_source_held_says_when_it_may_fail_again() -> None:
    clock = Clock()
    guard = brake(clock)
    for _ in range(20):
        assert guard.failed("198.51.100.1", None).reason == WRONG_KEY
    refused = guard.failed("198.51.100.1", None)
    assert (refused.reason, refused.retry_after, refused.refused) == (THROTTLED_SOURCE, 6, True)
    clock.now += 6
    assert not guard.failed("198.51.100.1", None).refused


def test_key_ids_are_counted_only_in_their_own_form() -> None:
    assert key_id_of("rk_0123456789ab_secret") == "0123456789ab"
    assert key_id_of("rk_0123456789ab_sec_ret") == "0123456789ab"
    for presented in ("rk_0123456789AB_s", "rk_0123456789abc_s", "rk_" + "a" * 4000 + "_s", "nope", "rk__s"):
        assert key_id_of(presented) is None, presented


async def test_refusals_are_held_a_moment_at_most_max_held_at_once() -> None:
    slept: list[float] = []
    release = asyncio.Event()

    async def sleep(seconds: float) -> None:
        slept.append(seconds)
        await release.wait()

    guard = AuthBrake(Settings(admin_auth_refusal_delay_seconds=1.5), sleep=sleep)
    held = [asyncio.create_task(guard.hold()) for _ in range(MAX_HELD)]
    await asyncio.sleep(0)
    await asyncio.wait_for(guard.hold(), 1)  # one more is answered at once
    assert slept == [1.5] * MAX_HELD
    release.set()
    await asyncio.gather(*held)
    slept.clear()
    await AuthBrake(Settings(admin_auth_refusal_delay_seconds=0), sleep=sleep).hold()
    assert slept == []
