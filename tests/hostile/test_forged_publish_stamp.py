"""A direct publisher's `remit-published-at` is a claim, not a time: it must not reach the latency metrics.

The stamp says when remit's relay published a payment; operators alert on the latency it gives. A tenant
publishing directly sets every header itself: believed, an hour-old stamp would put an hour into the
operator-wide `delivered` stage and into that tenant's publish-to-processed latency on every payment (or a
stamp from the future would hide a real backlog). Only a trusted publisher's stamp is read.
"""

import time
from pathlib import Path

import httpx
import pytest

from app.messaging import headers
from app.settings import Settings
from app.storage.unit_of_work import UnitOfWorkFactory
from tests.utils.exposition import sample
from tests.utils.factories import make_wire_dict
from tests.utils.queues import accept_payments, publish_like_the_relay
from tests.utils.services import ServiceProcess, eventually
from tests.utils.tenant_users import TenantUsers
from tests.utils.world import fresh_tenant, ledger_rows_for_tenant

pytestmark = pytest.mark.integration

HOUR_MS = 3_600_000


async def _booked_then_metrics(uow_factory: UnitOfWorkFactory, consumer: ServiceProcess, tenant: str) -> str:
    async def booked() -> bool:
        return len(await ledger_rows_for_tenant(uow_factory, tenant)) == 1

    await eventually(booked)
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{consumer.port}", timeout=5) as client:
        return (await client.get("/metrics")).text


async def test_a_direct_publishers_stamp_is_not_read_as_a_publish_time(
    uow_factory: UnitOfWorkFactory,
    settings: Settings,
    consumer: ServiceProcess,
    tenant_users: TenantUsers,
    tmp_path: Path,
) -> None:
    tenant = await fresh_tenant(uow_factory)
    forged = {headers.PUBLISHED_AT: int(time.time() * 1000) - HOUR_MS}  # "published an hour ago"
    await tenant_users.publisher(tenant).publish(make_wire_dict(tenant_id=tenant), extra_headers=forged)
    metrics = await _booked_then_metrics(uow_factory, consumer, tenant)

    # The payment was processed and counted (the metrics are this consumer's, which saw only it) ...
    processed = sample(metrics, "remit_outcomes_total", outcome="processed", queue="payments.work.basic", tenant=tenant)
    assert processed == 1
    # ... but neither latency series took the forged hour in.
    assert not sample(metrics, "remit_publish_to_processed_seconds_count", tenant=tenant)
    assert not sample(metrics, "remit_batch_stage_seconds_count", stage="delivered")

    # The relay's own stamp is still a time: a payment published as remit publishes it is measured.
    relayed = await fresh_tenant(uow_factory)
    await publish_like_the_relay(settings.amqp_url, await accept_payments(uow_factory, relayed, 1, tmp_path))
    metrics = await _booked_then_metrics(uow_factory, consumer, relayed)
    assert sample(metrics, "remit_publish_to_processed_seconds_count", tenant=relayed) == 1
    latency = sample(metrics, "remit_publish_to_processed_seconds_sum", tenant=relayed)
    assert latency is not None
    assert latency < 60
    assert sample(metrics, "remit_batch_stage_seconds_count", stage="delivered") == 1
