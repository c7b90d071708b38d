"""Request bodies, query parameters and response envelopes of the JSON API. Rows are the service's own
dataclasses. Bodies are strict (a JSON `true` is not a number, unknown fields are refused) and every value
has the range, pattern or choices the service accepts, so OpenAPI tells a client exactly what it may send."""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated

from fastapi import Query
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

from app.admin.openapi import RowId, TenantId
from app.deadletters.audit import AuditEntry
from app.deadletters.operations import Filters
from app.deadletters.reasons import REASONS, STATUSES
from app.deadletters.requests import RequestEntry
from app.deadletters.review import DeadLetterSummary
from app.unknown_values import unknown_value

MAX_REPLAY_IDS = 500
CURRENCY_PATTERN = r"^[A-Z]{3}$"
# An ISO 8601 time (UTC when it has no offset) or an age (30m, 2h, 7d): exactly what `parse_when` reads, no
# more (a 31st of February or a 100,000-day age would pass a looser pattern and be refused after it).
_DAY = r"(0[1-9]|1[0-9]|2[0-8])"
_HMS = (
    r"([T ](0[0-9]|1[0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9](\.[0-9]{1,6})?)?(Z|[+-](0[0-9]|1[0-9]|2[0-3]):[0-5][0-9])?)?"
)
WHEN_PATTERN = rf"^([0-9]{{1,5}}[mhd]|[1-9][0-9]{{3}}-(0[1-9]|1[0-2])-{_DAY}{_HMS})$"
WHEN = "ISO 8601 time (UTC without an offset) or an age such as 30m, 2h, 7d."
STATUS_CHOICES = (*STATUSES, "all")


def one_of(values: Sequence[str], what: str = "an accepted value") -> AfterValidator:
    def check(value: str | None) -> str | None:
        if value is not None and value not in values:
            raise ValueError(str(unknown_value("", value, values, what)).lstrip())  # names the closest ones
        return value

    return AfterValidator(check)


StatusQuery = Annotated[
    str,
    Query(
        alias="status",
        json_schema_extra={"enum": list(STATUS_CHOICES)},
        description="open (the default), replayed, resolved, discarded, already_processed or all.",
    ),
    one_of(STATUS_CHOICES),
]
ReasonQuery = Annotated[
    str | None,
    Query(json_schema_extra={"enum": list(REASONS)}, description="A dead-letter reason."),
    one_of(REASONS, "a dead-letter reason"),
]
BatchQuery = Annotated[str | None, Query(min_length=1, max_length=64, description="A batch id (correlation_id).")]
CurrencyQuery = Annotated[str | None, Query(pattern=CURRENCY_PATTERN, description="ISO 4217 code, e.g. AUD.")]
SinceQuery = Annotated[str | None, Query(pattern=WHEN_PATTERN, description=f"Failed at or after: {WHEN}")]
UntilQuery = Annotated[str | None, Query(pattern=WHEN_PATTERN, description=f"Failed before: {WHEN}")]


class ReplayFilter(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    reason: Annotated[
        str | None, Field(json_schema_extra={"enum": list(REASONS)}), one_of(REASONS, "a dead-letter reason")
    ] = None
    batch: str | None = Field(default=None, min_length=1, max_length=64)
    currency: str | None = Field(default=None, pattern=CURRENCY_PATTERN)
    since: str | None = Field(default=None, pattern=WHEN_PATTERN, description=WHEN)
    until: str | None = Field(default=None, pattern=WHEN_PATTERN, description=WHEN)
    tenant: TenantId | None = Field(default=None, description="Admin keys only; a tenant key is always its own tenant.")

    def filters(self) -> Filters:
        return Filters(self.reason, self.batch, self.currency, "open", self.since, self.until, self.tenant)


class ReplayBody(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    ids: list[RowId] = Field(
        default_factory=list, max_length=MAX_REPLAY_IDS, description="Dead letters to replay; or give a filter, or all."
    )
    filter: ReplayFilter | None = None
    all: bool = Field(default=False, description="Every open dead letter in the caller's scope.")
    dry_run: bool = False
    force: bool = Field(
        default=False,
        description="Admin keys only (403 for a tenant key): also replay permanent failures, after fixing the "
        "cause. Never replays a tenant_mismatch or truncated dead letter.",
    )
    why: str | None = Field(default=None, max_length=500, description="A note for the audit trail.")


class DiscardBody(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    reason: str = Field(
        min_length=1, max_length=500, pattern=r"\S", description="Why no further action is needed (not blank)."
    )

    @field_validator("reason")
    @classmethod
    def not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("say why it is discarded")
        return value.strip()


@dataclass(frozen=True, slots=True)
class DeadLetterList:
    dead_letters: list[DeadLetterSummary]


@dataclass(frozen=True, slots=True)
class AuditList:
    audit: list[AuditEntry]
    requests: list[RequestEntry]  # replay requests (empty when asked for one dead letter's entries)
