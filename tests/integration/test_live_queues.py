"""remit's queues live, on the real broker and database: depths, rates and the oldest message's age of a
queue with messages waiting; each tenant's payments in flight against its limit, counted as ingress
enforces it; a tenant's view holds its own queues and count only; and the same figures on /metrics."""

import asyncio
import contextlib
import itertools
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from aio_pika.abc import AbstractChannel, AbstractRobustConnection
from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncEngine

from app.bootstrap import Ports, queue_watch
from app.errors import LimitExceeded
from app.observability.in_flight import tenant_loads
from app.observability.live_queues import QueueFigures, QueueWatch
from app.observability.queue_overview import queue_overview
from app.resources import uow_factory_for
from app.settings import Settings
from app.storage.tables import tenants
from app.storage.unit_of_work import UnitOfWorkFactory
from tests.utils.exposition import sample
from tests.utils.factories import make_wire_dict, to_wire_bytes
from tests.utils.queues import accept_payments, publish_paced, require_broker_cli
from tests.utils.services import ServiceEnv, ServiceProcess, eventually
from tests.utils.world import fresh_tenant, route_tenant

pytestmark = pytest.mark.integration

FREE = "payments.work.free"


async def figures_of(watch: QueueWatch, name: str) -> QueueFigures:
    live = await watch.live(datetime.now(UTC), only={name})
    assert live.age_problem is None, live.age_problem
    (figures,) = live.queues
    return figures


async def test_depths_rates_and_oldest_age_of_a_queue_with_messages_waiting(
    channel: AbstractChannel, amqp: AbstractRobustConnection, settings: Settings, uow_factory: UnitOfWorkFactory
) -> None:
    require_broker_cli()
    tenant = await fresh_tenant(uow_factory, tier="free")
    watch = queue_watch(settings, Ports())
    bodies = [to_wire_bytes(make_wire_dict(tenant_id=tenant)) for _ in range(200)]
    accepted_at = datetime.now(UTC) - timedelta(seconds=120)
    started = datetime.now(UTC)
    publishing = asyncio.create_task(
        publish_paced(settings.amqp_url, "payments", f"{tenant}.payment", bodies, 20, accepted_at)
    )

    async def publishing_seen() -> bool:  # messages in per second, while they flow (about 20/s)
        return (await figures_of(watch, FREE)).publish_rate >= 2

    await eventually(publishing_seen, timeout=30, poll=1.0)
    assert (await figures_of(watch, FREE)).publish_rate <= 100
    await publishing

    async def all_waiting() -> bool:  # the management API's statistics lag by up to 5 s
        return (await figures_of(watch, FREE)).ready == len(bodies)

    await eventually(all_waiting, timeout=30, poll=1.0)
    waiting = await figures_of(watch, FREE)
    assert (waiting.unacknowledged, waiting.consumers) == (0, 0)
    elapsed = (datetime.now(UTC) - started).total_seconds()
    assert waiting.oldest_age_seconds is not None
    assert 120 <= waiting.oldest_age_seconds <= 120 + elapsed + 5  # the head's timestamp property

    taking = asyncio.create_task(take_slowly(amqp, FREE, per_second=20))
    try:

        async def delivering_seen() -> bool:
            figures = await figures_of(watch, FREE)
            return figures.deliver_rate >= 2 and figures.consumers == 1

        await eventually(delivering_seen, timeout=30, poll=1.0)
        assert (await figures_of(watch, FREE)).deliver_rate <= 100
    finally:
        taking.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await taking


async def take_slowly(amqp: AbstractRobustConnection, queue: str, per_second: float) -> None:
    channel = await amqp.channel()
    await channel.set_qos(prefetch_count=1)
    try:
        async with (await channel.get_queue(queue, ensure=False)).iterator() as messages:
            async for message in messages:
                await asyncio.sleep(1 / per_second)
                await message.ack()
    finally:
        await channel.close()


async def set_max_in_flight(uow: UnitOfWorkFactory, tenant: str, limit: int) -> None:
    async with uow() as u:
        await u.connection.execute(update(tenants).where(tenants.c.tenant_id == tenant).values(max_in_flight=limit))
        await u.commit()


async def test_in_flight_against_the_limit_is_what_ingress_enforces(
    uow_factory: UnitOfWorkFactory, tmp_path: Path
) -> None:
    tenant = await fresh_tenant(uow_factory)
    await set_max_in_flight(uow_factory, tenant, 10)

    async def load() -> tuple[int, int, float]:
        (mine,) = await tenant_loads(uow_factory, tenant, datetime.now(UTC))
        return mine.in_flight, mine.limit, mine.used

    await accept_payments(uow_factory, tenant, 9, tmp_path)
    assert await load() == (9, 10, 0.9)  # just below the limit
    await accept_payments(uow_factory, tenant, 1, tmp_path)
    assert await load() == (10, 10, 1.0)  # at it
    with pytest.raises(LimitExceeded):
        await accept_payments(uow_factory, tenant, 1, tmp_path)  # just above: refused
    assert await load() == (10, 10, 1.0)


async def test_a_tenant_sees_its_own_queues_and_count_only(
    channel: AbstractChannel,
    settings: Settings,
    uow_factory: UnitOfWorkFactory,
    app_engine: AsyncEngine,
    tmp_path: Path,
) -> None:
    a, b = await fresh_tenant(uow_factory, tier="premium"), await fresh_tenant(uow_factory, tier="premium")
    await accept_payments(uow_factory, b, 2, tmp_path)
    as_app = uow_factory_for(app_engine)  # remit_app: row-level security holds it to the tenant's rows
    watch = queue_watch(settings.model_copy(update={"rabbitmq_queues_command": []}), Ports())

    overview = await queue_overview(watch, as_app, a, datetime.now(UTC))
    assert [q.name for q in overview.live.queues] == ["payments.work.premium"]
    assert [(t.tenant_id, t.in_flight) for t in overview.tenants] == [(a, 0)]

    await route_tenant(settings.amqp_url, a, "premium", dedicated=True)
    async with uow_factory() as u:
        await u.connection.execute(update(tenants).where(tenants.c.tenant_id == a).values(dedicated_queue=True))
        await u.commit()
    overview = await queue_overview(watch, as_app, a, datetime.now(UTC))
    assert [q.name for q in overview.live.queues] == ["payments.work.premium", f"payments.work.tenant.{a}"]
    assert [str(q.kind) for q in overview.live.queues] == ["tier premium", f"dedicated {a}"]

    everything = await queue_overview(watch, uow_factory, None, datetime.now(UTC))
    assert {a, b} <= {t.tenant_id for t in everything.tenants}
    assert {"payments.dlq", "payments.retry.200ms", "payments.work.free"} <= {q.name for q in everything.live.queues}


TIERS = ("free", "basic", "premium", "enterprise")


@pytest.fixture
def consumer_with_quick_gauges(service_env: ServiceEnv, logs_dir: Path) -> Iterator[ServiceProcess]:
    process = ServiceProcess.consumer(service_env.env(REMIT_QUEUE_METRICS_SECONDS="1"), logs_dir / "consumer.log")
    yield process
    process.stop()


async def test_metrics_have_the_queue_and_in_flight_gauges(
    consumer_with_quick_gauges: ServiceProcess, settings: Settings, uow_factory: UnitOfWorkFactory, tmp_path: Path
) -> None:
    require_broker_cli()
    await consumer_with_quick_gauges.ready()
    tenant = await fresh_tenant(uow_factory)
    await accept_payments(uow_factory, tenant, 4, tmp_path)  # no relay runs: they stay in flight
    dead = [to_wire_bytes(make_wire_dict(tenant_id=tenant)) for _ in range(3)]
    a_minute_ago = datetime.now(UTC) - timedelta(seconds=60)
    await publish_paced(settings.amqp_url, "payments.dlx", "", dead, 50, a_minute_ago)  # no archiver runs

    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{consumer_with_quick_gauges.port}") as client:
        text = ""

        async def gauges_seen() -> bool:
            nonlocal text
            text = (await client.get("/metrics")).text
            dead_letters = sample(text, "remit_queue_messages", queue="payments.dlq", kind="dead-letter", state="ready")
            pools = [sample(text, "remit_queue_consumers", queue=f"payments.work.{t}", kind="tier") for t in TIERS]
            return dead_letters == 3 and pools == [1, 1, 1, 1]  # each queue's statistics lag on their own timer

        await eventually(gauges_seen, timeout=60, poll=1.0)
    age = sample(text, "remit_queue_oldest_message_age_seconds", queue="payments.dlq", kind="dead-letter")
    assert age is not None
    assert 60 <= age <= 180
    for tier in TIERS:
        assert sample(text, "remit_queue_oldest_message_age_seconds", queue=f"payments.work.{tier}", kind="tier") == 0
    assert sample(text, "remit_queue_publish_rate", queue="payments.retry.200ms", kind="retry") is not None
    assert sample(text, "remit_tenant_in_flight", tenant=tenant) == 4
    assert sample(text, "remit_tenant_in_flight_limit", tenant=tenant) == 100_000


@pytest.fixture
def two_consumers_counting_peeks(
    service_env: ServiceEnv, logs_dir: Path, tmp_path: Path
) -> Iterator[tuple[list[ServiceProcess], Path]]:
    """Two consumer processes of one deployment (the same vhost and database: `--workers 2` on one host), their
    gauges refreshed every second, each broker peek they run logged with its start, end and niceness."""
    require_broker_cli()
    calls = tmp_path / "peeks.log"
    cli = tmp_path / "rabbitmq-queues"
    cli.write_text(
        "#!/bin/bash\n"
        f'echo "$$ start $(date +%s.%N) $(nice)" >> {calls}\n'
        'rabbitmq-queues "$@"; rc=$?\n'
        f'echo "$$ end $(date +%s.%N)" >> {calls}\n'
        "exit $rc\n"
    )
    cli.chmod(0o700)
    env = service_env.env(REMIT_QUEUE_METRICS_SECONDS="1", REMIT_RABBITMQ_QUEUES_COMMAND=f'["{cli}"]')
    processes = [ServiceProcess.consumer(env, logs_dir / f"consumer-{n}.log") for n in (1, 2)]
    yield processes, calls
    for process in processes:
        process.stop()


def peeks(log: Path) -> list[tuple[float, float, int]]:
    """(start, end, niceness) of every finished peek."""
    starts: dict[str, tuple[float, int]] = {}
    finished = []
    for line in log.read_text().splitlines() if log.exists() else []:
        pid, what, at, *niceness = line.split()
        if what == "start":
            starts[pid] = (float(at), int(niceness[0]))
        elif pid in starts:
            start, nice = starts.pop(pid)
            finished.append((start, float(at), nice))
    return sorted(finished)


async def test_the_processes_of_one_deployment_peek_one_at_a_time_at_low_priority_and_all_show_the_figures(
    two_consumers_counting_peeks: tuple[list[ServiceProcess], Path], settings: Settings, uow_factory: UnitOfWorkFactory
) -> None:
    processes, calls = two_consumers_counting_peeks
    for process in processes:
        await process.ready()
    tenant = await fresh_tenant(uow_factory)
    dead = [to_wire_bytes(make_wire_dict(tenant_id=tenant)) for _ in range(2)]
    await publish_paced(settings.amqp_url, "payments.dlx", "", dead, 50, datetime.now(UTC) - timedelta(seconds=60))

    async def every_process_shows_them() -> bool:
        async with httpx.AsyncClient() as client:
            pages = [(await client.get(f"http://127.0.0.1:{p.port}/metrics")).text for p in processes]
        ages = [
            sample(page, "remit_queue_oldest_message_age_seconds", queue="payments.dlq", kind="dead-letter")
            for page in pages
        ]
        return all(age is not None and age >= 60 for age in ages)

    await eventually(every_process_shows_them, timeout=120, poll=0.5)

    async def several_peeks_done() -> bool:  # both processes refresh every second; a peek at nice 19 on a busy
        return len(peeks(calls)) >= 4  # machine may take seconds, so count peeks rather than wait a fixed time

    await eventually(several_peeks_done, timeout=120, poll=0.5)
    done = peeks(calls)
    assert {nice for _, _, nice in done} == {19}
    for (_, end, _), (next_start, _, _) in itertools.pairwise(done):
        assert end <= next_start, "two peeks ran at once: each process refreshed for itself"
