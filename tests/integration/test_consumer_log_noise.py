"""The consumer's log at INFO says what happened to payments and to the process, not every request it makes: its polls
of RabbitMQ's management API (queue gauges, every REMIT_QUEUE_METRICS_SECONDS) go out at DEBUG (issue 37, item 7).
A real consumer process; what it wrote to its output is read back."""

from pathlib import Path

import httpx
import pytest

from tests.utils.exposition import sample
from tests.utils.services import ServiceEnv, ServiceProcess, eventually

pytestmark = pytest.mark.integration


async def test_the_management_api_polls_are_not_logged_at_info(service_env: ServiceEnv, logs_dir: Path) -> None:
    env = service_env.env(REMIT_LOG_LEVEL="INFO", REMIT_LOG_FORMAT="text", REMIT_QUEUE_METRICS_SECONDS="1")
    consumer = ServiceProcess.consumer(env, logs_dir / "consumer.log")
    try:
        await consumer.ready(timeout=60)
        polls = 0.0

        async def polled_twice() -> bool:  # the queue gauges come from the management API: it was asked
            nonlocal polls
            async with httpx.AsyncClient(timeout=5) as client:
                metrics = (await client.get(f"http://127.0.0.1:{consumer.port}/metrics")).text
            seen = sample(metrics, "remit_queue_consumers", queue="payments.work.basic", kind="tier")
            polls += seen is not None
            return polls >= 2

        await eventually(polled_twice, timeout=60, poll=1.5)
    finally:
        consumer.stop()
    log = consumer.log_path.read_text(errors="replace")
    assert "FastStream app started" in log, log[-3000:]  # the process's output is all here
    assert "HTTP Request:" not in log, [line for line in log.splitlines() if "HTTP Request:" in line][:5]
