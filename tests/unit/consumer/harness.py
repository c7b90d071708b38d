"""The consumer's whole decision logic in-process: built by app/bootstrap.py's build_consumer on the in-memory
unit of work, a republisher that keeps what it is given, and (by default) the embedded ledger. Deliveries
are made here as the worker would hand them over, without a broker."""

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from app.bootstrap import build_consumer
from app.consumer.committer import GroupCommitter
from app.consumer.core_banking import CoreBanking
from app.consumer.delivery import Delivery, Truncated
from app.consumer.processor import PaymentProcessor
from app.messaging import headers
from app.observability.metrics import Metrics
from app.settings import Settings
from app.storage.ports.attempts import AttemptRecord
from app.storage.ports.tenants import Tenant
from app.storage.unit_of_work import UnitOfWorkFactory
from app.tenancy.broker_users import broker_user
from contracts import PaymentMessage
from tests.fakes.attempts import TABLE as ATTEMPTS
from tests.fakes.database import FakeDatabase
from tests.fakes.idempotency import TABLE as RECORDS
from tests.fakes.idempotency import IdempotencyRow
from tests.fakes.ledger import TABLE as LEDGER
from tests.fakes.ledger import LedgerRow
from tests.fakes.republisher import FakeRepublisher
from tests.fakes.unit_of_work import FakeUnitOfWork, fake_uow_factory
from tests.utils.factories import make_message, new_tenant_id

SERVICE_LOGIN = "remit"  # remit's own RabbitMQ login: the relay's, the retries' and the replays' user_id
VHOST = "unit"
QUEUE = "payments.work.basic"
JSON = "application/json"


def unit_settings(**overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "amqp_url": f"amqp://{SERVICE_LOGIN}:secret@127.0.0.1:5672/{VHOST}",
        "retry_delays_seconds": [1.0, 5.0, 30.0],
        "max_retries": 3,
        "commit_batch_max": 256,
    }
    return Settings(**(values | overrides))


def relayed(payment: PaymentMessage, **changes: Any) -> Delivery:
    """The payment as remit's relay publishes it: the service's login, trusted for any tenant."""
    return _delivery(payment, SERVICE_LOGIN, changes)


def direct(payment: PaymentMessage, **changes: Any) -> Delivery:
    """The payment as its tenant publishes it itself, as its own RabbitMQ user."""
    return _delivery(payment, broker_user(payment.tenant_id, VHOST), changes)


def _delivery(payment: PaymentMessage, user_id: str, changes: dict[str, Any]) -> Delivery:
    values: dict[str, Any] = {
        "body": payment.to_wire(),
        "queue": QUEUE,
        "headers": {headers.TENANT: payment.tenant_id},
        "content_type": JSON,
        "message_id": str(payment.message_id),
        "user_id": user_id,
        "routing_key": f"{payment.tenant_id}.payment",
    }
    return Delivery(**(values | changes))


def wire(payment: PaymentMessage, **overrides: Any) -> bytes:
    """The payment's JSON with some of its values replaced, unvalidated (to break the contract)."""
    return json.dumps({**json.loads(payment.to_wire()), **overrides}).encode()


def truncated(payment: PaymentMessage, length: int) -> Delivery:
    """A delivery whose body was over the hard cap: the worker kept only a prefix (app/consumer/delivery.py)."""
    body = payment.to_wire()
    return relayed(payment, body=body[:100], truncated=Truncated(length, "0" * 64))


def expired_payment(tenant: str, **overrides: Any) -> PaymentMessage:
    """A payment whose TTL ran out a minute ago."""
    return make_message(
        tenant_id=tenant, timestamp_utc=datetime.now(UTC) - timedelta(hours=1, minutes=1), ttl_seconds=3600, **overrides
    )


@dataclass
class Consumer:
    db: FakeDatabase
    republisher: FakeRepublisher
    processor: PaymentProcessor
    committer: GroupCommitter
    settings: Settings
    opened: list[FakeUnitOfWork] = field(default_factory=list)  # every unit of work, in order

    async def deliver(self, *deliveries: Delivery) -> list[bool]:
        """One worker's batch: whether each delivery is settled (may be acked)."""
        return await self.processor.process_batch(list(deliveries))

    def ledger(self, tenant: str | None = None) -> list[LedgerRow]:
        rows: list[LedgerRow] = self.db.rows(LEDGER)
        return [r for r in rows if tenant is None or r.tenant_id == tenant]

    def record(self, payment: PaymentMessage) -> IdempotencyRow | None:
        row: IdempotencyRow | None = self.db.tables[RECORDS].get((payment.tenant_id, payment.message_id))
        return row

    def attempts(self) -> list[AttemptRecord]:
        return self.db.rows(ATTEMPTS)

    def reasons(self) -> list[str]:
        """The dead-letter reason of each delivery sent to the dead-letter exchange, in order."""
        return [d.headers[headers.REASON] for d in self.republisher.dead_lettered]

    @property
    def uow(self) -> UnitOfWorkFactory:
        return fake_uow_factory(self.db)


async def add_tenant(db: FakeDatabase, **limits: Any) -> Tenant:
    tenant_id = new_tenant_id()
    async with FakeUnitOfWork(db) as uow:
        await uow.tenants.add(tenant_id, f"Tenant {tenant_id}", "basic", 86_400)
        tenant = await uow.tenants.update(tenant_id, **limits) if limits else await uow.tenants.get(tenant_id)
        await uow.commit()
    assert tenant is not None
    return tenant


@asynccontextmanager
async def running_consumer(
    db: FakeDatabase, core_banking: CoreBanking | None = None, metrics: Metrics | None = None, **settings: Any
) -> AsyncIterator[Consumer]:
    config = unit_settings(**settings)
    republisher = FakeRepublisher()
    opened: list[FakeUnitOfWork] = []
    services = build_consumer(
        config,
        fake_uow_factory(db, opened.append),
        republisher=republisher,
        core_banking=core_banking,
        metrics=metrics,
    )
    await services.committer.start()
    try:
        yield Consumer(db, republisher, services.processor, services.committer, config, opened)
    finally:
        await services.committer.stop()
