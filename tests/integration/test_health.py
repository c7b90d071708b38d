"""The consumer's HTTP side on a real process: liveness, readiness, metrics and the AsyncAPI page."""

import httpx
import pytest

from app.settings import Settings
from app.storage.unit_of_work import UnitOfWorkFactory
from tests.utils.factories import make_wire_dict
from tests.utils.services import ServiceProcess, eventually
from tests.utils.world import fresh_tenant, ledger_count, send_payment

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
