"""The reference core as a real process on a free port with its own fresh database: one per test module.

Every HTTP answer a test receives is checked against the generated OpenAPI document: a status code the
route does not declare fails the test, so the document cannot fall behind what the service answers.
"""

import json
import re
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from corebank.openapi import render
from tests.utils.core_adapter import Watched, Watching, watch
from tests.utils.corebank import CoreBank, SetFaults, create_corebank_database, start_corebank, wait_ready
from tests.utils.services import drop_database

_DOC: dict[str, Any] = json.loads(render(faults=True))  # the tests' core has fault injection
_ROUTES = [
    (re.compile("^" + re.sub(r"\{[^}]+\}", "[^/]+", path) + "$"), path, operations)
    for path, operations in _DOC["paths"].items()
]


async def check_declared(response: httpx.Response) -> None:
    method, path = response.request.method.lower(), response.request.url.path
    for pattern, template, operations in _ROUTES:
        if pattern.match(path) and method in operations:
            declared = operations[method]["responses"]
            assert str(response.status_code) in declared, f"{method.upper()} {template} answered {response.status_code}"
            return
    raise AssertionError(f"{method.upper()} {path} is not in the OpenAPI document")


@pytest.fixture(scope="module")
async def core(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[CoreBank]:
    database_url = await create_corebank_database()
    running = start_corebank(database_url, tmp_path_factory.mktemp("corebank") / "corebank.log")
    try:
        await wait_ready(running)
        yield running
    finally:
        running.process.stop()
        await drop_database(database_url)


@pytest.fixture
async def client(core: CoreBank) -> AsyncIterator[httpx.AsyncClient]:
    async with core.client(timeout=30, event_hooks={"response": [check_declared]}) as c:
        yield c


@pytest.fixture
async def faults(client: httpx.AsyncClient, core: CoreBank) -> AsyncIterator[SetFaults]:
    """Set a fault plan for this test (fields as in PUT /_faults, with the faults token); every fault is off
    again afterwards."""

    async def set_plan(**plan: Any) -> None:
        (await client.put("/_faults", json=plan, headers=core.fault_headers)).raise_for_status()

    yield set_plan
    (await client.delete("/_faults", headers=core.fault_headers)).raise_for_status()


@pytest.fixture
async def watching() -> AsyncIterator[Watching]:
    """remit's adapter and breaker for a core (tests/utils/core_adapter.py `watch`), closed after the test."""
    made: list[Watched] = []

    def make(core: CoreBank, **options: Any) -> Watched:
        made.append(watch(core, **options))
        return made[-1]

    yield make
    for watched in made:
        await watched.close()
