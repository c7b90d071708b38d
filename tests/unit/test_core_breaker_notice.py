"""What the console, `remit status` and the admin API say while a consumer's core-banking breaker is open, from the
heartbeats (the in-memory ports): live processes only, the earliest opening, each kind of failure once; nothing while
none is open."""

from datetime import UTC, datetime, timedelta

from app.observability.core_breaker import BreakerNotice, breaker_notice, pause_reason
from app.storage.ports.worker_pools import Heartbeat
from tests.fakes.database import FakeDatabase
from tests.fakes.unit_of_work import fake_uow_factory

NOW = datetime(2026, 11, 23, 19, 30, tzinfo=UTC)


async def beat(db: FakeDatabase, at: datetime, *beats: Heartbeat) -> None:
    db.clock = lambda: at
    async with fake_uow_factory(db)() as uow:
        await uow.worker_pools.beat(beats)
        await uow.commit()


def heartbeat(process: str, pool: str, failure: str | None = None, since: datetime | None = None) -> Heartbeat:
    paused = pause_reason(failure) if failure else None
    return Heartbeat(process, pool, pool, f"payments.work.{pool}", 3, 0 if paused else 3, paused, since)


async def test_only_live_paused_processes_count_each_once() -> None:
    db = FakeDatabase()
    opened = NOW - timedelta(minutes=3)
    await beat(db, NOW - timedelta(minutes=5), heartbeat("gone:1", "basic", "ReadTimeout", NOW - timedelta(hours=1)))
    await beat(db, NOW - timedelta(seconds=2), heartbeat("a:1", "basic", "ConnectError", opened),
               heartbeat("a:1", "free", "ConnectError", opened), heartbeat("b:2", "basic", "HTTP 503", NOW),
               heartbeat("c:3", "basic"))  # fmt: skip
    notice = await breaker_notice(fake_uow_factory(db), NOW)
    assert notice == BreakerNotice(2, opened, ["ConnectError", "HTTP 503"])


async def test_nothing_is_said_while_every_breaker_is_closed() -> None:
    db = FakeDatabase()
    await beat(db, NOW, heartbeat("a:1", "basic"))
    assert await breaker_notice(fake_uow_factory(db), NOW) is None


def test_it_says_what_is_open_since_when_and_what_it_means() -> None:
    text = BreakerNotice(1, NOW - timedelta(seconds=65), ["ConnectError"]).describe(NOW)
    assert text.startswith(
        "the core-banking circuit breaker is open in 1 consumer process since 2026-11-23 19:28:55 UTC "
        "(1m05s ago, last failure: ConnectError): the core failed too often in a row, so it stopped taking payments."
    )
    assert "Payments wait in their queues: nothing is lost" in text
    assert "2 consumer processes:" in BreakerNotice(2, None, []).describe(NOW)  # from processes that kept no time
