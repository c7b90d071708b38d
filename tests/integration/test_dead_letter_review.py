"""Review, replay, discard and retention on the real store and broker (the consumer runs as a process
where a replay must be processed)."""

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from aio_pika.abc import AbstractChannel
from sqlalchemy import func, insert, select

from app.deadletters.audit import list_audit
from app.deadletters.discard import discard_dead_letter
from app.deadletters.query import DeadLetterFilter
from app.deadletters.replay import replay_dead_letters
from app.deadletters.republish import AmqpReplayPublisher
from app.deadletters.requests import ReplayRequest, list_requests
from app.deadletters.retention import purge_expired_records, set_tenant_retention
from app.deadletters.review import dead_letter_stats, list_dead_letters, show_dead_letter
from app.errors import DeadLetterNotFound, DiscardRefused, RetentionTooShort
from app.messaging.connection import login_of
from app.messaging.topology import Topology
from app.settings import Settings
from app.storage.tables import dead_letters, delivery_attempts, processed_messages
from app.storage.unit_of_work import UnitOfWorkFactory
from tests.utils.dead_letters import archive_as_consumer, audit_of, dead_letter, dead_letters_of, queue_depth_now
from tests.utils.factories import make_wire_dict, new_message_id
from tests.utils.policies import replay_policy, retention_policy
from tests.utils.services import ServiceProcess, eventually
from tests.utils.world import fresh_tenant, ledger_count

pytestmark = pytest.mark.integration


async def archived(uow: UnitOfWorkFactory, wire: dict[str, Any], reason: str = "retries_exhausted") -> int:
    """Store a consumer-style dead letter for `wire` (a payment's first failure); return its id."""
    return await archive_as_consumer(uow, wire, reason)


def request(dead_letter_id: int | None = None, **kwargs: Any) -> ReplayRequest:
    return ReplayRequest(actor="tester", dead_letter_ids=() if dead_letter_id is None else (dead_letter_id,), **kwargs)


@pytest.fixture
def publisher(channel: AbstractChannel, settings: Settings) -> AmqpReplayPublisher:
    return AmqpReplayPublisher(channel, settings.exchange)


async def test_replay_is_processed_exactly_once_and_replaying_again_resolves(
    uow_factory: UnitOfWorkFactory, settings: Settings, publisher: AmqpReplayPublisher, consumer: ServiceProcess
) -> None:
    tenant = await fresh_tenant(uow_factory)
    wire = make_wire_dict(tenant_id=tenant, retry_count=3)
    dead = await archived(uow_factory, wire)
    user = login_of(settings.amqp_url)

    [outcome] = await replay_dead_letters(uow_factory, publisher, request(dead), user_id=user, policy=replay_policy())
    assert outcome.action == "replayed"
    assert (await dead_letter(uow_factory, dead)).status == "replayed"

    async def booked() -> bool:
        return await ledger_count(uow_factory, wire["message_id"]) == 1

    await eventually(booked)

    [again] = await replay_dead_letters(uow_factory, publisher, request(dead), user_id=user, policy=replay_policy())
    assert again.action == "resolved"
    await asyncio.sleep(1.0)  # every chance for a (wrong) second booking
    assert await ledger_count(uow_factory, wire["message_id"]) == 1
    assert (await dead_letter(uow_factory, dead)).status == "resolved"
    assert [(a.action, a.actor, a.dry_run) for a in await audit_of(uow_factory, dead)] == [
        ("replay", "tester", False),
        ("resolve", "tester", False),
    ]


async def test_refusals_and_dry_runs_change_nothing_and_publish_nothing(
    uow_factory: UnitOfWorkFactory, settings: Settings, publisher: AmqpReplayPublisher
) -> None:
    tenant = await fresh_tenant(uow_factory)
    permanent = await archived(uow_factory, make_wire_dict(tenant_id=tenant), "permanent_failure")
    expired = await archived(uow_factory, make_wire_dict(tenant_id=tenant), "expired")
    transient = await archived(uow_factory, make_wire_dict(tenant_id=tenant))
    user = login_of(settings.amqp_url)

    dry = request(everything=True, dry_run=True, where=DeadLetterFilter(tenant=tenant))
    outcomes = await replay_dead_letters(uow_factory, publisher, dry, user_id=user, policy=replay_policy())
    mine = {o.dead_letter_id: o for o in outcomes}
    assert mine[permanent].action == "refused"
    assert "--force" in mine[permanent].detail
    assert mine[expired].action == "refused"
    assert "new batch" in mine[expired].detail
    assert mine[transient].action == "would replay"
    assert {r.status for r in await dead_letters_of(uow_factory, tenant)} == {"open"}
    assert await queue_depth_now(settings.amqp_url, Topology.from_settings(settings).tier_queue("basic")) == 0
    assert [(a.action, a.dry_run) for a in await audit_of(uow_factory, transient)] == [("replay", True)]

    [forced] = await replay_dead_letters(
        uow_factory, publisher, request(permanent, force=True), user_id=user, policy=replay_policy()
    )
    assert forced.action == "replayed"

    async def published() -> bool:
        return await queue_depth_now(settings.amqp_url, Topology.from_settings(settings).tier_queue("basic")) == 1

    await eventually(published, timeout=10, poll=0.05)


async def test_the_replay_budget_refuses_after_the_limit(
    uow_factory: UnitOfWorkFactory, settings: Settings, publisher: AmqpReplayPublisher
) -> None:
    tenant = await fresh_tenant(uow_factory)
    wire = make_wire_dict(tenant_id=tenant)
    policy = replay_policy(budget=2)
    user = login_of(settings.amqp_url)
    dead = await archived(uow_factory, wire)
    for _ in range(2):  # no consumer: each replay "fails again" as a new dead letter of the same message
        [ok] = await replay_dead_letters(uow_factory, publisher, request(dead), user_id=user, policy=policy)
        assert ok.action == "replayed"
        dead = await archive_as_consumer(uow_factory, wire, "retries_exhausted", replay_of=dead)
    [refused] = await replay_dead_letters(uow_factory, publisher, request(dead), user_id=user, policy=policy)
    assert refused.action == "refused"
    assert "budget" in refused.detail
    assert (await dead_letter(uow_factory, dead)).status == "open"
    # first_failed_at carries the first failure of this message_id across the replays
    rows = await dead_letters_of(uow_factory, tenant)
    assert len({r.first_failed_at for r in rows}) == 1
    assert rows[-1].last_failed_at > rows[0].first_failed_at


async def test_discard_marks_and_audits_and_never_deletes(uow_factory: UnitOfWorkFactory) -> None:
    tenant = await fresh_tenant(uow_factory)
    dead = await archived(uow_factory, make_wire_dict(tenant_id=tenant), "permanent_failure")
    with pytest.raises(DiscardRefused, match="say why"):
        await discard_dead_letter(uow_factory, dead, "  ", "ops")
    await discard_dead_letter(uow_factory, dead, "paid by phone", "ops", tenant)
    row = await dead_letter(uow_factory, dead)
    assert row.status == "discarded"
    [entry] = await audit_of(uow_factory, dead)
    assert (entry.action, entry.actor, entry.why, entry.tenant_id) == ("discard", "ops", "paid by phone", tenant)
    with pytest.raises(DiscardRefused, match="is discarded"):
        await discard_dead_letter(uow_factory, dead, "again", "ops")


async def test_a_tenant_never_sees_or_touches_another_tenants_dead_letters(
    uow_factory: UnitOfWorkFactory, settings: Settings, publisher: AmqpReplayPublisher
) -> None:
    a = await fresh_tenant(uow_factory)
    b = await fresh_tenant(uow_factory)
    mine = await archived(uow_factory, make_wire_dict(tenant_id=a, currency="AUD", amount_cents=100))
    theirs = await archived(uow_factory, make_wire_dict(tenant_id=b, currency="NZD", amount_cents=999))

    assert [r.dead_letter_id for r in await list_dead_letters(uow_factory, DeadLetterFilter(tenant=a))] == [mine]
    with pytest.raises(DeadLetterNotFound):
        await show_dead_letter(uow_factory, theirs, tenant=a)
    with pytest.raises(DeadLetterNotFound):
        await discard_dead_letter(uow_factory, theirs, "not mine", "ops", tenant=a)
    scoped = request(theirs, where=DeadLetterFilter(tenant=a))
    with pytest.raises(DeadLetterNotFound):  # as for a missing id; the request is in the audit trail
        await replay_dead_letters(
            uow_factory, publisher, scoped, user_id=login_of(settings.amqp_url), policy=replay_policy()
        )
    [refusal] = [r for r in await list_requests(uow_factory, tenant=a) if r.dead_letter_ids == [theirs]]
    assert refusal.outcome.startswith(f"request refused: no dead letter {theirs} for tenant {a}")
    everything = request(everything=True, where=DeadLetterFilter(tenant=a), dry_run=True)
    outcomes = await replay_dead_letters(uow_factory, publisher, everything, user_id="x", policy=replay_policy())
    assert [o.dead_letter_id for o in outcomes] == [mine]
    stats = await dead_letter_stats(uow_factory, DeadLetterFilter(tenant=a, status="open"))
    assert [(s.group, s.currency, s.count, s.amount_cents) for s in stats.by_tenant] == [(a, "AUD", 1, 100)]
    assert all(e.tenant_id == a for e in await list_audit(uow_factory, tenant=a))
    assert (await dead_letter(uow_factory, theirs)).status == "open"


async def test_stats_keep_currencies_apart_and_bucket_by_age(uow_factory: UnitOfWorkFactory) -> None:
    tenant = await fresh_tenant(uow_factory)
    for currency, cents in (("AUD", 100), ("AUD", 250), ("NZD", 7)):
        await archived(uow_factory, make_wire_dict(tenant_id=tenant, currency=currency, amount_cents=cents))
    stats = await dead_letter_stats(uow_factory, DeadLetterFilter(tenant=tenant, status="open"))
    assert [(s.currency, s.count, s.amount_cents) for s in stats.total] == [("AUD", 2, 350), ("NZD", 1, 7)]
    assert {s.group for s in stats.by_age} == {"<1h"}
    assert {s.group for s in stats.by_reason} == {"retries_exhausted"}


async def test_show_masks_accounts_and_lists_the_attempt_history(uow_factory: UnitOfWorkFactory) -> None:
    tenant = await fresh_tenant(uow_factory)
    wire = make_wire_dict(tenant_id=tenant, debtor_account="123456789")
    async with uow_factory() as uow:
        await uow.connection.execute(
            insert(delivery_attempts).values(
                message_id=wire["message_id"], tenant_id=tenant, attempt=1, outcome="retrying", queue="payments.work"
            )
        )
        await uow.commit()
    dead = await archived(uow_factory, wire)
    detail = await show_dead_letter(uow_factory, dead, tenant)
    assert detail.body_json["debtor_account"] == "******789"
    assert "123456789" not in detail.body_text
    assert [a.outcome for a in detail.attempt_history] == ["retrying"]
    assert (await show_dead_letter(uow_factory, dead, tenant, unmask=True)).body_json["debtor_account"] == "123456789"


async def test_purge_deletes_old_closed_records_in_batches_and_keeps_open_ones(uow_factory: UnitOfWorkFactory) -> None:
    tenant = await fresh_tenant(uow_factory)
    long_keeper = await fresh_tenant(uow_factory)
    await set_tenant_retention(uow_factory, long_keeper, 90, retention_policy())
    old = datetime.now(UTC) - timedelta(days=40)
    old_ids = [new_message_id() for _ in range(5)]
    kept_id = new_message_id()
    async with uow_factory() as uow:
        conn = uow.connection
        for tenant_id, message_id in [*((tenant, m) for m in old_ids), (long_keeper, kept_id)]:
            await conn.execute(
                insert(processed_messages).values(
                    message_id=message_id, tenant_id=tenant_id, correlation_id="b", attempt=1, processed_at=old
                )
            )
            await conn.execute(
                insert(delivery_attempts).values(
                    message_id=message_id, tenant_id=tenant_id, attempt=1, outcome="retrying", at=old
                )
            )
        await uow.commit()
    still_open = await archived(uow_factory, make_wire_dict(tenant_id=tenant, message_id=str(old_ids[0])))
    closed = await archived(uow_factory, make_wire_dict(tenant_id=tenant))
    await discard_dead_letter(uow_factory, closed, "test", "ops", now=old)

    report = await purge_expired_records(uow_factory, retention_policy(batch_size=2))
    assert report.deleted["processed_messages"] >= 5
    assert report.tenant_days[long_keeper] == 90

    async def count(table: Any, *where: Any) -> int:
        async with uow_factory() as uow:
            return int(
                (await uow.connection.execute(select(func.count()).select_from(table).where(*where))).scalar_one()
            )

    assert await count(processed_messages, processed_messages.c.message_id.in_(old_ids)) == 0
    assert await count(processed_messages, processed_messages.c.message_id == kept_id) == 1  # its tenant keeps 90 d
    # the attempt history of a message with an open dead letter stays, the others go
    remaining = delivery_attempts.c.message_id.in_(old_ids)
    assert await count(delivery_attempts, remaining) == 1
    assert await count(dead_letters, dead_letters.c.dead_letter_id == closed) == 0
    assert await count(dead_letters, dead_letters.c.dead_letter_id == still_open) == 1
    assert await list_audit(uow_factory, dead_letter_id=closed)  # the trail outlives the dead letter

    with pytest.raises(RetentionTooShort, match="Use at least"):
        await purge_expired_records(uow_factory, retention_policy(days=3))
