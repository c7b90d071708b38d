"""Replay requests (`dead_letter_replay_requests`): every one, single or bulk, refused or not, with its outcome."""

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol


@dataclass(frozen=True, slots=True)
class NewReplayRequest:
    actor: str
    tenant_id: str | None  # the scope it was made in (None: all tenants)
    dead_letter_ids: list[int]
    filters: dict[str, str]
    everything: bool
    force: bool
    dry_run: bool
    why: str | None
    outcome: str


@dataclass(frozen=True, slots=True)
class RequestEntry(NewReplayRequest):
    """A recorded request: what was asked, with its id and when."""

    request_id: int
    at: datetime


class ReplayRequests(Protocol):
    async def open(self, request: NewReplayRequest) -> int:
        """Record a request; return its id."""
        ...

    async def settle(self, request_id: int, outcome: str) -> None: ...

    async def entries(self, tenant_id: str | None, limit: int) -> list[RequestEntry]:
        """Newest first. For one tenant: the requests made in its scope, and those whose audit entries
        touched its dead letters (an operator's replay by id is made in no tenant's scope)."""
        ...
