"""The brake on guessing: failed authentications (a wrong, unknown or malformed API key on a request, a
console login with one) are counted per source address and per API key id, each in a token bucket of
failures. Past a bucket's burst a failure is refused: answered 429 with Retry-After (when a failure would
be allowed again) after a short delay, instead of 401.

The brake decides only how a failure is answered. A presented key is always checked, and a right one is
let in whatever the counters say: no one's failures, from any address or naming any key, lock a key's
owner out. A key's secret is 256 random bits, so guessing it is hopeless however fast; the brake bounds
how fast anyone is told so (and how much a guesser costs: answers held, then refused), makes guessing
visible (counted in /metrics, logged with the key id, never the secret) and slows a script that is using a
wrong or revoked key.

A source is the connection's peer address (an IPv6 address counts as its /64, which one host usually
holds whole); behind a proxy it is the proxy's. A key is its id, the public part of `rk_<key_id>_<secret>`,
counted whether or not a key has that id: the answers must not tell an existing key from a made-up or
revoked one (docs/admin-api.md), so its bucket cannot depend on the table. Memory is bounded: at most
`tracked` buckets of each kind, the least recently failing forgotten first (a forgotten bucket starts full
again), and a key id is counted only in its own form (12 hex digits), so no bucket's name is long.
"""

import asyncio
import ipaddress
import math
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from app.settings import Settings

WRONG_KEY = "wrong_key"
THROTTLED_SOURCE = "throttled_source"
THROTTLED_KEY = "throttled_key"
# What a refusal says held it, for the caller.
REFUSALS = {THROTTLED_SOURCE: "from this address", THROTTLED_KEY: "with this key id"}
MAX_HELD = 100  # refusals held back at once; past that they are answered at once, so holding costs little


@dataclass(slots=True)
class _Bucket:
    tokens: float
    stamp: float


class FailureBuckets:
    """Token buckets by name: `burst` failures at once, one more every `refill_seconds`."""

    def __init__(self, burst: int, refill_seconds: float, tracked: int, clock: Callable[[], float]) -> None:
        self._burst = burst
        self._refill = refill_seconds
        self._tracked = tracked
        self._clock = clock
        self._buckets: OrderedDict[str, _Bucket] = OrderedDict()

    def take(self, name: str) -> float:
        """Take a failure's token: 0.0 if there was one, else the seconds until there is."""
        now = self._clock()
        bucket = self._buckets.pop(name, None) or _Bucket(float(self._burst), now)
        bucket.tokens = min(float(self._burst), bucket.tokens + (now - bucket.stamp) / self._refill)
        bucket.stamp = now
        self._buckets[name] = bucket
        while len(self._buckets) > self._tracked:
            self._buckets.popitem(last=False)
        if bucket.tokens >= 1:
            bucket.tokens -= 1
            return 0.0
        return (1 - bucket.tokens) * self._refill

    def __len__(self) -> int:
        return len(self._buckets)


@dataclass(frozen=True, slots=True)
class Verdict:
    """How a failed authentication is answered: `reason` is wrong_key (401), throttled_source or
    throttled_key (429, after `retry_after` seconds a failure is allowed again)."""

    reason: str
    retry_after: int = 0

    @property
    def refused(self) -> bool:
        return self.reason != WRONG_KEY


def source_of(host: str | None) -> str:
    """The bucket of a peer address: an IPv4 address, or an IPv6 address's /64."""
    try:
        address = ipaddress.ip_address(host or "")
    except ValueError:
        return host or "unknown"
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, 64), strict=False))
    return str(address)


class AuthBrake:
    def __init__(
        self,
        settings: Settings,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        tracked = settings.admin_auth_tracked
        self.sources = FailureBuckets(
            settings.admin_auth_source_failures, settings.admin_auth_source_refill_seconds, tracked, clock
        )
        self.keys = FailureBuckets(
            settings.admin_auth_key_failures, settings.admin_auth_key_refill_seconds, tracked, clock
        )
        self._delay = settings.admin_auth_refusal_delay_seconds
        self._sleep = sleep
        self._held = 0

    def failed(self, host: str | None, key_id: str | None) -> Verdict:
        """Count a failure from `host` with a key naming `key_id` (None: a key of no key's form), and say
        how it is answered."""
        source_wait = self.sources.take(source_of(host))
        key_wait = self.keys.take(key_id) if key_id is not None else 0.0
        if key_wait:
            return Verdict(THROTTLED_KEY, _seconds(max(key_wait, source_wait)))
        if source_wait:
            return Verdict(THROTTLED_SOURCE, _seconds(source_wait))
        return Verdict(WRONG_KEY)

    async def hold(self) -> None:
        """Hold a refusal back a moment before it is sent (at most MAX_HELD at once)."""
        if self._held >= MAX_HELD or not self._delay:
            return
        self._held += 1
        try:
            await self._sleep(self._delay)
        finally:
            self._held -= 1


def _seconds(wait: float) -> int:
    return max(1, math.ceil(wait))
