"""The business rules every payment obeys, however it arrived. Ingress checks them before it accepts a
batch; the consumer checks them again before any payment moves money, because a tenant publishing
directly over AMQP never passed ingress. Format rules live in the contract (contracts/message.py).

validation_result is the publisher's statement: `passed` false is refused (it says it did not validate the
payment), while the check names are its claim, recorded with the message and required only when
Settings.required_checks names some (none by default): a name proves nothing, these rules protect the ledger.
"""

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from contracts import PaymentMessage

if TYPE_CHECKING:  # for the annotation only
    from app.settings import Settings

# What ingress verifies for each row and writes to validation_result.checks.
INGRESS_CHECKS = ("format_valid", "currency_active", "limit_ok", "debtor_differs_from_creditor", "reference_unique")


@dataclass(frozen=True, slots=True)
class PaymentRules:
    max_amount_cents: int
    max_clock_skew: timedelta
    max_ttl_seconds: int
    required_checks: frozenset[str]

    @classmethod
    def from_settings(cls, settings: "Settings") -> "PaymentRules":
        return cls(
            max_amount_cents=settings.max_amount_cents,
            max_clock_skew=timedelta(seconds=settings.max_clock_skew_seconds),
            max_ttl_seconds=settings.max_ttl_seconds,
            required_checks=frozenset(settings.required_checks),
        )

    def violations(self, payment: PaymentMessage, now: datetime) -> list[str]:
        """Every rule the payment breaks, each as a sentence; empty when it may move money."""
        errors = []
        if payment.amount_cents > self.max_amount_cents:
            errors.append(
                f"amount_cents {payment.amount_cents} is over the per-payment limit of {self.max_amount_cents}"
            )
        if payment.debtor_account == payment.creditor_account and payment.debtor_bsb == payment.creditor_bsb:
            errors.append("debtor and creditor are the same account")
        if payment.timestamp_utc > now + self.max_clock_skew:
            ahead = int((payment.timestamp_utc - now).total_seconds())
            errors.append(
                f"timestamp_utc is {ahead} s in the future, over the {int(self.max_clock_skew.total_seconds())} s "
                "clock-skew bound"
            )
        if payment.ttl_seconds > self.max_ttl_seconds:
            errors.append(f"ttl_seconds {payment.ttl_seconds} is over the limit of {self.max_ttl_seconds}")
        errors.extend(self._validation_errors(payment))
        return errors

    def _validation_errors(self, payment: PaymentMessage) -> list[str]:
        result = payment.validation_result
        errors = []
        if not result.passed:
            errors.append("validation_result.passed is false: the publisher did not validate this payment")
        missing = self.required_checks.difference(result.checks)
        if missing:
            errors.append(f"validation_result.checks lacks the required check(s) {', '.join(sorted(missing))}")
        return errors


def size_violation(size: int, max_bytes: int) -> str | None:
    """The tenant's maximum message size, in bytes of the body as published."""
    if size > max_bytes:
        return f"the message is {size} bytes, over the tenant's limit of {max_bytes}"
    return None
