"""remit's HTTP adapter to an external core (docs/core-banking.md, "How remit talks to it").

A group of payments is booked with POST /transfers/batch (chunks of at most the core's batch size), each
transfer under the key app/consumer/core_keys.py derives, and answered positionally: Booked with the core's
transfer id, a permanent CoreRefusal, or a retryable error.

An answer that never came (a timeout, a dropped connection, a 5xx, an answer that does not parse) is an
unknown outcome: the core may have committed the transfers. It is never guessed and never resent blindly:
the adapter asks the core for those keys' status first and reports what happened; only keys the core has no
record of (`unknown`) or is still booking (`in_progress`) come back retryable, and when the status query fails
too they come back CoreOutcomeUnknown, retryable (never failed, never booked). The retry sends the same key,
which the core answers with its recorded outcome if it has one.
"""

import asyncio
import logging
import re
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import httpx
from pydantic_core import to_json

from app.consumer.breaker import CircuitBreaker
from app.consumer.core_banking import NO_GENERATIONS, Booked, CoreOutcome, Generations
from app.consumer.core_keys import FIRST_GENERATION, transfer_key
from app.consumer.core_outcomes import CoreAnswer, parse_answers
from app.consumer.core_refusals import key_conflict, quote_core, refusal
from app.consumer.core_tls import core_tls
from app.errors import (
    CircuitOpen,
    CoreBankingUnavailable,
    CoreOutcomeUnknown,
    InvalidMessage,
    RetryableError,
    TransferInProgress,
)
from app.observability.metrics import ObserveCore, ignore_core
from app.settings import Settings
from app.storage.ports.ledger import Ledger
from contracts import PaymentMessage

log = logging.getLogger("remit.core_banking")


# Failures that happen before a byte of the request left: the core cannot have booked anything.
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
_JSON = {"content-type": "application/json"}
_ITEM = re.compile(r"^body\.transfers\.(\d{1,9})(?:\.(.*))?$")  # an index, never a 5,000-digit int()


def core_client(settings: Settings) -> httpx.AsyncClient:
    """The one pooled client for the core at REMIT_CORE_BANKING_URL, with the timeouts from Settings."""
    if not settings.core_banking_url:
        raise ValueError("REMIT_CORE_BANKING_URL is not set")
    read = settings.core_banking_read_timeout_seconds
    timeout = httpx.Timeout(
        connect=settings.core_banking_connect_timeout_seconds,
        read=read,
        write=read,  # a request partly written is as unknown as one unanswered
        pool=settings.core_banking_pool_timeout_seconds,
    )
    size = settings.core_banking_pool_size
    limits = httpx.Limits(max_connections=size, max_keepalive_connections=size)
    # remit's credentials on every request, the breaker's probe included (a core refuses a wrong one everywhere):
    # its token, and its client certificate where the core requires mutual TLS.
    headers = settings.core_banking_headers()
    return httpx.AsyncClient(
        base_url=settings.core_banking_url,
        timeout=timeout,
        limits=limits,
        headers=headers,
        verify=core_tls(settings),
    )


async def core_ready(client: httpx.AsyncClient) -> bool:
    """The breaker's probe: GET /readyz answers 200 (503 while the core or its database is down)."""
    try:
        return (await client.get("/readyz")).status_code == 200
    except httpx.HTTPError:
        return False


@dataclass(frozen=True, slots=True)
class _Transfer:
    key: str
    body: dict[str, Any]  # one item of POST /transfers/batch, key included


class HttpCoreBanking:
    def __init__(
        self,
        client: httpx.AsyncClient,
        breaker: CircuitBreaker,
        batch_max: int,
        observe: ObserveCore = ignore_core,
        parallel: int = 1,
    ) -> None:
        self._client = client
        self._breaker = breaker
        self._batch_max = batch_max
        self._observe = observe
        self._parallel = parallel  # requests one group is split into and sent side by side

    async def book(
        self,
        payments: Sequence[PaymentMessage],
        ledger: Ledger | None = None,
        generations: Generations = NO_GENERATIONS,
    ) -> list[CoreOutcome]:
        """Book the payments, in order; one outcome per payment, in the same positions, each under its key of the
        generation `generations` gives it (the first when none). The core keeps the books; remit's `ledger` (in
        remit's transaction, when given) gets a row for each transfer the core says it booked, and nothing else:
        remit books locally only what the core says happened, so its reports and reconciliation read the core's
        outcomes."""
        transfers = [_transfer(p, generations.get(p.message_id, FIRST_GENERATION)) for p in payments]
        first: dict[str, _Transfer] = {}
        for transfer in transfers:
            first.setdefault(transfer.key, transfer)
        outcomes: dict[str, CoreOutcome] = {}
        unique = list(first.values())
        size = max(1, min(self._batch_max, -(-len(unique) // self._parallel)))
        chunks = [unique[start : start + size] for start in range(0, len(unique), size)]
        for wave in range(0, len(chunks), self._parallel):  # at most `parallel` requests in flight
            for answered in await asyncio.gather(*map(self._book_chunk, chunks[wave : wave + self._parallel])):
                outcomes.update(answered)
        pairs = zip(transfers, payments, strict=True)
        booked = [p for t, p in pairs if first[t.key] is t and isinstance(outcomes[t.key], Booked)]
        if ledger is not None and booked:
            await ledger.book(booked)
        # A second copy of a payment gets the first one's outcome; a different payment under the same key is
        # the conflict the core itself would answer, found without sending it.
        return [outcomes[t.key] if first[t.key].body == t.body else key_conflict() for t in transfers]

    async def _book_chunk(self, chunk: list[_Transfer]) -> dict[str, CoreOutcome]:
        if self._breaker.is_open:
            return _each(chunk, CircuitOpen("core banking is failing: the circuit breaker is open, nothing was sent"))
        try:
            response = await self._post("transfers_batch", {"transfers": [t.body for t in chunk]})
        except _NOT_SENT as exc:
            self._breaker.record_failure(type(exc).__name__)
            failure = f"core banking could not be reached ({type(exc).__name__}); nothing was sent"
            return _each(chunk, CoreBankingUnavailable(failure))
        except httpx.HTTPError as exc:  # sent, maybe whole, maybe answered: a timeout, a drop, an unreadable answer
            self._breaker.record_failure(type(exc).__name__)
            return await self._resolve(chunk, type(exc).__name__)
        if response.status_code == 422:
            self._breaker.record_success()
            return await self._book_valid(chunk, response)
        if response.status_code != 200:
            self._breaker.record_failure(f"HTTP {response.status_code}")
            return await self._resolve(chunk, f"HTTP {response.status_code}")
        self._breaker.record_success()
        answers = parse_answers(response, [t.key for t in chunk])
        if answers is None:
            return await self._resolve(chunk, "an answer that does not match the request")
        return {t.key: _booking_outcome(a) for t, a in zip(chunk, answers, strict=True)}

    async def _book_valid(self, chunk: list[_Transfer], response: httpx.Response) -> dict[str, CoreOutcome]:
        """422: the core refused the whole batch and did nothing. The transfers it names as invalid are
        permanent failures; the others are sent again at once (nothing of theirs was recorded)."""
        invalid = _invalid_items(response, len(chunk))
        if not invalid:
            code = _error_code(response)
            log.error("core banking refused a whole batch of %d transfers (%s)", len(chunk), code)
            return _each(chunk, RetryableError(f"core banking refused the whole request ({code}); nothing was booked"))
        outcomes: dict[str, CoreOutcome] = {
            chunk[i].key: InvalidMessage(f"core banking refused the transfer as invalid: {why}")
            for i, why in invalid.items()
        }
        rest = [t for i, t in enumerate(chunk) if i not in invalid]
        return outcomes | (await self._book_chunk(rest) if rest else {})

    async def _resolve(self, chunk: list[_Transfer], cause: str) -> dict[str, CoreOutcome]:
        """Ask the core what became of transfers whose answer was lost; report only what it says."""
        keys = [t.key for t in chunk]
        try:
            response = await self._post("transfers_status", {"idempotency_keys": keys})
        except httpx.HTTPError as exc:
            self._breaker.record_failure(type(exc).__name__)
            return _unresolved(chunk, cause, type(exc).__name__)
        if response.status_code != 200:
            self._breaker.record_failure(f"HTTP {response.status_code}")
            return _unresolved(chunk, cause, f"HTTP {response.status_code}")
        self._breaker.record_success()
        answers = parse_answers(response, keys)
        if answers is None:
            return _unresolved(chunk, cause, "an answer that does not match the query")
        outcomes = {key: _status_outcome(a, cause) for key, a in zip(keys, answers, strict=True)}
        booked = sum(isinstance(o, Booked) for o in outcomes.values())
        log.warning(
            "core banking: %d transfers' outcome unknown after %s; the core says %d booked, %d not",
            len(keys),
            cause,
            booked,
            len(keys) - booked,
        )
        return outcomes

    async def _post(self, route: str, body: dict[str, Any]) -> httpx.Response:
        """POST to /<route with / for _>, timed into remit_core_request_seconds (the core's share of a batch)."""
        started = time.perf_counter()
        result = "?"
        try:
            # pydantic-core's encoder: a quarter of the stdlib's time for a batch of 256 transfers (the same JSON)
            response = await self._client.post("/" + route.replace("_", "/"), content=to_json(body), headers=_JSON)
            result = str(response.status_code)
            return response
        except httpx.HTTPError as exc:
            result = type(exc).__name__
            raise
        finally:
            self._observe(route, result, time.perf_counter() - started)


def _transfer(payment: PaymentMessage, generation: int) -> _Transfer:
    key = transfer_key(payment.tenant_id, payment.message_id, generation)
    body = {
        "idempotency_key": key,
        "amount_cents": payment.amount_cents,
        "currency": payment.currency,
        "debtor_bsb": payment.debtor_bsb,
        "debtor_account": payment.debtor_account,
        "creditor_bsb": payment.creditor_bsb,
        "creditor_account": payment.creditor_account,
        "reference": payment.payment_reference,
    }
    return _Transfer(key, body)


def _booking_outcome(answer: CoreAnswer) -> CoreOutcome:
    if answer.status == "booked" and answer.transfer_id:
        return Booked(answer.transfer_id, answer.replayed, answer.recorded_at)
    if answer.status == "rejected":
        return refusal(answer.reason, answer.party)
    if answer.conflict == "request_mismatch":
        return key_conflict()
    if answer.conflict == "in_progress":
        return TransferInProgress("core banking is still booking an earlier request with this key; asked again later")
    return CoreOutcomeUnknown(f"core banking answered {answer.status!r} to a booking: sent again later, same key")


def _status_outcome(answer: CoreAnswer, cause: str) -> CoreOutcome:
    if answer.status == "booked" and answer.transfer_id:
        return Booked(answer.transfer_id, replayed=True, booked_at=answer.recorded_at)
    if answer.status == "rejected":
        return refusal(answer.reason, answer.party)
    if answer.status == "in_progress":
        return TransferInProgress(f"core banking is still booking it after {cause}; asked again later")
    if answer.status == "unknown":
        return CoreBankingUnavailable(f"core banking has no record of it after {cause}: sent again later, same key")
    return CoreOutcomeUnknown(f"core banking answered the status query with {answer.status!r} after {cause}")


def _each(chunk: list[_Transfer], outcome: CoreOutcome) -> dict[str, CoreOutcome]:
    return dict.fromkeys((t.key for t in chunk), outcome)


def _unresolved(chunk: list[_Transfer], cause: str, query_failure: str) -> dict[str, CoreOutcome]:
    log.warning(
        "core banking: %d transfers' outcome unknown after %s; the status query failed (%s)",
        len(chunk),
        cause,
        query_failure,
    )
    error = CoreOutcomeUnknown(
        f"outcome unknown after {cause} and the status query failed ({query_failure}): maybe booked; "
        "the retry sends the same key, which the core answers with its recorded outcome"
    )
    return _each(chunk, error)


def _invalid_items(response: httpx.Response, size: int) -> dict[int, str]:
    """The transfers a 422 names (`body.transfers.<i>...`), with where and why (never a value)."""
    invalid: dict[int, str] = {}
    for location, message in _error_details(response):
        if (match := _ITEM.match(location)) and int(match[1]) < size:
            field = match[2] or "transfer"
            invalid[int(match[1])] = quote_core(f"{field}: {message}", 200)
    return invalid


def _error_details(response: httpx.Response) -> Iterator[tuple[str, str]]:
    try:
        details = response.json()["error"]["details"]
        for detail in details:
            yield str(detail["location"]), str(detail["message"])
    except (ValueError, KeyError, TypeError):
        return


def _error_code(response: httpx.Response) -> str:
    try:
        return quote_core(str(response.json()["error"]["code"]), 64)
    except (ValueError, KeyError, TypeError):
        return f"HTTP {response.status_code}"
