"""Fixtures of the consumer's in-process unit suite: a fresh in-memory database and consumer per test."""

from collections.abc import AsyncIterator

import pytest

from tests.fakes.database import FakeDatabase
from tests.unit.consumer.harness import Consumer, add_tenant, running_consumer


@pytest.fixture
def db() -> FakeDatabase:
    return FakeDatabase()


@pytest.fixture
async def consumer(db: FakeDatabase) -> AsyncIterator[Consumer]:
    async with running_consumer(db) as running:
        yield running


@pytest.fixture
async def tenant(db: FakeDatabase) -> str:
    return (await add_tenant(db)).tenant_id


@pytest.fixture
async def db_tenants(db: FakeDatabase) -> list[str]:
    """Two tenants."""
    return [(await add_tenant(db)).tenant_id for _ in range(2)]
