"""A dead-letter filter that names an unknown reason, tenant or batch is refused with the known values of
the caller's scope, on PostgreSQL and on the in-memory fakes alike; another tenant's values are never
offered. (The CLI and HTTP answers: test_dlq_cli.py, test_admin_dead_letters.py.)"""

from uuid import UUID

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from app.admin.scope import uow_for
from app.deadletters.operations import Filters, check_known, find
from app.errors import UsageError
from app.resources import uow_factory_for
from app.storage.ports.dead_letters import DeadLetterFilter
from app.storage.unit_of_work import UnitOfWorkFactory
from tests.fakes.database import FakeDatabase
from tests.fakes.unit_of_work import fake_uow_factory
from tests.utils.dead_letters import file_as_consumer
from tests.utils.factories import make_wire_dict, new_tenant_id

pytestmark = pytest.mark.integration


@pytest.fixture(params=["postgresql", "in-memory"])
def uow(request: pytest.FixtureRequest, app_engine: AsyncEngine, system_engine: AsyncEngine) -> UnitOfWorkFactory:
    real = request.param == "postgresql"  # as the service runs: remit_app / remit_system
    return uow_factory_for(app_engine, system_engine) if real else fake_uow_factory(FakeDatabase())


async def test_recent_values_are_distinct_newest_first_and_scoped(uow: UnitOfWorkFactory) -> None:
    ours, theirs = new_tenant_id(), new_tenant_id()
    old, new = make_wire_dict(tenant_id=ours), make_wire_dict(tenant_id=ours)
    old_id = UUID(old["message_id"])
    for wire in (old, new):
        await file_as_consumer(uow, wire)
    async with uow() as u:
        [replayed] = [
            r for r in await u.dead_letters.newest(DeadLetterFilter(tenant=ours), 10) if r.message_id == old_id
        ]
    await file_as_consumer(uow, old, replay_of=replayed.dead_letter_id)  # its replay failed
    await file_as_consumer(uow, make_wire_dict(tenant_id=theirs))
    async with uow(ours) as u:
        batches = await u.dead_letters.recent_values("batch", ours, 10)
        tenants = await u.dead_letters.recent_values("tenant", ours, 10)
    assert batches == [old["correlation_id"], new["correlation_id"]]  # old failed again last
    assert tenants == [ours]
    async with uow() as u:
        assert (await u.dead_letters.recent_values("batch", None, 1)) == [
            (await u.dead_letters.recent_values("batch", theirs, 1))[0]
        ]


async def test_unknown_values_are_refused_with_the_known_ones_of_the_scope(uow: UnitOfWorkFactory) -> None:
    ours, theirs = new_tenant_id(), new_tenant_id()
    mine, other = make_wire_dict(tenant_id=ours), make_wire_dict(tenant_id=theirs)
    await file_as_consumer(uow, mine)
    await file_as_consumer(uow, other)
    as_ours = uow_for(uow, ours)  # the scope a tenant's API key gets
    known = Filters(reason="retries_exhausted", batch=mine["correlation_id"]).parsed(ours)
    assert len(await find(as_ours, known, 10)) == 1

    with pytest.raises(UsageError, match=r"reason 'retries_exhasted' .*did you mean 'retries_exhausted'\?"):
        await check_known(uow, Filters(reason="retries_exhasted").parsed(ours))

    with pytest.raises(UsageError) as hidden:
        await check_known(as_ours, Filters(batch=other["correlation_id"]).parsed(ours))
    told = str(hidden.value).replace(f"{other['correlation_id']!r} is not", "")
    assert other["correlation_id"] not in told
    assert mine["correlation_id"] in told

    typo = theirs[:-1] + ("x" if theirs[-1] != "x" else "y")
    with pytest.raises(UsageError, match=f"tenant '{typo}' is not a tenant; did you mean '{theirs}'"):
        await check_known(uow, Filters().parsed(typo))
    await check_known(uow, Filters().parsed(theirs))  # known by its dead letters alone (no tenants row)
