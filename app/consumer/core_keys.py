"""The idempotency key a payment carries to the core. Stable forever: the key is how the core recognises a retry.

Changing this function, even its spelling of the UUID, would make every payment in flight, in a delay queue
or in the dead-letter store look new to the core, and a retry of one it already booked would pay twice.

A payment has one key per generation. Generation 1 is the key every payment is first sent under; a later one
exists only when a forced replay opened it, after the core refused the key before it for good (the core keeps a
refusal under its key forever, docs/core-banking.md rule 2), and is recorded beside the message_id
(`transfer_key_generations`, app/deadletters/replay.py). The consumer sends a payment under its latest
generation, so that once the cause of a refusal is fixed the core sees a new attempt, while every earlier key
can only ever be answered with its refusal.
"""

from uuid import UUID

FIRST_GENERATION = 1


def transfer_key(tenant_id: str, message_id: UUID, generation: int = FIRST_GENERATION) -> str:
    """`<tenant_id>:<message_id>`, the message_id in its canonical lower-case 8-4-4-4-12 form; from generation 2
    on, `<tenant_id>:<message_id>:<generation>`.

    Two tenants that use the same message_id are two transfers, as they are two payments in
    `processed_messages`. A tenant id never holds ':' (contracts: `[a-z0-9][a-z0-9_-]{1,31}`), nor does a UUID,
    so the key splits back unambiguously at its colons; at most 80 characters, all of them characters a URL path
    carries unescaped, as the core's contract asks (docs/core-banking.md).
    """
    if generation < FIRST_GENERATION:
        raise ValueError(f"a transfer key generation is at least {FIRST_GENERATION}, not {generation}")
    key = f"{tenant_id}:{message_id}"
    return key if generation == FIRST_GENERATION else f"{key}:{generation}"
