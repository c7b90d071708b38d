"""While a consumer's core-banking circuit breaker is open, the people who look at remit are told: the console's
Workers page (admin and tenant) shows a banner, `remit status` (and `--wait`) warns on stderr, the admin API's
workers status carries it; each says what is open, since when and what it means (payments wait in their queues,
nothing is lost). As the service records it: each consumer process's heartbeat (issue 37, item 7).

A real consumer process whose core does not answer (nothing listens at REMIT_CORE_BANKING_URL), on a database of its
own: the session's may hold heartbeats of other tests' consumers."""

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from app.publisher.accept import submit_batch
from app.publisher.commands import SubmitBatch
from tests.utils.admin import admin_client, admin_key, bearer, log_in, tenant_key
from tests.utils.cli import remit_bytes
from tests.utils.factories import make_wire_dict
from tests.utils.services import OwnWorld, ServiceProcess, eventually, free_port
from tests.utils.world import Routing, fresh_tenant, payment_row, send_payment, write_csv

pytestmark = pytest.mark.integration

BANNER = re.compile(r'<p class="error" role="alert" id="core-breaker">(.*?)</p>', re.DOTALL)


async def workers_page(own_world: OwnWorld, key: str) -> str:
    async with admin_client(own_world.settings) as client:
        await log_in(client, key)
        response = await client.get("/console/workers")
        assert response.status_code == 200, response.text
        return response.text


async def test_an_open_breaker_is_shown_on_the_workers_page_and_by_remit_status(
    own_world: OwnWorld, logs_dir: Path, tmp_path: Path
) -> None:
    uow = own_world.uow_factory
    Routing.amqp_url = own_world.settings.amqp_url
    try:
        tenant = await fresh_tenant(uow)
    finally:
        Routing.amqp_url = None
    batch = await submit_batch(
        SubmitBatch(tenant, write_csv(tmp_path / "b.csv", [payment_row(1)])), uow, own_world.settings
    )
    admin, own = await admin_key(uow), await tenant_key(uow, tenant)
    nowhere = f"http://127.0.0.1:{free_port()}"  # the core: nothing answers there
    env = own_world.service_env.env(
        REMIT_CORE_BANKING_URL=nowhere,
        REMIT_CORE_BANKING_TOKEN="not-used",
        REMIT_CORE_BANKING_CONNECT_TIMEOUT_SECONDS="1",
        REMIT_CORE_BANKING_BREAKER_THRESHOLD="1",
        REMIT_CORE_BANKING_PROBE_INTERVAL_SECONDS="5",
    )
    consumer = ServiceProcess.consumer(env, logs_dir / "consumer.log")
    try:
        await consumer.ready(timeout=60)
        closed_page = await workers_page(own_world, admin)
        code, _, closed_err = await remit_bytes(own_world.service_env.env(COLUMNS="300"), "status", "--tenant", tenant)
        assert code == 0

        before = datetime.now(UTC).replace(microsecond=0)
        await send_payment(own_world.settings, make_wire_dict(tenant_id=tenant))  # the first request opens it

        async def paused() -> bool:
            return BANNER.search(await workers_page(own_world, admin)) is not None

        await eventually(paused, timeout=60, poll=1)
        admin_page, tenant_page = await workers_page(own_world, admin), await workers_page(own_world, own)
        code, _, err = await remit_bytes(
            own_world.service_env.env(COLUMNS="300"), "status", "--batch", batch.correlation_id, "--wait", "1"
        )
        async with admin_client(own_world.settings) as client:
            api = (await client.get("/admin/workers/status", headers=bearer(admin))).json()
    finally:
        consumer.stop()

    assert BANNER.search(closed_page) is None  # nothing to say while the breaker is closed
    assert b"circuit breaker" not in closed_err
    for page in (admin_page, tenant_page):
        match = BANNER.search(page)
        assert match is not None, page
        banner = " ".join(match.group(1).split())
        assert "core-banking circuit breaker is open in 1 consumer process" in banner
        assert "last failure: ConnectError" in banner
        assert "Payments wait in their queues: nothing is lost" in banner
        since = re.search(r"since (\S+ \S+) UTC", banner)
        assert since is not None, banner
        assert datetime.fromisoformat(since.group(1)).replace(tzinfo=UTC) >= before, banner

    assert code == 3  # the batch waits in the outbox (no relay runs): not settled
    text = " ".join(err.decode().split())
    assert "warning: the core-banking circuit breaker is open in 1 consumer process since" in text, text
    assert "Payments wait in their queues: nothing is lost" in text
    assert "not settled:" in text
    assert "the core-banking circuit breaker is open (above)" in text

    breaker = api["core_breaker"]
    assert (breaker["processes"], breaker["last_failures"]) == (1, ["ConnectError"]), api
    assert datetime.fromisoformat(breaker["since"]) >= before
    assert "nothing is lost" in breaker["meaning"]
