"""A killed relay turns the consumer's /readyz red and makes `remit status` warn; a restarted one turns them
green again. Real processes, on a database of this test's own: the session's database holds other tests'
unpublished rows (unroutable ones stay there by design), which would make the relay look late from the start.
"""

from pathlib import Path
from typing import Any

import httpx
import pytest

from app.publisher.accept import submit_batch
from app.publisher.commands import SubmitBatch
from app.storage.unit_of_work import UnitOfWorkFactory
from app.tenancy.tenants import AddTenant, add_tenant
from tests.utils.cli import remit
from tests.utils.factories import new_tenant_id
from tests.utils.services import OwnWorld, ServiceProcess, eventually
from tests.utils.world import ledger_rows_for_tenant, payment_row, route_tenant, write_csv

pytestmark = pytest.mark.integration


async def _readyz(port: int | None) -> httpx.Response:
    async with httpx.AsyncClient(timeout=10) as client:
        return await client.get(f"http://127.0.0.1:{port}/readyz")


async def _leading(uow: UnitOfWorkFactory) -> bool:
    async with uow() as system:
        locks = await system.connection.exec_driver_sql(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1 "
            "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
        )
        return bool(locks.scalar_one())


async def test_a_killed_relay_turns_readyz_red_and_status_warns_until_it_runs_again(
    own_world: OwnWorld, tmp_path: Path
) -> None:
    service, settings, uow = own_world.service_env, own_world.settings, own_world.uow_factory
    env = service.env(REMIT_RELAY_BACKLOG_ALERT_SECONDS="2")
    consumer = ServiceProcess.consumer(env, tmp_path / "consumer.log")
    relay = ServiceProcess.relay(env, tmp_path / "relay.log")
    try:
        await consumer.ready()
        assert (await _readyz(consumer.port)).json()["checks"]["relay"] is True  # nothing waits
        await eventually(lambda: _leading(uow), timeout=60)
        relay.kill()  # SIGKILL: its lock connection dies with it
        await eventually(lambda: _not(_leading(uow)), timeout=30)

        tenant = new_tenant_id()
        await add_tenant(AddTenant(tenant, f"Tenant {tenant}", default_ttl_seconds=3600), uow)
        await route_tenant(service.amqp_url, tenant, "basic")
        rows = [payment_row(n) for n in range(3)]
        batch = await submit_batch(SubmitBatch(tenant, write_csv(tmp_path / "b.csv", rows)), uow, settings)

        report: dict[str, Any] = {}

        async def red() -> bool:
            nonlocal report
            response = await _readyz(consumer.port)
            report = response.json()
            return response.status_code == 503

        await eventually(red, timeout=30)
        assert report["ready"] is False
        reason = report["checks"]["relay"]
        assert isinstance(reason, str)
        assert "no relay is leading" in reason
        assert "3 accepted payment(s) wait in the outbox" in reason
        assert "start `remit relay`" in reason
        assert {k: v for k, v in report["checks"].items() if k != "relay"} == {
            "broker": True,
            "consumers": True,
            "database": True,
            "migrations": True,
            "core_banking": True,
        }

        code, out = await remit(env, "status", "--batch", batch.correlation_id)
        assert code == 0, out
        assert "warning: no relay is leading and 3 accepted payment(s) wait in the outbox" in out
        code, out = await remit(env, "status", "--batch", batch.correlation_id, "--wait", "1")
        assert code == 3, out
        assert (
            "not settled: waited 1s for nothing to be in flight; 3 payment(s) of 1 batch(es) still in flight "
            f"(not processed, not dead-lettered): {batch.correlation_id}"
        ) in " ".join(out.split())

        relay = ServiceProcess.relay(env, tmp_path / "relay2.log")

        async def green() -> bool:
            return (await _readyz(consumer.port)).status_code == 200

        await eventually(green, timeout=60)
        assert (await _readyz(consumer.port)).json()["checks"]["relay"] is True
        code, out = await remit(env, "status", "--batch", batch.correlation_id, "--wait", "60")
        assert code == 0, out
        assert "warning" not in out
        assert len(await ledger_rows_for_tenant(uow, tenant)) == 3
    finally:
        relay.stop()
        consumer.stop()


async def _not(check: Any) -> bool:
    return not await check
