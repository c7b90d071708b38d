"""The group commit: one transaction per tenant and flush, in that tenant's scope; a row the database refuses
fails alone (the share is bisected); a commit that fails as a whole fails retryably; and a failure that cannot
even be recorded leaves the delivery unsettled, for the broker to redeliver."""

from datetime import UTC, datetime

from contracts import PaymentMessage
from tests.fakes.database import FakeDatabase
from tests.fakes.ledger import TABLE as LEDGER
from tests.fakes.ledger import LedgerRow
from tests.unit.consumer.harness import Consumer, add_tenant, relayed, running_consumer
from tests.utils.factories import make_message


def tenant_transactions(consumer: Consumer) -> list[str]:
    """The scope of each unit of work the committer opened (the system scope's are the directory's and the
    failures')."""
    return [uow.tenant_id for uow in consumer.opened if uow.tenant_id is not None]


async def test_a_flush_commits_each_tenants_share_in_its_own_scope(consumer: Consumer, db_tenants: list[str]) -> None:
    first, second = db_tenants
    payments = [make_message(tenant_id=t) for t in (first, second, first, second, first)]

    assert await consumer.deliver(*map(relayed, payments)) == [True] * 5

    assert sorted(tenant_transactions(consumer)) == sorted([first, second])
    assert all(uow.committed for uow in consumer.opened if uow.tenant_id is not None)
    assert len(consumer.ledger(first)) == 3
    assert len(consumer.ledger(second)) == 2


def booked_long_ago(db: FakeDatabase, payment: PaymentMessage) -> None:
    """A ledger row whose idempotency record retention has purged: the ledger's unique key refuses a copy."""
    row = LedgerRow(db.next_id(LEDGER), payment.tenant_id, payment, datetime(2020, 1, 1, tzinfo=UTC))
    db.tables[LEDGER][payment.tenant_id, payment.message_id] = row


async def test_a_refused_row_fails_alone_and_the_others_commit_in_the_same_flush(db: FakeDatabase) -> None:
    tenant = (await add_tenant(db)).tenant_id
    payments = [make_message(tenant_id=tenant) for _ in range(8)]
    booked_long_ago(db, payments[5])
    async with running_consumer(db) as consumer:
        assert await consumer.deliver(*map(relayed, payments)) == [True] * 8

    assert consumer.reasons() == ["invalid"]
    dead = consumer.republisher.dead_lettered[0]
    assert dead.delivery.message_id == str(payments[5].message_id)
    assert "SQLSTATE 23505" in str(dead.headers["remit-error"])
    assert {r.payment.message_id for r in consumer.ledger()} == {p.message_id for p in payments}
    assert consumer.record(payments[5]) is None
    # 8 -> 4 + 4 -> 2 + 2 -> 1 + 1: the whole share, then two halves per level down to the bad row.
    assert len(tenant_transactions(consumer)) == 7


async def test_without_a_refused_row_a_share_is_one_transaction(consumer: Consumer, tenant: str) -> None:
    await consumer.deliver(*(relayed(make_message(tenant_id=tenant)) for _ in range(8)))

    assert tenant_transactions(consumer) == [tenant]


async def test_a_commit_that_fails_as_a_whole_retries_every_payment_of_the_share(db: FakeDatabase) -> None:
    tenant = (await add_tenant(db)).tenant_id
    payments = [make_message(tenant_id=tenant) for _ in range(4)]
    async with running_consumer(db) as consumer:
        db.fail_commits = 1  # the connection is lost at the group's COMMIT
        assert await consumer.deliver(*map(relayed, payments)) == [True] * 4

    assert consumer.ledger() == []
    assert all(consumer.record(p) is None for p in payments)
    assert [(r.payment.message_id, r.payment.retry_count) for r in consumer.republisher.retried] == [
        (p.message_id, 1) for p in payments
    ]
    assert {a.error_type for a in consumer.attempts()} == {"CommitFailed"}
    assert len(tenant_transactions(consumer)) == 1  # not bisected: the data is not at fault


async def test_a_failure_that_cannot_be_recorded_leaves_the_delivery_unsettled(db: FakeDatabase) -> None:
    tenant = (await add_tenant(db)).tenant_id
    payment = make_message(tenant_id=tenant)
    async with running_consumer(db) as consumer:
        await consumer.deliver(relayed(make_message(tenant_id=tenant)))  # the tenant directory has read its copy
        db.fail_commits = 100  # PostgreSQL is down
        assert await consumer.deliver(relayed(payment)) == [False]
        assert consumer.republisher.published == []

        db.fail_commits = 0  # back: the broker redelivers it
        assert await consumer.deliver(relayed(payment)) == [True]

    assert len(consumer.ledger()) == 2
    assert consumer.attempts() == []


async def test_a_failure_the_broker_does_not_confirm_leaves_the_delivery_unsettled(
    consumer: Consumer, tenant: str
) -> None:
    consumer.republisher.fail = True

    assert await consumer.deliver(
        relayed(make_message(tenant_id="t" + "0" * 8)), relayed(make_message(tenant_id=tenant))
    ) == [False, True]

    assert [a.error_type for a in consumer.attempts()] == ["UnknownTenant"]  # recorded first, as always
    assert len(consumer.ledger()) == 1
