"""The reference core-banking service in tests: its own fresh database (never remit's), the server as a real
OS process, and the ledger's invariants read straight from its database."""

import asyncio
import json
import os
import secrets
import ssl
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import httpx

from corebank.migrations import upgrade_to_head
from tests.utils.services import ServiceProcess, create_database, free_port
from tests.utils.tls import MutualTls


async def create_corebank_database() -> str:
    """A fresh database named corebank_test_..., migrated to the core's head."""
    url = await create_database(prefix="corebank_test_")
    await upgrade_to_head(url)
    return url


def dsn(database_url: str) -> str:
    return database_url.replace("postgresql+asyncpg://", "postgresql://", 1)


SetFaults = Callable[..., Awaitable[None]]  # the `faults` fixture: PUT /_faults with these fields

# remit's token and the faults token, one of each per test process: every core a test starts accepts them, so
# a core restarted on the same port and database takes the same remit processes back, as a real one would.
CORE_TOKEN = secrets.token_urlsafe(32)
FAULTS_TOKEN = secrets.token_urlsafe(32)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@dataclass
class CoreBank:
    """A running core: its process, its address, its database, and the token a client calls it with."""

    process: ServiceProcess
    database_url: str
    token: str = CORE_TOKEN
    tls: MutualTls | None = None  # its server certificate and client CA (https, mutual TLS)

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.process.port}"

    @property
    def verify(self) -> ssl.SSLContext | bool:
        """What a client verifies the core with, presenting the client certificate the core's CA signed."""
        return self.tls.client_context() if self.tls else True

    @property
    def headers(self) -> dict[str, str]:
        return bearer(self.token)

    @property
    def fault_headers(self) -> dict[str, str]:
        return bearer(FAULTS_TOKEN)

    def client(self, **options: Any) -> httpx.AsyncClient:
        """A client of the API with this core's token (and its client certificate, under mutual TLS)."""
        return httpx.AsyncClient(base_url=self.url, headers=self.headers, verify=self.verify, **options)

    def remit_env(self) -> dict[str, str]:
        """What a remit process needs to book in this core."""
        tls = self.tls.remit_env() if self.tls else {}
        return {"REMIT_CORE_BANKING_URL": self.url, "REMIT_CORE_BANKING_TOKEN": self.token, **tls}

    async def set_faults(self, **plan: Any) -> None:
        headers, verify = self.fault_headers, self.verify
        async with httpx.AsyncClient(base_url=self.url, headers=headers, verify=verify, timeout=10) as client:
            (await client.put("/_faults", json=plan)).raise_for_status()


def start_corebank(
    database_url: str,
    log_path: Path,
    faults: bool = True,
    port: int | None = None,
    clients: Mapping[str, Sequence[str]] | None = None,
    tokens_file: Path | None = None,
    faults_token: str = FAULTS_TOKEN,
    tls: MutualTls | None = None,
) -> CoreBank:
    """The core as a process. Its clients: `clients` (name -> tokens), else the tokens in `tokens_file`, else
    remit with CORE_TOKEN; with `faults`, /_faults behind FAULTS_TOKEN."""
    port = port or free_port()
    args = [sys.executable, "-m", "corebank", "serve", "--port", str(port), "--faults" if faults else "--no-faults"]
    env = {**os.environ, "COREBANK_DATABASE_URL": database_url, "COREBANK_FAULTS_TOKEN": faults_token}
    env.pop("COREBANK_CLIENT_TOKENS", None)
    env.pop("COREBANK_CLIENT_TOKENS_FILE", None)
    if tokens_file is not None:
        env["COREBANK_CLIENT_TOKENS_FILE"] = str(tokens_file)
    else:
        env["COREBANK_CLIENT_TOKENS"] = json.dumps(dict({"remit": [CORE_TOKEN]} if clients is None else clients))
    env.update(tls.core_env() if tls else {})
    process = ServiceProcess(args, env, log_path)
    process.port = port
    return CoreBank(process, database_url, tls=tls)


async def wait_ready(core: CoreBank, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    async with httpx.AsyncClient(base_url=core.url, timeout=2, verify=core.verify) as client:  # /readyz: anyone
        while time.monotonic() < deadline:
            if core.process.proc.poll() is not None:
                raise AssertionError(f"corebank exited with {core.process.proc.returncode}:\n{core.process.log()}")
            try:
                if (await client.get("/readyz")).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.1)
    raise AssertionError(f"corebank not ready within {timeout}s:\n{core.process.log()}")


@dataclass(frozen=True)
class Ledger:
    booked_keys: int
    rejected_keys: int
    debits: dict[str, int]  # per currency
    credits: dict[str, int]


async def check_ledger(database_url: str) -> Ledger:
    """Assert the core's invariants and return its totals: every booked key is exactly one journal transfer
    (one debit and one credit of its amount and currency) and a rejected key none; for every currency
    debits = credits; every balance = opening + credits - debits."""
    conn = await asyncpg.connect(dsn(database_url))
    try:
        bad_transfers = await conn.fetch(
            """
            SELECT t.idempotency_key FROM transfers t LEFT JOIN journal j USING (transfer_id)
            GROUP BY t.transfer_id, t.idempotency_key, t.status, t.amount_cents, t.currency
            HAVING CASE WHEN t.status = 'booked'
                        THEN count(j.*) <> 2 OR count(*) FILTER (WHERE j.side = 'debit') <> 1
                             OR bool_or(j.amount_cents <> t.amount_cents OR j.currency <> t.currency)
                        ELSE count(j.*) <> 0 END
            """
        )
        assert not bad_transfers, f"keys whose postings are wrong: {[r[0] for r in bad_transfers][:10]}"
        totals = await conn.fetch(
            """
            SELECT currency, sum(amount_cents) FILTER (WHERE side = 'debit') AS debits,
                   sum(amount_cents) FILTER (WHERE side = 'credit') AS credits
            FROM journal GROUP BY currency
            """
        )
        unbalanced = await conn.fetch(
            """
            SELECT a.account_id FROM accounts a LEFT JOIN journal j USING (account_id)
            GROUP BY a.account_id, a.opening_balance_cents, a.balance_cents
            HAVING a.balance_cents <> a.opening_balance_cents
                + coalesce(sum(j.amount_cents) FILTER (WHERE j.side = 'credit'), 0)
                - coalesce(sum(j.amount_cents) FILTER (WHERE j.side = 'debit'), 0)
            """
        )
        assert not unbalanced, f"accounts whose balance is not opening + credits - debits: {unbalanced[:10]}"
        counts = dict(await conn.fetch("SELECT status, count(*) FROM transfers GROUP BY status"))
    finally:
        await conn.close()
    ledger = Ledger(
        booked_keys=counts.get("booked", 0),
        rejected_keys=counts.get("rejected", 0),
        debits={r["currency"]: r["debits"] or 0 for r in totals},
        credits={r["currency"]: r["credits"] or 0 for r in totals},
    )
    assert ledger.debits == ledger.credits, f"debits {ledger.debits} != credits {ledger.credits}"
    return ledger


# The API from a client's side: fresh accounts and keys, transfer bodies.


@dataclass(frozen=True)
class Acct:
    bsb: str
    number: str
    currency: str = "AUD"


def fresh_account(currency: str = "AUD") -> Acct:
    digits = f"{uuid.uuid4().int % 10**16:016d}"
    return Acct(f"{digits[:3]}-{digits[3:6]}", digits[6:], currency)


def fresh_key() -> str:
    return f"t{secrets.token_hex(4)}:{uuid.uuid4()}"


async def open_account(
    client: httpx.AsyncClient, balance: int = 0, currency: str = "AUD", status: str = "open", like: Acct | None = None
) -> Acct:
    """A new account (or `like`'s number in another currency) with an opening balance."""
    acct = Acct(like.bsb, like.number, currency) if like else fresh_account(currency)
    body = {"bsb": acct.bsb, "account_number": acct.number, "currency": currency}
    response = await client.post("/accounts", json={**body, "opening_balance_cents": balance, "status": status})
    assert response.status_code == 201, response.text
    return acct


async def balance(client: httpx.AsyncClient, acct: Acct) -> int:
    response = await client.get(f"/accounts/{acct.bsb}/{acct.number}/{acct.currency}")
    assert response.status_code == 200, response.text
    return int(response.json()["balance_cents"])


def transfer(debtor: Acct, creditor: Acct, amount: int, currency: str | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "amount_cents": amount,
        "currency": currency or debtor.currency,
        "debtor_bsb": debtor.bsb,
        "debtor_account": debtor.number,
        "creditor_bsb": creditor.bsb,
        "creditor_account": creditor.number,
        **extra,
    }


async def post_transfer(client: httpx.AsyncClient, key: str, body: dict[str, Any]) -> httpx.Response:
    return await client.post("/transfers", json=body, headers={"Idempotency-Key": key})
