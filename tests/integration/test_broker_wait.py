"""A process starting while the broker is down waits for it (bounded); wrong credentials and a vhost that is not
there fail at once, in one line."""

import time

import pytest

from app.errors import ServiceUnavailable, UsageError
from app.messaging.connection import connect
from tests.utils.cli import remit_bytes
from tests.utils.services import AMQP_BASE, ServiceEnv, free_port, unique

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


async def test_a_vhost_that_does_not_exist_fails_at_once_saying_how_to_make_it() -> None:
    missing = unique("remit_no_such_vhost_")
    started = time.monotonic()
    with pytest.raises(UsageError) as refused:
        await connect(f"{AMQP_BASE}/{missing}", "test", wait_seconds=30.0)
    assert time.monotonic() - started < 10.0  # not waited for: it will not appear by waiting
    assert f"RabbitMQ would not open vhost '{missing}'" in str(refused.value)
    assert f"rabbitmqctl add_vhost {missing}" in str(refused.value)


async def test_remit_on_a_missing_vhost_prints_one_line_not_a_traceback(database_url: str) -> None:
    """`remit tenants add` (it opens the broker to bind the tenant's routing key) against a vhost that is not
    there: ~250 lines of traceback and exit 1 before; one red line saying what is wrong and how to fix it."""
    missing = unique("remit_no_such_vhost_")
    env = ServiceEnv(database_url=database_url, vhost=missing).env()
    code, out, err = await remit_bytes(env, "tenants", "add", unique("t"), "--name", "Nobody")
    assert code == 2, (out, err[-3_000:])
    assert out == b""
    lines = err.decode().splitlines()
    assert len(lines) == 1, err.decode()[-3_000:]
    assert lines[0].startswith(f"error: RabbitMQ would not open vhost '{missing}' (the path of REMIT_AMQP_URL)")
    assert f"rabbitmqctl add_vhost {missing} && rabbitmqctl set_permissions -p {missing} guest" in lines[0]
    assert "set REMIT_AMQP_URL to a vhost that exists" in lines[0]
