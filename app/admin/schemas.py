"""Request bodies and response envelopes of the JSON API. Rows are the service's own dataclasses."""

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, field_validator

from app.admin.dead_letter_ops import Filters
from app.deadletters.audit import AuditEntry
from app.deadletters.review import DeadLetterSummary


class ReplayFilter(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reason: str | None = None
    batch: str | None = None
    currency: str | None = None
    since: str | None = Field(default=None, description="ISO 8601 time or an age such as 30m, 2h, 7d.")
    until: str | None = None
    tenant: str | None = Field(default=None, description="Admin keys only; a tenant key is always its own tenant.")

    def filters(self) -> Filters:
        return Filters(self.reason, self.batch, self.currency, "open", self.since, self.until, self.tenant)


class ReplayBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    ids: list[int] = Field(default_factory=list, description="Dead letters to replay; or give a filter, or all.")
    filter: ReplayFilter | None = None
    all: bool = Field(default=False, description="Every open dead letter in the caller's scope.")
    dry_run: bool = False
    force: bool = Field(default=False, description="Also replay permanent failures (after fixing the cause).")
    why: str | None = Field(default=None, max_length=500, description="A note for the audit trail.")


class DiscardBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reason: str = Field(min_length=1, max_length=500, description="Why no further action is needed.")

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
