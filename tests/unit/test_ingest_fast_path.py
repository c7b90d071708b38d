"""The ingest's faster per-row path (app/publisher/validation.py, message_ids.py, wire_body.py) accepts and
refuses exactly what the contract's own validation does, and produces the same message and body bytes."""

import os
import time
from datetime import UTC, datetime
from typing import Any
from uuid import RFC_4122, UUID

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from app.payment_rules import INGRESS_CHECKS, PaymentRules
from app.publisher.bulk_file import PAYMENT_FIELDS, RawRow
from app.publisher.message_ids import Uuid7Source
from app.publisher.validation import BatchContext, check_rows
from app.publisher.wire_body import WireBodies
from app.settings import Settings
from contracts import PaymentMessage
from tests.utils.strategies import (
    accounts,
    amounts_cents,
    bsbs,
    correlation_ids,
    currencies,
    payment_messages,
    payment_references,
    tenant_ids,
    ttls_seconds,
)

no_database = settings(database=None)
_junk = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=40))
_valid = {
    "payment_reference": payment_references,
    "amount_cents": amounts_cents,
    "currency": currencies,
    "debtor_bsb": bsbs,
    "debtor_account": accounts,
    "creditor_bsb": bsbs,
    "creditor_account": accounts,
}


@st.composite
def typed_rows(draw: st.DrawFn) -> dict[str, Any]:
    """Fields as a JSON row carries them: mostly valid values, some junk, some left out."""
    fields: dict[str, Any] = {}
    for name in PAYMENT_FIELDS:
        kind = draw(st.sampled_from(["valid"] * 8 + ["junk", "missing"]))
        if kind != "missing":
            fields[name] = draw(_valid[name] if kind == "valid" else _junk)
    return fields


def _reference(fields: dict[str, Any], ctx: BatchContext, message_id: UUID) -> PaymentMessage:
    """The contract's own validation of the row, everything from plain values."""
    return PaymentMessage.model_validate(
        {
            "message_id": message_id,
            "timestamp_utc": ctx.now,
            "correlation_id": ctx.correlation_id,
            "tenant_id": ctx.tenant_id,
            **fields,
            "validation_result": {"passed": True, "checks": list(INGRESS_CHECKS)},
            "retry_count": 0,
            "ttl_seconds": ctx.ttl_seconds,
        }
    )


@no_database
@given(
    rows=st.lists(typed_rows(), min_size=1, max_size=5),
    tenant=tenant_ids,
    batch=correlation_ids,
    ttl=ttls_seconds,
)
def test_the_fast_path_accepts_refuses_and_writes_what_the_contract_does(
    rows: list[dict[str, Any]], tenant: str, batch: str, ttl: int
) -> None:
    ctx = BatchContext(
        tenant, batch, datetime.now(UTC), ttl, PaymentRules.from_settings(Settings()), 10**6, frozenset()
    )
    checked = check_rows([RawRow(number=n, fields=dict(f)) for n, f in enumerate(rows, 1)], ctx)
    for fields, item in zip(rows, checked, strict=True):
        if item.message is None:
            try:
                _reference(fields, ctx, UUID(int=0x017F22E279B07CC398C4DC0C0C07398F))
            except ValidationError:
                continue
            raise AssertionError(f"the fast path refused what the contract accepts: {fields} {item.errors}")
        expected = _reference(fields, ctx, item.message.message_id)
        assert item.message == expected
        assert item.body == expected.to_wire()


@no_database
@given(messages=st.lists(payment_messages(), min_size=1, max_size=3))
def test_bodies_are_the_bytes_of_to_wire(messages: list[PaymentMessage]) -> None:
    first = messages[0]
    shared = {k: getattr(first, k) for k in ("timestamp_utc", "correlation_id", "tenant_id", "validation_result")}
    shared |= {"retry_count": first.retry_count, "ttl_seconds": first.ttl_seconds}
    bodies = WireBodies()
    for message in messages:
        same_batch = PaymentMessage.model_validate({**dict(message), **shared})
        assert bodies(same_batch) == same_batch.to_wire()


def test_message_ids_are_increasing_uuid7s_of_now() -> None:
    source = Uuid7Source(block=7)  # a small block: several refills
    before = time.time_ns() // 1_000_000
    ids = [source() for _ in range(1000)]
    assert all(i.version == 7 and i.variant == RFC_4122 for i in ids)
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)
    assert before <= ids[0].int >> 80 <= time.time_ns() // 1_000_000


def test_a_forked_child_does_not_repeat_the_parents_ids() -> None:
    from app.publisher.message_ids import new_message_id

    new_message_id()  # the parent holds unused random bytes
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: write its next id's random bits, then leave at once
        os.write(write, new_message_id().bytes)
        os._exit(0)
    os.waitpid(pid, 0)
    child = UUID(bytes=os.read(read, 16))
    parent = new_message_id()
    drawn = 0xFFF << 64 | (1 << 62) - 1  # the 74 random bits, not the time
    assert child.int & drawn != parent.int & drawn
