"""A sanity check of the group commit's own cost, for before/after comparisons of app/consumer/committer.py and
the repositories under it (not a ratio against a ceiling, so nothing is written to docs/benchmarks.md).

N payments (4 tenants) go through GroupCommitter.commit_many in batches of 256 from 4 concurrent workers, on
a fresh migrated database as remit_app, with the embedded ledger; then the same again as duplicates (every
payment committed once before, so each flush takes the digest check). Prints, per run, the median of 5
rounds: payments/s and this process's CPU microseconds per payment (steadier than wall time on a shared
machine). Run it from the checkout to measure: `.venv/bin/python bench/group_commit_bench.py [N]`.
"""

import asyncio
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.consumer.committer import GroupCommitter  # noqa: E402
from app.consumer.core_banking import LedgerCoreBanking  # noqa: E402
from app.resources import uow_factory_for  # noqa: E402
from app.storage.engine import make_engine  # noqa: E402
from app.storage.migrations import upgrade_to_head  # noqa: E402
from app.tenancy.tenants import AddTenant, add_tenant  # noqa: E402
from contracts import PaymentMessage  # noqa: E402
from tests.utils.factories import make_message, new_tenant_id  # noqa: E402
from tests.utils.services import app_database_url, create_database, drop_database  # noqa: E402

BATCH, WORKERS, ROUNDS, TENANTS = 256, 4, 5, 4


async def one_round(committer: GroupCommitter, payments: list[PaymentMessage]) -> tuple[float, float]:
    """(payments/s, CPU microseconds per payment) of committing these payments from WORKERS workers."""
    queue = [payments[s : s + BATCH] for s in range(0, len(payments), BATCH)]

    async def worker() -> None:
        while queue:
            await committer.commit_many(queue.pop())

    started, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(worker() for _ in range(WORKERS)))
    return len(payments) / (time.perf_counter() - started), (time.process_time() - cpu) / len(payments) * 1e6


async def main(n: int) -> None:
    url = await create_database("remit_bench_gc_")
    await upgrade_to_head(url)
    owner, engine = make_engine(url, 2), make_engine(app_database_url(url), 10)
    tenants = [new_tenant_id() for _ in range(TENANTS)]
    for tenant in tenants:
        await add_tenant(AddTenant(tenant, tenant, default_ttl_seconds=86_400), uow_factory_for(owner))
    committer = GroupCommitter(uow_factory_for(engine), LedgerCoreBanking(), 1024)
    await committer.start()
    try:
        for label, duplicates in (("new", False), ("duplicates", True)):
            results = []
            for _ in range(ROUNDS):
                payments = [make_message(tenant_id=tenants[i % TENANTS]) for i in range(n)]
                if duplicates:
                    await one_round(committer, payments)
                results.append(await one_round(committer, payments))
            rate, cpu = (statistics.median(r[i] for r in results) for i in (0, 1))
            print(f"{label}: {rate:,.0f} payments/s, {cpu:.1f} us CPU per payment (median of {ROUNDS} rounds)")
    finally:
        await committer.stop()
        await engine.dispose()
        await owner.dispose()
        await drop_database(url)


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_240))
