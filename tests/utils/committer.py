"""The group committer against the test database as the service role, for tests that must control what
one flush holds (a queue worker's natural batching cannot promise that)."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from app.consumer.committer import GroupCommitter
from app.consumer.core_banking import CoreBanking, LedgerCoreBanking
from app.resources import uow_factory_for
from app.storage.engine import make_engine


@asynccontextmanager
async def running_committer(
    database_url: str, max_batch: int = 256, concurrency: int = 1, core: CoreBanking | None = None
) -> AsyncIterator[GroupCommitter]:
    engine = make_engine(database_url, pool_size=2 * concurrency)
    committer = GroupCommitter(uow_factory_for(engine), core or LedgerCoreBanking(), max_batch, concurrency=concurrency)
    await committer.start()
    try:
        yield committer
    finally:
        await committer.stop()
        await engine.dispose()
