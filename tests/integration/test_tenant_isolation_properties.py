"""Property: whatever mix of payments several tenants (in different tiers) send, some with a forged
tenant, ledger rows, dead letters and every tenant-scoped view stay inside their tenant."""

from dataclasses import dataclass

import pytest
from aio_pika.abc import AbstractChannel
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from sqlalchemy import text

from app.messaging import headers
from app.messaging.connection import vhost_of
from app.messaging.topology import Topology
from app.resources import uow_factory_for
from app.settings import Settings
from app.storage.engine import make_engine
from app.storage.unit_of_work import UnitOfWorkFactory
from app.tenancy.pool_operations import pool_status
from tests.utils.factories import make_wire_dict, to_wire_bytes
from tests.utils.services import ServiceProcess, app_database_url, eventually, management, system_database_url
from tests.utils.world import dead_letters, fresh_tenant, ledger_rows_for_tenant, publish_raw

pytestmark = pytest.mark.integration
TIERS = ("free", "basic", "premium")


@dataclass(frozen=True)
class Sent:
    owner: int  # the tenant in the body and the routing key
    claimed: int  # the tenant in the tenantUUID header: different means forged
    amount: int


payments = st.lists(
    st.builds(Sent, st.integers(0, 2), st.integers(0, 2), st.integers(1, 10_000_000)), min_size=1, max_size=12
)


@hsettings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sent=payments)
async def test_nothing_crosses_tenants(
    sent: list[Sent],
    uow_factory: UnitOfWorkFactory,
    settings: Settings,
    channel: AbstractChannel,
    consumer: ServiceProcess,
    database_url: str,
) -> None:
    tenants = [await fresh_tenant(uow_factory, tier=tier) for tier in TIERS]
    ids: dict[int, list[str]] = {0: [], 1: [], 2: []}
    forged: list[str] = []
    for s in sent:
        wire = make_wire_dict(tenant_id=tenants[s.owner], amount_cents=s.amount)
        await publish_raw(
            settings.amqp_url,
            to_wire_bytes(wire),
            f"{tenants[s.owner]}.payment",
            tenant_header=tenants[s.claimed],
            message_id=wire["message_id"],
        )
        (ids[s.owner] if s.owner == s.claimed else forged).append(wire["message_id"])

    async def settled() -> bool:
        counts = [len(await ledger_rows_for_tenant(uow_factory, t)) for t in tenants]
        return counts == [len(ids[i]) for i in range(3)]

    await eventually(settled, timeout=30)
    dead = await dead_letters(channel, settings, len(forged))
    assert sorted(d.message_id for d in dead) == sorted(forged)
    assert {d.headers[headers.REASON] for d in dead} <= {"tenant_mismatch"}
    for i, tenant in enumerate(tenants):
        rows = await ledger_rows_for_tenant(uow_factory, tenant)
        assert sorted(str(r.message_id) for r in rows) == sorted(ids[i])
    await _scoped_views_stay_inside(database_url, settings, tenants)


async def _scoped_views_stay_inside(database_url: str, settings: Settings, tenants: list[str]) -> None:
    engine = make_engine(app_database_url(database_url), pool_size=1)
    system_engine = make_engine(system_database_url(database_url), pool_size=1)
    try:
        app_uow = uow_factory_for(engine, system_engine)  # as the service: each scope on its own role
        for tier, tenant in zip(TIERS, tenants, strict=True):
            async with app_uow(tenant) as uow:  # as the service sees it for this tenant, with no filter at all
                seen = (await uow.connection.execute(text("SELECT DISTINCT tenant_id FROM ledger"))).scalars().all()
            assert set(seen) <= {tenant}
            pools = await pool_status(
                app_uow, management(), Topology.from_settings(settings), vhost_of(settings.amqp_url), tenant
            )
            assert [p.pool for p in pools] == [tier]
    finally:
        await engine.dispose()
        await system_engine.dispose()
