"""Integration tests: real RabbitMQ and PostgreSQL (fixtures in tests/conftest.py)."""

import asyncio
from collections.abc import AsyncIterator
from typing import ClassVar

import aiormq.connection
import pytest
from aio_pika.abc import AbstractRobustConnection

from app.messaging.connection import connect
from app.messaging.frame_reader import BufferedFrameReceiver
from app.settings import Settings

pytestmark = pytest.mark.integration


class Counted(BufferedFrameReceiver):
    """BufferedFrameReceiver, counting the connections made with it."""

    made: ClassVar[list["Counted"]] = []

    def __init__(self, reader: asyncio.StreamReader) -> None:
        super().__init__(reader)
        Counted.made.append(self)


@pytest.fixture
async def buffered(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[AbstractRobustConnection]:
    """A connection that reads with BufferedFrameReceiver (and reconnects with it), as the consumer's does."""
    monkeypatch.setattr(aiormq.connection, "FrameReceiver", Counted)
    Counted.made.clear()
    connection = await connect(settings.amqp_url, "remit-tests-frames")
    yield connection
    await connection.close()
