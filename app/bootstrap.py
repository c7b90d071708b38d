"""The one composition root: every process's object graph, built from one Settings over shared resource
set-up. Entry points (app/main.py, app/deadletters/archiver_app.py, app/admin/app.py, app/cli/) parse, call one
function here, call a service function and print; nothing is built at import time.

Each port has an override in `Ports` (None: the adapter Settings describe), so a test or the chaos rig swaps
in a fake or a fault hook and nothing else changes. docs/architecture.md maps processes, ports and adapters.
"""

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta

from aio_pika.abc import AbstractChannel
from faststream.rabbit import RabbitBroker
from faststream.rabbit.schemas import Channel
from prometheus_client import start_http_server

from app.admin.services import AdminServices
from app.admin.sessions import SessionStore
from app.consumer.admission import DirectAdmission
from app.consumer.breaker import CircuitBreaker
from app.consumer.committer import GroupCommitter
from app.consumer.core_banking import CoreBanking, LedgerCoreBanking
from app.consumer.core_http import HttpCoreBanking, core_ready
from app.consumer.core_link import CoreLink, breaker_metrics, show_breaker
from app.consumer.core_outcomes import CoreKeys, HttpCoreKeys
from app.consumer.delivery import BodyLimits
from app.consumer.failures import FailureRouter, Republisher, RetryPolicy
from app.consumer.intake import IntakePolicy
from app.consumer.pool_connections import PoolConnections
from app.consumer.pools import PoolManager, WorkerSettings
from app.consumer.processor import PaymentProcessor
from app.consumer.republisher import AmqpRepublisher
from app.deadletters.archiver import register_archiver
from app.deadletters.incoming import Archiving
from app.deadletters.replay import ReplayPolicy
from app.deadletters.republish import AmqpReplayPublisher, DryRunPublisher, ReplayPublisher
from app.deadletters.retention import RetentionPolicy
from app.deadletters.store import DeadLetterArchive
from app.messaging.broker_peek import BrokerPeek
from app.messaging.connection import login_of, vhost_of
from app.messaging.management import Management
from app.messaging.reconnect import BackingOffRabbitBroker
from app.messaging.topology import Topology
from app.observability import queue_gauges
from app.observability.live_queues import QueueWatch, nothing_taken
from app.observability.metrics import Metrics, ObserveCore, ignore_core
from app.observability.pauses import watch_pauses
from app.observability.shared_snapshot import SharedSnapshot, private_directory
from app.observability.store_gauges import refresh_forever
from app.payment_rules import PaymentRules
from app.publisher.fair_selection import QueueDepths
from app.publisher.relay import OutboxRelay
from app.resources import Broker, Database, open_broker, open_core_client, open_database
from app.settings import Settings
from app.startup_heap import freeze_startup_heap
from app.storage.unit_of_work import UnitOfWorkFactory
from app.tenancy.admin import TenantAdmin, TenantDefaults
from app.tenancy.directory import TenantDirectory
from app.tenancy.identity import PublisherIdentity
from app.tenancy.routing import route_every_tenant

log = logging.getLogger("remit.bootstrap")
Hook = Callable[[], None]
CONSUMER_GRACEFUL_SECONDS = 30.0  # FastStream's graceful timeout and the longest the pools may take to settle
POOL_SYNC_SECONDS = 2.0
BACKGROUND_NICENESS = 19  # the lowest priority: a gauge's peek waits while payments need the CPU
ARCHIVER_PREFETCH = 32  # enough deliveries in flight to keep a few connections busy; dead letters are rare


def no_hook() -> None:
    """What runs at a fault point in production: nothing (the crash tests kill the process there)."""


@dataclass(frozen=True, slots=True)
class Ports:
    """What a process talks to, when it is not what Settings describe."""

    core_banking: CoreBanking | None = None  # default: REMIT_CORE_BANKING_URL's core, else the in-process ledger
    republisher: Republisher | None = None  # the consumer's retries and dead letters; default: AMQP
    replay_publisher: ReplayPublisher | None = None  # replays (CLI, admin app); default: AMQP with confirms
    management: Management | None = None  # RabbitMQ's management API; default: REMIT_RABBITMQ_MANAGEMENT_URL
    metrics: Metrics | None = None  # default: a fresh registry
    after_commit: Hook = no_hook  # the consumer, after a group commit and before its acks
    after_core: Hook = no_hook  # the consumer, after the core answered a booking and before remit's commit
    after_dead_letter: Hook = no_hook  # the consumer, after the broker confirmed a dead letter, before its ack
    after_publish: Hook = no_hook  # the relay, after the broker confirmed a batch, before its marks commit


def management_api(settings: Settings, ports: Ports) -> Management:
    return ports.management or Management(settings.rabbitmq_management_url)


def queue_watch(settings: Settings, ports: Ports, pools: PoolManager | None = None) -> QueueWatch:
    """What the live-queue views read: the management API, the broker's own peek, the topology. With `pools`
    (the consumer's gauges, a chore beside payments): a queue they take messages from needs no peek, and the
    peek's CLI runs at the lowest CPU priority."""
    return QueueWatch(
        management_api(settings, ports),
        BrokerPeek(settings.rabbitmq_queues_command, niceness=0 if pools is None else BACKGROUND_NICENESS),
        Topology.from_settings(settings),
        vhost_of(settings.amqp_url),
        nothing_taken if pools is None else pools.newest_taken,
    )


def publisher_identity(settings: Settings) -> PublisherIdentity:
    """remit's own login and the configured trusted publishers, in this deployment's vhost."""
    trusted = frozenset({login_of(settings.amqp_url), *settings.trusted_publishers})
    return PublisherIdentity(trusted, vhost_of(settings.amqp_url))


# ---------------------------------------------------------------- the consumer


@asynccontextmanager
async def core_link(settings: Settings, ports: Ports, observe: ObserveCore = ignore_core) -> AsyncIterator[CoreLink]:
    """The consumer's core banking for as long as it runs: an injected adapter; else, with
    REMIT_CORE_BANKING_URL, the HTTP adapter on one pooled client with its circuit breaker (client and probe
    closed on exit); else the in-process ledger."""
    if ports.core_banking is not None:
        yield CoreLink(ports.core_banking)
        return
    if not settings.core_banking_url:
        yield CoreLink(LedgerCoreBanking())
        return
    async with open_core_client(settings) as client:
        breaker = CircuitBreaker(
            lambda: core_ready(client),
            settings.core_banking_breaker_threshold,
            settings.core_banking_probe_interval_seconds,
        )
        try:
            batch_max, parallel = settings.core_banking_batch_max, settings.core_banking_parallel_requests
            adapter = HttpCoreBanking(client, breaker, batch_max, observe, parallel)
            yield CoreLink(adapter, breaker)
        finally:
            await breaker.aclose()


@dataclass(slots=True)
class ConsumerServices:
    processor: PaymentProcessor
    committer: GroupCommitter
    identity: PublisherIdentity


def build_consumer(
    settings: Settings,
    uow_factory: UnitOfWorkFactory,
    publish_channel: AbstractChannel | None = None,
    *,
    republisher: Republisher | None = None,
    core_banking: CoreBanking | None = None,
    metrics: Metrics | None = None,
    after_commit: Hook = no_hook,
    after_core: Hook = no_hook,
    after_dead_letter: Hook = no_hook,
) -> ConsumerServices:
    """The consumer's decisions, without I/O of their own: tests call it with fakes."""
    topology = Topology.from_settings(settings)
    identity = publisher_identity(settings)
    metrics = metrics or Metrics()
    if republisher is None:
        assert publish_channel is not None, "a publish channel or a republisher is required"
        republisher = AmqpRepublisher(publish_channel, topology, login_of(settings.amqp_url))
    committer = GroupCommitter(
        uow_factory,
        core_banking or LedgerCoreBanking(),
        settings.commit_batch_max,
        after_commit=after_commit,
        observe=metrics.observe_stage,
        after_core=after_core,
        concurrency=settings.commit_flushes_in_use(),
        keyed_core=bool(settings.core_banking_url),
    )
    failures = FailureRouter(
        uow_factory,
        republisher,
        RetryPolicy(tuple(settings.retry_delays_seconds), settings.max_retries),
        identity,
        after_dead_letter=after_dead_letter,
    )
    processor = PaymentProcessor(
        committer,
        failures,
        IntakePolicy(settings.max_message_bytes, identity, PaymentRules.from_settings(settings)),
        TenantDirectory(uow_factory, settings.tenant_refresh_seconds),
        DirectAdmission(uow_factory, identity, settings.tenant_refresh_seconds),
        metrics,
    )
    return ConsumerServices(processor, committer, identity)


def body_limits(settings: Settings) -> BodyLimits:
    return BodyLimits(settings.max_message_bytes, settings.oversize_prefix_bytes, settings.pool_max_held_bytes)


def consumer_broker(settings: Settings) -> RabbitBroker:
    # FastStream runs the process (lifespan, HTTP, signals) and checks the broker for /readyz; the queue
    # workers consume on channels of their own (app/consumer/worker.py).
    return BackingOffRabbitBroker(
        settings.amqp_url,
        default_channel=Channel(on_return_raises=True),
        client_properties={"connection_name": "remit-consumer process"},
        graceful_timeout=CONSUMER_GRACEFUL_SECONDS,
        log_level=logging.DEBUG,
    )


@dataclass(frozen=True, slots=True)
class RunningConsumer:
    database: Database
    services: ConsumerServices
    pools: PoolManager
    core: CoreLink

    def consuming(self) -> bool:
        """The committer runs and some pool consumes, or every pool is paused by the breaker (/readyz says so
        in its own check, `core_banking`)."""
        paused = self.pools.paused_by is not None
        return self.services.committer.running() and (self.pools.any_running() or paused)


@asynccontextmanager
async def running_consumer(settings: Settings, ports: Ports) -> AsyncIterator[RunningConsumer]:
    """The consumer, consuming; on exit the workers settle what they hold (ack after commit, bounded in time),
    then the committer, the connection and the engines stop, in that order."""
    metrics = ports.metrics or Metrics()
    # Each flush in flight holds a connection per tenant in it: the pool grows with the flushes (10 at 1-5).
    pool_size = max(10, 2 * settings.commit_flushes_in_use())
    async with (
        open_database(settings, pool_size) as database,
        open_broker(settings, "remit-consumer") as broker,
        core_link(settings, ports, metrics.observe_core) as core,
    ):
        # Tenant commits as remit_app; pool sync, heartbeats, gauges and tenant routing as remit_system.
        services = build_consumer(
            settings,
            database.uow,
            broker.channel,
            republisher=ports.republisher,
            core_banking=core.core_banking,
            metrics=metrics,
            after_commit=ports.after_commit,
            after_core=ports.after_core,
            after_dead_letter=ports.after_dead_letter,
        )
        await route_every_tenant(database.uow, broker.connection, broker.topology)
        await services.committer.start()
        workers = WorkerSettings(
            settings.tier_workers,
            settings.prefetch,
            settings.commit_batch_max,
            body_limits(settings),
            settings.batch_interval_seconds,
        )
        pools = PoolManager(
            broker.connection,
            PoolConnections(settings.amqp_url, "remit-consumer"),
            broker.topology,
            workers,
            services.processor.process_batch,
            metrics.observe_stage,
            services.identity.is_trusted,
        )
        if core.breaker is not None:  # open: every pool pauses (the broker keeps the payments); closed: resume
            show_breaker(metrics, core.breaker.status)
            core.breaker.subscribe(pools.follow_breaker)
            core.breaker.subscribe(breaker_metrics(metrics))
        try:
            freeze_startup_heap()  # everything the service needs exists now; the first delivery comes next
            await pools.sync(database.uow)  # before the first delivery: a pool an admin stopped stays stopped
            queues = queue_watch(settings, ports, pools)
            # One process of the deployment on this host refreshes the queue gauges at a time; the others show
            # its snapshot (--workers N would otherwise start N broker CLIs per queue at once).
            shared = SharedSnapshot(
                f"{settings.amqp_url} {settings.database_url}", settings.queue_metrics_seconds, private_directory()
            )
            background = [
                asyncio.create_task(refresh_forever(database.uow, metrics), name="store-gauges"),
                asyncio.create_task(
                    queue_gauges.refresh_forever(queues, database.uow, metrics, settings.queue_metrics_seconds, shared),
                    name="queue-gauges",
                ),
                asyncio.create_task(pools.run_forever(database.uow, POOL_SYNC_SECONDS), name="pool-sync"),
                asyncio.create_task(watch_pauses(metrics.observe_pause), name="pause-watch"),
            ]
            try:
                yield RunningConsumer(database, services, pools, core)
            finally:
                for task in background:
                    task.cancel()
                if core.breaker is not None:  # no pause or resume may race the pools' last stop
                    await core.breaker.aclose()
                try:
                    await asyncio.wait_for(pools.stop_all(), CONSUMER_GRACEFUL_SECONDS)
                except TimeoutError:
                    log.warning(
                        "workers still busy after %.0fs; their unacked deliveries go back", CONSUMER_GRACEFUL_SECONDS
                    )
        finally:
            await services.committer.stop()


# ---------------------------------------------------------------- the relay and the archiver


@asynccontextmanager
async def running_relay(settings: Settings, ports: Ports, once: bool = False) -> AsyncIterator[OutboxRelay]:
    """The outbox relay on the system role (it publishes every tenant's rows); `once` drains the outbox, so it
    never waits for the consumers (no backpressure) and serves no metrics."""
    async with open_database(settings, pool_size=2) as database, open_broker(settings, "remit-relay") as broker:
        fair, watermark = settings.relay_fair_share, settings.relay_queue_high_watermark
        backpressure = fair and watermark > 0 and not once
        depths = QueueDepths(broker.connection, broker.topology, watermark) if backpressure else None
        if settings.relay_metrics_port and not once:
            start_http_server(settings.relay_metrics_port, addr="127.0.0.1")
        yield OutboxRelay(
            database.system_engine,
            broker.channel,
            settings.exchange,
            login_of(settings.amqp_url),
            settings.relay_batch_size,
            after_publish=ports.after_publish,
            fair=fair,
            queue_depths=depths,
        )


def archiver_broker(settings: Settings) -> RabbitBroker:
    """FastStream's broker with the archiver's subscriber on the dead-letter queue (connected when it runs).

    Its lines (a delivery received, processed) go through remit's logging: FastStream's own handler writes the
    delivery's AMQP message_id as it came, and a direct publisher chooses that (an ESC sequence reached the
    archiver's log raw); remit's handler masks and escapes (app/logs.py)."""
    broker = BackingOffRabbitBroker(
        settings.amqp_url,
        default_channel=Channel(prefetch_count=ARCHIVER_PREFETCH),
        client_properties={"connection_name": "remit-archiver"},
        logger=logging.getLogger("remit.archiver.broker"),
    )
    register_archiver(broker, Topology.from_settings(settings))
    return broker


@asynccontextmanager
async def running_archive(settings: Settings) -> AsyncIterator[DeadLetterArchive]:
    """The store the archiver files dead letters in (the system scope), once the topology is declared: the
    subscriber declares only its queue, the exchange and binding come from the one topology."""
    async with open_database(settings, pool_size=4) as database:
        async with open_broker(settings, "remit-archiver-setup"):
            pass
        yield DeadLetterArchive(
            database.uow, Archiving(publisher_identity(settings), settings.dead_letter_body_max_bytes)
        )


# ---------------------------------------------------------------- the admin app and the CLI


def replay_policy(settings: Settings, core: CoreKeys | None = None) -> ReplayPolicy:
    """The replay rules' settings, and the external core's status query when there is one (`replay_core`)."""
    return ReplayPolicy(budget=settings.replay_budget, retention_days=settings.retention_days, core=core)


@asynccontextmanager
async def replay_core(settings: Settings) -> AsyncIterator[CoreKeys | None]:
    """What a replay asks the external core before it decides (REMIT_CORE_BANKING_URL, remit's token and TLS):
    its status query on a client of its own, closed on exit; None with the in-process ledger."""
    if not settings.core_banking_url:
        yield None
        return
    async with open_core_client(settings) as client:
        yield HttpCoreKeys(client)


def retention_policy(settings: Settings, days: int | None = None, batch_size: int | None = None) -> RetentionPolicy:
    """The purge's policy: Settings' retention unless `days` says otherwise (`remit purge --days`)."""
    return RetentionPolicy(
        days=settings.retention_days if days is None else days,
        replay_window_days=settings.replay_window_days,
        retry_delays_seconds=tuple(settings.retry_delays_seconds),
        default_ttl_seconds=settings.default_ttl_seconds,
        batch_size=settings.purge_batch_size if batch_size is None else batch_size,
    )


def tenant_admin(settings: Settings, ports: Ports, uow: UnitOfWorkFactory, broker: Broker) -> TenantAdmin:
    """Tenants as operators change them: the record, the broker route and the tenant's RabbitMQ user."""
    return TenantAdmin(
        uow,
        broker.connection,
        broker.topology,
        management_api(settings, ports),
        vhost_of(settings.amqp_url),
        TenantDefaults(settings.default_ttl_seconds, settings.retention_days),
    )


@asynccontextmanager
async def running_admin(settings: Settings, ports: Ports) -> AsyncIterator[AdminServices]:
    """What the admin app holds while it runs: the database roles, the AMQP connection replays are published
    on (as the service's own login, like the relay), tenant administration and the console sessions."""
    async with (
        open_database(settings, pool_size=5) as database,
        open_broker(settings, "remit-admin") as broker,
        replay_core(settings) as core,
    ):
        yield AdminServices(
            settings=settings,
            database=database,
            publisher=ports.replay_publisher or AmqpReplayPublisher(broker.channel, settings.exchange),
            replay_policy=replay_policy(settings, core),
            sessions=SessionStore(
                idle=timedelta(minutes=settings.admin_session_idle_minutes),
                max_age=timedelta(hours=settings.admin_session_max_hours),
            ),
            tenants=tenant_admin(settings, ports, database.uow, broker),
            management=management_api(settings, ports),
            queues=queue_watch(settings, ports),
        )


@asynccontextmanager
async def operator_database(settings: Settings) -> AsyncIterator[UnitOfWorkFactory]:
    """An operator's command: the system scope (remit_system) unless it asks for a tenant's (remit_app)."""
    async with open_database(settings, pool_size=2, wait_seconds=10) as database:
        yield database.uow


@dataclass(frozen=True, slots=True)
class Operator:
    """What an operator's command works with besides the database: the broker, its management API, tenants."""

    uow: UnitOfWorkFactory
    broker: Broker
    management: Management
    tenants: TenantAdmin
    vhost: str


@asynccontextmanager
async def operator(settings: Settings, ports: Ports) -> AsyncIterator[Operator]:
    async with operator_database(settings) as uow, open_broker(settings, "remit-cli") as broker:
        tenants = tenant_admin(settings, ports, uow, broker)
        yield Operator(uow, broker, management_api(settings, ports), tenants, vhost_of(settings.amqp_url))


@asynccontextmanager
async def replay_publisher(settings: Settings, ports: Ports, dry_run: bool) -> AsyncIterator[ReplayPublisher]:
    """An operator's replays: a confirming publisher on the payments exchange; a dry run does not connect."""
    if dry_run:
        yield DryRunPublisher()
    elif ports.replay_publisher is not None:
        yield ports.replay_publisher
    else:
        async with open_broker(settings, "remit-dlq-replay") as broker:
            yield AmqpReplayPublisher(broker.channel, settings.exchange)
