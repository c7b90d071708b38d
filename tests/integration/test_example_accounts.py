"""The examples' accounts file opens exactly the accounts the demo opens in its core: the demo submits the example
files, reads what remit accepted from the outbox and makes the accounts of those payments (app/cli/demo_core.py); done
the same way here, on the real database, the result is examples/accounts.jsonl line for line."""

import json
from pathlib import Path

import pytest
from sqlalchemy import select

from app.cli.demo_core import accounts_for
from app.publisher.accept import submit_batch
from app.publisher.commands import SubmitBatch
from app.settings import Settings
from app.storage.tables import outbox
from app.storage.unit_of_work import UnitOfWorkFactory
from contracts import PaymentMessage
from tests.utils.world import fresh_tenant

pytestmark = pytest.mark.integration

EXAMPLES = Path(__file__).parents[2] / "examples"


async def test_the_examples_accounts_are_the_ones_the_demo_opens(
    uow_factory: UnitOfWorkFactory, settings: Settings
) -> None:
    expected = json.loads((EXAMPLES / "EXPECTED.json").read_text())
    tenants = []
    for spec in expected["tenants"].values():
        tenant = await fresh_tenant(uow_factory)
        result = await submit_batch(SubmitBatch(tenant, EXAMPLES / spec["file"]), uow_factory, settings)
        assert result.accepted == spec["accepted"]
        tenants.append(tenant)
    async with uow_factory() as uow:
        bodies = (await uow.connection.execute(select(outbox.c.body).where(outbox.c.tenant_id.in_(tenants)))).scalars()
        payments = [PaymentMessage.model_validate_json(body) for body in bodies]
    opened = accounts_for(payments, set(expected["core_banking"]["closed_accounts"]))
    committed = [json.loads(line) for line in (EXAMPLES / "accounts.jsonl").read_text().splitlines()]
    key = ("bsb", "account_number", "currency")
    assert sorted(opened, key=lambda a: [a[k] for k in key]) == committed
