"""The one composition root: builds the object graph from Settings. Tests call it with fakes."""

from dataclasses import dataclass

from aio_pika.abc import AbstractChannel
from sqlalchemy.ext.asyncio import AsyncEngine

from app.consumer.committer import GroupCommitter
from app.consumer.core_banking import CoreBanking, FailureRules, LedgerCoreBanking
from app.consumer.failures import FailureRouter, Republisher, RetryPolicy
from app.consumer.processor import PaymentProcessor
from app.consumer.republisher import AmqpRepublisher
from app.faults import KillAfter
from app.messaging.connection import login_of
from app.messaging.topology import Topology
from app.observability.metrics import Metrics
from app.settings import Settings
from app.storage.unit_of_work import SYSTEM, SqlUnitOfWork, UnitOfWork, UnitOfWorkFactory


def uow_factory_for(engine: AsyncEngine) -> UnitOfWorkFactory:
    def factory(tenant_id: str | None = SYSTEM) -> UnitOfWork:
        return SqlUnitOfWork(engine, tenant_id)

    return factory


def simulator_rules(settings: Settings) -> FailureRules:
    return FailureRules(
        closed_accounts=frozenset(settings.simulator_closed_accounts),
        flaky_accounts=settings.simulator_flaky_accounts,
        transient_rate=settings.simulator_transient_rate,
    )


@dataclass(slots=True)
class ConsumerServices:
    processor: PaymentProcessor
    committer: GroupCommitter


def build_consumer(
    settings: Settings,
    engine: AsyncEngine,
    publish_channel: AbstractChannel | None = None,
    *,
    republisher: Republisher | None = None,
    core_banking: CoreBanking | None = None,
    metrics: Metrics | None = None,
) -> ConsumerServices:
    uow_factory = uow_factory_for(engine)
    topology = Topology.from_settings(settings)
    metrics = metrics or Metrics()
    if republisher is None:
        assert publish_channel is not None, "a publish channel or a republisher is required"
        republisher = AmqpRepublisher(publish_channel, topology, login_of(settings.amqp_url))
    committer = GroupCommitter(
        uow_factory,
        core_banking or LedgerCoreBanking(simulator_rules(settings)),
        settings.commit_batch_max,
        after_commit=KillAfter("after commit, before ack", settings.fault_kill_after_commits),
        observe=metrics.observe_stage,
    )
    failures = FailureRouter(
        uow_factory,
        republisher,
        RetryPolicy(tuple(settings.retry_delays_seconds), settings.max_retries),
    )
    trusted = frozenset({login_of(settings.amqp_url), *settings.trusted_publishers})
    processor = PaymentProcessor(committer, failures, settings.max_message_bytes, trusted, metrics)
    return ConsumerServices(processor, committer)
