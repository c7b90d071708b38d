"""What makes two deliveries of one message_id the same payment: a digest of what it moves.

A redelivery, a retry or a replay carries the same content and is a duplicate. A different payment under
an id its tenant already used is not: acking it as a duplicate would drop it without a trace. Only the
fields that decide where money goes and how much are digested; the envelope's timestamp and the control
block (retry_count, ttl_seconds) legitimately differ between copies of one payment.
"""

import hashlib
import operator

from contracts import PaymentMessage

_FIELDS = (
    "correlation_id",
    "payment_reference",
    "amount_cents",
    "currency",
    "debtor_bsb",
    "debtor_account",
    "creditor_bsb",
    "creditor_account",
)


_VALUES = operator.attrgetter(*_FIELDS)


def payment_digest(payment: PaymentMessage) -> bytes:
    # The unit separator cannot occur in any of these fields (the contract's patterns exclude it).
    canonical = "\x1f".join(map(str, _VALUES(payment)))
    return hashlib.sha256(canonical.encode()).digest()
