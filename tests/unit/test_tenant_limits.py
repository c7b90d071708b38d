"""A tenant's limits at ingress (app/tenancy/limits.py), in-process on the in-memory unit of work: payments in
flight, the burst a batch may hold and the publish-rate tokens, each at, just below and just above its bound.

The tenant here: at most 10 payments in flight, 2 payments and 1000 bytes a second, so its buckets hold a
minute of that: 120 payments and 60 000 bytes. Every expected limit is written out, never read from the code.
"""

from dataclasses import fields
from datetime import UTC, datetime, timedelta

import pytest

from app.errors import LimitExceeded
from app.storage.ports.tenants import InFlight, Tenant
from app.tenancy.limits import Allowance, BatchLoad, Rates, admit, allowance, take_in_order
from tests.fakes.database import FakeDatabase
from tests.fakes.outbox import accepted
from tests.fakes.rate_buckets import TABLE as BUCKETS
from tests.fakes.unit_of_work import FakeUnitOfWork
from tests.utils.factories import make_message

NOW = datetime(2026, 11, 23, 12, 0, 0, tzinfo=UTC)
THIS_BATCH = "bulk_acme_20261123_batch_0002"


COLUMNS: dict[str, object] = {
    "tenant_id": "acme",
    "name": "Acme",
    "tier": "standard",
    "status": "active",
    "default_ttl_seconds": 86_400,
    "max_retries": 3,
    "max_message_bytes": 65_536,
    "publish_rate_per_second": 2,
    "publish_bytes_per_second": 1000,
    "max_in_flight": 10,
    "max_bytes_in_flight": 10**12,  # no byte quota in the way here
    "dedicated_queue": False,
    "retention_days": None,
    "created_at": NOW,
}


def _tenant(**limits: int) -> Tenant:
    """The tenant `acme` as the tenants table holds it, with the limits above (or these); only the columns
    the table has."""
    values = {**COLUMNS, **limits}
    return Tenant(**{f.name: values[f.name] for f in fields(Tenant) if f.name in values})  # type: ignore[arg-type]


TENANT = _tenant()


def _database(in_flight: int = 0, in_this_batch: int = 0, elsewhere: int = 0) -> FakeDatabase:
    """Payments in flight for the tenant in an earlier batch, in the batch being admitted (its own rows,
    written in the same transaction) and for another tenant."""
    db = FakeDatabase(clock=lambda: NOW)
    for count, tenant, batch in (
        (in_flight, "acme", "bulk_acme_20261123_batch_0001"),
        (in_this_batch, "acme", THIS_BATCH),
        (elsewhere, "other", "bulk_other_20261123_batch_0001"),
    ):
        for _ in range(count):
            accepted(db, make_message(tenant_id=tenant, correlation_id=batch, timestamp_utc=NOW))
    return db


async def _with_bucket(db: FakeDatabase, tokens: float, byte_tokens: float, at: datetime = NOW) -> None:
    async with FakeUnitOfWork(db, "acme") as uow:
        await uow.rate_buckets.store("acme", tokens, byte_tokens, at)
        await uow.commit()


async def _admit(db: FakeDatabase, payments: int, size: int = 100, tenant: Tenant = TENANT) -> None:
    async with FakeUnitOfWork(db, "acme") as uow:
        await admit(uow, tenant, BatchLoad(payments, size), NOW, THIS_BATCH)
        await uow.commit()


def _payments(in_flight: object) -> object:
    """Payments in flight, whether the allowance holds their count or a count with their bytes."""
    return getattr(in_flight, "payments", in_flight)


def _stored(db: FakeDatabase) -> tuple[float, float, datetime]:
    bucket = db.tables[BUCKETS]["acme"].bucket
    return bucket.tokens, bucket.byte_tokens, bucket.updated_at


# ---------------------------------------------------------------- payments in flight


@pytest.mark.parametrize("payments", [2, 3])  # just below, at
async def test_a_batch_up_to_the_in_flight_limit_is_admitted(payments: int) -> None:
    db = _database(in_flight=7, in_this_batch=5, elsewhere=20)  # its own rows and other tenants' do not count
    await _admit(db, payments)
    assert _stored(db) == (120 - payments, 60_000 - 100, NOW)


async def test_one_payment_over_the_in_flight_limit_refuses_the_batch() -> None:
    db = _database(in_flight=7)
    with pytest.raises(LimitExceeded) as refused:
        await _admit(db, 4)
    assert str(refused.value) == (
        "tenant 'acme' has 7 payments in flight; 4 more would pass its limit of 10. "
        "Retry when some have been processed, or split the file."
    )
    assert refused.value.retry_after == 30
    assert db.rows(BUCKETS) == []  # refused: nothing taken


@pytest.mark.parametrize(("payments", "refused"), [(2, False), (3, False), (4, True)])
async def test_the_allowance_before_the_file_is_read_is_the_room_under_the_in_flight_limit(
    payments: int, refused: bool
) -> None:
    db = _database(in_flight=7, elsewhere=20)
    async with FakeUnitOfWork(db, "acme") as uow:
        room = await allowance(uow, TENANT, NOW)
    assert _payments(room.in_flight) == 7
    if refused:
        with pytest.raises(LimitExceeded, match="has 7 payments in flight; 4 more would pass its limit of 10"):
            room.check(BatchLoad(payments, 100))
    else:
        room.check(BatchLoad(payments, 100))


async def test_the_allowance_counts_every_batch_in_flight() -> None:
    """Before the file is read its batch has no rows yet: every payment in flight is another batch's."""
    async with FakeUnitOfWork(_database(in_flight=4, in_this_batch=3), "acme") as uow:
        assert _payments((await allowance(uow, TENANT, NOW)).in_flight) == 7


# ---------------------------------------------------------------- bytes in flight: the byte quota

# A quota of 5 000 bytes with 4 000 bytes of bodies already in flight (8 of its 10 payments): 1 000 more fit.
QUOTA = _tenant(max_bytes_in_flight=5_000)
HOLDING = InFlight(payments=8, bytes=4_000)
OVER_QUOTA = (
    "tenant 'acme' has 4000 bytes of payments in flight; 1001 more would pass its quota of 5000 bytes. "
    "Retry when some have been processed, or split the file."
)


@pytest.mark.parametrize("size", [999, 1_000])  # just below, at
def test_a_batch_up_to_the_byte_quota_is_admitted(size: int) -> None:
    Allowance(QUOTA, HOLDING).check(BatchLoad(1, size))


def test_one_byte_over_the_byte_quota_refuses_the_batch() -> None:
    with pytest.raises(LimitExceeded) as refused:
        Allowance(QUOTA, HOLDING).check(BatchLoad(1, 1_001))
    assert str(refused.value) == OVER_QUOTA
    assert refused.value.retry_after == 30


def test_the_byte_quota_holds_whatever_the_payments_and_the_payments_whatever_the_bytes() -> None:
    # Two payments (10 in flight: at the limit) of 1 000 bytes (at the quota) pass; one more of either does not.
    Allowance(QUOTA, HOLDING).check(BatchLoad(2, 1_000))
    with pytest.raises(LimitExceeded, match="8 payments in flight; 3 more would pass its limit of 10"):
        Allowance(QUOTA, HOLDING).check(BatchLoad(3, 1_000))
    with pytest.raises(LimitExceeded, match="4000 bytes of payments in flight; 1001 more"):
        Allowance(QUOTA, HOLDING).check(BatchLoad(2, 1_001))
    # Bytes already in flight count as well as the batch's own: nothing in flight, 5 001 bytes alone are over.
    with pytest.raises(
        LimitExceeded, match="has 0 bytes of payments in flight; 5001 more would pass its quota of 5000"
    ):
        Allowance(QUOTA, InFlight(payments=0, bytes=0)).check(BatchLoad(1, 5_001))
    Allowance(QUOTA, InFlight(payments=0, bytes=5_000)).check(BatchLoad(1, 0))


@pytest.mark.parametrize(("size", "refused"), [(4_999, False), (5_000, False), (5_001, True)])
async def test_admitting_a_batch_holds_it_to_the_byte_quota(size: int, refused: bool) -> None:
    db = _database(in_flight=7)  # the fake outbox keeps no bodies: its payments weigh nothing
    if refused:
        with pytest.raises(LimitExceeded, match=f"0 bytes of payments in flight; {size} more would pass its quota"):
            await _admit(db, 1, size, tenant=QUOTA)
        assert db.rows(BUCKETS) == []  # refused: no token taken
    else:
        await _admit(db, 1, size, tenant=QUOTA)
        assert _stored(db) == (119, 60_000 - size, NOW)


# ---------------------------------------------------------------- burst: what one batch may hold


@pytest.mark.parametrize(
    ("payments", "size", "refused"),
    [
        (119, 59_999, False),
        (120, 60_000, False),  # at both caps: a minute of the tenant's rate
        (121, 60_000, True),
        (120, 60_001, True),
    ],
)
async def test_a_batch_may_hold_a_minute_of_the_tenants_rate(payments: int, size: int, refused: bool) -> None:
    tenant = _tenant(max_in_flight=1000)
    db = _database()
    if not refused:
        await _admit(db, payments, size, tenant)
        assert _stored(db) == (120 - payments, 60_000 - size, NOW)
        return
    with pytest.raises(LimitExceeded) as over:
        await _admit(db, payments, size, tenant)
    assert str(over.value) == (
        f"a batch of {payments} payments ({size} bytes) is larger than tenant 'acme' may send at once "
        "(120 payments, 60000 bytes): split the file."
    )
    assert over.value.retry_after == 60
    async with FakeUnitOfWork(db, "acme") as uow:  # the allowance refuses it before the file is read, too
        with pytest.raises(LimitExceeded, match=r"may send at once \(120 payments, 60000 bytes\)"):
            (await allowance(uow, tenant, NOW)).check(BatchLoad(payments, size))


# ---------------------------------------------------------------- publish-rate tokens


@pytest.mark.parametrize(("payments", "refused"), [(4, False), (5, False), (6, True)])
async def test_a_batch_takes_one_token_per_payment(payments: int, refused: bool) -> None:
    db = _database()
    await _with_bucket(db, tokens=5, byte_tokens=60_000)
    if refused:
        with pytest.raises(LimitExceeded) as over:
            await _admit(db, payments)
        # one payment short at 2 a second: half a second, rounded up to whole seconds
        assert str(over.value) == "tenant 'acme' is over its publish rate (2 payments/s, 1000 bytes/s); retry in 1 s."
        assert over.value.retry_after == 1
        assert _stored(db) == (5, 60_000, NOW)  # nothing taken
    else:
        await _admit(db, payments)
        assert _stored(db) == (5 - payments, 60_000 - 100, NOW)


@pytest.mark.parametrize(("size", "refused"), [(499, False), (500, False), (501, True)])
async def test_a_batch_takes_its_bytes(size: int, refused: bool) -> None:
    db = _database()
    await _with_bucket(db, tokens=100, byte_tokens=500)
    if refused:
        with pytest.raises(LimitExceeded, match="over its publish rate"):
            await _admit(db, 1, size)
    else:
        await _admit(db, 1, size)
        assert _stored(db) == (99, 500 - size, NOW)


@pytest.mark.parametrize(
    ("tokens", "byte_tokens", "payments", "size", "wait"),
    [
        (0, 60_000, 5, 100, 3),  # 5 payments at 2/s: 2.5 s
        (100, 500, 1, 3500, 3),  # 3000 bytes short at 1000/s: 3 s, the longer of the two waits
        (0, 0, 1, 7000, 7),
    ],
)
async def test_the_refusal_says_when_the_tokens_will_be_there(
    tokens: float, byte_tokens: float, payments: int, size: int, wait: int
) -> None:
    db = _database()
    await _with_bucket(db, tokens, byte_tokens)
    with pytest.raises(LimitExceeded, match=f"retry in {wait} s.") as over:
        await _admit(db, payments, size)
    assert over.value.retry_after == wait


async def test_the_buckets_refill_at_the_tenants_rate() -> None:
    db = _database()
    await _with_bucket(db, tokens=0, byte_tokens=0, at=NOW - timedelta(seconds=5))  # 10 payments, 5000 bytes since
    with pytest.raises(LimitExceeded, match="retry in 1 s"):
        await _admit(db, 11, 100)
    with pytest.raises(LimitExceeded, match="retry in 1 s"):
        await _admit(db, 1, 5001)
    await _admit(db, 10, 5000)
    assert _stored(db) == (0, 0, NOW)


async def test_a_full_bucket_holds_a_minute_and_no_more() -> None:
    db = _database()
    await _with_bucket(db, tokens=0, byte_tokens=0, at=NOW - timedelta(hours=1))
    assert await _take_in_order(db, [400] * 200) == 120  # 120 tokens; 120 * 400 bytes fit in 60 000
    db = _database()
    await _with_bucket(db, tokens=120, byte_tokens=0, at=NOW - timedelta(hours=1))
    assert await _take_in_order(db, [1000] * 100) == 60  # 60 000 bytes


async def test_a_tenant_without_buckets_starts_full() -> None:
    db = _database()
    assert await _take_in_order(db, [500] * 121) == 120
    assert _stored(db) == (0, 0, NOW)


async def test_a_clock_that_went_back_refills_nothing() -> None:
    db = _database()
    await _with_bucket(db, tokens=3, byte_tokens=60_000, at=NOW + timedelta(seconds=10))
    assert await _take_in_order(db, [100] * 5) == 3


async def _take_in_order(db: FakeDatabase, sizes: list[int]) -> int:
    async with FakeUnitOfWork(db, "acme") as uow:
        taken = await take_in_order(uow.rate_buckets, Rates.of(TENANT), sizes, NOW)
        await uow.commit()
    return taken


async def test_direct_publishes_store_what_they_left() -> None:
    db = _database()
    await _with_bucket(db, tokens=3, byte_tokens=1000)
    assert await _take_in_order(db, [300, 300, 300, 300]) == 3
    assert _stored(db) == (0, 100, NOW)


def test_the_rates_are_the_tenants() -> None:
    assert Rates.of(TENANT) == Rates("acme", 2, 1000)
