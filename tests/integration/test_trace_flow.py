"""`remit trace` on a payment's real life: a file submitted, the relay, the consumer and the archiver as
processes, one payment failing through every retry into the dead-letter store and replayed by an
operator once the outage is over. The trace finds it by each of its three identifiers and shows every
stage in order with its time and delay; a payment published directly over AMQP is traced from what the
consumer recorded; account numbers are masked everywhere."""

import json
from pathlib import Path
from typing import Any

import pytest

from app.cli.dlq_views import to_json
from app.publisher.accept import submit_batch
from app.publisher.commands import SubmitBatch
from app.settings import Settings
from app.storage.unit_of_work import UnitOfWorkFactory
from app.tracing.lookup import PaymentQuery
from app.tracing.lookup_errors import PaymentNotFound
from app.tracing.model import PaymentTrace
from app.tracing.service import trace_payment
from tests.utils.cli import remit
from tests.utils.dead_letters import start_archiver, wait_for_dead_letters
from tests.utils.factories import make_wire_dict
from tests.utils.services import ServiceEnv, ServiceProcess, eventually
from tests.utils.tenant_users import TenantUsers
from tests.utils.world import booked_once, fresh_tenant, outbox_rows, payment_row, write_csv

pytestmark = pytest.mark.integration

OUTAGE = "900000777"  # the creditor account whose bank is down until the operator replays
# The file's lines: 1 is the header; the outage payment is on line 3, the invalid row on line 4.
OUTAGE_LINE, INVALID_LINE = 3, 4
# REMIT_RETRY_DELAYS_SECONDS of the test services (tests/utils/services.py) and the default 3 retries.
DELAYS = [0.2, 0.5, 1.0]
ATTEMPTS_FAILED = 4


async def test_a_payment_is_traced_through_retries_dead_letter_replay_and_processing(
    uow_factory: UnitOfWorkFactory,
    settings: Settings,
    service_env: ServiceEnv,
    tenant_users: TenantUsers,
    logs_dir: Path,
    tmp_path: Path,
) -> None:
    tenant = await fresh_tenant(uow_factory)
    rows = [
        payment_row(1),
        payment_row(2, creditor_account=OUTAGE),
        payment_row(3, amount_cents="12.50"),
        payment_row(4),
    ]
    batch = await submit_batch(SubmitBatch(tenant, write_csv(tmp_path / "anz_trace.csv", rows)), uow_factory, settings)
    accepted = {r.payment_reference: r.message_id for r in await outbox_rows(uow_factory, batch.correlation_id)}
    outage_ref, good_ref = rows[1]["payment_reference"], rows[0]["payment_reference"]
    direct = make_wire_dict(tenant_id=tenant, amount_cents=777)

    in_outage = service_env.env(TEST_CORE_FLAKY_ACCOUNTS=json.dumps({OUTAGE: 1000}))
    processes = [
        ServiceProcess.consumer(in_outage, logs_dir / "consumer.log"),
        ServiceProcess.relay(service_env.env(), logs_dir / "relay.log"),
        start_archiver(service_env.env(), logs_dir / "archiver.log"),
    ]
    try:
        [dead] = await wait_for_dead_letters(uow_factory, tenant, 1, timeout=90)
        await eventually(booked_once(uow_factory, accepted[good_ref]), timeout=60)
        processes[0].stop()  # the outage is over
        processes[0] = ServiceProcess.consumer(service_env.env(), logs_dir / "consumer-after.log")
        code, output = await remit(
            service_env.env(), "dlq", "replay", str(dead.dead_letter_id), "--why", "outage over", "--actor", "ops-alice"
        )
        assert code == 0, output
        await eventually(booked_once(uow_factory, accepted[outage_ref]), timeout=90)
        await tenant_users.publisher(tenant).publish(direct)
        await eventually(booked_once(uow_factory, direct["message_id"]), timeout=60)
    finally:
        for process in processes:
            process.stop()

    async def traced(identifier: str, row: int | None = None) -> PaymentTrace:
        return await trace_payment(uow_factory, PaymentQuery(identifier, row))

    by_id = await traced(str(accepted[outage_ref]))
    assert [e.stage for e in by_id.events] == [
        "accepted",
        "published",
        *["attempt_failed"] * ATTEMPTS_FAILED,
        "dead_lettered",
        "replayed",
        "processed",
    ]
    assert (by_id.state, by_id.origin, by_id.payment_reference) == ("processed", "bulk file", outage_ref)
    assert by_id.events[0].details["row_number"] == OUTAGE_LINE
    assert by_id.events[0].details["source_name"] == "anz_trace.csv"
    times = [e.at for e in by_id.events]
    assert times == sorted(times)
    failed = [e for e in by_id.events if e.stage == "attempt_failed"]
    assert [e.details["attempt"] for e in failed] == [1, 2, 3, 4]
    assert [e.details["outcome"] for e in failed] == ["retrying", "retrying", "retrying", "dead_lettered"]
    # Each retry came back no sooner than its delay queue's TTL after the failure before it.
    waited = [e.after_seconds for e in failed[1:]]
    assert all(w is not None and w >= delay for w, delay in zip(waited, DELAYS, strict=True)), waited
    dead_event = by_id.events[6]
    assert (dead_event.details["reason"], dead_event.details["dead_letter_id"]) == (
        "retries_exhausted",
        dead.dead_letter_id,
    )
    replayed = by_id.events[7]
    assert (replayed.details["actor"], replayed.details["why"]) == ("ops-alice", "outage over")
    assert by_id.events[8].details["attempt"] == 1  # a replay starts again at retry_count 0
    assert by_id.booking is not None
    assert by_id.booking.core_transfer_id is None
    assert by_id.debtor == "012-345 ******002"
    assert by_id.creditor == "033-001 ******777"
    shown = to_json(by_id)
    assert OUTAGE not in shown
    assert rows[1]["debtor_account"] not in shown

    # The same payment by its reference and by its batch row.
    for found in (await traced(outage_ref), await traced(batch.correlation_id, OUTAGE_LINE)):
        assert (found.message_id, [e.stage for e in found.events]) == (
            by_id.message_id,
            [e.stage for e in by_id.events],
        )

    good = await traced(good_ref)
    assert [e.stage for e in good.events] == ["accepted", "published", "processed"]
    assert good.events[-1].summary.endswith(", 10.01 AUD (1,001 cents)")  # the booking's amount, as people read it

    rejected = await traced(batch.correlation_id, INVALID_LINE)
    assert (rejected.state, rejected.message_id, rejected.origin) == ("rejected", None, "rejected at validation")
    assert "whole number of cents" in rejected.events[0].summary
    with pytest.raises(PaymentNotFound):
        await traced(batch.correlation_id, 99)

    # Published directly over AMQP: no outbox row; traced from what the consumer recorded.
    by_direct = await traced(direct["payment_reference"])
    assert (by_direct.origin, by_direct.state, [e.stage for e in by_direct.events]) == (
        "direct AMQP publish",
        "processed",
        ["processed"],
    )
    assert by_direct.message_id is not None
    assert str(by_direct.message_id) == direct["message_id"]

    await _the_cli_shows_the_same(service_env, batch.correlation_id, outage_ref, by_id)


async def _the_cli_shows_the_same(env: ServiceEnv, batch: str, reference: str, expected: PaymentTrace) -> None:
    code, output = await remit(env.env(), "trace", reference, "--json")
    assert code == 0, output
    shown: dict[str, Any] = json.loads(output)
    assert shown["message_id"] == str(expected.message_id)
    assert [e["stage"] for e in shown["events"]] == [e.stage for e in expected.events]
    assert OUTAGE not in output

    code, table = await remit(env.env(COLUMNS="200"), "trace", batch, "--row", str(OUTAGE_LINE))
    assert code == 0, table
    for text in ("attempt 4 failed", "retries_exhausted", "replayed by ops-alice", "why: outage over", "processed"):
        assert text in table, text
    assert OUTAGE not in table

    code, missing = await remit(env.env(), "trace", batch, "--row", "99")
    assert code == 2
    assert f"no payment row 99 of batch '{batch}'" in missing
