"""The payment message, wire contract v1: a flat JSON body made of envelope, payload and control fields.

Strict on purpose: money is an integer number of minor units, timestamps are UTC, nothing unknown passes.
"""

from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Self
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, StrictBool, field_validator

from contracts.currency import is_active_currency
from contracts.wire_formats import CanonicalUuid, UtcTimestamp

SCHEMA_VERSION = "1"

TENANT_ID_PATTERN = r"^[a-z0-9][a-z0-9_-]{1,31}$"
CORRELATION_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
PAYMENT_REFERENCE_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_./-]{0,34}$"
BSB_PATTERN = r"^[0-9]{3}-[0-9]{3}$"
ACCOUNT_PATTERN = r"^[0-9]{6,10}$"
CURRENCY_PATTERN = r"^[A-Z]{3}$"
UTC_SUFFIX_PATTERN = r"([Zz]|[+-]00:00)$"
CHECK_NAME_PATTERN = r"^[a-z][a-z0-9_]{0,47}$"
MAX_AMOUNT_CENTS = 100_000_000_000_000  # one trillion major units: far above any single payment
MAX_TTL_SECONDS = 30 * 86_400

TenantId = Annotated[
    str,
    Field(
        pattern=TENANT_ID_PATTERN,
        description=("Tenant identifier; lower-case letters, digits, '_' and '-' so it is safe in routing keys."),
        examples=["anz"],
    ),
]
Bsb = Annotated[str, Field(pattern=BSB_PATTERN, description="Bank-State-Branch number, NNN-NNN.")]
Account = Annotated[str, Field(pattern=ACCOUNT_PATTERN, description="Account number, 6 to 10 digits.")]


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


class ValidationResult(_Strict):
    """Proof that the publisher validated the payment, and which business checks it ran."""

    passed: StrictBool = Field(description="True when every business check passed.")
    checks: list[Annotated[str, Field(pattern=CHECK_NAME_PATTERN)]] = Field(
        max_length=32, description="Names of the business checks that were run and passed."
    )


class Envelope(_Strict):
    """Written by the publisher; never modified after publishing."""

    message_id: Annotated[UUID, CanonicalUuid] = Field(
        description="Unique id of this payment among its tenant's messages (UUIDv7); with tenant_id, the "
        "idempotency key: the same id from two tenants is two payments."
    )
    timestamp_utc: Annotated[datetime, UtcTimestamp] = Field(
        description="When the publisher validated the payment; ISO 8601 in UTC with a Z suffix.",
        json_schema_extra={"pattern": UTC_SUFFIX_PATTERN},
    )
    correlation_id: str = Field(
        pattern=CORRELATION_ID_PATTERN,
        description="The bulk batch this payment belongs to.",
        examples=["bulk_anz_20250501_batch_0042"],
    )
    tenant_id: TenantId


def wire_timestamp(moment: datetime) -> str:
    """A UTC date-time as the contract writes it: ISO 8601 with the Z suffix."""
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


class Payload(_Strict):
    """The business data of one payment."""

    payment_reference: str = Field(
        pattern=PAYMENT_REFERENCE_PATTERN,
        description="The tenant's own reference for this payment (at most 35 characters).",
        examples=["PAY-ANZ-2025-00198432"],
    )
    amount_cents: int = Field(
        gt=0,
        le=MAX_AMOUNT_CENTS,
        description="Amount in the currency's minor unit; an integer, never a float, string or bool.",
    )
    currency: str = Field(pattern=CURRENCY_PATTERN, description="Active ISO 4217 alphabetic code.", examples=["AUD"])
    debtor_bsb: Bsb
    debtor_account: Account
    creditor_bsb: Bsb
    creditor_account: Account
    validation_result: ValidationResult = Field(
        description="The publisher's validation of this payment: whether it passed and the checks it ran."
    )

    @field_validator("amount_cents", mode="before")
    @classmethod
    def _no_bools(cls, value: Any) -> Any:
        # bool is a subclass of int; strict mode refuses it, this makes the reason explicit.
        if isinstance(value, bool):
            raise ValueError("amount_cents must be an integer, not a boolean")
        return value

    @field_validator("currency")
    @classmethod
    def _active_iso_4217(cls, value: str) -> str:
        if not is_active_currency(value):
            raise ValueError(f"{value!r} is not an active ISO 4217 currency code")
        return value


class Control(_Strict):
    """Delivery control fields managed by the broker side of remit."""

    retry_count: int = Field(ge=0, le=100, description="Delivery retries so far; starts at 0.")
    ttl_seconds: int = Field(
        ge=1,
        le=MAX_TTL_SECONDS,
        description="Validity window from timestamp_utc; expired messages never move money.",
    )


# Bases in this order so that pydantic (which collects fields along the reversed MRO) lays the fields out
# envelope, payload, control: the order of the reference message, on the wire and in the JSON Schema.
class PaymentMessage(Control, Payload, Envelope):
    """A payment instruction on the wire: the flat union of envelope, payload and control (contract v1)."""

    model_config = ConfigDict(title="PaymentMessage", strict=True, extra="forbid", frozen=True)

    @property
    def expires_at(self) -> datetime:
        return self.timestamp_utc + timedelta(seconds=self.ttl_seconds)

    def is_expired(self, now: datetime) -> bool:
        return now >= self.expires_at

    def remaining_ttl(self, now: datetime) -> timedelta:
        return max(self.expires_at - now, timedelta(0))

    def with_retry(self) -> Self:
        """A copy with retry_count + 1, validated (model_copy is not): raises past the contract's limit."""
        return self.model_validate({**dict(self), "retry_count": self.retry_count + 1})

    def to_wire(self) -> bytes:
        return self.model_dump_json().encode()

    @classmethod
    def from_wire(cls, body: bytes | str) -> Self:
        return cls.model_validate_json(body)
