"""Batches as reports show them (`batches` and what became of their rows): per batch and currency, what was
accepted, rejected at validation, processed and dead-lettered; a batch's file, its rejected rows, and each of its
payments with where it is now."""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Protocol
from uuid import UUID


@dataclass(frozen=True, slots=True)
class SummaryRow:
    tenant_id: str
    correlation_id: str
    currency: str
    accepted: int
    accepted_cents: int
    rejected: int
    rejected_cents: int
    processed: int  # booked by the batch's own tenant (another tenant may name this batch in its messages)
    processed_cents: int
    dead_lettered: int  # not booked, with an open or discarded dead letter (its latest, for a direct publish)
    dead_lettered_cents: int
    # Of the accepted: published directly over AMQP (no file, no outbox), recorded when booked, or by its dead letters
    # until then (so counted in processed, dead_lettered or, once replayed, in flight).
    amqp: int = 0
    amqp_cents: int = 0

    @property
    def in_flight(self) -> int:
        return self.accepted - self.processed - self.dead_lettered


@dataclass(frozen=True, slots=True)
class BatchRecord:
    """A batch as ingress accepted it: where its file came from and what the file stated."""

    correlation_id: str
    tenant_id: str
    source_name: str
    source_sha256: str
    accepted_count: int
    rejected_count: int
    submitted_at: datetime
    source_format: str | None  # None: a batch from before formats were recorded
    source_identity: str | None  # pain.001 GrpHdr/MsgId, else source_sha256
    stated_count: int | None
    stated_sum: Decimal | None


@dataclass(frozen=True, slots=True)
class Rejected:
    """A row of the batch's file rejected at validation."""

    row_number: int
    payment_reference: str | None
    currency: str | None
    amount_cents: int | None
    errors: list[str]


@dataclass(frozen=True, slots=True)
class BatchPayment:
    """An accepted payment of the batch, and where it is now (app/reporting/batch_pages.py names the states)."""

    row_number: int | None
    seq: int
    message_id: UUID
    payment_reference: str
    amount_cents: int
    currency: str
    published_at: datetime | None
    state: str


class BatchReports(Protocol):
    async def summary(self, correlation_ids: Sequence[str]) -> list[SummaryRow]:
        """By tenant, batch and currency."""
        ...

    async def recent(self, tenant_id: str | None, limit: int, with_direct: bool = False) -> list[str]:
        """The newest batches' correlation ids (of one tenant, or of all); `with_direct`: and the correlation ids
        that direct publishes named (newest by their latest payment)."""
        ...

    async def batches(self, correlation_ids: Sequence[str], tenant_id: str | None = None) -> list[BatchRecord]:
        """Those of these batches that exist (and are `tenant_id`'s, when one is given)."""
        ...

    async def rejections(self, correlation_id: str) -> list[Rejected]:
        """The batch's rows rejected at validation, in file order."""
        ...

    async def payments(
        self, correlation_id: str, tenant_id: str, limit: int, offset: int, direct: bool = False
    ) -> list[BatchPayment]:
        """A page of the batch's payments (of its own tenant), in file order; `direct`: of the batch that tenant's
        direct AMQP publishes name (no file), in the order remit first recorded them (booked or dead-lettered)."""
        ...
