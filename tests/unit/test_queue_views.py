"""The pure parts of the live-queue views: ages as operators read them, which queues are remit's, what the
broker's peek prints, and masking a body cut at 64 bytes."""

import asyncio
import os
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from app.errors import ServiceUnavailable
from app.messaging.broker_peek import BrokerPeek, PeekedMessage
from app.messaging.management import QueueStats
from app.messaging.topology import Topology
from app.observability.live_queues import QueueWatch, Taken, kind_of
from app.observability.peek import masked_prefix
from app.observability.queue_overview import format_age
from app.settings import Settings

TOPOLOGY = Topology.from_settings(Settings.model_construct())


@pytest.mark.parametrize(
    ("seconds", "ready", "shown"),
    [
        (None, 0, "-"),
        (None, 3, "?"),
        (0.4, 1, "0s"),
        (59.9, 1, "59s"),
        (60, 1, "1m00s"),
        (3599, 1, "59m59s"),
        (3600, 1, "1h00m"),
        (86_399, 1, "23h59m"),
        (86_400, 1, "1d00h"),
        (90_061, 1, "1d01h"),
    ],
)
def test_ages_read_as_operators_read_them(seconds: float | None, ready: int, shown: str) -> None:
    assert format_age(seconds, ready) == shown


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("payments.work.basic", "tier basic"),
        ("payments.work.tenant.anz", "dedicated anz"),
        ("payments.retry.5000ms", "retry 5000ms"),
        ("payments.retry.7000ms", "retry 7000ms"),  # a delay no longer configured: its queue still drains
        ("payments.dlq", "dead-letter"),
    ],
)
def test_remits_queues_are_told_apart(name: str, kind: str) -> None:
    found = kind_of(TOPOLOGY, name)
    assert found is not None
    assert str(found) == kind


@pytest.mark.parametrize(
    "name", ["payments.work", "payments.work.tenant.", "payments.retry.ms", "payments.retry.5s", "payments.dlx", ""]
)
def test_other_queues_are_not_remits(name: str) -> None:
    assert kind_of(TOPOLOGY, name) is None


# What `rabbitmq-queues peek --formatter json` printed on RabbitMQ 3.10.8 for a relay-published payment.
CLI_MESSAGE = {
    "delivery_mode": 2,
    "exchange": "payments",
    "header.tenantUUID": "anz",
    "header.remit-published-at": 1795452005123,
    "header.remit-claims": [["a", "byte", 1]],
    "header.x-delivery-count": 2,
    "message_id": "01a20954-1923-7823-b51c-d953f80c476b",
    "payload (max 64 bytes)": '{"message_id":"01a20954-1923-7823-b51c-d953f80c476b","timestamp_',
    "priority": 0,
    "routing_keys": ["anz.payment"],
    "timestamp": 1795452005,
    "user_id": "guest",
}


def test_the_brokers_peek_output_is_read() -> None:
    message = PeekedMessage.of(7, CLI_MESSAGE)
    assert message.position == 7
    assert message.message_id == "01a20954-1923-7823-b51c-d953f80c476b"
    assert (message.user_id, message.routing_key) == ("guest", "anz.payment")
    assert message.timestamp == datetime.fromtimestamp(1795452005, UTC)
    assert message.headers["tenantUUID"] == "anz"
    assert message.headers["remit-published-at"] == 1795452005123
    assert message.delivery_count == 2
    assert message.body_prefix.startswith('{"message_id"')


def test_a_message_without_timestamp_user_or_count() -> None:
    message = PeekedMessage.of(1, {"payload (max 64 bytes)": "x", "routing_keys": []})
    assert (message.timestamp, message.user_id, message.routing_key, message.delivery_count) == (None, None, None, 0)


@pytest.mark.parametrize(
    ("prefix", "shown"),
    [
        ('{"debtor_account":"123456789","x', '{"debtor_account":"******789","x'),
        ('{"debtor_account":"1234', '{"debtor_account":"****'),  # cut inside an account number
        ('{"amount_cents":150000,"message', '{"amount_cents":***000,"message'),
        ('{"message_id":"01a20954-1923-7823', '{"message_id":"01a20954-1923-****'),
    ],
)
def test_a_body_prefix_is_masked_even_where_it_was_cut(prefix: str, shown: str) -> None:
    assert masked_prefix(prefix) == shown


def test_peek_without_the_brokers_cli_says_how_to_get_it() -> None:
    with pytest.raises(ServiceUnavailable, match="REMIT_RABBITMQ_QUEUES_COMMAND"):
        asyncio.run(BrokerPeek(["no-such-rabbitmq-queues"]).at("/", "payments.work.basic", 1))
    assert not BrokerPeek([]).available


@pytest.mark.parametrize(("niceness", "runs_at"), [(0, 0), (19, 19)])
def test_a_peek_in_the_background_runs_its_cli_at_the_lowest_priority(
    tmp_path: Path, niceness: int, runs_at: int
) -> None:
    cli = tmp_path / "rabbitmq-queues"
    seen = tmp_path / "niceness"
    cli.write_text(
        f"#!{sys.executable}\nimport os, sys\nopen({str(seen)!r}, 'w').write(str(os.nice(0)))\n"
        'print(\'{"message": "the queue does not have a message at that position"}\', file=sys.stderr)\n'
        "sys.exit(1)\n"
    )
    cli.chmod(0o700)
    assert asyncio.run(BrokerPeek([str(cli)], niceness=niceness).at("/", "payments.work.basic", 1)) is None
    assert int(seen.read_text()) == os.nice(0) + runs_at


class StatsOnly:
    """The management API's figures for one queue, as given."""

    def __init__(self, stats: QueueStats) -> None:
        self.stats = stats

    def queue_stats(self, vhost: str) -> list[QueueStats]:
        return [self.stats]


def watch_with(ready: int, taken: Taken | None) -> QueueWatch:
    """A watch whose peek is turned off (a peek raises): only the newest message taken can give an age."""
    stats = QueueStats("payments.work.basic", ready, 0, 1, 0.0, 0.0, None)
    return QueueWatch(StatsOnly(stats), BrokerPeek([]), Topology.from_settings(Settings()), "/", lambda _: taken)


NOW = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)


def test_a_queue_this_process_takes_from_has_the_age_of_the_newest_message_taken_and_no_peek() -> None:
    taken = Taken(NOW - timedelta(seconds=42), NOW.timestamp() - 0.5)
    live = asyncio.run(watch_with(500, taken).live(NOW))
    assert live.age_problem is None
    assert [q.oldest_age_seconds for q in live.queues] == [42.0]


def test_a_newest_message_without_a_timestamp_leaves_the_age_unknown() -> None:
    live = asyncio.run(watch_with(500, Taken(None, NOW.timestamp() - 0.5)).live(NOW))
    assert (live.age_problem, [q.oldest_age_seconds for q in live.queues]) == (None, [None])


@pytest.mark.parametrize("arrived_ago", [1.5, 60.0])
def test_a_queue_nothing_was_taken_from_lately_is_peeked(arrived_ago: float) -> None:
    taken = Taken(NOW - timedelta(seconds=42), NOW.timestamp() - arrived_ago)
    live = asyncio.run(watch_with(500, taken).live(NOW))
    assert "cannot peek" in (live.age_problem or "")
    assert [q.oldest_age_seconds for q in live.queues] == [None]


def test_an_empty_queue_has_no_age_whatever_was_taken() -> None:
    live = asyncio.run(watch_with(0, Taken(NOW - timedelta(seconds=42), NOW.timestamp())).live(NOW))
    assert [q.oldest_age_seconds for q in live.queues] == [None]
