"""A far-future `timestamp_utc` must not break retries or replays: the AMQP expiration remit computes is
clamped to what RabbitMQ accepts (3.10 refuses more than 315,360,000,000 ms with 406 and closes the
channel; observed), so no body can close a publisher channel.

The clock-skew rule dead-letters such a payment at once, so to reach the retry path these tests run the
consumer with a skew bound of 100 years: the clamp must hold on its own.
"""

import asyncio
from pathlib import Path

import pytest
import typer
from aio_pika.abc import AbstractChannel
from typer.testing import CliRunner

from app.cli.dlq import dlq_app
from app.messaging.topology import Topology
from app.settings import Settings, get_settings
from app.storage.unit_of_work import UnitOfWorkFactory
from tests.utils.dead_letters import archive_as_consumer
from tests.utils.factories import make_wire_dict
from tests.utils.services import ServiceEnv, ServiceProcess, eventually
from tests.utils.world import attempts_for, booked_once, fresh_tenant, ledger_count, send_payment

pytestmark = pytest.mark.integration

cli = typer.Typer()
cli.add_typer(dlq_app, name="dlq")
YEAR_2099 = "2099-01-01T00:00:00Z"
MAX_EXPIRATION_MS = 4_294_967_295  # 2^32 - 1: longer than any TTL the contract allows, far under 3.10's limit


async def test_a_retry_of_a_far_future_payment_is_published_and_booked_once(
    service_env: ServiceEnv, uow_factory: UnitOfWorkFactory, settings: Settings, logs_dir: Path
) -> None:
    tenant = await fresh_tenant(uow_factory)
    wire = make_wire_dict(tenant_id=tenant, timestamp_utc=YEAR_2099, creditor_account="555000444")
    env = service_env.env(
        REMIT_MAX_CLOCK_SKEW_SECONDS=str(100 * 365 * 86_400),
        TEST_CORE_FLAKY_ACCOUNTS='{"555000444": 1}',  # the first attempt times out: one retry
    )
    consumer = ServiceProcess.consumer(env, logs_dir / "consumer.log")
    try:
        await send_payment(settings, wire)
        await eventually(booked_once(uow_factory, wire["message_id"]), timeout=30)
        await asyncio.sleep(1.0)  # a channel closed by the retry would show as redeliveries now
    finally:
        consumer.stop()
    assert await ledger_count(uow_factory, wire["message_id"]) == 1
    attempts = await attempts_for(uow_factory, wire["message_id"])
    assert [(a.attempt, a.outcome) for a in attempts] == [(1, "retrying")]
    assert "PRECONDITION_FAILED" not in consumer.log_path.read_text()


async def test_a_replay_of_a_far_future_dead_letter_is_published_with_a_clamped_expiration(
    uow_factory: UnitOfWorkFactory,
    settings: Settings,
    channel: AbstractChannel,
    database_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tenant = await fresh_tenant(uow_factory)
    wire = make_wire_dict(tenant_id=tenant, timestamp_utc=YEAR_2099)
    dead_letter_id = await archive_as_consumer(uow_factory, wire, "permanent_failure")

    monkeypatch.setenv("REMIT_DATABASE_URL", database_url)
    monkeypatch.setenv("REMIT_AMQP_URL", settings.amqp_url)
    monkeypatch.setenv("USER", "hostile-tester")
    get_settings.cache_clear()
    try:
        result = await asyncio.to_thread(CliRunner().invoke, cli, ["dlq", "replay", str(dead_letter_id), "--force"])
    finally:
        get_settings.cache_clear()
    assert result.exit_code == 0, result.output
    assert "replayed" in result.output

    queue = await channel.get_queue(Topology.from_settings(settings).tier_queue("basic"))
    replayed = await queue.get(no_ack=True, timeout=10)
    assert replayed.message_id == wire["message_id"]
    assert isinstance(replayed.expiration, float)  # seconds, as aio-pika decodes the AMQP property
    assert replayed.expiration * 1000 == pytest.approx(MAX_EXPIRATION_MS, abs=1)
    assert await ledger_count(uow_factory, wire["message_id"]) == 0
