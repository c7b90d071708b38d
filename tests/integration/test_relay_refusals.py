"""Rows the broker refuses must not starve the tenants whose rows it takes.

More tenants than `REMIT_RELAY_BATCH_SIZE` with an unroutable row each (a tenant recorded without a binding)
took every place of every cycle: the round-robin's first picks were always their rows, so a routed tenant's
payments were never published. On a database of this test's own (the session's holds other tests' refused
rows), the real broker, and the relay in-process with a batch of 5.
"""

import asyncio
from pathlib import Path

import pytest
from aio_pika.abc import AbstractChannel
from faststream.rabbit import RabbitBroker

from app.messaging.connection import login_of
from app.observability.health import Readiness
from app.observability.relay_health import relay_state
from app.publisher.accept import submit_batch
from app.publisher.commands import SubmitBatch
from app.publisher.relay import OutboxRelay
from app.settings import Settings
from app.storage.unit_of_work import UnitOfWorkFactory
from app.tenancy.tenants import AddTenant, add_tenant
from tests.utils.cli import remit
from tests.utils.factories import new_tenant_id
from tests.utils.services import OwnWorld, eventually
from tests.utils.world import outbox_rows, payment_row, route_tenant, write_csv

pytestmark = pytest.mark.integration


async def _tenant_with_batch(uow: UnitOfWorkFactory, settings: Settings, path: Path, rows: int) -> tuple[str, str]:
    tenant = new_tenant_id()
    await add_tenant(AddTenant(tenant, f"Tenant {tenant}", default_ttl_seconds=3600), uow)
    csv = write_csv(path / f"{tenant}.csv", [payment_row(n) for n in range(rows)])
    batch = await submit_batch(SubmitBatch(tenant, csv), uow, settings)
    return tenant, batch.correlation_id


async def test_unroutable_rows_of_more_tenants_than_the_batch_size_do_not_starve_a_routed_tenant(
    own_world: OwnWorld, channel: AbstractChannel, tmp_path: Path
) -> None:
    service, settings, engine, uow = own_world.service_env, own_world.settings, own_world.engine, own_world.uow_factory
    stuck = [await _tenant_with_batch(uow, settings, tmp_path, 1) for _ in range(6)]  # no binding
    healthy, healthy_batch = await _tenant_with_batch(uow, settings, tmp_path, 3)
    await route_tenant(service.amqp_url, healthy, "basic")
    relay = OutboxRelay(engine, channel, settings.exchange, login_of(service.amqp_url), batch_size=5)

    published = [await relay.relay_once() for _ in range(4)]

    assert all(r.published_at for r in await outbox_rows(uow, healthy_batch)), published
    assert sum(published) == 3
    for _, batch in stuck:  # refused, kept, counted, and not tried again before their backoff is over
        [row] = await outbox_rows(uow, batch)
        assert (row.published_at, row.publish_refusals) == (None, 1)
        assert row.next_publish_at is not None
    async with uow() as system:
        state = await relay_state(system.connection)
    assert (state.refused, state.waiting, state.oldest_seconds) == (6, 0, None)
    assert state.problem(0) is None  # a refused row does not make a relay look dead, nor late
    assert (state.refusals(0) or "").startswith("6 row(s) refused by the broker (unroutable), retried with")
    assert "fix the tenant's route" in (state.refusals(0) or "")
    assert state.refusals(3600) is None  # a fresh refusal (a route on its way) is no warning yet

    readiness = Readiness(RabbitBroker(service.amqp_url), service.database_url, 0, system_engine=engine)
    assert (await readiness.report())["relay"] is True  # /readyz stays 200 for the relay ...
    assert readiness.warnings == [state.refusals(0)]  # ... and lists the refusals under "warnings"
    await asyncio.sleep(1.1)  # the smallest threshold the setting takes
    code, out = await remit(service.env(REMIT_RELAY_BACKLOG_ALERT_SECONDS="1"), "status", "--batch", batch)
    assert code == 0, out
    assert "warning: 6 row(s) refused by the broker (unroutable)" in out
    assert "no relay is leading" not in out

    fixed, fixed_batch = stuck[0]
    await route_tenant(service.amqp_url, fixed, "basic")

    async def published_after_the_fix() -> bool:
        await relay.relay_once()
        return all(r.published_at for r in await outbox_rows(uow, fixed_batch))

    await eventually(published_after_the_fix, timeout=30, poll=0.5)  # never lost: it goes once it can
    for _, batch in stuck[1:]:
        [row] = await outbox_rows(uow, batch)
        assert row.published_at is None
        assert row.publish_refusals >= 1  # still refused: kept, and tried again after each backoff
