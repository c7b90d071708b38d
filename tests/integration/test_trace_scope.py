"""`remit trace` and `GET /v1/payments/{id}` are scoped to the caller's tenant: another tenant's payment
answers 404, like one that does not exist, also when both tenants use the same message_id (they are two
payments); an operator gets 409 for an id two tenants share until it names the tenant."""

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import typer
from typer.testing import CliRunner

from app.cli.trace import trace
from app.publisher.accept import submit_batch
from app.publisher.commands import SubmitBatch
from app.resources import uow_factory_for
from app.settings import Settings, get_settings
from app.storage.engine import make_engine
from app.storage.unit_of_work import UnitOfWorkFactory
from tests.utils.admin import admin_client, admin_key, bearer, log_in, tenant_key
from tests.utils.dead_letters import archive_as_consumer
from tests.utils.factories import make_wire_dict
from tests.utils.reconciliation_runs import recorded_run
from tests.utils.world import fresh_tenant, outbox_rows, payment_row, write_csv

pytestmark = pytest.mark.integration

cli = typer.Typer()
cli.command("trace")(trace)
cli.command("unused")(lambda: None)  # two commands, so `trace` stays a subcommand


@pytest.fixture
async def client(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    async with admin_client(settings) as c:
        yield c


@pytest.fixture
def cli_env(database_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("REMIT_DATABASE_URL", database_url)
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


async def two_tenants_one_message_id(uow: UnitOfWorkFactory, tmp_path: Path) -> dict[str, Any]:
    """Tenant a accepts a payment from a file; tenant b's direct publish of another payment under the
    same message_id failed and sits in the dead-letter store."""
    a, b = await fresh_tenant(uow), await fresh_tenant(uow)
    row_a = payment_row(1, amount_cents=4_321)
    batch = await submit_batch(SubmitBatch(a, write_csv(tmp_path / "a.csv", [row_a])), uow, Settings())
    [accepted] = await outbox_rows(uow, batch.correlation_id)
    wire_b = make_wire_dict(
        tenant_id=b, message_id=str(accepted.message_id), amount_cents=8_765, currency="NZD", retry_count=3
    )
    await archive_as_consumer(uow, wire_b, "retries_exhausted")
    return {
        "a": a,
        "b": b,
        "message_id": str(accepted.message_id),
        "batch_a": batch.correlation_id,
        "ref_a": row_a["payment_reference"],
        "ref_b": wire_b["payment_reference"],
    }


async def test_each_tenant_sees_only_its_own_payment_under_a_shared_message_id(
    client: httpx.AsyncClient, uow_factory: UnitOfWorkFactory, tmp_path: Path
) -> None:
    w = await two_tenants_one_message_id(uow_factory, tmp_path)
    as_a = bearer(await tenant_key(uow_factory, w["a"]))
    as_b = bearer(await tenant_key(uow_factory, w["b"]))

    mine = await client.get(f"/v1/payments/{w['message_id']}", headers=as_a)
    assert mine.status_code == 200, mine.text
    assert (mine.json()["tenant_id"], mine.json()["payment_reference"]) == (w["a"], w["ref_a"])
    assert (mine.json()["amount_cents"], mine.json()["currency"], mine.json()["state"]) == (4_321, "AUD", "accepted")
    assert w["ref_b"] not in mine.text

    theirs = await client.get(f"/v1/payments/{w['message_id']}", headers=as_b)
    assert theirs.status_code == 200, theirs.text
    assert (theirs.json()["tenant_id"], theirs.json()["payment_reference"]) == (w["b"], w["ref_b"])
    assert (theirs.json()["state"], theirs.json()["origin"]) == ("dead_lettered", "direct AMQP publish")
    assert [e["stage"] for e in theirs.json()["events"]] == ["dead_lettered"]
    assert w["ref_a"] not in theirs.text

    # Another tenant's reference or batch row, even naming that tenant: 404, like a made-up one.
    for path in (
        f"/v1/payments/{w['ref_a']}",
        f"/v1/payments/{w['batch_a']}?row=2",
        f"/v1/payments/{w['ref_a']}?tenant={w['a']}",
        "/v1/payments/PAY-NOBODY-HAS-THIS",
    ):
        answer = await client.get(path, headers=as_b)
        assert answer.status_code == 404, path
        assert answer.json()["detail"].startswith("no payment "), path  # the same answer as for a made-up one
    assert (await client.get(f"/v1/payments/{w['ref_b']}", headers=as_a)).status_code == 404
    # The key's own tenant wins over the parameter: b still sees b's payment, never a's.
    widened = await client.get(f"/v1/payments/{w['message_id']}?tenant={w['a']}", headers=as_b)
    assert widened.json()["payment_reference"] == w["ref_b"]

    # The operator sees both payments behind the id, and must say which.
    as_admin = bearer(await admin_key(uow_factory))
    both = await client.get(f"/v1/payments/{w['message_id']}", headers=as_admin)
    assert both.status_code == 409
    assert w["a"] in both.json()["detail"]
    assert w["b"] in both.json()["detail"]
    narrowed = await client.get(f"/v1/payments/{w['message_id']}?tenant={w['b']}", headers=as_admin)
    assert narrowed.json()["payment_reference"] == w["ref_b"]
    assert (await client.get("/v1/payments/PAY-NOBODY-HAS-THIS", headers=as_admin)).status_code == 404
    assert (await client.get(f"/v1/payments/{w['message_id']}")).status_code == 401


async def test_the_last_reconciliation_speaks_of_each_tenants_own_payment(
    client: httpx.AsyncClient, uow_factory: UnitOfWorkFactory, database_url: str, tmp_path: Path
) -> None:
    """Reconciliation tables have no row-level security: the tenant filter in the trace is the only one."""
    w = await two_tenants_one_message_id(uow_factory, tmp_path)
    their_break = {
        "message_id": w["message_id"],
        "correlation_id": None,
        "tenant_id": w["b"],
        "currency": "NZD",
        "status": "unexpected",
        "amount_cents": 8_765,
        "detail": "1 ledger row(s), no outbox row",
    }
    await recorded_run(database_url, [their_break])

    mine = await client.get(f"/v1/payments/{w['message_id']}", headers=bearer(await tenant_key(uow_factory, w["a"])))
    assert mine.json()["reconciliation"]["verdict"] == "no break"
    assert mine.json()["reconciliation"]["break_status"] is None
    theirs = await client.get(f"/v1/payments/{w['message_id']}", headers=bearer(await tenant_key(uow_factory, w["b"])))
    assert theirs.json()["reconciliation"]["verdict"] == "break"
    assert theirs.json()["reconciliation"]["break_status"] == "unexpected"
    assert theirs.json()["reconciliation"]["detail"] == "1 ledger row(s), no outbox row"


async def test_the_console_payment_page_is_scoped_like_the_api(
    client: httpx.AsyncClient, uow_factory: UnitOfWorkFactory, tmp_path: Path
) -> None:
    w = await two_tenants_one_message_id(uow_factory, tmp_path)
    await log_in(client, await tenant_key(uow_factory, w["a"]))

    mine = await client.get("/console/payments", params={"id": w["message_id"]})
    assert mine.status_code == 200
    assert w["ref_a"] in mine.text
    assert w["ref_b"] not in mine.text
    assert (await client.get("/console/payments", params={"id": w["ref_b"]})).status_code == 404
    row = await client.get("/console/payments", params={"id": w["batch_a"], "row": "2"})
    assert w["ref_a"] in row.text
    bad_row = await client.get("/console/payments", params={"id": w["batch_a"], "row": "two"})
    assert bad_row.status_code == 422


def test_the_operator_cli_says_which_tenants_share_an_id_and_takes_tenant(
    cli_env: None, database_url: str, tmp_path: Path
) -> None:
    async def seed() -> dict[str, Any]:  # each CLI command runs its own event loop: so does this
        engine = make_engine(database_url, pool_size=1)
        try:
            return await two_tenants_one_message_id(uow_factory_for(engine), tmp_path)
        finally:
            await engine.dispose()

    w = asyncio.run(seed())
    runner = CliRunner()

    both = runner.invoke(cli, ["trace", w["message_id"]])
    assert both.exit_code == 2
    assert "names 2 payments" in both.stderr
    assert w["a"] in both.stderr
    assert w["b"] in both.stderr

    only_b = runner.invoke(cli, ["trace", w["message_id"], "--tenant", w["b"], "--json"])
    assert only_b.exit_code == 0, only_b.output
    assert json.loads(only_b.stdout)["payment_reference"] == w["ref_b"]

    missing = runner.invoke(cli, ["trace", "PAY-NOBODY-HAS-THIS"])
    assert missing.exit_code == 2
    assert "no payment 'PAY-NOBODY-HAS-THIS'" in missing.stderr


async def test_no_account_number_leaves_a_trace_whatever_a_publisher_put_where(
    client: httpx.AsyncClient, uow_factory: UnitOfWorkFactory
) -> None:
    """A direct publisher controls every byte of its dead letter: account digits in the BSB field, in the
    account fields and in the error are all masked in the trace."""
    tenant = await fresh_tenant(uow_factory)
    wire = make_wire_dict(tenant_id=tenant, debtor_bsb="123456789", creditor_account="987654321", retry_count=3)
    await archive_as_consumer(uow_factory, wire, "invalid")
    as_tenant = bearer(await tenant_key(uow_factory, tenant))
    found = await client.get(f"/v1/payments/{wire['message_id']}", headers=as_tenant)
    assert found.status_code == 200, found.text
    assert (found.json()["debtor"], found.json()["creditor"]) == ("******789 ******789", "033-001 ******321")
    for digits in ("123456789", "987654321"):
        assert digits not in found.text
