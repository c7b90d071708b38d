"""A row that reused a booked payment's reference was refused as a duplicate: on that payment's timeline (the trace,
`GET /v1/payments/{id}`, the console) it is what it is, another row refused, which moved no money, while this payment
was booked once; never a red "rejected" step of this payment (issue 37, item 7). The relay and the consumer as real
processes; the trace as the API and the console serve it."""

import json
from pathlib import Path

import pytest

from app.publisher.accept import submit_batch
from app.publisher.commands import SubmitBatch
from app.settings import Settings
from app.storage.unit_of_work import UnitOfWorkFactory
from app.tracing.lookup import PaymentQuery
from app.tracing.service import trace_payment
from tests.utils.admin import admin_client, bearer, log_in, tenant_key
from tests.utils.cli import remit
from tests.utils.services import ServiceEnv, ServiceProcess, eventually
from tests.utils.world import booked_once, fresh_tenant, outbox_rows, payment_row, write_csv

pytestmark = pytest.mark.integration


async def test_a_refused_duplicate_row_is_not_a_failure_of_the_booked_payment(
    uow_factory: UnitOfWorkFactory, settings: Settings, service_env: ServiceEnv, logs_dir: Path, tmp_path: Path
) -> None:
    tenant = await fresh_tenant(uow_factory)
    first = payment_row(1)
    reference = first["payment_reference"]
    again = dict(first, amount_cents=999)  # the same reference twice in one file: line 3 is refused
    batch = await submit_batch(
        SubmitBatch(tenant, write_csv(tmp_path / "anz_1.csv", [first, again])), uow_factory, settings
    )
    assert (batch.accepted, batch.rejected_count) == (1, 1)
    [accepted] = await outbox_rows(uow_factory, batch.correlation_id)
    processes = [
        ServiceProcess.consumer(service_env.env(), logs_dir / "consumer.log"),
        ServiceProcess.relay(service_env.env(), logs_dir / "relay.log"),
    ]
    try:
        await eventually(booked_once(uow_factory, accepted.message_id), timeout=90)
    finally:
        for process in processes:
            process.stop()
    later_rows = [first, payment_row(2)]  # a later file: that row refused (already accepted), the other accepted
    later = await submit_batch(
        SubmitBatch(tenant, write_csv(tmp_path / "anz_2.csv", later_rows)), uow_factory, settings
    )
    assert (later.accepted, later.rejected_count) == (1, 1)

    trace = await trace_payment(uow_factory, PaymentQuery(reference))
    assert trace.state == "processed"
    stages = [e.stage for e in trace.events]
    assert "rejected" not in stages, stages
    assert stages == ["accepted", "duplicate_refused", "published", "processed", "duplicate_refused"]
    same_file, later_file = [e for e in trace.events if e.stage == "duplicate_refused"]
    assert (same_file.details["source_name"], same_file.details["row_number"]) == ("anz_1.csv", 3)
    assert (later_file.details["source_name"], later_file.details["correlation_id"]) == (
        "anz_2.csv",
        later.correlation_id,
    )
    for event in (same_file, later_file):
        assert "refused as a duplicate of this payment" in event.summary
        assert "moved no money" in event.summary
    assert "this payment was booked once" in later_file.summary  # by then it was

    async with admin_client(settings) as client:
        key = await tenant_key(uow_factory, tenant)
        api = await client.get(f"/v1/payments/{reference}", headers=bearer(key))
        assert api.status_code == 200, api.text
        assert [e["stage"] for e in api.json()["events"]] == stages
        await log_in(client, key)
        page = (await client.get(f"/console/payments?id={reference}")).text
    assert 'class="stage stage-rejected"' not in page
    assert page.count('class="stage stage-duplicate_refused"') == 2
    assert "duplicate refused" in page

    code, out = await remit(service_env.env(COLUMNS="300"), "trace", reference, "--json")
    assert code == 0, out
    assert [e["stage"] for e in json.loads(out)["events"]] == stages
