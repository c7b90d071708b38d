"""The relay through a 20-second broker outage: it backs off and logs the outage, not every try, and
publishes what was accepted meanwhile once the broker is back. A real relay process, its AMQP connection
through a TCP proxy the test cuts."""

import asyncio
import json
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from app.publisher.accept import submit_batch
from app.publisher.commands import SubmitBatch
from app.settings import Settings
from app.storage.unit_of_work import UnitOfWorkFactory
from tests.support.tcp_proxy import TcpProxy
from tests.utils.services import ServiceEnv, ServiceProcess, eventually, free_port
from tests.utils.world import fresh_tenant, outbox_rows, payment_row, write_csv

pytestmark = pytest.mark.integration

OUTAGE_SECONDS = 20


async def test_a_broker_outage_is_logged_once_and_the_backlog_goes_out_after_it(
    uow_factory: UnitOfWorkFactory, settings: Settings, service_env: ServiceEnv, tmp_path: Path
) -> None:
    proxy = TcpProxy("127.0.0.1", 5672, free_port())
    await proxy.start()
    via_proxy = service_env.amqp_url.replace(":5672/", f":{proxy.port}/", 1)
    assert via_proxy != service_env.amqp_url
    log_path = tmp_path / "relay.log"
    relay = ServiceProcess.relay(service_env.env(REMIT_AMQP_URL=via_proxy, REMIT_LOG_LEVEL="INFO"), log_path)
    tenant = await fresh_tenant(uow_factory)

    async def submit(name: str) -> str:
        file = write_csv(tmp_path / name, [payment_row(n) for n in range(5)])
        return (await submit_batch(SubmitBatch(tenant, file), uow_factory, settings)).correlation_id

    def published(batch: str) -> Callable[[], Awaitable[bool]]:
        async def check() -> bool:
            return all(r.published_at is not None for r in await outbox_rows(uow_factory, batch))

        return check

    try:
        await eventually(published(await submit("before.csv")), timeout=60)
        await proxy.stop()
        during = await submit("during.csv")  # accepted while the broker is away: it waits in the outbox
        await asyncio.sleep(OUTAGE_SECONDS)
        assert not any(r.published_at for r in await outbox_rows(uow_factory, during))
        await proxy.start()
        await eventually(published(during), timeout=90)
    finally:
        relay.stop()
        await proxy.stop()

    records = [json.loads(line) for line in log_path.read_text().splitlines() if line.startswith("{")]
    # Rows other tests left in the shared outbox name tenants with no route in this test's vhost: each is
    # refused (and logged once) under its own tenant; this test counts what the outage logged.
    errors = [r["message"] for r in records if r["level"] in ("ERROR", "CRITICAL") and r["tenant_id"] in (None, tenant)]
    # One ERROR per thing that failed (the connection, the relay cycle), each at most once more when it
    # relapses while the connection's channels are restored (seen on a loaded machine: the cycle's channel
    # still closed just after the connection came back). Logging every try would be 6+ per thing in 20 s.
    by_what = Counter(message.split(" failed: ", 1)[0] for message in errors)
    assert 1 <= len(errors) <= 4, "\n".join(errors)
    assert max(by_what.values()) <= 2, "\n".join(errors)
    assert sum("Traceback" in line for line in log_path.read_text().splitlines()) <= len(errors)
    said = [r["message"] for r in records if r["logger"].startswith("remit.")]
    assert any(m.startswith("RabbitMQ connection failed: ") for m in said), said
    assert any(m.startswith("RabbitMQ connection works again after") for m in said), said
    assert any(m.startswith("relay cycle works again after") for m in said), said
    tries = [r for r in records if r["message"].startswith("Connection attempt to")]  # aio-pika, one per try
    assert len(tries) <= 8, len(tries)  # backing off from 1 s to 10 s: about 6 in 20 s
