"""One RabbitMQ user per tenant, allowed to write only `<tenant_id>.*` routing keys on `payments`.

RabbitMQ enforces it: the topic permission refuses any other routing key (403 ACCESS_REFUSED), and the
`user_id` property must equal the login (406 PRECONDITION_FAILED), so the consumer can trust `user_id`.
"""

import re
import secrets

USER_PREFIX = "tenant-"


def broker_user(tenant_id: str) -> str:
    return f"{USER_PREFIX}{tenant_id}"


def write_pattern(tenant_id: str) -> str:
    return f"^{re.escape(tenant_id)}\\."


def new_password() -> str:
    return secrets.token_urlsafe(24)
