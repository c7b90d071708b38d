"""The idempotency key a payment carries to the core. Stable forever: the key is how the core recognises a retry.

Changing this function, even its spelling of the UUID, would make every payment in flight, in a delay queue
or in the dead-letter store look new to the core, and a retry of one it already booked would pay twice.
"""

from uuid import UUID


def transfer_key(tenant_id: str, message_id: UUID) -> str:
    """`<tenant_id>:<message_id>`, the message_id in its canonical lower-case 8-4-4-4-12 form.

    Two tenants that use the same message_id are two transfers, as they are two payments in
    `processed_messages`. A tenant id never holds ':' (contracts: `[a-z0-9][a-z0-9_-]{1,31}`), so the key
    splits back unambiguously at its first ':'; at most 69 characters, all of them characters a URL path
    carries unescaped, as the core's contract asks (docs/core-banking.md).
    """
    return f"{tenant_id}:{message_id}"
