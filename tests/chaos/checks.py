"""What the chaos rig watches: progress of the outbox, messages left in the vhost, the consumers' outcome
counters, and quiescence (everything published and terminal, every queue empty). The ledger check that
follows is tests/chaos/ledger_check.py."""

import asyncio
import contextlib
import time
from urllib.parse import quote

import httpx
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.chaos.processes import Processes
from tests.utils.services import MANAGEMENT_AUTH, MANAGEMENT_URL

_PROGRESS = text(
    "SELECT count(*) AS accepted, count(*) FILTER (WHERE published_at IS NULL) AS unpublished, "
    "count(*) FILTER (WHERE EXISTS (SELECT 1 FROM ledger l WHERE l.tenant_id = o.tenant_id "
    "AND l.message_id = o.message_id) OR EXISTS (SELECT 1 FROM dead_letters d WHERE d.tenant_id = o.tenant_id "
    "AND d.message_id = o.message_id AND d.status IN ('open', 'discarded'))) AS settled FROM outbox o"
)


async def outbox_progress(engine: AsyncEngine) -> dict[str, int]:
    """Accepted, unpublished and settled (paid or dead-lettered) messages; {} when the database is away."""
    try:
        async with engine.connect() as conn:
            row = (await conn.execute(_PROGRESS)).mappings().one()
    except Exception:
        return {}
    return {k: int(v) for k, v in row.items()}


def vhost_messages(vhost: str) -> int | None:
    """Messages in every queue of the vhost, ready and unacked (management API: lags by up to 5 s)."""
    try:
        with httpx.Client(base_url=MANAGEMENT_URL, auth=MANAGEMENT_AUTH, timeout=5) as client:
            response = client.get(f"/api/queues/{quote(vhost, safe='')}", params={"columns": "name,messages"})
            response.raise_for_status()
            return sum(int(q.get("messages") or 0) for q in response.json())
    except httpx.HTTPError:
        return None


async def settle(engine: AsyncEngine, vhost: str, processes: Processes, timeout: float) -> bool:
    """Quiescence: everything published and terminal, every queue empty (ready and unacked), three times."""
    deadline = time.monotonic() + timeout
    calm = 0
    while time.monotonic() < deadline:
        state = await outbox_progress(engine)
        queues = await asyncio.to_thread(vhost_messages, vhost)
        quiet = (
            bool(state)
            and state["unpublished"] == 0
            and state["settled"] == state["accepted"]
            and queues == 0
            and not processes.any_paused()
        )
        calm = calm + 1 if quiet else 0
        if calm >= 3:  # the management API's counts lag by up to 5 s: stay quiet across that
            return True
        await asyncio.sleep(2.5)
    return False


class OutcomeCounters:
    """The consumers' duplicate and retry counters, scraped from each live process's /metrics (a killed
    process keeps its last scrape)."""

    def __init__(self, processes: Processes) -> None:
        self.processes = processes
        self._by_pid: dict[int, tuple[int, int]] = {}  # pid -> (duplicates, retries) last scraped

    @property
    def duplicates(self) -> int:
        return sum(d for d, _ in self._by_pid.values())

    @property
    def retries(self) -> int:
        return sum(r for _, r in self._by_pid.values())

    async def scrape_until(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            await self.scrape()
            await asyncio.sleep(1.5)

    async def scrape(self) -> None:
        async with httpx.AsyncClient(timeout=1.0) as client:
            for slot in self.processes.slots:
                proc = slot.proc
                if slot.role != "consumer" or proc is None or proc.port is None or slot.paused:
                    continue
                with contextlib.suppress(httpx.HTTPError):
                    response = await client.get(f"http://127.0.0.1:{proc.port}/metrics")
                    self._by_pid[proc.proc.pid] = _outcomes(response.text)


def _outcomes(metrics: str) -> tuple[int, int]:
    duplicates = retries = 0
    for line in metrics.splitlines():
        if not line.startswith("remit_outcomes_total{"):
            continue
        value = int(float(line.rsplit(" ", 1)[1]))
        if 'outcome="duplicate"' in line:
            duplicates += value
        elif 'outcome="retrying"' in line:
            retries += value
    return duplicates, retries
