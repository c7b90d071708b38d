"""The consumer's HTTP side on a real process: liveness, readiness, metrics and the AsyncAPI page."""

from pathlib import Path

import httpx
import pytest

from app.publisher.accept import submit_batch
from app.publisher.commands import SubmitBatch
from app.settings import Settings
from app.storage.unit_of_work import UnitOfWorkFactory
from tests.utils.exposition import sample
from tests.utils.factories import make_wire_dict
from tests.utils.services import OwnWorld, ServiceProcess, eventually
from tests.utils.world import Routing, fresh_tenant, ledger_count, payment_row, send_payment, write_csv

pytestmark = pytest.mark.integration


async def test_health_readiness_metrics_and_docs(
    uow_factory: UnitOfWorkFactory, settings: Settings, consumer: ServiceProcess
) -> None:
    base = f"http://127.0.0.1:{consumer.port}"
    async with httpx.AsyncClient(base_url=base, timeout=5) as client:
        await consumer.ready(timeout=30)
        checks = (await client.get("/readyz")).json()["checks"]
        # The relay check is about the session database's outbox (tests/integration/test_relay_health.py).
        relay = checks.pop("relay")
        assert relay is True or "no relay is leading" in relay
        assert checks == {"broker": True, "consumers": True, "database": True, "migrations": True, "core_banking": True}
        assert (await client.get("/healthz")).json() == {"status": "alive"}

        tenant = await fresh_tenant(uow_factory)
        wire = make_wire_dict(tenant_id=tenant)
        await send_payment(settings, wire)

        async def booked() -> bool:
            return await ledger_count(uow_factory, wire["message_id"]) == 1

        await eventually(booked)
        metrics = (await client.get("/metrics")).text
        assert f'remit_consumed_total{{queue="payments.work.basic",tenant="{tenant}"}} 1.0' in metrics
        assert (
            f'remit_outcomes_total{{outcome="processed",queue="payments.work.basic",tenant="{tenant}"}} 1.0' in metrics
        )
        for stage in ("buffered", "processing", "commit_wait", "commit", "settle"):  # where a batch's time went
            assert f'remit_batch_stage_seconds_count{{stage="{stage}"}}' in metrics, stage
        docs = await client.get("/docs/asyncapi")
        assert docs.status_code == 200
        assert "remit" in docs.text


async def test_the_outbox_backlog_is_exported_as_zero_when_nothing_waits(
    own_world: OwnWorld, logs_dir: Path, tmp_path: Path
) -> None:
    """An empty backlog is a sample of 0 per tenant, not an absent series: `remit_outbox_backlog > N` alerts and
    dashboards read "nothing waits", never "no data". A database of its own: the session's has other tests' rows."""
    Routing.amqp_url = own_world.settings.amqp_url
    try:
        waiting, idle = await fresh_tenant(own_world.uow_factory), await fresh_tenant(own_world.uow_factory)
    finally:
        Routing.amqp_url = None
    batch = write_csv(tmp_path / "two.csv", [payment_row(1), payment_row(2)])
    accepted = await submit_batch(SubmitBatch(waiting, batch), own_world.uow_factory, own_world.settings)
    assert accepted.accepted == 2  # no relay runs: both wait in the outbox
    consumer = ServiceProcess.consumer(own_world.service_env.env(), logs_dir / "consumer.log")
    try:
        await consumer.ready(timeout=60)
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{consumer.port}", timeout=5) as client:

            async def scraped() -> bool:
                return sample((await client.get("/metrics")).text, "remit_outbox_backlog", tenant=waiting) == 2

            await eventually(scraped, timeout=30)
            metrics = (await client.get("/metrics")).text
    finally:
        consumer.stop()
    assert sample(metrics, "remit_outbox_backlog", tenant=idle) == 0.0, metrics
