"""The wire body of each message of a batch, written without serialising the whole model per row.

`PaymentMessage.to_wire()` (pydantic's model_dump_json) was a seventh of a row's CPU. Within a batch the
envelope's time, batch and tenant and the whole control part are the same for every message: they are
serialised once, by pydantic itself, from the batch's first message; each row adds its id and payload. The
payload's strings are safe to write between quotes as they are: the contract's patterns allow only ASCII
letters, digits and `_./-` (no quote, backslash or control character), and the amount is an int. The bytes
are the same as to_wire()'s, field order included (tests/unit/test_ingest_fast_path.py checks it property-wise).
"""

from contracts import PaymentMessage

_SHARED_ENVELOPE = {"timestamp_utc", "correlation_id", "tenant_id"}
_CONTROL = {"validation_result", "retry_count", "ttl_seconds"}


class WireBodies:
    """Bodies of messages that share their envelope (but the id) and control fields: those of one batch."""

    def __init__(self) -> None:
        self._envelope = ""
        self._control = ""

    def __call__(self, m: PaymentMessage) -> bytes:
        if not self._envelope:
            self._envelope = m.model_dump_json(include=_SHARED_ENVELOPE)[1:-1]
            self._control = m.model_dump_json(include=_CONTROL)[1:-1]
        return (
            f'{{"message_id":"{m.message_id}",{self._envelope},"payment_reference":"{m.payment_reference}",'
            f'"amount_cents":{m.amount_cents},"currency":"{m.currency}","debtor_bsb":"{m.debtor_bsb}",'
            f'"debtor_account":"{m.debtor_account}","creditor_bsb":"{m.creditor_bsb}",'
            f'"creditor_account":"{m.creditor_account}",{self._control}}}'
        ).encode()
