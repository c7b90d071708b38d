"""A test-only core banking: the embedded ledger with deterministic failures, for tests that need an account to
be closed, flaky or in an outage without running the reference core (tests/corebank starts that one).

Injected through app/bootstrap.py's Ports: in-process by the unit tests (`RuledCore(rules)`), and into consumer
processes by the test entry point (tests/support/run.py), which reads the rules from the TEST_CORE_*
variables (`ServiceProcess.consumer` starts that entry point when one is set). Production has none of this.

The rules decide per payment: a closed creditor account fails permanently; a flaky one times out on its first
N attempts; a transient failure rate picks its victims by hashing message_id and attempt, so the same run
always fails the same way.
"""

import hashlib
import json
import os
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from uuid import UUID

from app.consumer.core_banking import NO_GENERATIONS, CoreBanking, CoreOutcome, Generations, LedgerCoreBanking
from app.errors import AccountClosed, CoreBankingTimeout, MessageFailure
from app.logs import mask_account
from app.storage.ports.ledger import Ledger
from contracts import PaymentMessage

CLOSED_VARIABLE = "TEST_CORE_CLOSED_ACCOUNTS"  # JSON list of creditor accounts
FLAKY_VARIABLE = "TEST_CORE_FLAKY_ACCOUNTS"  # JSON object: creditor account -> failing attempts
TRANSIENT_VARIABLE = "TEST_CORE_TRANSIENT_RATE"  # share of attempts timing out
VARIABLES = (CLOSED_VARIABLE, FLAKY_VARIABLE, TRANSIENT_VARIABLE)


@dataclass(frozen=True, slots=True)
class FailureRules:
    closed_accounts: Collection[str] = ()
    flaky_accounts: Mapping[str, int] = field(default_factory=dict)  # account -> failing attempts
    transient_rate: float = 0.0

    @classmethod
    def from_environment(cls, env: Mapping[str, str] | None = None) -> "FailureRules":
        env = os.environ if env is None else env
        return cls(
            closed_accounts=frozenset(json.loads(env.get(CLOSED_VARIABLE, "[]"))),
            flaky_accounts=json.loads(env.get(FLAKY_VARIABLE, "{}")),
            transient_rate=float(env.get(TRANSIENT_VARIABLE, "0")),
        )

    def failure_for(self, p: PaymentMessage) -> MessageFailure | None:
        attempt = p.retry_count + 1
        if p.creditor_account in self.closed_accounts:
            return AccountClosed(f"creditor account {p.creditor_bsb} {mask_account(p.creditor_account)} is closed")
        if attempt <= self.flaky_accounts.get(p.creditor_account, 0):
            return CoreBankingTimeout(f"core banking timed out for {p.creditor_bsb} {mask_account(p.creditor_account)}")
        if self.transient_rate and _fraction(p.message_id, attempt) < self.transient_rate:
            return CoreBankingTimeout(f"core banking timed out (simulated, attempt {attempt})")
        return None


def _fraction(message_id: UUID, attempt: int) -> float:
    digest = hashlib.sha256(f"{message_id}:{attempt}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


class RuledCore:
    """The rules' failures; every other payment is booked by `inner` (default: the embedded ledger)."""

    def __init__(self, rules: FailureRules, inner: CoreBanking | None = None) -> None:
        self._rules = rules
        self._inner = inner or LedgerCoreBanking()

    async def book(
        self, payments: Sequence[PaymentMessage], ledger: Ledger, generations: Generations = NO_GENERATIONS
    ) -> list[CoreOutcome]:
        failures = [self._rules.failure_for(p) for p in payments]
        passed = [p for p, failure in zip(payments, failures, strict=True) if failure is None]
        booked = iter(await self._inner.book(passed, ledger) if passed else [])
        return [next(booked) if failure is None else failure for failure in failures]


def core_from_environment() -> CoreBanking | None:
    """The ruled core when a TEST_CORE_* variable is set; None: what Settings describe."""
    if not any(name in os.environ for name in VARIABLES):
        return None
    return RuledCore(FailureRules.from_environment())
