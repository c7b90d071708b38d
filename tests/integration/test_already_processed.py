"""A booked payment is never money at risk: a copy of it the broker dead-letters after the booking (a late expiry, a
delivery limit reached after the commit) is filed `already_processed`, left out of the value at risk, refused for
replay, and its trace says so. On the real consumer, archiver and CLI."""

import json
from pathlib import Path

import pytest

from app.deadletters.review import dead_letter_stats
from app.storage.ports.dead_letters import DeadLetterFilter
from app.storage.unit_of_work import UnitOfWorkFactory
from tests.utils.cli import remit
from tests.utils.dead_letters import archive_as_consumer, start_archiver, wait_for_dead_letters
from tests.utils.factories import make_wire_dict
from tests.utils.services import ServiceEnv, ServiceProcess, eventually
from tests.utils.tenant_users import TenantUsers
from tests.utils.world import booked_once, fresh_tenant

pytestmark = pytest.mark.integration


async def test_a_late_copy_of_a_booked_payment_is_filed_already_processed(
    uow_factory: UnitOfWorkFactory,
    service_env: ServiceEnv,
    consumer: ServiceProcess,
    logs_dir: Path,
    tenant_users: TenantUsers,
) -> None:
    tenant = await fresh_tenant(uow_factory)
    publisher = tenant_users.publisher(tenant)
    booked, never = make_wire_dict(tenant_id=tenant), make_wire_dict(tenant_id=tenant)
    await publisher.publish(booked)
    await eventually(booked_once(uow_factory, booked["message_id"]))
    consumer.stop()  # from here on the broker expires what comes: a redelivered copy, and one never booked
    archiver = start_archiver(service_env.env(), logs_dir / "archiver.log")
    try:
        await publisher.publish(booked, expiration=0.001)
        await publisher.publish(never, expiration=0.001)
        rows = await wait_for_dead_letters(uow_factory, tenant, 2)
    finally:
        archiver.stop()
    by_id = {str(row.message_id): row for row in rows}
    copy, at_risk = by_id[str(booked["message_id"])], by_id[str(never["message_id"])]

    assert (copy.reason, copy.status) == ("expired", "already_processed")
    assert (at_risk.reason, at_risk.status) == ("expired", "open")
    env = service_env.env()
    code, out = await remit(env, "dlq", "stats", "--tenant", tenant, "--json")
    assert code == 0, out
    [total] = json.loads(out)["total"]
    assert (total["count"], total["amount_cents"]) == (1, never["amount_cents"]), "only the unbooked one is at risk"
    code, out = await remit(env, "dlq", "replay", str(copy.dead_letter_id), "--tenant", tenant)
    assert code != 0
    assert "booked before this copy was dead-lettered" in out
    code, out = await remit(env, "trace", str(booked["message_id"]), "--tenant", tenant, "--json")
    assert code == 0, out
    [event] = [e for e in json.loads(out)["events"] if e["stage"] == "dead_lettered"]
    assert "already processed: booked, not money at risk" in event["summary"]
    assert json.loads(out)["state"] == "processed"


async def test_an_open_dead_letter_booked_after_it_was_filed_is_no_longer_at_risk(
    uow_factory: UnitOfWorkFactory, consumer: ServiceProcess, tenant_users: TenantUsers
) -> None:
    """The race the archiver cannot see: the broker dead-lettered a copy while the consumer's commit was in flight."""
    tenant = await fresh_tenant(uow_factory)
    wire = make_wire_dict(tenant_id=tenant)
    await archive_as_consumer(uow_factory, wire, "retries_exhausted")  # filed first: open, with its digest
    where = DeadLetterFilter(tenant=tenant, status="open")
    before = await dead_letter_stats(uow_factory, where)

    await tenant_users.publisher(tenant).publish(wire)
    await eventually(booked_once(uow_factory, wire["message_id"]))
    after = await dead_letter_stats(uow_factory, where)

    assert [(row.count, row.amount_cents) for row in before.total] == [(1, wire["amount_cents"])]
    assert after.total == []
