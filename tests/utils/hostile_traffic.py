"""Hostile traffic: what a tenant publishing directly over AMQP can send, generated with hypothesis.

Used by the short run in tests/hostile/test_hostile_traffic.py and the long one in bench/hostile_input.py.
Tenant A (the attacker) publishes every generated message as its own RabbitMQ user while tenant B (the
victim) publishes valid payments. Afterwards `check_outcome` proves, from the database alone:
- every message RabbitMQ accepted from A is either A's own booked payment (its message_id in A's ledger)
  or a dead letter filed under A (matched by the SHA-256 of its bytes), never anything of B's;
- every payment of B is booked exactly once, and B has no dead letter.
"""

import asyncio
import hashlib
import json
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

import aiormq
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.messaging import headers
from tests.utils.factories import make_wire_dict, new_message_id, to_wire_bytes
from tests.utils.hostile_properties import hostile_properties
from tests.utils.tenant_users import TenantPublisher

REMIT_HEADERS = (
    headers.REASON,
    headers.ERROR_TYPE,
    headers.ERROR_MESSAGE,
    headers.ATTEMPTS,
    headers.FAILED_AT,
    headers.REPLAY_OF,
    headers.PUBLISHED_AT,
    headers.PUBLISHED_BY,
    headers.IDENTITY_TENANT,
    headers.BODY_TRUNCATED,
    headers.BODY_LENGTH,
    headers.BODY_SHA256,
)


@dataclass(frozen=True, slots=True)
class Hostile:
    """One message as the attacker sends it: bytes and every AMQP property it controls."""

    kind: str
    body: bytes
    message_id: str | None
    tenant_header: str
    extra_headers: Mapping[str, Any] = field(default_factory=dict)
    expiration: float | None = None
    content_type: str | None = "application/json"
    forge_user: bool = False  # user_id set to the victim's user: RabbitMQ must refuse it (406)
    victim_key: bool = False  # routing key of the victim: RabbitMQ must refuse it (403)
    raw_properties: bytes | None = None  # properties no decoder takes, as bytes on the wire (every other field unused)

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.body).hexdigest()


@dataclass(slots=True)
class Cast:
    """Who plays: the attacker's and the victim's tenant ids, and ids of the victim's payments to squat."""

    attacker: str
    victim: str
    victim_ids: list[str]
    attacker_user: str = ""  # the attacker's RabbitMQ login: with it, hostile properties are drawn too


Mutation = tuple[bytes | None, str]  # (raw bytes instead of the wire dict, or None; the tenant header)


def _garbage(draw: st.DrawFn, cast: Cast, wire: dict[str, Any]) -> Mutation:
    return draw(st.binary(max_size=300)), cast.attacker


def _truncated(draw: st.DrawFn, cast: Cast, wire: dict[str, Any]) -> Mutation:
    full = to_wire_bytes(wire)
    return full[: draw(st.integers(0, len(full) - 1))], cast.attacker


def _wrong_type(draw: st.DrawFn, cast: Cast, wire: dict[str, Any]) -> Mutation:
    name = draw(st.sampled_from(["amount_cents", "message_id", "retry_count", "ttl_seconds", "validation_result"]))
    wire[name] = draw(st.one_of(st.none(), st.booleans(), st.floats(allow_nan=False), st.text(max_size=8)))
    return None, cast.attacker


def _bad_amount(draw: st.DrawFn, cast: Cast, wire: dict[str, Any]) -> Mutation:
    huge = st.one_of(st.integers(min_value=10**12), st.just(10**14), st.just(2**63))
    wire["amount_cents"] = draw(st.one_of(st.integers(max_value=0), huge))
    return None, cast.attacker


def _bad_currency(draw: st.DrawFn, cast: Cast, wire: dict[str, Any]) -> Mutation:
    wire["currency"] = draw(st.sampled_from(["XXX", "ABC", "aud", "AU", "XAU", "", "EURO"]))
    return None, cast.attacker


def _forged_tenant(draw: st.DrawFn, cast: Cast, wire: dict[str, Any]) -> Mutation:
    where = draw(st.sampled_from(["both", "header", "body"]))
    if where in {"both", "body"}:
        wire["tenant_id"] = cast.victim
    return None, cast.victim if where in {"both", "header"} else cast.attacker


def _bad_time(draw: st.DrawFn, cast: Cast, wire: dict[str, Any]) -> Mutation:
    times = ["2099-01-01T00:00:00Z", "1970-01-01T00:00:00Z", "2025-05-01T02:14:33", "not a time"]
    wire["timestamp_utc"] = draw(st.sampled_from(times))
    wire["ttl_seconds"] = draw(st.sampled_from([0, 1, 86_400, 30 * 86_400, 31 * 86_400, -5]))
    wire["validation_result"] = {"passed": draw(st.booleans()), "checks": draw(st.sampled_from([[], ["limit_ok"]]))}
    return None, cast.attacker


def _reused_id(draw: st.DrawFn, cast: Cast, wire: dict[str, Any]) -> Mutation:
    if cast.victim_ids:
        wire["message_id"] = draw(st.sampled_from(cast.victim_ids))
    return None, cast.attacker


def _nested(draw: st.DrawFn, cast: Cast, wire: dict[str, Any]) -> Mutation:
    depth = draw(st.integers(100, 20_000))
    return b"[" * depth + b"]" * depth, cast.attacker


def _oversize(draw: st.DrawFn, cast: Cast, wire: dict[str, Any]) -> Mutation:
    wire["payment_reference"] = "X" * draw(st.integers(70_000, 3 * 1024 * 1024))
    return None, cast.attacker


def _extra_field(draw: st.DrawFn, cast: Cast, wire: dict[str, Any]) -> Mutation:
    wire[draw(st.text(min_size=1, max_size=10))] = draw(st.text(max_size=20))
    return None, cast.attacker


def _valid(draw: st.DrawFn, cast: Cast, wire: dict[str, Any]) -> Mutation:
    return None, cast.attacker


MUTATIONS = {
    "valid": _valid,
    "garbage": _garbage,
    "truncated": _truncated,
    "wrong_type": _wrong_type,
    "bad_amount": _bad_amount,
    "bad_currency": _bad_currency,
    "forged_tenant": _forged_tenant,
    "bad_time": _bad_time,
    "reused_id": _reused_id,
    "nested": _nested,
    "oversize": _oversize,
    "extra_field": _extra_field,
}


# Oversize and deeply nested bodies are the expensive ones: a few of them go a long way.
KINDS = [k for k in MUTATIONS if k not in {"oversize", "nested"} for _ in range(4)] + ["oversize", "nested"]


@st.composite
def hostile_message(draw: st.DrawFn, cast: Cast) -> Hostile:
    if cast.attacker_user and draw(st.integers(0, 3)) == 0:  # a quarter of them: properties nobody should read
        return draw(_with_hostile_properties(cast))
    kind = draw(st.sampled_from(KINDS))
    wire = make_wire_dict(tenant_id=cast.attacker)
    body, header = MUTATIONS[kind](draw, cast, wire)
    forged = draw(st.dictionaries(st.sampled_from(REMIT_HEADERS), st.sampled_from(["retries_exhausted", "1", "x"])))
    if forged.get(headers.IDENTITY_TENANT) == "x":
        forged[headers.IDENTITY_TENANT] = cast.victim
    return Hostile(
        kind=kind,
        body=body if body is not None else to_wire_bytes(wire),
        message_id=draw(st.sampled_from([str(wire.get("message_id")), None, str(new_message_id())])),
        tenant_header=header,
        extra_headers=forged,
        expiration=draw(st.sampled_from([None, None, None, 0.001, 0.05, 10**9])),
        content_type=draw(st.sampled_from(["application/json"] * 6 + [None, "text/plain"])),
        forge_user=draw(st.sampled_from([False] * 40 + [True])),
        victim_key=draw(st.sampled_from([False] * 40 + [True])),
    )


@st.composite
def _with_hostile_properties(draw: st.DrawFn, cast: Cast) -> Hostile:
    """A valid payment of the attacker's whose properties are hostile (tests/utils/hostile_properties.py)."""
    wire = make_wire_dict(tenant_id=cast.attacker)
    kind, raw = draw(hostile_properties(cast.attacker_user, cast.attacker, str(wire["message_id"])))
    body = to_wire_bytes(wire)
    return Hostile(f"properties:{kind}", body, str(wire["message_id"]), cast.attacker, raw_properties=raw)


def generate(cast: Cast, count: int, seed_value: int) -> list[Hostile]:
    """`count` hostile messages; a seed reproduces their kinds and shapes (ids and times are fresh)."""
    found: list[Hostile] = []

    @seed(seed_value)
    @settings(
        max_examples=count,
        phases=[Phase.generate],
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(hostile_message(cast))
    def collect(message: Hostile) -> None:
        found.append(message)

    collect()
    return found[:count]


@dataclass(slots=True)
class Sent:
    accepted: list[Hostile] = field(default_factory=list)
    refused: list[tuple[Hostile, str]] = field(default_factory=list)
    victim_sent_at: dict[str, float] = field(default_factory=dict)  # the victim's message_id -> confirmed at (epoch)


async def send_all(
    attacker: TenantPublisher,
    victim: TenantPublisher,
    messages: list[Hostile],
    victim_wires: list[dict[str, Any]],
) -> Sent:
    """Publish every hostile message as the attacker, the victim's payments interleaved with them; what
    RabbitMQ refuses (403, 406, over its size) is noted, not fatal: that is the broker doing its job."""
    sent = Sent()
    every = max(1, len(messages) // max(1, len(victim_wires)))
    pending = list(victim_wires)
    async with attacker.session() as hostile, victim.session() as honest:
        for n, message in enumerate(messages):
            if pending and n % every == 0:
                wire = pending.pop()
                await honest.publish_bytes(to_wire_bytes(wire), message_id=str(wire["message_id"]))
                sent.victim_sent_at[str(wire["message_id"])] = time.time()
            try:
                if message.raw_properties is not None:
                    await hostile.publish_raw(message.body, message.raw_properties)
                else:
                    await hostile.publish_bytes(
                        message.body,
                        f"{victim.tenant}.payment" if message.victim_key else None,
                        message_id=message.message_id,
                        user_id=victim.user if message.forge_user else attacker.user,
                        tenant_header=message.tenant_header,
                        extra_headers=message.extra_headers,
                        expiration=message.expiration,
                        content_type=message.content_type,
                    )
            except (aiormq.exceptions.AMQPError, ConnectionError) as exc:
                sent.refused.append((message, type(exc).__name__))
            else:
                sent.accepted.append(message)
        for wire in pending:
            await honest.publish_bytes(to_wire_bytes(wire), message_id=str(wire["message_id"]))
            sent.victim_sent_at[str(wire["message_id"])] = time.time()
    return sent


def victim_payments(victim: str, count: int) -> list[dict[str, Any]]:
    return [make_wire_dict(tenant_id=victim) for _ in range(count)]


@dataclass(slots=True)
class Outcome:
    unaccounted: list[Hostile]  # accepted by RabbitMQ, found neither in A's ledger nor in A's dead letters
    victim_booked: dict[str, int]  # B's message_id -> ledger rows for B
    victim_dead_letters: int
    attacker_booked: int
    attacker_dead_letters: int
    reasons: dict[str, int]
    victim_delays: list[float] = field(default_factory=list)  # seconds from the victim's publish to its booking


_BODY_SHAS = text(
    """
    SELECT coalesce(body_sha256, encode(sha256(body), 'hex')) AS sha, reason
    FROM dead_letters WHERE tenant_id = :tenant
    """
)
_LEDGER = text(
    "SELECT message_id::text AS id, payment_reference, amount_cents, currency, booked_at FROM ledger"
    " WHERE tenant_id = :tenant"
)
_VICTIM_DEAD = text("SELECT count(*) FROM dead_letters WHERE tenant_id = :tenant")


async def check_outcome(owner: AsyncEngine, cast: Cast, sent: Sent, victim_ids: list[str]) -> Outcome:
    """Read the outcome as the schema owner (row-level security does not hide anything from it)."""
    async with owner.connect() as conn:
        shas = (await conn.execute(_BODY_SHAS, {"tenant": cast.attacker})).all()
        booked = {r.id: r for r in (await conn.execute(_LEDGER, {"tenant": cast.attacker})).all()}
        victim_ledger = (await conn.execute(_LEDGER, {"tenant": cast.victim})).all()
        victim_rows = [r.id for r in victim_ledger]
        victim_dead = int((await conn.execute(_VICTIM_DEAD, {"tenant": cast.victim})).scalar_one())
    dead = {r.sha for r in shas}
    reasons: dict[str, int] = {}
    for row in shas:
        reasons[row.reason] = reasons.get(row.reason, 0) + 1
    unaccounted = [m for m in sent.accepted if m.sha256 not in dead and not _booked_as_itself(m, booked)]
    counts = {i: victim_rows.count(i) for i in victim_ids}
    delays = [r.booked_at.timestamp() - sent.victim_sent_at[r.id] for r in victim_ledger if r.id in sent.victim_sent_at]
    return Outcome(unaccounted, counts, victim_dead, len(booked), len(shas), reasons, sorted(delays))


def _booked_as_itself(message: Hostile, booked: Mapping[str, Any]) -> bool:
    """Its message_id is in A's ledger with its own reference, amount and currency (not a namesake)."""
    try:
        body = json.loads(message.body)
        row = booked.get(str(UUID(body["message_id"])))
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError, UnicodeDecodeError):
        return False
    fields = ("payment_reference", "amount_cents", "currency")
    return row is not None and all(body.get(f) == getattr(row, f) for f in fields)


def random_seed() -> int:
    return secrets.randbelow(2**31)


async def settle(owner: AsyncEngine, cast: Cast, sent: Sent, victim_ids: list[str], timeout: float) -> Outcome:
    """Poll until every accepted message is accounted for and the victim's payments are booked, or the
    timeout passes; the last outcome either way (the caller asserts on it)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        outcome = await check_outcome(owner, cast, sent, victim_ids)
        done = not outcome.unaccounted and all(n == 1 for n in outcome.victim_booked.values())
        if done or asyncio.get_running_loop().time() > deadline:
            return outcome
        await asyncio.sleep(1.0)


def by_kind(messages: list[Hostile]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for message in messages:
        counts[message.kind] = counts.get(message.kind, 0) + 1
    return dict(sorted(counts.items()))
