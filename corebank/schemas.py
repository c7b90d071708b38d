"""The HTTP contract's bodies (pydantic v2, strict): what callers send and what the core answers."""

from datetime import datetime
from enum import StrEnum
from typing import Annotated, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

BSB_PATTERN = r"^[0-9]{3}-[0-9]{3}$"
ACCOUNT_PATTERN = r"^[0-9]{6,10}$"
CURRENCY_PATTERN = r"^[A-Z]{3}$"
# RFC 3986 path-segment characters without percent-encoding: a key goes into GET /transfers/{key} as it is.
KEY_PATTERN = r"^[A-Za-z0-9._~!$&'()*+,;=:@-]{1,255}$"
MAX_AMOUNT_CENTS = 10**15

Bsb = Annotated[str, Field(pattern=BSB_PATTERN, description="Bank-State-Branch number, NNN-NNN.", examples=["012-345"])]
AccountNumber = Annotated[str, Field(pattern=ACCOUNT_PATTERN, description="Account number, 6 to 10 digits.")]
Currency = Annotated[str, Field(pattern=CURRENCY_PATTERN, description="ISO 4217 code.", examples=["AUD"])]
Cents = Annotated[int, Field(gt=0, le=MAX_AMOUNT_CENTS, description="Amount in minor units (cents), an integer.")]
IdempotencyKey = Annotated[
    str,
    Field(
        pattern=KEY_PATTERN,
        description="The caller's key for one transfer (remit: `<tenant_id>:<message_id>`), opaque to the core; "
        "at most 255 characters that a URL path carries unescaped.",
        examples=["anz:0190d3c4-5e6f-7a8b-9c0d-1e2f3a4b5c6d"],
    ),
]


class _Body(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


class Reason(StrEnum):
    """Why the core refused a transfer; each has an ISO 20022 status reason code (ISO_REASON)."""

    ACCOUNT_CLOSED = "account_closed"
    UNKNOWN_ACCOUNT = "unknown_account"
    INSUFFICIENT_FUNDS = "insufficient_funds"
    CURRENCY_NOT_HELD = "currency_not_held"


ISO_REASON = {
    Reason.ACCOUNT_CLOSED: "AC04",  # ClosedAccountNumber
    Reason.UNKNOWN_ACCOUNT: "AC01",  # IncorrectAccountNumber
    Reason.INSUFFICIENT_FUNDS: "AM04",  # InsufficientFunds
    Reason.CURRENCY_NOT_HELD: "AM03",  # NotAllowedCurrency
}

Party = Literal["debtor", "creditor"]
Conflict = Literal["in_progress", "request_mismatch"]


class TransferRequest(_Body):
    """One transfer: debit the debtor's account in `currency`, credit the creditor's, both or neither."""

    amount_cents: Cents
    currency: Currency
    debtor_bsb: Bsb
    debtor_account: AccountNumber
    creditor_bsb: Bsb
    creditor_account: AccountNumber
    reference: str | None = Field(
        default=None, min_length=1, max_length=140, description="Shown on statements and in the journal export."
    )

    @model_validator(mode="after")
    def _two_accounts(self) -> Self:
        if (self.debtor_bsb, self.debtor_account) == (self.creditor_bsb, self.creditor_account):
            raise ValueError("debtor and creditor are the same account")
        return self


class BatchTransfer(TransferRequest):
    idempotency_key: IdempotencyKey


class BatchRequest(_Body):
    transfers: list[BatchTransfer] = Field(
        min_length=1, description="Booked in this order, in one transaction; keys must be unique in the batch."
    )

    @model_validator(mode="after")
    def _unique_keys(self) -> Self:
        if len({t.idempotency_key for t in self.transfers}) != len(self.transfers):
            raise ValueError("a key appears twice in the batch")
        return self


class KeysRequest(_Body):
    idempotency_keys: list[IdempotencyKey] = Field(min_length=1)


class _Outcome(BaseModel):
    idempotency_key: str
    status: str  # narrowed by each answer below; declared here to come first
    transfer_id: str | None = Field(default=None, description="The core's id of a booked transfer.")
    reason: Reason | None = Field(default=None, description="Why a rejected transfer was refused.")
    iso_reason: str | None = Field(default=None, description="ISO 20022 status reason code of `reason`.")
    party: Party | None = Field(default=None, description="Whose account the refusal is about.")
    recorded_at: datetime | None = Field(default=None, description="When the outcome was committed.")


class TransferResult(_Outcome):
    status: Literal["booked", "rejected"]
    replayed: bool = Field(description="True when this answer is the key's earlier outcome, not a new one.")


class BatchItemResult(_Outcome):
    status: Literal["booked", "rejected", "conflict"]
    replayed: bool = Field(description="True when this answer is the key's earlier outcome, not a new one.")
    conflict: Conflict | None = Field(
        default=None,
        description="in_progress: another request with this key is running (retry); request_mismatch: the key "
        "was used for a different transfer (never retry).",
    )


class BatchResult(BaseModel):
    results: list[BatchItemResult] = Field(description="One per transfer, in the request's order.")


class TransferStatus(_Outcome):
    status: Literal["booked", "rejected", "in_progress", "unknown"] = Field(
        description="unknown: nothing is recorded under this key and no request with it is running."
    )


class StatusList(BaseModel):
    results: list[TransferStatus]


class ExportedTransfer(BaseModel):
    transfer_id: str
    idempotency_key: str
    amount_cents: int
    currency: str
    debtor_bsb: str
    debtor_account: str
    creditor_bsb: str
    creditor_account: str
    reference: str | None
    booked_at: datetime


class JournalPage(BaseModel):
    transfers: list[ExportedTransfer]
    cursor: str = Field(description="Pass as `after` for the next page; unchanged when the page is empty.")
    has_more: bool


class AccountOpen(_Body):
    bsb: Bsb
    account_number: AccountNumber
    currency: Currency
    opening_balance_cents: int = Field(ge=0, le=MAX_AMOUNT_CENTS, description="Opening balance in cents.")
    status: Literal["open", "closed"] = "open"


class AccountStatusChange(_Body):
    status: Literal["open", "closed"]


class Account(BaseModel):
    bsb: str
    account_number: str
    currency: str
    status: Literal["open", "closed"]
    opening_balance_cents: int
    balance_cents: int
    opened_at: datetime


class ErrorDetail(BaseModel):
    location: str = Field(description="Where in the request, e.g. `body.transfers.3.amount_cents`.")
    message: str


class ErrorInfo(BaseModel):
    code: str = Field(description="Stable, machine-readable; see docs/core-banking.md.")
    message: str = Field(description="For people; never carries an account number.")
    details: list[ErrorDetail] = Field(default_factory=list)


class ErrorBody(BaseModel):
    """Every answer that is not a success has this shape."""

    error: ErrorInfo


class Health(BaseModel):
    status: str
    schema_revision: str | None = None
