"""The trace reads the booking from where it happened: with an external core (REMIT_CORE_BANKING_URL), `remit
trace`, `GET /v1/payments/{id}` and the console name the core, the core's transfer id and the core's own time of
the booking, and the key it knows the payment by; remit's ledger row is named as remit's copy. Against the
reference core as a real process, with remit's consumer as a real process.

Before (issue 37, item 2): all three said `ledger transfer 4 ... (in-process ledger)` with `core_transfer_id:
null`, while remit's record held the core's transfer id 5 and the core's journal held transfer 5."""

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
from pydantic import SecretStr
from sqlalchemy import select

from app.settings import Settings
from app.storage.tables import ledger, processed_messages
from app.storage.unit_of_work import UnitOfWorkFactory
from app.tracing.wording import moment
from tests.utils.admin import admin_client, admin_key, bearer, log_in
from tests.utils.cli import remit
from tests.utils.core_world import wire_for
from tests.utils.corebank import CoreBank, dsn, open_account
from tests.utils.services import ServiceEnv, ServiceProcess, eventually
from tests.utils.world import fresh_tenant, send_payment

pytestmark = pytest.mark.integration

NAME = "Acme core banking (test)"


async def booked_in_core(database_url: str, key: str) -> tuple[str, datetime] | None:
    """The core's own record of a booked key: its transfer id and recorded_at."""
    conn = await asyncpg.connect(dsn(database_url))
    try:
        row = await conn.fetchrow(
            "SELECT transfer_id::text, recorded_at FROM transfers WHERE idempotency_key = $1 AND status = 'booked'",
            key,
        )
    finally:
        await conn.close()
    return None if row is None else (str(row[0]), row[1])


async def remit_rows(uow: UnitOfWorkFactory, tenant: str) -> tuple[Any, Any]:
    async with uow(tenant) as u:
        conn = u.connection
        record = (await conn.execute(select(processed_messages).where(processed_messages.c.tenant_id == tenant))).one()
        copy = (await conn.execute(select(ledger).where(ledger.c.tenant_id == tenant))).one()
    return record, copy


async def test_the_trace_names_the_cores_booking_in_the_cli_the_api_and_the_console(
    core: CoreBank,
    client: httpx.AsyncClient,
    service_env: ServiceEnv,
    settings: Settings,
    uow_factory: UnitOfWorkFactory,
    logs_dir: Path,
) -> None:
    tenant = await fresh_tenant(uow_factory)
    debtor, creditor = await open_account(client, 100_000), await open_account(client)
    wire = wire_for(tenant, debtor, creditor, 4_321)
    key = f"{tenant}:{wire['message_id']}"
    consumer = ServiceProcess.consumer(service_env.env(**core.remit_env()), logs_dir / "consumer.log")
    try:
        await send_payment(settings, wire)

        async def booked() -> bool:
            return await booked_in_core(core.database_url, key) is not None

        await eventually(booked, timeout=60)

        async def recorded() -> bool:
            async with uow_factory(tenant) as u:
                query = select(processed_messages.c.core_transfer_id).where(processed_messages.c.tenant_id == tenant)
                return (await u.connection.execute(query)).scalar_one_or_none() is not None

        await eventually(recorded, timeout=30)
    finally:
        consumer.stop()
    transfer_id, core_time = await booked_in_core(core.database_url, key) or ("", datetime.now(UTC))
    record, copy = await remit_rows(uow_factory, tenant)
    assert (record.core_transfer_id, record.core_booked_at, record.core_key_generation) == (transfer_id, core_time, 1)
    expected = {
        "system": "external core",
        "transfer_id": transfer_id,
        "core_transfer_id": transfer_id,
        "core_key": key,
        "ledger_transfer_id": copy.transfer_id,
    }

    # remit trace, with the core's name given (REMIT_CORE_BANKING_NAME) and without it (its address).
    named = service_env.env(**core.remit_env(), REMIT_CORE_BANKING_NAME=NAME)
    code, out = await remit(named, "trace", wire["message_id"], "--json")
    assert code == 0, out
    booking = json.loads(out)["booking"]
    assert {k: booking[k] for k in expected} == expected
    assert (booking["core"], datetime.fromisoformat(booking["booked_at"])) == (NAME, core_time)
    code, out = await remit({**named, "COLUMNS": "400"}, "trace", wire["message_id"])
    assert code == 0, out
    said = " ".join(out.split())
    assert f"core transfer {transfer_id} in {NAME} at {moment(core_time)} by the core's clock, key {key}" in said
    assert f"remit's copy: ledger row {copy.transfer_id}" in said
    assert "(in-process ledger)" not in said
    code, out = await remit(service_env.env(**core.remit_env()), "trace", wire["message_id"], "--json")
    assert json.loads(out)["booking"]["core"] == f"the core at 127.0.0.1:{core.process.port}", out

    # GET /v1/payments/{id} and the console's payment page: the same booking.
    at_core = settings.model_copy(update={"core_banking_url": core.url, "core_banking_token": SecretStr(core.token)})
    async with admin_client(at_core) as admin:
        key_of_admin = await admin_key(uow_factory)
        answer = await admin.get(f"/v1/payments/{wire['message_id']}", headers=bearer(key_of_admin))
        assert answer.status_code == 200, answer.text
        booking = answer.json()["booking"]
        assert {k: booking[k] for k in expected} == expected
        assert datetime.fromisoformat(booking["booked_at"]) == core_time
        await log_in(admin, key_of_admin)
        page = await admin.get("/console/payments", params={"id": wire["message_id"]})
        assert page.status_code == 200, page.text[:2000]
        text = " ".join(page.text.split())
        assert f"core transfer {transfer_id} in the core at 127.0.0.1:{core.process.port}" in text
        assert moment(core_time) in text
        assert "(in-process ledger)" not in text
