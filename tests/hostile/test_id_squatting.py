"""Id squatting: a tenant takes the message_id of another tenant's payment first, hoping it is then
skipped as a duplicate. The idempotency key is (tenant_id, message_id): two tenants, two payments."""

from pathlib import Path
from typing import Any

import pytest
from aio_pika.abc import AbstractChannel
from sqlalchemy import select, update

from app.consumer.committer import Outcome
from app.errors import LimitExceeded
from app.publisher.accept import submit_batch
from app.publisher.commands import SubmitBatch
from app.reporting.batch_summary import batch_summary
from app.settings import Settings
from app.storage.tables import processed_messages, tenants
from app.storage.unit_of_work import UnitOfWorkFactory
from contracts import PaymentMessage
from tests.utils.committer import running_committer
from tests.utils.factories import make_message, make_wire_dict
from tests.utils.services import ServiceEnv, ServiceProcess, eventually
from tests.utils.tenant_users import TenantUsers
from tests.utils.world import fresh_tenant, ledger_rows_for_tenant, outbox_rows, payment_row, write_csv

pytestmark = pytest.mark.integration


async def _booked(uow: UnitOfWorkFactory, tenant: str) -> list[tuple[str, int]]:
    return [(str(r.message_id), r.amount_cents) for r in await ledger_rows_for_tenant(uow, tenant)]


async def _claims(uow: UnitOfWorkFactory, message_id: Any) -> list[str]:
    async with uow() as u:
        query = select(processed_messages.c.tenant_id).where(processed_messages.c.message_id == message_id)
        return sorted((await u.connection.execute(query)).scalars())


async def test_taking_another_tenants_message_id_first_does_not_cancel_its_payment(
    uow_factory: UnitOfWorkFactory,
    settings: Settings,
    channel: AbstractChannel,
    consumer: ServiceProcess,
    tenant_users: TenantUsers,
) -> None:
    attacker, victim = await fresh_tenant(uow_factory), await fresh_tenant(uow_factory)
    squat = make_wire_dict(tenant_id=attacker, amount_cents=101)  # a valid payment of the attacker's own
    real = make_wire_dict(tenant_id=victim, message_id=squat["message_id"], amount_cents=250_000)
    shared = squat["message_id"]

    await tenant_users.publisher(attacker).publish(squat)

    async def attacker_booked() -> bool:
        return await _booked(uow_factory, attacker) == [(shared, 101)]

    await eventually(attacker_booked)
    await tenant_users.publisher(victim).publish(real)

    async def victim_booked() -> bool:
        return await _booked(uow_factory, victim) == [(shared, 250_000)]

    await eventually(victim_booked, timeout=20)
    assert await _booked(uow_factory, attacker) == [(shared, 101)]  # the attacker's own payment, once
    assert await _claims(uow_factory, shared) == sorted([attacker, victim])


async def test_equal_message_ids_of_two_tenants_meeting_in_one_flush_are_two_payments(
    uow_factory: UnitOfWorkFactory,
    settings: Settings,
    channel: AbstractChannel,
    service_env: ServiceEnv,
    logs_dir: Path,
    tenant_users: TenantUsers,
) -> None:
    a, b = await fresh_tenant(uow_factory), await fresh_tenant(uow_factory)
    wire_a = make_wire_dict(tenant_id=a, amount_cents=111)
    wire_b = make_wire_dict(tenant_id=b, message_id=wire_a["message_id"], amount_cents=222)
    # Both wait in the tier queue before the consumer starts, so its first batch holds the two together.
    await tenant_users.publisher(a).publish(wire_a)
    await tenant_users.publisher(b).publish(wire_b)
    consumer = ServiceProcess.consumer(service_env.env(), logs_dir / "consumer.log")
    try:

        async def both_booked() -> bool:
            return len(await _booked(uow_factory, a)) + len(await _booked(uow_factory, b)) == 2

        await eventually(both_booked, timeout=20)
    finally:
        consumer.stop()
    assert await _booked(uow_factory, a) == [(wire_a["message_id"], 111)]
    assert await _booked(uow_factory, b) == [(wire_a["message_id"], 222)]


async def test_the_group_committer_keeps_equal_ids_of_two_tenants_apart_within_one_flush(
    uow_factory: UnitOfWorkFactory, settings: Settings
) -> None:
    """One commit_many call is one flush, whatever the workers' batching: the committer itself decides."""
    a, b = await fresh_tenant(uow_factory), await fresh_tenant(uow_factory)
    pay_a = make_message(tenant_id=a, amount_cents=111)
    pay_b = make_message(tenant_id=b, message_id=pay_a.message_id, amount_cents=222)
    again_a = PaymentMessage.model_validate({**dict(pay_a), "retry_count": 1})  # a redelivered copy of A's
    async with running_committer(settings.database_url) as committer:
        outcomes = await committer.commit_many([pay_a, pay_b, again_a])
        assert outcomes == [Outcome.PROCESSED, Outcome.PROCESSED, Outcome.DUPLICATE]
        assert await committer.was_processed(pay_b)
        third = await fresh_tenant(uow_factory)  # the id is taken twice, but never by this tenant
        assert not await committer.was_processed(make_message(tenant_id=third, message_id=pay_a.message_id))
    assert await _booked(uow_factory, a) == [(str(pay_a.message_id), 111)]
    assert await _booked(uow_factory, b) == [(str(pay_a.message_id), 222)]


async def test_a_payment_naming_another_tenants_batch_and_id_moves_none_of_its_numbers(
    uow_factory: UnitOfWorkFactory, settings: Settings, tmp_path: Path
) -> None:
    """The attacker books a payment of its own under the victim's batch id and message_id: the victim's
    batch must still show it in flight (not processed), and count against the victim's in-flight limit."""
    attacker, victim = await fresh_tenant(uow_factory), await fresh_tenant(uow_factory)
    async with uow_factory() as u:
        await u.connection.execute(update(tenants).where(tenants.c.tenant_id == victim).values(max_in_flight=2))
        await u.commit()
    rows = [payment_row(n) for n in range(2)]
    batch = await submit_batch(SubmitBatch(victim, write_csv(tmp_path / "v.csv", rows)), uow_factory, settings)
    target = (await outbox_rows(uow_factory, batch.correlation_id))[0]
    forged = make_message(
        tenant_id=attacker,
        message_id=target.message_id,
        correlation_id=batch.correlation_id,
        amount_cents=target.amount_cents,
        currency=target.currency,
    )
    async with running_committer(settings.database_url) as committer:
        assert await committer.commit_many([forged]) == [Outcome.PROCESSED]

    # The attacker's payment is counted as the attacker's own (a direct publish under that batch id), apart
    # from the victim's batch, whose numbers it does not move.
    summary = {row.tenant_id: row for row in await batch_summary(uow_factory, [batch.correlation_id])}
    assert set(summary) <= {victim, attacker}
    assert (summary[victim].processed, summary[victim].in_flight) == (0, 2)
    assert attacker not in summary or summary[attacker].processed == 1
    more = write_csv(tmp_path / "more.csv", [payment_row(2)])
    with pytest.raises(LimitExceeded, match="2 payments in flight; 1 more"):
        await submit_batch(SubmitBatch(victim, more), uow_factory, settings)
