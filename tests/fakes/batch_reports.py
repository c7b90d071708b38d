"""In-memory batch reports. Tests file batches with `submitted` (the publisher writes them with its own SQL)."""

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from app.storage.ports.batch_reports import BatchPayment, BatchRecord, Rejected, SummaryRow
from app.storage.ports.dead_letters import DeadLetterRecord
from tests.fakes.database import FakeDatabase, FakeTransaction
from tests.fakes.dead_letters import TABLE as DEAD_LETTERS
from tests.fakes.dead_letters import latest_dead_letter
from tests.fakes.idempotency import TABLE as PROCESSED
from tests.fakes.ledger import TABLE as LEDGER
from tests.fakes.ledger import LedgerRow
from tests.fakes.outbox import TABLE as OUTBOX
from tests.fakes.outbox import OutboxRow

TABLE = "batches"


@dataclass(frozen=True, slots=True)
class RejectionRow:
    row_number: int
    payment_reference: str | None
    currency: str | None
    amount_cents: int | None
    errors: list[str]
    outcome: str = "invalid"  # app/bankfiles/outcomes.py
    payment_information_id: str | None = None
    instruction_id: str | None = None


@dataclass(frozen=True, slots=True)
class BatchRow:
    record: BatchRecord
    totals: dict[str, tuple[int, int]]  # currency -> (accepted payments, cents)
    rejections: list[RejectionRow] = field(default_factory=list)

    @property
    def tenant_id(self) -> str:  # the scope a tenant's transaction sees
        return self.record.tenant_id


def submitted(db: FakeDatabase, batch: BatchRow) -> None:
    db.tables[TABLE][batch.record.correlation_id] = batch


class FakeBatchReports:
    def __init__(self, tx: FakeTransaction) -> None:
        self._tx = tx

    async def summary(self, correlation_ids: Sequence[str]) -> list[SummaryRow]:
        batches = [b for b in (self._tx.get(TABLE, c) for c in correlation_ids) if b is not None]
        rows = {(r.tenant_id, r.correlation_id, r.currency): r for batch in batches for r in self._summary(batch)}
        for key, (n, cents) in self._direct(correlation_ids).items():
            row = rows.get(key) or SummaryRow(*key, 0, 0, 0, 0, 0, 0, 0, 0)
            rows[key] = replace(row, accepted=row.accepted + n, accepted_cents=row.accepted_cents + cents,
                                processed=row.processed + n, processed_cents=row.processed_cents + cents,
                                amqp=n, amqp_cents=cents)  # fmt: skip
        for d in self._direct_dead(correlation_ids):
            key = (str(d.tenant_id), str(d.correlation_id), d.currency or "?")
            row = rows.get(key) or SummaryRow(*key, 0, 0, 0, 0, 0, 0, 0, 0)
            cents, dead = d.amount_cents or 0, d.status in ("open", "discarded")
            rows[key] = replace(row, accepted=row.accepted + 1, accepted_cents=row.accepted_cents + cents,
                                dead_lettered=row.dead_lettered + dead,
                                dead_lettered_cents=row.dead_lettered_cents + cents * dead,
                                amqp=row.amqp + 1, amqp_cents=row.amqp_cents + cents)  # fmt: skip
        return [rows[key] for key in sorted(rows)]

    def _direct_dead(self, correlation_ids: Sequence[str]) -> list[DeadLetterRecord]:
        """The latest dead letter of each direct publish (no outbox row) not booked: its only record."""
        latest: dict[tuple[str, object], DeadLetterRecord] = {}
        for d in sorted(self._tx.rows(DEAD_LETTERS), key=lambda d: d.dead_letter_id):
            if d.correlation_id in correlation_ids and d.tenant_id is not None and d.message_id is not None:
                latest[d.tenant_id, d.message_id] = d
        return [
            d for key, d in latest.items() if self._tx.get(OUTBOX, key) is None and self._tx.get(PROCESSED, key) is None
        ]

    def _direct(self, correlation_ids: Sequence[str]) -> dict[tuple[str, str, str], tuple[int, int]]:
        """Payments published directly over AMQP (recorded when booked), per tenant, batch and currency."""
        found: dict[tuple[str, str, str], tuple[int, int]] = {}
        for r in self._tx.rows(PROCESSED):
            if r.source == "amqp" and r.correlation_id in correlation_ids:
                n, cents = found.get((r.tenant_id, r.correlation_id, r.currency), (0, 0))
                found[r.tenant_id, r.correlation_id, r.currency] = (n + 1, cents + r.amount_cents)
        return found

    async def recent(self, tenant_id: str | None, limit: int, with_direct: bool = False) -> list[str]:
        batches: list[BatchRow] = self._tx.rows(TABLE)
        seen = {b.record.correlation_id: b.record.submitted_at for b in batches if tenant_id in (None, b.tenant_id)}
        for r in self._tx.rows(PROCESSED) if with_direct else []:
            if r.source == "amqp" and tenant_id in (None, r.tenant_id):
                seen[r.correlation_id] = max(r.processed_at, seen.get(r.correlation_id, r.processed_at))
        for d in self._tx.rows(DEAD_LETTERS) if with_direct else []:
            direct = d.tenant_id is not None and self._tx.get(OUTBOX, (d.tenant_id, d.message_id)) is None
            if direct and d.correlation_id is not None and tenant_id in (None, d.tenant_id):
                seen[d.correlation_id] = max(d.last_failed_at, seen.get(d.correlation_id, d.last_failed_at))
        return sorted(seen, key=lambda c: seen[c], reverse=True)[:limit]

    async def batches(self, correlation_ids: Sequence[str], tenant_id: str | None = None) -> list[BatchRecord]:
        found: list[BatchRow] = [b for b in (self._tx.get(TABLE, c) for c in correlation_ids) if b is not None]
        return [b.record for b in found if tenant_id is None or b.tenant_id == tenant_id]

    async def rejections(self, correlation_id: str) -> list[Rejected]:
        batch: BatchRow | None = self._tx.get(TABLE, correlation_id)
        rows = sorted(batch.rejections, key=lambda r: r.row_number) if batch else []
        return [Rejected(r.row_number, r.payment_reference, r.currency, r.amount_cents, r.errors) for r in rows]

    async def payments(
        self, correlation_id: str, tenant_id: str, limit: int, offset: int, direct: bool = False
    ) -> list[BatchPayment]:
        if direct:
            return self._direct_payments(correlation_id, tenant_id)[offset : offset + limit]
        outbox: list[OutboxRow] = self._tx.rows(OUTBOX)
        mine = sorted(
            (o for o in outbox if o.correlation_id == correlation_id and o.tenant_id == tenant_id),
            key=lambda o: o.seq,
        )
        return [
            BatchPayment(
                o.row_number,
                o.seq,
                o.message_id,
                o.payment_reference,
                o.amount_cents,
                o.currency,
                o.published_at,
                self._state(o),
            )
            for o in mine[offset : offset + limit]
        ]

    def _direct_payments(self, correlation_id: str, tenant_id: str) -> list[BatchPayment]:
        """Booked direct publishes, then those only dead letters record, in the order they were recorded."""
        booked: list[LedgerRow] = self._tx.rows(LEDGER)
        direct = {(r.tenant_id, r.message_id) for r in self._tx.rows(PROCESSED) if r.source == "amqp"}
        found = [
            (row.booked_at, row.payment.message_id, row.payment.payment_reference, row.payment.amount_cents,
             row.payment.currency, "processed")
            for row in booked
            if (row.payment.tenant_id, row.payment.message_id) in direct
            and (row.payment.tenant_id, row.payment.correlation_id) == (tenant_id, correlation_id)
        ]  # fmt: skip
        states = {"open": "dead-lettered ({})", "discarded": "discarded ({})"}
        for d in self._direct_dead([correlation_id]):
            if d.tenant_id == tenant_id and d.message_id is not None:
                state = states.get(d.status, "in flight").format(d.reason)
                found.append((d.first_failed_at, d.message_id, d.payment_reference or "", d.amount_cents or 0,
                              d.currency or "?", state))  # fmt: skip
        found.sort(key=lambda f: (f[0], str(f[1])))
        return [BatchPayment(None, n, f[1], f[2], f[3], f[4], None, f[5]) for n, f in enumerate(found, 1)]

    def _state(self, o: OutboxRow) -> str:
        if self._tx.get(LEDGER, (o.tenant_id, o.message_id)) is not None:
            return "processed"
        latest = latest_dead_letter(self._tx, o.tenant_id, o.message_id)
        if latest is not None and latest.status == "open":
            return f"dead-lettered ({latest.reason})"
        if latest is not None and latest.status == "discarded":
            return f"discarded ({latest.reason})"
        return "waiting in the outbox" if o.published_at is None else "in flight"

    def _summary(self, batch: BatchRow) -> list[SummaryRow]:
        rejected, rejected_cents = Counter[str](), Counter[str]()
        for rejection in batch.rejections:
            rejected[rejection.currency or "?"] += 1
            rejected_cents[rejection.currency or "?"] += rejection.amount_cents or 0
        booked: list[LedgerRow] = self._tx.rows(LEDGER)
        record = batch.record
        done = [row.payment for row in booked if row.payment.correlation_id == record.correlation_id]
        direct = {(r.tenant_id, r.message_id) for r in self._tx.rows(PROCESSED) if r.source == "amqp"}
        processed = [p for p in done if p.tenant_id == record.tenant_id and (p.tenant_id, p.message_id) not in direct]
        dead = self._dead_lettered(record.correlation_id)
        return [
            SummaryRow(
                record.tenant_id,
                record.correlation_id,
                currency,
                batch.totals.get(currency, (0, 0))[0],
                batch.totals.get(currency, (0, 0))[1],
                rejected[currency],
                rejected_cents[currency],
                sum(1 for p in processed if p.currency == currency),
                sum(p.amount_cents for p in processed if p.currency == currency),
                sum(1 for o in dead if o.currency == currency),
                sum(o.amount_cents for o in dead if o.currency == currency),
            )
            for currency in sorted(set(batch.totals) | set(rejected))
        ]

    def _dead_lettered(self, correlation_id: str) -> list[OutboxRow]:
        """Not booked, with an open or discarded dead letter."""
        dead_letters: list[DeadLetterRecord] = self._tx.rows(DEAD_LETTERS)
        failed = {(d.tenant_id, d.message_id) for d in dead_letters if d.status in ("open", "discarded")}
        outbox: list[OutboxRow] = self._tx.rows(OUTBOX)
        return [
            o
            for o in outbox
            if o.correlation_id == correlation_id
            and self._tx.get(LEDGER, (o.tenant_id, o.message_id)) is None
            and (o.tenant_id, o.message_id) in failed
        ]
