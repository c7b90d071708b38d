"""The demo's core banking: the reference core (corebank/, docs/core-banking.md) as a separate process with its
own database, talked to over HTTP as any external core is. remit's code does not import it: the demo runs its
commands (`python -m corebank ...`) and speaks its HTTP contract.

Its accounts are the ones the demo's payments move money between, read from the outbox after the example files
are submitted: every debtor funded with what it pays, every creditor open, except the closed account of
examples/EXPECTED.json (`core_banking`). The outage and the flaky account are the core's own fault injection
(`held_accounts`: a transfer touching the account is answered `in_progress`, not booked, the first N times).

remit calls it as any client calls a core: with the token the core gave it (a fresh one per demo, in the core's
COREBANK_CLIENT_TOKENS and remit's REMIT_CORE_BANKING_TOKEN); the demo sets faults with the core's separate
faults token.
"""

import asyncio
import json
import secrets
import socket
import subprocess
import sys
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import select
from sqlalchemy.engine import make_url

from app.resources import open_owner_engine
from app.settings import Settings, environment_for, owner_url
from app.storage.migrations import PROJECT_ROOT
from app.storage.tables import outbox
from app.storage.unit_of_work import UnitOfWorkFactory
from contracts import PaymentMessage

OUTAGE_HELD_TIMES = 1000  # every attempt during the outage, however many retries remit makes
READY_SECONDS = 60.0


@dataclass
class DemoCore:
    database_url: str
    port: int
    logs: Path
    environment: dict[str, str]  # the demo's own (app/settings.py environment_for), for the core's commands
    process: subprocess.Popen[bytes] | None = None
    token: str = field(default_factory=lambda: secrets.token_urlsafe(32), repr=False)  # remit's, as the core's client
    faults_token: str = field(default_factory=lambda: secrets.token_urlsafe(32), repr=False)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def command(self, *args: str) -> None:
        """Run `python -m corebank ARGS` on the demo core's database, its output in the core's log."""
        with (self.logs / "corebank.log").open("ab") as out:
            subprocess.run(
                [sys.executable, "-m", "corebank", *args],
                env=self._env(),
                cwd=PROJECT_ROOT,
                stdout=out,
                stderr=subprocess.STDOUT,
                check=True,
            )

    def start(self) -> None:
        out = (self.logs / "corebank.log").open("ab")
        args = [sys.executable, "-m", "corebank", "serve", "--port", str(self.port), "--faults"]
        self.process = subprocess.Popen(args, env=self._env(), cwd=PROJECT_ROOT, stdout=out, stderr=subprocess.STDOUT)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=30)

    async def wait_ready(self) -> None:
        async with httpx.AsyncClient(base_url=self.url, timeout=2) as client:
            for _ in range(int(READY_SECONDS * 10)):
                if self.process is not None and self.process.poll() is not None:
                    raise RuntimeError(f"the core exited with {self.process.returncode}: see {self.logs}/corebank.log")
                try:
                    if (await client.get("/readyz")).status_code == 200:
                        return
                except httpx.TransportError:
                    pass
                await asyncio.sleep(0.1)
        raise RuntimeError(f"the core was not ready within {READY_SECONDS:.0f} s: see {self.logs}/corebank.log")

    async def set_faults(self, **plan: Any) -> None:
        headers = {"Authorization": f"Bearer {self.faults_token}"}
        async with httpx.AsyncClient(base_url=self.url, headers=headers, timeout=10) as client:
            (await client.put("/_faults", json=plan)).raise_for_status()

    async def journal_totals(self) -> dict[str, dict[str, int]]:
        """What the core's journal export says it booked, per tenant and currency (the key is
        `<tenant_id>:<message_id>`): the same shape as EXPECTED.json."""
        out: dict[str, dict[str, int]] = defaultdict(lambda: {"count": 0, "amount_cents": 0})
        params: dict[str, str] = {}
        async with httpx.AsyncClient(base_url=self.url, headers=self.headers, timeout=30) as client:
            while True:
                page = (await client.get("/journal", params=params)).raise_for_status().json()
                for t in page["transfers"]:
                    total = out[f"{t['idempotency_key'].split(':', 1)[0]}/{t['currency']}"]
                    total["count"] += 1
                    total["amount_cents"] += t["amount_cents"]
                if not page["has_more"]:
                    return dict(out)
                params = {"after": page["cursor"]}

    async def journal_matching(self, want: dict[str, dict[str, int]], timeout: float) -> dict[str, dict[str, int]]:
        """`journal_totals` once it equals `want`, or as it is after `timeout` seconds. The export only reaches
        transactions older than every one still running on the database server (docs/core-banking.md), so a
        long transaction elsewhere on a shared server delays what it shows, never changes it."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            got = await self.journal_totals()
            if got == want or loop.time() > deadline:
                return got
            await asyncio.sleep(1)

    def _env(self) -> dict[str, str]:
        return {
            **self.environment,
            "COREBANK_DATABASE_URL": self.database_url,
            "COREBANK_CLIENT_TOKENS": json.dumps({"remit": [self.token]}),
            "COREBANK_FAULTS_TOKEN": self.faults_token,
        }


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


async def fresh_core(settings: Settings, name: str, logs: Path) -> DemoCore:
    """The core's own database `<name>_core` on remit's server, dropped and migrated afresh."""
    database = f"{name}_core"
    async with open_owner_engine(settings, "postgres") as server, server.connect() as conn:
        await conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
    url = make_url(owner_url(settings)).set(database=database).render_as_string(hide_password=False)
    core = DemoCore(url, free_port(), logs, environment_for(settings))
    core.command("db", "upgrade", "--create")
    return core


async def load_accounts(core: DemoCore, uow: UnitOfWorkFactory, closed: list[str], logs: Path) -> int:
    """Open the accounts the accepted payments move money between (read from the outbox): debtors funded with
    exactly what they pay, creditors at zero, `closed` creditor accounts closed. Returns how many."""
    async with uow() as u:
        bodies = (await u.connection.execute(select(outbox.c.body))).scalars().all()
    accounts = accounts_for([PaymentMessage.model_validate_json(body) for body in bodies], set(closed))
    path = logs / "core-accounts.jsonl"
    path.write_text("".join(json.dumps(a) + "\n" for a in accounts))
    core.command("accounts", "load", str(path))
    return len(accounts)


def accounts_for(payments: list[PaymentMessage], closed: set[str]) -> list[dict[str, Any]]:
    funding: dict[tuple[str, str, str], int] = defaultdict(int)
    for p in payments:
        funding[p.debtor_bsb, p.debtor_account, p.currency] += p.amount_cents
        funding[p.creditor_bsb, p.creditor_account, p.currency] += 0
    return [_account(key, cents, closed) for key, cents in funding.items()]


def _account(key: tuple[str, str, str], cents: int, closed: set[str]) -> dict[str, Any]:
    bsb, number, currency = key
    status = "closed" if number in closed and not cents else "open"
    return {
        "bsb": bsb,
        "account_number": number,
        "currency": currency,
        "opening_balance_cents": cents,
        "status": status,
    }


def outage_faults(spec: Mapping[str, list[str]]) -> dict[str, Any]:
    """The fault plan of the demo's outage: the outage's accounts held on every attempt, the flaky one once."""
    held = dict.fromkeys(spec["outage_accounts"], OUTAGE_HELD_TIMES) | dict.fromkeys(spec["flaky_accounts"], 1)
    return {"held_accounts": held}
