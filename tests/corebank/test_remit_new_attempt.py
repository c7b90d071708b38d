"""The core refused, the cause is fixed: a forced replay is a new attempt the core sees as new, on the real
processes (the reference core, remit's consumer, relay and archiver, the CLI, the console).

The core keeps a refusal under its key for good (docs/core-banking.md, rule 2). Before (issue 37, item 3): after
the account was reopened, `remit dlq replay --force` of the `account_closed` dead letter sent the same key and was
refused again with AC04 (the preview said "would replay"), and resubmitting it as a new payment was refused
(`payment_reference ... already accepted`). Now the replay opens transfer key generation 2 (recorded beside the
message_id), the consumer books the payment under `<tenant>:<message_id>:2`, and the trace, the status report
(pain.002) and the core's journal follow; the message_id, payment_reference and batch stay the customer's."""

import csv
import json
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
from pydantic import SecretStr
from sqlalchemy import select

from app.publisher.accept import submit_batch
from app.publisher.commands import SubmitBatch
from app.settings import Settings
from app.storage.tables import dead_letter_audit, dead_letters, outbox, processed_messages, transfer_key_generations
from app.storage.unit_of_work import UnitOfWorkFactory
from tests.utils.admin import admin_client, admin_key, hidden, log_in
from tests.utils.cli import remit
from tests.utils.corebank import Acct, CoreBank, check_ledger, dsn, open_account
from tests.utils.dead_letters import start_archiver
from tests.utils.services import ServiceEnv, ServiceProcess, eventually
from tests.utils.world import COLUMNS, fresh_tenant, payment_row

pytestmark = pytest.mark.integration


def row_between(n: int, debtor: Acct, creditor: Acct, amount: int) -> dict[str, Any]:
    return payment_row(
        n,
        amount_cents=amount,
        debtor_bsb=debtor.bsb,
        debtor_account=debtor.number,
        creditor_bsb=creditor.bsb,
        creditor_account=creditor.number,
    )


def write_batch(path: Path, rows: list[dict[str, Any]]) -> Path:
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    return path


async def core_key(database_url: str, key: str) -> tuple[str, str | None, Any] | None:
    """The core's own record of a key: (status, transfer id, its recorded_at)."""
    conn = await asyncpg.connect(dsn(database_url))
    try:
        row = await conn.fetchrow(
            "SELECT status, transfer_id::text, recorded_at FROM transfers WHERE idempotency_key = $1", key
        )
    finally:
        await conn.close()
    return None if row is None else (row[0], row[1], row[2])


async def the_dead_letter(uow: UnitOfWorkFactory, tenant: str) -> Any:
    async with uow() as u:
        rows = (await u.connection.execute(select(dead_letters).where(dead_letters.c.tenant_id == tenant))).all()
    return rows[0] if len(rows) == 1 else None


async def recorded(uow: UnitOfWorkFactory, tenant: str, message_id: Any) -> Any:
    async with uow(tenant) as u:
        mine = (processed_messages.c.tenant_id == tenant) & (processed_messages.c.message_id == message_id)
        return (await u.connection.execute(select(processed_messages).where(mine))).one_or_none()


async def test_a_refusal_whose_cause_is_fixed_is_booked_as_a_new_attempt_the_core_sees_as_new(
    core: CoreBank,
    client: httpx.AsyncClient,
    service_env: ServiceEnv,
    settings: Settings,
    uow_factory: UnitOfWorkFactory,
    logs_dir: Path,
    tmp_path: Path,
) -> None:
    tenant = await fresh_tenant(uow_factory)
    debtor, creditor = await open_account(client, 1_000_000), await open_account(client)
    closed = await open_account(client, status="closed")
    paid, refused = row_between(1, debtor, creditor, 1_500), row_between(2, debtor, closed, 2_500)
    batch = await submit_batch(
        SubmitBatch(tenant, write_batch(tmp_path / "b.csv", [paid, refused])), uow_factory, Settings()
    )
    env = service_env.env(**core.remit_env())
    processes = [
        ServiceProcess.consumer(env, logs_dir / "consumer.log"),
        ServiceProcess.relay(env, logs_dir / "relay.log"),
        start_archiver(env, logs_dir / "archiver.log"),
    ]
    try:

        async def dead_lettered() -> bool:
            return await the_dead_letter(uow_factory, tenant) is not None

        await eventually(dead_lettered, timeout=60)
        dead = await the_dead_letter(uow_factory, tenant)
        assert (dead.reason, dead.payment_reference) == ("account_closed", refused["payment_reference"])
        message_id = dead.message_id
        first_key, second_key = f"{tenant}:{message_id}", f"{tenant}:{message_id}:2"
        assert (await core_key(core.database_url, first_key) or ("",))[0] == "rejected"
        async with uow_factory() as u:
            ours = outbox.c.payment_reference == refused["payment_reference"]
            resubmitted = (await u.connection.execute(select(outbox.c.correlation_id).where(ours))).scalar_one()
        assert resubmitted == batch.correlation_id

        reopened = await client.put(
            f"/accounts/{closed.bsb}/{closed.number}/{closed.currency}/status", json={"status": "open"}
        )
        assert reopened.status_code == 200, reopened.text

        # The preview says exactly what will happen, before any budget is spent: the CLI's dry run ...
        code, out = await remit(env, "dlq", "replay", str(dead.dead_letter_id), "--force", "--dry-run", "--json")
        assert code == 0, out
        [preview] = json.loads(out)["outcomes"]
        assert preview["action"] == "would replay", preview
        assert f"the core refused key {first_key} for good (account_closed)" in preview["detail"]
        assert f"a new attempt under key {second_key} (key generation 2)" in preview["detail"]
        # ... and the console's (an admin key: a forced replay is an operator's).
        at_core = settings.model_copy(
            update={"core_banking_url": core.url, "core_banking_token": SecretStr(core.token)}
        )
        async with admin_client(at_core) as console:
            await log_in(console, await admin_key(uow_factory))
            page = await console.get(f"/console/dead-letters/{dead.dead_letter_id}")
            form = {"csrf_token": hidden(page.text, "csrf_token"), "dead_letter_id": str(dead.dead_letter_id)}
            shown = await console.post("/console/replay", data={**form, "force": "true"})
            assert shown.status_code == 200, shown.text[:2000]
            assert "would replay" in shown.text
            assert f"a new attempt under key {second_key}" in shown.text
        async with uow_factory() as u:
            audited = dead_letter_audit.c.dead_letter_id == dead.dead_letter_id
            real = (await u.connection.execute(select(dead_letter_audit.c.dry_run).where(audited))).scalars().all()
            opened = (await u.connection.execute(select(transfer_key_generations))).all()
        assert real == [True, True]  # two previews, no real replay: the budget is untouched
        assert [o for o in opened if o.tenant_id == tenant] == []
        assert await core_key(core.database_url, second_key) is None

        code, out = await remit(
            env, "dlq", "replay", str(dead.dead_letter_id), "--force", "--why", "account reopened", "--json"
        )
        assert code == 0, out
        assert json.loads(out)["outcomes"][0]["action"] == "replayed", out

        async def booked_anew() -> bool:
            record = await core_key(core.database_url, second_key)
            return record is not None and record[0] == "booked"

        await eventually(booked_anew, timeout=60)

        async def processed() -> bool:
            return await recorded(uow_factory, tenant, message_id) is not None

        await eventually(processed, timeout=30)
    finally:
        for process in processes:
            process.stop()

    # remit's record names the core's booking under the new key; the old key keeps its refusal.
    record = await recorded(uow_factory, tenant, message_id)
    status, transfer_id, recorded_at = await core_key(core.database_url, second_key) or ("", None, None)
    assert status == "booked"
    assert (record.core_transfer_id, record.core_key_generation, record.core_booked_at) == (
        transfer_id,
        2,
        recorded_at,
    )
    assert (await core_key(core.database_url, first_key) or ("",))[0] == "rejected"
    async with uow_factory(tenant) as u:
        [generation] = (
            await u.connection.execute(
                select(transfer_key_generations).where(transfer_key_generations.c.tenant_id == tenant)
            )
        ).all()
    assert (generation.message_id, generation.generation, generation.replaces_key) == (message_id, 2, first_key)
    assert (generation.refused_reason, generation.dead_letter_id) == ("account_closed", dead.dead_letter_id)
    ledger = await check_ledger(core.database_url)  # debits = credits; one debit and one credit per booked key
    assert ledger.booked_keys >= 2

    # The trace follows it: the refusal, the new attempt, the booking in the core under the new key.
    code, out = await remit(env, "trace", refused["payment_reference"], "--tenant", tenant, "--json")
    assert code == 0, out
    trace = json.loads(out)
    assert (trace["state"], trace["correlation_id"], trace["message_id"]) == (
        "processed",
        batch.correlation_id,
        str(message_id),
    )
    booking = trace["booking"]
    assert (booking["system"], booking["core_transfer_id"], booking["core_key"]) == (
        "external core",
        transfer_id,
        second_key,
    )
    [replayed] = [e for e in trace["events"] if e["stage"] == "replayed"]
    assert f"a new attempt under key {second_key}" in replayed["details"]["outcome"]
    [processed_event] = [e for e in trace["events"] if e["stage"] == "processed"]
    assert f"core transfer {transfer_id} in the external core (key {second_key}" in processed_event["summary"]

    # The customer's status report says booked, under its own reference and batch.
    code, out = await remit(env, "report", batch.correlation_id, "--format", "json")
    assert code == 0, out
    lines = {t["end_to_end_id"]: t for t in json.loads(out)["transactions"]}
    assert (lines[refused["payment_reference"]]["status"], lines[paid["payment_reference"]]["status"]) == (
        "ACSC",
        "ACSC",
    )
