"""One RabbitMQ user per tenant and deployment, allowed to write only `<tenant_id>.*` on `payments`.

RabbitMQ enforces it: the topic permission refuses any other routing key (403 ACCESS_REFUSED), and the
`user_id` property must equal the login (406 PRECONDITION_FAILED), so the consumer can trust `user_id`.

RabbitMQ users belong to the whole broker, not to a vhost, while a remit deployment is one vhost. The
user name therefore carries the vhost (`tenant-acme@remit_demo`): a second deployment on the same broker
(the demo, a staging install) gets users of its own instead of resetting this one's passwords.
"""

import re
import secrets

from contracts.message import TENANT_ID_PATTERN

USER_PREFIX = "tenant-"
_USER = re.compile(f"^{re.escape(USER_PREFIX)}(?P<tenant>{TENANT_ID_PATTERN[1:-1]})@(?P<vhost>.+)$")


def broker_user(tenant_id: str, vhost: str) -> str:
    return f"{USER_PREFIX}{tenant_id}@{vhost}"


def legacy_user(tenant_id: str) -> str:
    """The name a tenant's user had before names carried the vhost: one user for every deployment. The
    consumer no longer recognises it; `remit tenants rotate-credentials` replaces it."""
    return f"{USER_PREFIX}{tenant_id}"


def tenant_of_user(user: str | None, vhost: str) -> str | None:
    """The tenant a RabbitMQ login publishes for in this deployment, or None when it is not a tenant's user
    (another deployment's tenant user, the service, or nobody)."""
    match = _USER.match(user or "")
    if match is None or match["vhost"] != vhost:
        return None
    return match["tenant"]


def write_pattern(tenant_id: str) -> str:
    return f"^{re.escape(tenant_id)}\\."


def new_password() -> str:
    return secrets.token_urlsafe(24)
