"""The hostile-properties attack of issue 35 as it was reported, measured: what one tenant's unreadable headers do
to another tenant's payments.

The consumer and the archiver run as real processes on a fresh database and vhost. Tenant A (the attacker) and
tenant B (the victim) share the basic tier's queue and pool. A publishes, as its own RabbitMQ user, a valid
payment whose headers table nests --depth levels (about 6 KB at 800); one second later B publishes --victims
payments, spread over --seconds; A publishes another such payment every --every seconds meanwhile. For the
whole run the broker's list of connections is read twice a second.

Printed: how many times a connection of the consumer or the archiver closed and came back, B's payments booked
(exactly once), B's dead letters, and B's delay from publish to booking (p50, max). Nothing is written to docs:
the numbers before and after the guard are in docs/reliability.md ("Hostile properties").

    .venv/bin/python bench/property_attack.py [--depth 800] [--victims 20] [--seconds 60] [--every 15]
"""

import argparse
import asyncio
import time
from pathlib import Path
from urllib.parse import quote

import _report  # noqa: F401 - makes app/ and tests/ importable when run as `python bench/x.py`
import aiormq
import asyncpg
import httpx

from app.resources import uow_factory_for
from app.storage.engine import make_engine
from app.storage.migrations import upgrade_to_head
from tests.utils.dead_letters import start_archiver
from tests.utils.factories import make_wire_dict, to_wire_bytes
from tests.utils.hostile_properties import nested, payment_properties, publish_raw
from tests.utils.services import (
    MANAGEMENT_AUTH,
    MANAGEMENT_URL,
    ServiceEnv,
    ServiceProcess,
    create_database,
    create_vhost,
    delete_vhost,
    drop_database,
)
from tests.utils.tenant_users import TenantPublisher, TenantUsers
from tests.utils.world import Routing, fresh_tenant


async def watch_connections(vhost: str, stop: asyncio.Event) -> tuple[int, int]:
    """(the remit processes' connections at the start, every one seen by the end): the broker names a connection by
    its two ends, so one that closed and came back is a new name. Tenants' own connections are left out."""
    first: set[str] = set()
    seen: set[str] = set()
    async with httpx.AsyncClient(base_url=MANAGEMENT_URL, auth=MANAGEMENT_AUTH, timeout=10) as client:
        while not stop.is_set():
            listed = await client.get(f"/api/vhosts/{quote(vhost, safe='')}/connections")
            names = {c["name"] for c in listed.json() if not str(c.get("user")).startswith("tenant-")}
            first = first or names
            seen |= names
            await asyncio.sleep(0.5)
    return len(first), len(seen)


async def poison(attacker: TenantPublisher, depth: int) -> None:
    wire = make_wire_dict(tenant_id=attacker.tenant)
    raw = payment_properties(attacker.user, attacker.tenant, str(wire["message_id"]), (b"deep", nested(depth)))
    connection = await aiormq.connect(attacker.url)
    try:
        channel = await connection.channel()
        await channel.confirm_delivery()
        await publish_raw(channel, f"{attacker.tenant}.payment", to_wire_bytes(wire), raw)
    finally:
        await connection.close()


async def attack(args: argparse.Namespace, env: ServiceEnv, attacker: TenantPublisher, victim: TenantPublisher) -> None:
    sent: dict[str, float] = {}
    stop = asyncio.Event()
    watching = asyncio.create_task(watch_connections(env.vhost, stop))
    await asyncio.sleep(5)  # the management API lists a connection after its first statistics event
    started = time.monotonic()
    await poison(attacker, args.depth)
    await asyncio.sleep(1)
    next_poison = started + args.every
    payments = [make_wire_dict(tenant_id=victim.tenant) for _ in range(args.victims)]
    for n, wire in enumerate(payments):
        await victim.publish(wire)
        sent[str(wire["message_id"])] = time.time()
        while time.monotonic() >= next_poison and next_poison < started + args.seconds:
            await poison(attacker, args.depth)
            next_poison += args.every
        await asyncio.sleep(max(0.0, started + 1 + (n + 1) * args.seconds / args.victims - time.monotonic()))
    await asyncio.sleep(args.settle)
    stop.set()
    seen = await watching
    conn = await asyncpg.connect(env.database_url.replace("+asyncpg", ""))
    try:
        booked = await conn.fetch(
            "SELECT message_id::text AS id, extract(epoch FROM booked_at) AS at FROM ledger WHERE tenant_id = $1",
            victim.tenant,
        )
        dead = await conn.fetch("SELECT reason FROM dead_letters WHERE tenant_id = $1", victim.tenant)
        attackers = await conn.fetch("SELECT reason FROM dead_letters WHERE tenant_id = $1", attacker.tenant)
    finally:
        await conn.close()
    delays = sorted(float(row["at"]) - sent[row["id"]] for row in booked if row["id"] in sent)
    ids = [row["id"] for row in booked]
    at_start, in_all = seen
    print(f"connections of the consumer and the archiver: {at_start}; opened again meanwhile: {in_all - at_start}")
    print(f"B's payments booked: {len(set(ids))} of {len(payments)}, booked twice: {len(ids) - len(set(ids))}")
    print(f"B's dead letters: {len(dead)} ({[r['reason'] for r in dead]})")
    if delays:
        print(f"B's publish to booked: p50 {delays[len(delays) // 2]:.2f} s, max {delays[-1]:.2f} s")
    print(f"A's dead letters: {len(attackers)} ({sorted({r['reason'] for r in attackers})})")


async def main(args: argparse.Namespace) -> None:
    database_url, vhost = await create_database(), create_vhost()
    env = ServiceEnv(database_url=database_url, vhost=vhost)
    users = TenantUsers(env.amqp_url, vhost)
    engine = make_engine(database_url, pool_size=2)
    try:
        await upgrade_to_head(database_url)
        Routing.amqp_url = env.amqp_url
        uow = uow_factory_for(engine)
        a, b = await fresh_tenant(uow), await fresh_tenant(uow)
        consumer = ServiceProcess.consumer(env.env(), args.logs / "consumer.log")
        archiver = start_archiver(env.env(), args.logs / "archiver.log")
        try:
            await consumer.ready()
            await attack(args, env, users.publisher(a), users.publisher(b))
        finally:
            consumer.stop()
            archiver.stop()
    finally:
        Routing.amqp_url = None
        users.remove_all()
        await engine.dispose()
        delete_vhost(vhost)
        await drop_database(database_url)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--depth", type=int, default=800, help="levels of nesting in the attacker's header")
    parser.add_argument("--victims", type=int, default=20, help="B's payments")
    parser.add_argument("--seconds", type=float, default=60.0, help="B's payments are spread over this")
    parser.add_argument("--every", type=float, default=15.0, help="seconds between the attacker's messages")
    parser.add_argument("--settle", type=float, default=30.0, help="seconds to wait at the end")
    parser.add_argument("--logs", type=Path, default=Path("/tmp/remit-property-attack"))
    arguments = parser.parse_args()
    arguments.logs.mkdir(parents=True, exist_ok=True)
    asyncio.run(main(arguments))
