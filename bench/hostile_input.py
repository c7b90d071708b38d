"""The long hostile-input run: --messages (default 10,000) messages generated with hypothesis, published
by tenant A as its own RabbitMQ user (malformed and truncated JSON, wrong types, floats, huge and negative
amounts, unknown currencies, forged tenants and `remit-*` headers, duplicate and reused ids, bad
expirations, oversize and deeply nested bodies; a quarter of them valid payments whose AMQP properties no decoder
should read: headers nested to the frame's size, too many values, text that is not UTF-8, timestamps past 9999),
while tenant B's valid payments flow.

The consumer and the archiver run as real processes on a fresh database and vhost, connected as the
service roles. At the end, from the database alone: zero consumer or archiver crashes; every message
RabbitMQ accepted from A either booked as A's own valid payment or dead-lettered under A with a reason;
B's payments all booked exactly once, and no dead letter of B's; from the broker's list of connections: none of
the consumer's or the archiver's closed (each kept its `connected_at`); and B's delay from publish to booking.
The counts go to docs/reliability.md
(between the hostile_input markers). The short form of this run is tests/hostile/test_hostile_traffic.py.

    .venv/bin/python bench/hostile_input.py [--messages 10000] [--honest 1000] [--seed N]
"""

import argparse
import asyncio
import re
import sys
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import _report as r

from app.resources import uow_factory_for
from app.storage.engine import make_engine
from app.storage.migrations import upgrade_to_head
from tests.utils.connections import service_connections
from tests.utils.dead_letters import start_archiver
from tests.utils.hostile_traffic import (
    Cast,
    Outcome,
    Sent,
    by_kind,
    generate,
    random_seed,
    send_all,
    settle,
    victim_payments,
)
from tests.utils.services import ServiceEnv, ServiceProcess, create_database, create_vhost, delete_vhost, drop_database
from tests.utils.tenant_users import TenantUsers
from tests.utils.world import Routing, fresh_tenant

RELIABILITY = r.ROOT / "docs" / "reliability.md"
CONNECTIONS = 6  # the consumer's own and one per tier pool, and the archiver's
BEGIN, END = "<!-- BEGIN hostile_input results -->", "<!-- END hostile_input results -->"


async def run(
    args: argparse.Namespace, logs: Path
) -> tuple[Sent, Outcome, dict[str, bool], dict[str, int], float, int]:
    database_url, vhost = await create_database(), create_vhost()
    env = ServiceEnv(database_url=database_url, vhost=vhost)
    users = TenantUsers(env.amqp_url, vhost)
    engine = make_engine(database_url, pool_size=2)
    try:
        await upgrade_to_head(database_url)
        Routing.amqp_url = env.amqp_url
        uow = uow_factory_for(engine)
        attacker, victim = await fresh_tenant(uow, tier="enterprise"), await fresh_tenant(uow, tier="enterprise")
        consumer = ServiceProcess.consumer(env.env(), logs / "consumer.log")
        archiver = start_archiver(env.env(), logs / "archiver.log")
        try:
            await consumer.ready()
            honest = victim_payments(victim, args.honest)
            victim_ids = [str(w["message_id"]) for w in honest]
            a = users.publisher(attacker)
            cast = Cast(attacker, victim, victim_ids, attacker_user=a.user)
            messages = generate(cast, args.messages, args.seed)
            before = service_connections(vhost, "remit-", CONNECTIONS)
            started = time.monotonic()
            sent = await send_all(a, users.publisher(victim), messages, honest)
            outcome = await settle(engine, cast, sent, victim_ids, timeout=args.timeout)
            elapsed = time.monotonic() - started
            after = service_connections(vhost, "remit-", len(before))
            closed = sum(1 for name, at in before.items() if after.get(name) != at)
            alive = {"consumer": consumer.proc.poll() is None, "archiver": archiver.proc.poll() is None}
            errors = {
                name: p.log().count('"level": "ERROR"') for name, p in (("consumer", consumer), ("archiver", archiver))
            }
        finally:
            consumer.stop()
            archiver.stop()
        return sent, outcome, alive, errors, elapsed, closed
    finally:
        Routing.amqp_url = None
        users.remove_all()
        await engine.dispose()
        if args.keep:
            print(f"kept: database {database_url}, vhost {vhost}, logs {logs}", file=sys.stderr)
        else:
            delete_vhost(vhost)
            await drop_database(database_url)


def report(
    args: argparse.Namespace,
    sent: Sent,
    outcome: Outcome,
    alive: dict[str, bool],
    errors: dict[str, int],
    elapsed: float,
    closed: int,
) -> str:
    victims_ok = all(n == 1 for n in outcome.victim_booked.values())
    clean = not outcome.unaccounted and outcome.victim_dead_letters == 0 and not any(errors.values()) and not closed
    passed = all(alive.values()) and victims_ok and clean
    refused = Counter(why for _, why in sent.refused)
    rows = [
        ("seed", str(args.seed)),
        ("hostile messages generated", f"{args.messages:,}"),
        ("accepted by RabbitMQ", f"{len(sent.accepted):,}"),
        *((f"refused by RabbitMQ: {why}", f"{n:,}") for why, n in sorted(refused.items())),
        *((f"accepted, kind {kind}", f"{n:,}") for kind, n in by_kind(sent.accepted).items()),
        ("booked as the attacker's own payments", f"{outcome.attacker_booked:,}"),
        ("dead letters under the attacker", f"{outcome.attacker_dead_letters:,}"),
        *((f"dead-lettered: {reason}", f"{n:,}") for reason, n in sorted(outcome.reasons.items())),
        ("accepted but unaccounted for", f"{len(outcome.unaccounted):,}"),
        ("victim's payments", f"{len(outcome.victim_booked):,}"),
        ("victim's payments booked exactly once", f"{sum(n == 1 for n in outcome.victim_booked.values()):,}"),
        ("victim's dead letters", f"{outcome.victim_dead_letters:,}"),
        *_delays(outcome.victim_delays),
        ("connections of the consumer and the archiver closed during the run", f"{closed} of {CONNECTIONS}"),
        ("consumer crashed", "no" if alive["consumer"] else "YES"),
        ("archiver crashed", "no" if alive["archiver"] else "YES"),
        ("ERROR lines in the consumer's log", str(errors["consumer"])),
        ("ERROR lines in the archiver's log", str(errors["archiver"])),
        ("elapsed (s)", f"{elapsed:.0f}"),
    ]
    table = "| what | count |\n|---|---:|\n" + "".join(f"| {k} | {v} |\n" for k, v in rows)
    verdict = "passed" if passed else "FAILED"
    command = f"`.venv/bin/python bench/hostile_input.py --messages {args.messages} --seed {args.seed}`"
    return (
        f"### Run of {datetime.now(UTC):%Y-%m-%d %H:%M} UTC: {verdict}\n\n"
        f"{command} (kinds and shapes replay from the seed; ids and times are fresh).\n\n"
        f"{r.machine_details()}\n\n{table}"
    )


def _delays(delays: list[float]) -> list[tuple[str, str]]:
    if not delays:
        return []
    p50, p99 = (delays[min(len(delays) - 1, int(q * len(delays)))] for q in (0.5, 0.99))  # sorted already
    return [("victim's publish to booked, p50 / p99 / max (s)", f"{p50:.2f} / {p99:.2f} / {delays[-1]:.2f}")]


def write(section: str) -> None:
    text = RELIABILITY.read_text()
    block = f"{BEGIN}\n{section.strip()}\n\n{END}"
    if BEGIN in text:
        text = re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda _: block, text, flags=re.DOTALL)
    else:
        text = text.rstrip("\n") + "\n\n## Hostile input\n\n" + block + "\n"
    RELIABILITY.write_text(text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=10_000, help="hostile messages from tenant A")
    parser.add_argument("--honest", type=int, default=1_000, help="valid payments from tenant B")
    parser.add_argument("--seed", type=int, default=random_seed())
    parser.add_argument("--timeout", type=float, default=900, help="seconds to wait for everything to settle")
    parser.add_argument("--keep", action="store_true", help="keep the database and vhost for inspection")
    parser.add_argument("--no-write", action="store_true", help="print only; leave docs/reliability.md alone")
    args = parser.parse_args()
    logs = Path(f"/tmp/remit-hostile-{args.seed}")
    logs.mkdir(parents=True, exist_ok=True)
    sent, outcome, alive, errors, elapsed, closed = asyncio.run(run(args, logs))
    section = report(args, sent, outcome, alive, errors, elapsed, closed)
    print(section)
    if outcome.unaccounted:
        print("unaccounted:", [(m.kind, m.sha256[:12]) for m in outcome.unaccounted[:20]], file=sys.stderr)
    if not args.no_write:
        write(section)
    return 0 if "passed" in section.splitlines()[0] else 1


if __name__ == "__main__":
    sys.exit(main())
