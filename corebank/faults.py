"""Fault injection for tests and the demo: a plan set per run through PUT /_faults, off unless the process
was started with COREBANK_FAULTS_ENABLED=true (or `serve --faults`)."""

import asyncio
import random
import time

from pydantic import BaseModel, ConfigDict, Field

from corebank.errors import FaultsDisabled


class FaultPlan(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    latency_ms: int = Field(default=0, ge=0, le=60_000, description="Added before each API request is handled.")
    commit_delay_ms: int = Field(
        default=0,
        ge=0,
        le=60_000,
        description="Added inside each booking transaction before it commits: its keys and accounts stay locked "
        "meanwhile (a slow core; a second request with one of its keys gets 409).",
    )
    answer_delay_ms: int = Field(
        default=0,
        ge=0,
        le=60_000,
        description="Added after a booking transaction committed, before the answer is sent (an answer that comes "
        "too late for the client's timeout: the outcome is committed but unknown to the client).",
    )
    error_rate: float = Field(
        default=0.0, ge=0.0, le=1.0, description="Share of API requests answered 500 injected_error, doing nothing."
    )
    drop_rate: float = Field(
        default=0.0,
        ge=0.0,
        le=1.0,
        description="Share of POST /transfers and /transfers/batch whose connection is closed without an answer "
        "after their outcome committed (the response is lost).",
    )
    down_seconds: float = Field(
        default=0.0,
        ge=0.0,
        le=3600.0,
        description="Answer 503 to everything except /healthz and /_faults for this long from now. "
        "In GET /_faults: the time left.",
    )
    held_accounts: dict[str, int] = Field(
        default={},
        max_length=100,
        description="Account number -> how many times a transfer (a key) debiting or crediting it is held: answered "
        "`conflict: in_progress` (409 for POST /transfers) without being booked or recorded, as if a long booking "
        "kept the account busy; its next request after that is booked as usual. One account's outage, while the "
        "core answers everything else.",
    )
    seed: int | None = Field(default=None, description="Seed of the random choices, for repeatable runs.")


class Faults:
    """The plan in force in this process and the random source its shares are drawn from."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._plan = FaultPlan()
        self._random = random.Random()
        self._down_until = 0.0
        self._held: dict[str, int] = {}  # key -> times held so far, under the plan in force

    def set(self, plan: FaultPlan) -> FaultPlan:
        if not self.enabled:
            raise FaultsDisabled("fault injection is off: start the service with COREBANK_FAULTS_ENABLED=true")
        self._plan = plan
        self._random = random.Random(plan.seed)
        self._down_until = time.monotonic() + plan.down_seconds
        self._held = {}
        return self.current()

    def current(self) -> FaultPlan:
        if not self.enabled:
            raise FaultsDisabled("fault injection is off: start the service with COREBANK_FAULTS_ENABLED=true")
        return self._plan.model_copy(update={"down_seconds": self.down_for()})

    def down_for(self) -> float:
        return max(0.0, self._down_until - time.monotonic())

    async def delay(self) -> None:
        if self._plan.latency_ms:
            await asyncio.sleep(self._plan.latency_ms / 1000)

    async def before_commit(self) -> None:
        if self._plan.commit_delay_ms:
            await asyncio.sleep(self._plan.commit_delay_ms / 1000)

    async def after_commit(self) -> None:
        if self._plan.answer_delay_ms:
            await asyncio.sleep(self._plan.answer_delay_ms / 1000)

    def error(self) -> bool:
        return self._random.random() < self._plan.error_rate

    def drop(self) -> bool:
        return self._random.random() < self._plan.drop_rate

    def hold(self, key: str, accounts: tuple[str, str]) -> bool:
        """Whether this request for `key`, which moves money between `accounts`, is held (not booked) now."""
        limit = max((self._plan.held_accounts.get(a, 0) for a in accounts), default=0)
        if self._held.get(key, 0) >= limit:
            return False
        self._held[key] = self._held.get(key, 0) + 1
        return True
