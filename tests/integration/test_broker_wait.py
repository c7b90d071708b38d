"""A process starting while the broker is down waits for it (bounded); wrong credentials fail at once."""

import time

import pytest

from app.errors import ServiceUnavailable, UsageError
from app.messaging.connection import connect
from tests.utils.services import AMQP_BASE, free_port

pytestmark = pytest.mark.integration


async def test_an_unreachable_broker_is_retried_then_reported_clearly() -> None:
    started = time.monotonic()
    with pytest.raises(ServiceUnavailable, match=r"not reachable after 2s.*scripts/services.sh"):
        await connect(f"amqp://guest:guest@127.0.0.1:{free_port()}/", "test", wait_seconds=2.0)
    assert time.monotonic() - started >= 2.0  # it waited, in case the broker was only restarting


async def test_wrong_credentials_fail_at_once() -> None:
    url = AMQP_BASE.replace("guest:guest@", "guest:wrong-password@") + "/"
    started = time.monotonic()
    with pytest.raises(UsageError, match="RabbitMQ refused the login of 'guest': check the user and password"):
        await connect(url, "test", wait_seconds=30.0)
    assert time.monotonic() - started < 10.0
