"""What an external core holds under idempotency keys, in its own words: the answer per key of its booking
(`POST /transfers/batch`) and status (`POST /transfers/status`) routes, and the status query itself for callers
outside the consumer (a replay asks it before deciding, app/deadletters/replay.py)."""

from collections.abc import Sequence
from datetime import datetime
from typing import Literal, Protocol

import httpx
from pydantic import BaseModel, ConfigDict, ValidationError

from app.errors import CoreStatusUnavailable


class CoreAnswer(BaseModel):
    """One key's answer (docs/core-banking.md): booked with the core's transfer id, rejected with its reason, a
    conflict, still in progress, or unknown (nothing recorded under the key); `recorded_at` is the core's own time
    of the outcome."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    idempotency_key: str
    status: Literal["booked", "rejected", "conflict", "in_progress", "unknown"]
    transfer_id: str | None = None
    reason: str | None = None
    party: str | None = None
    replayed: bool = False
    conflict: Literal["in_progress", "request_mismatch"] | None = None
    recorded_at: datetime | None = None


class CoreAnswers(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    results: list[CoreAnswer]


def parse_answers(response: httpx.Response, keys: Sequence[str]) -> list[CoreAnswer] | None:
    """The answers, one per key in order, or None when the body is not that."""
    try:
        answers = CoreAnswers.model_validate_json(response.content).results
    except ValidationError:
        return None
    if [a.idempotency_key for a in answers] != list(keys):
        return None
    return answers


class CoreKeys(Protocol):
    async def outcomes(self, keys: Sequence[str]) -> dict[str, CoreAnswer]:
        """What the core holds under each key now; CoreStatusUnavailable when it does not say."""
        ...


class HttpCoreKeys:
    """The core's status query on remit's client of it (its token, its TLS): read-only, it never books or
    takes a key (the reference core reads its locks instead of taking them, so asking never causes a 409)."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        self._client = client

    async def outcomes(self, keys: Sequence[str]) -> dict[str, CoreAnswer]:
        if not keys:
            return {}
        try:
            response = await self._client.post("/transfers/status", json={"idempotency_keys": list(keys)})
        except httpx.HTTPError as exc:
            raise CoreStatusUnavailable(f"the core did not answer ({type(exc).__name__})") from None
        if response.status_code != 200:
            raise CoreStatusUnavailable(f"the core answered HTTP {response.status_code}")
        answers = parse_answers(response, keys)
        if answers is None:
            raise CoreStatusUnavailable("the core's answer was not one status per key asked")
        return {a.idempotency_key: a for a in answers}
