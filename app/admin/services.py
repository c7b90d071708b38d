"""What the admin app holds while it runs: the engine, the replay publisher and the console sessions."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta

import aio_pika
from sqlalchemy.ext.asyncio import AsyncEngine

from app.admin.caller import Caller
from app.admin.config import AdminSettings
from app.admin.scope import uow_for
from app.admin.sessions import SessionStore
from app.deadletters.replay import ReplayPolicy
from app.deadletters.republish import AmqpReplayPublisher, ReplayPublisher
from app.messaging.connection import connect, login_of, publisher_channel
from app.messaging.topology import Topology, declare_topology
from app.settings import Settings
from app.storage.engine import make_engine, wait_for_database
from app.storage.unit_of_work import UnitOfWorkFactory


class DryRunPublisher:
    """Handed to dry runs, so a bug in the replay rules could never publish during a preview."""

    async def publish(self, message: aio_pika.Message, routing_key: str) -> None:
        raise AssertionError("a dry run never publishes")


@dataclass(frozen=True, slots=True)
class AdminServices:
    settings: Settings
    admin: AdminSettings
    engine: AsyncEngine
    publisher: ReplayPublisher
    sessions: SessionStore

    def uow(self, caller: Caller) -> UnitOfWorkFactory:
        """The caller's unit of work: every read or change made for a caller goes through here."""
        return uow_for(self.engine, caller.tenant_id)

    @property
    def keys_uow(self) -> UnitOfWorkFactory:
        """For the API key lookup, which happens before the caller is known."""
        return uow_for(self.engine, None)

    @property
    def replay_user(self) -> str:
        """Replays publish as the service's own login, which the consumer trusts for any tenant."""
        return login_of(self.settings.amqp_url)

    @property
    def replay_policy(self) -> ReplayPolicy:
        return ReplayPolicy(budget=self.settings.replay_budget, retention_days=self.settings.retention_days)

    def publisher_for(self, dry_run: bool) -> ReplayPublisher:
        return DryRunPublisher() if dry_run else self.publisher


@asynccontextmanager
async def running_services(settings: Settings, admin: AdminSettings) -> AsyncIterator[AdminServices]:
    engine = make_engine(settings.database_url, pool_size=5)
    try:
        await wait_for_database(engine)
        connection = await connect(settings.amqp_url, "remit-admin")
        try:
            channel = await publisher_channel(connection)
            await declare_topology(channel, Topology.from_settings(settings))
            sessions = SessionStore(
                idle=timedelta(minutes=admin.session_idle_minutes), max_age=timedelta(hours=admin.session_max_hours)
            )
            publisher = AmqpReplayPublisher(channel, settings.exchange)
            yield AdminServices(settings, admin, engine, publisher, sessions)
        finally:
            await connection.close()
    finally:
        await engine.dispose()
