"""FastStream's own connection (here the archiver's subscriber broker) through a 20-second broker outage: it
backs off like remit's own connections (1 s doubling to 10 s) and says so once, not a WARNING every 5 s, and
the subscriber consumes again once the broker is back. A real archiver process, its AMQP connection through a
TCP proxy the test cuts."""

import asyncio
import json
from pathlib import Path

import pytest
from aio_pika.abc import AbstractChannel

from app.storage.unit_of_work import UnitOfWorkFactory
from tests.support.tcp_proxy import TcpProxy
from tests.utils.dead_letters import send_failed_payment, start_archiver, stored_count
from tests.utils.factories import new_tenant_id
from tests.utils.services import ServiceEnv, eventually, free_port

pytestmark = pytest.mark.integration

OUTAGE_SECONDS = 20


async def test_a_broker_outage_under_a_faststream_broker_backs_off_and_is_logged_once(
    service_env: ServiceEnv, channel: AbstractChannel, uow_factory: UnitOfWorkFactory, tmp_path: Path
) -> None:
    proxy = TcpProxy("127.0.0.1", 5672, free_port())
    await proxy.start()
    via_proxy = service_env.amqp_url.replace(":5672/", f":{proxy.port}/", 1)
    assert via_proxy != service_env.amqp_url
    log_path = tmp_path / "archiver.log"
    archiver = start_archiver(service_env.env(REMIT_AMQP_URL=via_proxy, REMIT_LOG_LEVEL="INFO"), log_path)
    tenant = new_tenant_id()

    async def dead_letter() -> None:
        await send_failed_payment(channel, tenant)

    async def stored(n: int) -> bool:
        return await stored_count(uow_factory, tenant, n)

    try:
        await dead_letter()
        await eventually(lambda: stored(1), timeout=60)
        await proxy.stop()
        await asyncio.sleep(OUTAGE_SECONDS)
        await proxy.start()
        await dead_letter()
        await eventually(lambda: stored(2), timeout=60)
    finally:
        archiver.stop()
        await proxy.stop()

    lines = log_path.read_text().splitlines()
    records = [json.loads(line) for line in lines if line.startswith("{")]
    said = [r["message"] for r in records if r["logger"].startswith("remit.")]
    assert any(m.startswith("RabbitMQ connection failed: ") for m in said), said
    assert any(m.startswith("RabbitMQ connection works again after") for m in said), said
    loud = [f"{r['logger']}: {r['message']}" for r in records if r["level"] in ("WARNING", "ERROR", "CRITICAL")]
    loud += [line for line in lines if not line.startswith("{") and ("WARNING" in line or "ERROR" in line)]
    # failed, still failing, works again; and aio-pika's channel callback that finds the connection closed.
    # Not a line per try: with aio-pika's own retries that was a WARNING every 5 s.
    assert len(loud) <= 5, loud
    assert not [line for line in loud if "Connection attempt to" in line], loud
