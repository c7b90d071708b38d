"""The archiver through a PostgreSQL outage: the dead letter waits in its queue, the archiver backs off and
logs the outage once (not a traceback per try), and stores it once PostgreSQL is back. A real archiver
process, its database connections through a TCP proxy the test cuts."""

import asyncio
import json
from pathlib import Path

import pytest
from aio_pika.abc import AbstractChannel

from app.storage.unit_of_work import UnitOfWorkFactory
from tests.support.tcp_proxy import TcpProxy
from tests.utils.dead_letters import send_failed_payment, start_archiver, stored_count
from tests.utils.factories import new_tenant_id
from tests.utils.services import ServiceEnv, app_database_url, eventually, free_port, system_database_url

pytestmark = pytest.mark.integration

OUTAGE_SECONDS = 15


async def test_a_database_outage_is_logged_once_and_the_dead_letter_is_stored_after_it(
    service_env: ServiceEnv, channel: AbstractChannel, uow_factory: UnitOfWorkFactory, tmp_path: Path
) -> None:
    proxy = TcpProxy("127.0.0.1", 5432, free_port())
    await proxy.start()

    def via_proxy(url: str) -> str:
        return url.replace("@127.0.0.1:5432/", f"@127.0.0.1:{proxy.port}/", 1)

    env = service_env.env(
        REMIT_DATABASE_URL=via_proxy(app_database_url(service_env.database_url)),
        REMIT_SYSTEM_DATABASE_URL=via_proxy(system_database_url(service_env.database_url)),
        REMIT_LOG_LEVEL="INFO",
    )
    log_path = tmp_path / "archiver.log"
    archiver = start_archiver(env, log_path)
    tenant = new_tenant_id()

    async def dead_letter() -> None:
        await send_failed_payment(channel, tenant)

    async def stored(n: int) -> bool:
        return await stored_count(uow_factory, tenant, n)

    try:
        await dead_letter()
        await eventually(lambda: stored(1), timeout=60)
        await proxy.stop()
        await dead_letter()
        await asyncio.sleep(OUTAGE_SECONDS)
        assert await stored(1)
        await proxy.start()
        await eventually(lambda: stored(2), timeout=60)
    finally:
        archiver.stop()
        await proxy.stop()

    lines = log_path.read_text().splitlines()
    records = [json.loads(line) for line in lines if line.startswith("{")]
    errors = [r["message"] for r in records if r["level"] in ("ERROR", "CRITICAL")]
    assert 1 <= len(errors) <= 3, errors
    assert sum("Traceback" in line for line in lines) <= 3
    assert not [line for line in lines if not line.startswith("{") and "ERROR" in line]  # FastStream's own lines
    said = [r["message"] for r in records if r["logger"].startswith("remit.")]
    assert any(m.startswith("archiving dead letters failed: ") for m in said), said
    assert any(m.startswith("archiving dead letters works again after") for m in said), said
