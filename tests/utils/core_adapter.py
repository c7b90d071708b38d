"""remit's HTTP adapter and circuit breaker pointed at a reference core in tests, made as the service makes them
(one pooled client with Settings' timeouts), with what the breaker told its listener and what the client sent."""

from collections.abc import Callable
from dataclasses import dataclass, field

import httpx
from pydantic import SecretStr

from app.consumer.breaker import BreakerStatus, CircuitBreaker
from app.consumer.core_banking import CoreOutcome
from app.consumer.core_http import HttpCoreBanking, core_client, core_ready
from app.settings import Settings
from contracts import PaymentMessage
from tests.utils.corebank import Acct, CoreBank
from tests.utils.factories import make_message


@dataclass
class Watched:
    adapter: HttpCoreBanking
    breaker: CircuitBreaker
    client: httpx.AsyncClient
    heard: list[BreakerStatus] = field(default_factory=list)  # the breaker's changes, in order
    requests: list[str] = field(default_factory=list)  # the paths the client requested, in order

    def sent(self, path: str) -> int:
        return self.requests.count(path)

    async def close(self) -> None:
        await self.breaker.aclose()
        await self.client.aclose()


Watching = Callable[..., "Watched"]  # the `watching` fixture (tests/corebank/conftest.py): watch(core, ...)


def watch(
    core: CoreBank, threshold: int, read_timeout: float, batch_max: int = 1000, probe_interval: float = 0.2
) -> Watched:
    settings = Settings(
        core_banking_url=core.url,
        core_banking_token=SecretStr(core.token),
        core_banking_read_timeout_seconds=read_timeout,
    )
    client = core_client(settings)
    breaker = CircuitBreaker(lambda: core_ready(client), threshold=threshold, probe_interval=probe_interval)
    watched = Watched(HttpCoreBanking(client, breaker, batch_max), breaker, client)

    async def sent(request: httpx.Request) -> None:
        watched.requests.append(request.url.path)

    async def heard(status: BreakerStatus) -> None:
        watched.heard.append(status)

    client.event_hooks["request"].append(sent)
    breaker.subscribe(heard)
    return watched


def payment(debtor: Acct, creditor: Acct, amount: int) -> PaymentMessage:
    """A payment with fresh ids from the debtor's account to the creditor's, in the debtor's currency."""
    return make_message(
        amount_cents=amount,
        currency=debtor.currency,
        debtor_bsb=debtor.bsb,
        debtor_account=debtor.number,
        creditor_bsb=creditor.bsb,
        creditor_account=creditor.number,
    )


def kinds(outcomes: list[CoreOutcome]) -> list[type[object]]:
    return [type(o) for o in outcomes]
