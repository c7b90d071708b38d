"""A core-banking system outside remit, as the consumer's port sees one (app/consumer/core_banking.py).

It keeps its own journal under each payment's idempotency key and answers as docs/core-banking.md says a
core must: a key booked before gets its original transfer back (replayed), a key refused before its
refusal, a key used for another request a conflict. Faults a test may ask for: the core down (nothing is
booked), or answers lost (the core books, the adapter cannot find out: an unknown outcome)."""

from collections.abc import Sequence
from dataclasses import dataclass, field

from app.consumer.core_banking import NO_GENERATIONS, Booked, CoreOutcome, Generations
from app.consumer.core_keys import FIRST_GENERATION, transfer_key
from app.consumer.core_refusals import key_conflict, refusal
from app.consumer.digest import payment_digest
from app.errors import CoreBankingUnavailable, CoreOutcomeUnknown
from app.storage.ports.ledger import Ledger
from contracts import PaymentMessage


@dataclass(frozen=True, slots=True)
class Transfer:
    transfer_id: str
    payment: PaymentMessage


@dataclass
class FakeCore:
    refusals: dict[str, str] = field(default_factory=dict)  # creditor account -> the core's refusal reason
    down: bool = False  # nothing reaches it: every booking CoreBankingUnavailable, nothing booked
    lose_answers: int = 0  # the next n bookings commit in the core, but their answers never come back
    journal: dict[str, Transfer] = field(default_factory=dict)  # key -> what it booked
    refused: dict[str, str] = field(default_factory=dict)  # key -> the reason it refused it with, for good
    requests: list[list[str]] = field(default_factory=list)  # the keys of each booking request, in order
    _digests: dict[str, bytes] = field(default_factory=dict)

    async def book(
        self,
        payments: Sequence[PaymentMessage],
        ledger: Ledger | None = None,
        generations: Generations = NO_GENERATIONS,
    ) -> list[CoreOutcome]:
        if self.down:
            return [CoreBankingUnavailable("core banking could not be reached; nothing was sent")] * len(payments)
        keys = [
            transfer_key(p.tenant_id, p.message_id, generations.get(p.message_id, FIRST_GENERATION)) for p in payments
        ]
        self.requests.append(keys)
        outcomes = [self._book(p, key) for p, key in zip(payments, keys, strict=True)]
        if self.lose_answers:
            self.lose_answers -= 1
            return [CoreOutcomeUnknown("outcome unknown after ReadTimeout and the status query failed")] * len(outcomes)
        return outcomes

    def booked(self, payment: PaymentMessage) -> int:
        """How many transfers the core's journal holds for the payment."""
        return sum(1 for t in self.journal.values() if t.payment.message_id == payment.message_id)

    def _book(self, payment: PaymentMessage, key: str) -> CoreOutcome:
        digest = payment_digest(payment)
        if self._digests.setdefault(key, digest) != digest:
            return key_conflict()
        if key in self.refused:
            return refusal(self.refused[key], "creditor")
        if key in self.journal:
            return Booked(self.journal[key].transfer_id, replayed=True)
        if (reason := self.refusals.get(payment.creditor_account)) is not None:
            self.refused[key] = reason
            return refusal(reason, "creditor")
        self.journal[key] = Transfer(f"core-{len(self.journal) + 1}", payment)
        return Booked(self.journal[key].transfer_id)
