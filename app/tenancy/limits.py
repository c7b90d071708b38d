"""Per-tenant limits, checked in the transaction that accepts a batch, so every ingress process (CLI,
HTTP workers) shares them: payments and bytes in flight (the two quotas), and publish rate as two token
buckets (payments per second and bytes per second) kept in PostgreSQL. Over a limit the whole batch is
refused, with when to retry; nothing already accepted is touched. The consumer draws on the same buckets
for what a tenant publishes directly (app/consumer/admission.py), so a tenant has one rate however it publishes.

A bulk file is read as a stream, so its size is known only at its end: `allowance` says before the first
row how many payments the batch may hold at most, and the ingest refuses the file as soon as it passes
that; `admit` checks exactly once the rows are written.

The byte quota (`max_bytes_in_flight`) counts what a tenant has accepted and not yet settled, not what it
sent today: it bounds what one tenant can make remit hold at once (outbox rows, queued messages) while the
others wait behind it, which is the resource a quota protects (reference/001: "maximum stored bytes"); a
tenant whose payments settle may send again at once. Direct publishes are held to it too, by the consumer's
admission: what ingress accepted plus the direct payments in flight, in bytes of bodies."""

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from app.errors import LimitExceeded
from app.storage.ports.rate_buckets import RateBuckets
from app.storage.ports.tenants import InFlight
from app.storage.unit_of_work import UnitOfWork

# A bucket holds a minute of the tenant's rate: a bulk file may arrive at once, but not faster for long.
BURST_SECONDS = 60.0


@dataclass(frozen=True, slots=True)
class BatchLoad:
    payments: int
    bytes: int


async def admit(uow: UnitOfWork, tenant: Any, load: BatchLoad, now: datetime, batch: str) -> None:
    """Admit a batch whose rows are written in this transaction (`load` is all of them; `tenant` is its
    tenants row or record). The tokens are taken first: the bucket row stays locked until commit, so two
    batches of one tenant are counted one after the other, and the second sees the first's payments in flight."""
    await _take_tokens(uow.rate_buckets, tenant, load, now)
    _check_in_flight(tenant, await uow.tenants.in_flight(tenant.tenant_id, now, excluding_batch=batch), load)


@dataclass(frozen=True, slots=True)
class Allowance:
    """The most payments (and bytes) one batch of a tenant may hold, known before its file is read: its room
    under the in-flight limit, and what its publish rate lets arrive at once."""

    tenant: Any  # the tenants row or record
    in_flight: InFlight

    def check(self, load: BatchLoad) -> None:
        """Raise LimitExceeded once a batch holding `load` (so far) could not be admitted at its end."""
        _check_in_flight(self.tenant, self.in_flight, load)
        _check_burst(self.tenant, load)


async def allowance(uow: UnitOfWork, tenant: Any, now: datetime) -> Allowance:
    return Allowance(tenant, await uow.tenants.in_flight(tenant.tenant_id, now))


def _check_in_flight(tenant: Any, in_flight: InFlight, load: BatchLoad) -> None:
    if in_flight.payments + load.payments > tenant.max_in_flight:
        raise LimitExceeded(
            f"tenant {tenant.tenant_id!r} has {in_flight.payments} payments in flight; {load.payments} more would "
            f"pass its limit of {tenant.max_in_flight}. Retry when some have been processed, or split the file.",
            retry_after=30,
        )
    if in_flight.bytes + load.bytes > tenant.max_bytes_in_flight:
        raise LimitExceeded(
            f"tenant {tenant.tenant_id!r} has {in_flight.bytes} bytes of payments in flight; {load.bytes} more would "
            f"pass its quota of {tenant.max_bytes_in_flight} bytes. Retry when some have been processed, or split "
            "the file.",
            retry_after=30,
        )


def _check_burst(tenant: Any, load: BatchLoad) -> None:
    cap, byte_cap = tenant.publish_rate_per_second * BURST_SECONDS, tenant.publish_bytes_per_second * BURST_SECONDS
    if load.payments > cap or load.bytes > byte_cap:
        raise LimitExceeded(
            f"a batch of {load.payments} payments ({load.bytes} bytes) is larger than tenant {tenant.tenant_id!r} may "
            f"send at once ({int(cap)} payments, {int(byte_cap)} bytes): split the file.",
            retry_after=BURST_SECONDS,
        )


async def _take_tokens(buckets: RateBuckets, tenant: Any, load: BatchLoad, now: datetime) -> None:
    _check_burst(tenant, load)
    rate, byte_rate = tenant.publish_rate_per_second, tenant.publish_bytes_per_second
    bucket = await _refilled(buckets, Rates.of(tenant), now)
    if bucket.tokens < load.payments or bucket.byte_tokens < load.bytes:
        wait = max((load.payments - bucket.tokens) / rate, (load.bytes - bucket.byte_tokens) / byte_rate)
        raise LimitExceeded(
            f"tenant {tenant.tenant_id!r} is over its publish rate ({rate} payments/s, {byte_rate} bytes/s); "
            f"retry in {math.ceil(wait)} s.",
            retry_after=wait,
        )
    await buckets.store(tenant.tenant_id, bucket.tokens - load.payments, bucket.byte_tokens - load.bytes, now)


@dataclass(frozen=True, slots=True)
class Rates:
    tenant_id: str
    payments_per_second: int
    bytes_per_second: int

    @classmethod
    def of(cls, tenant: Any) -> "Rates":
        """From a tenants row, or anything with its rate columns."""
        return cls(tenant.tenant_id, tenant.publish_rate_per_second, tenant.publish_bytes_per_second)


@dataclass(frozen=True, slots=True)
class Bucket:
    tokens: float
    byte_tokens: float

    def take(self, sizes: Sequence[int]) -> tuple[int, "Bucket"]:
        """How many of these publishes fit, in order (a payment token and the body's bytes each), stopping
        at the first that does not; and what is left."""
        tokens, byte_tokens, taken = self.tokens, self.byte_tokens, 0
        for size in sizes:
            if tokens < 1 or byte_tokens < size:
                break
            tokens, byte_tokens, taken = tokens - 1, byte_tokens - size, taken + 1
        return taken, Bucket(tokens, byte_tokens)


async def take_in_order(buckets: RateBuckets, rates: Rates, sizes: Sequence[int], now: datetime) -> int:
    """Take from the tenant's buckets for each publish in order, until one does not fit; return how many
    did. The caller's transaction holds the buckets until it commits."""
    taken, left = (await _refilled(buckets, rates, now)).take(sizes)
    await buckets.store(rates.tenant_id, left.tokens, left.byte_tokens, now)
    return taken


async def _refilled(buckets: RateBuckets, rates: Rates, now: datetime) -> Bucket:
    cap, byte_cap = rates.payments_per_second * BURST_SECONDS, rates.bytes_per_second * BURST_SECONDS
    stored = await buckets.lock(rates.tenant_id, cap, byte_cap, now)
    elapsed = max((now - stored.updated_at).total_seconds(), 0.0)
    return Bucket(
        min(cap, stored.tokens + rates.payments_per_second * elapsed),
        min(byte_cap, stored.byte_tokens + rates.bytes_per_second * elapsed),
    )
