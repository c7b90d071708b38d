"""What the admin app holds while it runs (app/bootstrap.py builds it): the database roles, the replay
publisher, tenant administration, the management API, the live-queue views and the console sessions."""

from dataclasses import dataclass

from app.admin.caller import Caller
from app.admin.scope import uow_for
from app.admin.sessions import SessionStore
from app.deadletters.replay import ReplayPolicy
from app.deadletters.republish import ReplayPublisher
from app.messaging.connection import login_of, vhost_of
from app.messaging.management import Management
from app.observability.live_queues import QueueWatch
from app.resources import Database
from app.settings import Settings
from app.storage.unit_of_work import UnitOfWorkFactory
from app.tenancy.admin import TenantAdmin


@dataclass(frozen=True, slots=True)
class AdminServices:
    settings: Settings
    database: Database
    publisher: ReplayPublisher
    replay_policy: ReplayPolicy
    sessions: SessionStore
    tenants: TenantAdmin  # on the system role: only admin keys reach it
    management: Management
    queues: QueueWatch

    def uow(self, caller: Caller) -> UnitOfWorkFactory:
        """The caller's unit of work: every read or change made for a caller goes through here."""
        return uow_for(self.database.uow, caller.tenant_id)

    @property
    def system_uow(self) -> UnitOfWorkFactory:
        """Not bound to a caller: for the API key lookup, which happens before the caller is known, and for
        shared infrastructure (worker pools) that the service filters for a tenant itself."""
        return self.database.uow

    @property
    def replay_user(self) -> str:
        """Replays publish as the service's own login, which the consumer trusts for any tenant."""
        return login_of(self.settings.amqp_url)

    @property
    def vhost(self) -> str:
        return vhost_of(self.settings.amqp_url)
