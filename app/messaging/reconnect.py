"""How remit's own AMQP connections come back after the broker goes away: with backoff and jitter, and one
log line per change of state.

aio-pika's robust connection reconnects every `reconnect_interval` seconds, a constant (5 s), and logs each
try (an ERROR from aiormq and a WARNING from aio-pika every time). Here the interval grows from 1 s to
10 s with jitter (app/observability/outage.py) while the broker stays away, and starts again from 1 s after
it is back; the connection logs "failed" once (ERROR), "still failing, retrying every 10s or so" once
(WARNING) and "works again after N s" once (WARNING). app/logs.py keeps aiormq's duplicate per-try ERROR
at DEBUG; aio-pika's own line per try (INFO and WARNING) stays. FastStream's brokers (the consumer's, the
archiver's) connect the same way (BackingOffRabbitBroker).

Every one of them decodes with the guard in place (app/messaging/amqp_guard.py): a content header a publisher
made unreadable marks that delivery unreadable instead of closing the connection, for the consumer, the archiver
and an operator's peek alike.
"""

import logging
import time
from typing import Any

import aio_pika
from faststream.rabbit import RabbitBroker

from app.messaging import amqp_guard
from app.observability.outage import Outage

log = logging.getLogger("remit.amqp")

FIRST_WAIT_SECONDS = 1.0
MOST_WAIT_SECONDS = 10.0


class BackingOffConnection(aio_pika.RobustConnection):
    """A robust connection whose reconnection waits back off. aio-pika reads `reconnect_interval` before it
    sleeps between tries (and for its log line); each read within one wait gives the same value, and the
    next wait is drawn once this one has passed."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        amqp_guard.install()  # before the first frame is decoded
        self._outage = Outage("RabbitMQ connection", log, base=FIRST_WAIT_SECONDS, cap=MOST_WAIT_SECONDS)
        self._wait = FIRST_WAIT_SECONDS
        self._wait_ends = 0.0
        super().__init__(*args, **kwargs)
        self.close_callbacks.add(self._lost)
        self.reconnect_callbacks.add(self._restored)

    @property
    def reconnect_interval(self) -> float:
        if self._outage.failures and time.monotonic() >= self._wait_ends:  # the last wait is over: one more try
            self._wait = self._outage.failed(ConnectionError("still unreachable"))
            self._wait_ends = time.monotonic() + self._wait * 0.9
        return self._wait

    @reconnect_interval.setter
    def reconnect_interval(self, value: float) -> None:
        pass  # aio-pika's constant (from the URL or its default): the backoff above replaces it

    def _lost(self, _sender: object, exc: BaseException | None = None, *_: object) -> None:
        if self._close_called or self._outage.failures:  # closed on purpose, or already counted
            return
        if not self.connection_attempt:
            # Never opened: aio-pika does not retry a first connection, it raises to connect() (connection.py),
            # which retries or says in one line what is wrong (a login or vhost refused); nothing to log here.
            return
        self._wait = self._outage.failed(exc or ConnectionError("closed by the broker"))
        self._wait_ends = time.monotonic() + self._wait * 0.9

    def _restored(self, _sender: object, *_: object) -> None:
        self._outage.worked()
        self._wait = FIRST_WAIT_SECONDS


class BackingOffRabbitBroker(RabbitBroker):
    """A FastStream broker whose connection is a BackingOffConnection: the same backoff and one log line per
    change of state as remit's own connections, instead of aio-pika's try (and WARNING) every 5 s.

    FastStream 0.7.8 has no option for the connection class, but passes the keyword arguments it keeps for
    the connection to `aio_pika.connect_robust` unchanged (`RabbitBroker._connect`), and that one takes
    `connection_class`. tests/integration/test_broker_outage.py fails if an upgrade changes that."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._connection_kwargs["connection_class"] = BackingOffConnection
