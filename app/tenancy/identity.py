"""Who published a message, as RabbitMQ vouches for it: the only thing that decides a message's tenant.

RabbitMQ checks the AMQP `user_id` property against the login (406 otherwise), so `user_id` names the
real publisher; absent, it names nobody. A trusted publisher is remit itself (the login of
REMIT_AMQP_URL: relay, consumer retries, replays) or a login listed in REMIT_TRUSTED_PUBLISHERS; it may
publish for any tenant, and only its `remit-*` headers are believed. A tenant's own user publishes for
that tenant alone, in this deployment's vhost alone.
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from app.messaging import headers
from app.tenancy.broker_users import tenant_of_user
from contracts.message import TENANT_ID_PATTERN

# How a delivery's tenant was decided (stored with each dead letter as `tenant_basis`).
TRUSTED: Final = "trusted"  # a trusted publisher named it in our own headers
LOGIN: Final = "login"  # the tenant's own RabbitMQ user published it
ROUTING_KEY: Final = "routing_key"  # no user_id: the key it was published with, which RabbitMQ authorised
NOBODY: Final = "none"  # some other login: no tenant can be held to it
LEGACY: Final = "legacy"  # archived before identities were recorded (migration 0009): the header's claim

_TENANT = re.compile(TENANT_ID_PATTERN)


@dataclass(frozen=True, slots=True)
class Attribution:
    tenant: str | None
    basis: str


@dataclass(frozen=True, slots=True)
class PublisherIdentity:
    trusted: frozenset[str]
    vhost: str

    def is_trusted(self, user_id: str | None) -> bool:
        return user_id is not None and user_id in self.trusted

    def tenant_of(self, user_id: str | None) -> str | None:
        """The tenant whose own user published, or None (trusted, unknown or absent user)."""
        return tenant_of_user(user_id, self.vhost)

    def may_publish_for(self, user_id: str | None, tenant_id: str) -> bool:
        return self.is_trusted(user_id) or self.tenant_of(user_id) == tenant_id

    def attribute(
        self, user_id: str | None, routing_key: str | None, message_headers: Mapping[str, Any]
    ) -> Attribution:
        """The tenant any delivery belongs to, decided only by what RabbitMQ vouches for.

        - a trusted publisher: the tenant it names in our own headers (`remit-tenant`, else `tenantUUID`);
        - a tenant's own user: that tenant, whatever the body and headers say;
        - no user_id: the tenant of the routing key. A tenant's user may write only `<tenant>.*` (topic
          permission), and the delivered routing key is always the published one: also for a copy routed
          by a `CC` header (not authorised on 3.10) and after the broker dead-letters it. The `x-death`
          routing keys are not used: they include CC keys, and 3.10 keeps a client-supplied entry's;
        - any other login (another deployment's tenant, a stranger): no tenant.
        """
        if self.is_trusted(user_id):
            named = message_headers.get(headers.IDENTITY_TENANT) or message_headers.get(headers.TENANT)
            return Attribution(_tenant_id(named), TRUSTED)
        if user_id is not None:
            own = self.tenant_of(user_id)
            return Attribution(own, LOGIN if own else NOBODY)
        word, dot, _ = (routing_key or "").partition(".")
        return Attribution(_tenant_id(word) if dot else None, ROUTING_KEY)


def _tenant_id(value: object) -> str | None:
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    return value if isinstance(value, str) and _TENANT.match(value) else None
