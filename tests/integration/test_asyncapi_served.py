"""The AsyncAPI document the running consumer serves is the committed docs/asyncapi.json, and its page
offers no way to publish.

The consumer runs as a real process with the default retry delays (the committed document names the
delay queues after them); everything else about the deployment (its broker's address, its vhost) is not
part of the document, which always describes the docker-compose deployment.
"""

import json
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from aio_pika.abc import AbstractRobustConnection

from app.messaging.queues import ready_count
from app.specification import DOC_PATH
from tests.utils.factories import make_wire_dict
from tests.utils.services import ServiceEnv, ServiceProcess

pytestmark = pytest.mark.integration


@pytest.fixture
def documented_consumer(service_env: ServiceEnv, logs_dir: Path) -> Iterator[ServiceProcess]:
    env = service_env.env(REMIT_RETRY_DELAYS_SECONDS="[1.0, 5.0, 30.0]")
    process = ServiceProcess.consumer(env, logs_dir / "consumer.log")
    yield process
    process.stop()


async def test_the_served_document_is_the_committed_one(documented_consumer: ServiceProcess) -> None:
    await documented_consumer.ready()
    committed = json.loads(DOC_PATH.read_text())
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{documented_consumer.port}", timeout=10) as client:
        served = await client.get("/docs/asyncapi.json")
        page = await client.get("/docs/asyncapi")
    assert served.status_code == 200
    assert served.json() == committed
    assert page.status_code == 200
    embedded = re.search(r'"schema": (".*?[^\\]"), "config"', page.text)
    assert embedded is not None, "the page embeds the document"
    assert json.loads(json.loads(embedded.group(1))) == committed


async def test_the_page_cannot_publish_to_the_broker(
    documented_consumer: ServiceProcess, amqp: AbstractRobustConnection
) -> None:
    """FastStream's "try it out" endpoint would publish any body to any queue as the service's own login,
    which the consumer trusts for every tenant; the consumer's HTTP port must offer no such thing."""
    await documented_consumer.ready()
    forged = {
        "channelName": "payments.retry.30000ms",
        "message": {"message": make_wire_dict()},
        "options": {"sendToRealBroker": True},
    }
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{documented_consumer.port}", timeout=10) as client:
        response = await client.post("/docs/asyncapi/try", json=forged)
        page = await client.get("/docs/asyncapi")
    assert response.status_code == 404
    assert await ready_count(amqp, "payments.retry.30000ms") == 0
    assert "AsyncApiTryItPlugin" not in page.text


async def test_every_asset_of_the_page_is_served_by_the_consumer_itself(documented_consumer: ServiceProcess) -> None:
    """No CDN: a bank's network or an air-gapped install reaches nothing else, and no third-party code runs."""
    await documented_consumer.ready()
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{documented_consumer.port}", timeout=10) as client:
        page = await client.get("/docs/asyncapi")
        assets = re.findall(r'<(?:script|link)\b[^>]*\b(?:src|href)="([^"]*)"', page.text)
        assert sorted(assets) == ["/docs/asyncapi/assets/asyncapi.css", "/docs/asyncapi/assets/asyncapi.js"]
        assert "://" not in "".join(re.findall(r'(?:src|href)="([^"]*)"', page.text))
        answers = {url: await client.get(url) for url in assets}
    for url, answer in answers.items():
        assert answer.status_code == 200, url
    assert "AsyncApiStandalone" in answers["/docs/asyncapi/assets/asyncapi.js"].text
    assert answers["/docs/asyncapi/assets/asyncapi.js"].headers["content-type"].startswith("text/javascript")
    assert answers["/docs/asyncapi/assets/asyncapi.css"].headers["content-type"].startswith("text/css")
