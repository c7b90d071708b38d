"""The core answers its clients only (issue 36, item 4), on the real process.

Before: with no credential at all, anyone who could reach the core's port reopened a closed account, booked a
transfer under a key in remit's format (`<tenant>:<uuid>`, so the key was taken before remit sent it, and
remit's own payment would then be refused as `idempotency_key_reused`), read the journal and the balances
with the account numbers in clear, and opened accounts.

Now every route but /healthz and /readyz needs a client's bearer token (401 `unauthenticated` without one,
or with a wrong one, on every route); /_faults exists only in a process started with fault injection, behind
a token of its own; and `serve` refuses to start without a client's token.
"""

import asyncio
import json
import re
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import httpx
import pytest
from pydantic import SecretStr

from corebank.auth import credentials_for
from corebank.errors import BadCredentials
from corebank.settings import CoreBankSettings
from tests.utils.corebank import (
    CORE_TOKEN,
    FAULTS_TOKEN,
    CoreBank,
    bearer,
    create_corebank_database,
    fresh_account,
    open_account,
    start_corebank,
    transfer,
    wait_ready,
)
from tests.utils.services import drop_database

pytestmark = pytest.mark.integration

WRONG = {
    "no credential": {},
    "a wrong token": bearer("x" * 43),
    "remit's token as Basic": {"Authorization": f"Basic {CORE_TOKEN}"},
    "remit's token without a scheme": {"Authorization": CORE_TOKEN},
    "remit's token with a character more": bearer(CORE_TOKEN + "x"),
    "the faults token": bearer(FAULTS_TOKEN),
    "a bearer of nothing": {"Authorization": "Bearer"},
}


@pytest.fixture
async def anyone(core: CoreBank) -> AsyncIterator[httpx.AsyncClient]:
    """A client of the core's port with no credential of its own."""
    async with httpx.AsyncClient(base_url=core.url, timeout=30) as client:
        yield client


@pytest.mark.parametrize("credential", list(WRONG))
async def test_without_remits_token_nothing_is_done_and_nothing_is_read(
    core: CoreBank, client: httpx.AsyncClient, anyone: httpx.AsyncClient, credential: str
) -> None:
    headers = WRONG[credential]
    debtor, creditor = await open_account(client, 10_000), await open_account(client)
    closed = await open_account(client, status="closed")
    key = f"acme:{uuid.uuid4()}"  # remit's own form: taking it first would block remit's payment
    path = f"/accounts/{closed.bsb}/{closed.number}/{closed.currency}"
    new = fresh_account()
    attempts = {
        "reopen a closed account": anyone.put(f"{path}/status", json={"status": "open"}, headers=headers),
        "book under remit's key": anyone.post(
            "/transfers", json=transfer(debtor, creditor, 5_000), headers={**headers, "Idempotency-Key": key}
        ),
        "book a batch": anyone.post(
            "/transfers/batch",
            json={"transfers": [{**transfer(debtor, creditor, 5_000), "idempotency_key": f"acme:{uuid.uuid4()}"}]},
            headers=headers,
        ),
        "read the journal": anyone.get("/journal", headers=headers),
        "read a balance": anyone.get(f"/accounts/{debtor.bsb}/{debtor.number}/{debtor.currency}", headers=headers),
        "ask a key's status": anyone.get(f"/transfers/{key}", headers=headers),
        "ask many keys' status": anyone.post("/transfers/status", json={"idempotency_keys": [key]}, headers=headers),
        "open an account": anyone.post(
            "/accounts",
            json={"bsb": new.bsb, "account_number": new.number, "currency": "AUD", "opening_balance_cents": 10**12},
            headers=headers,
        ),
    }
    for what, attempt in attempts.items():
        response = await attempt
        assert response.status_code == 401, (what, response.status_code, response.text)
        assert response.json()["error"]["code"] == "unauthenticated", what
        assert response.headers["WWW-Authenticate"] == 'Bearer realm="corebank"', what
        assert debtor.number not in response.text, what
        assert CORE_TOKEN not in response.text, what

    # Nothing happened: the account is still closed, nothing is booked, the key is free for remit.
    assert (await client.get(path)).json()["status"] == "closed"
    assert (await client.get(f"/accounts/{debtor.bsb}/{debtor.number}/AUD")).json()["balance_cents"] == 10_000
    assert (await client.get(f"/transfers/{key}")).json()["status"] == "unknown"
    assert (await client.get(f"/accounts/{new.bsb}/{new.number}/AUD")).status_code == 404
    booked = await client.post("/transfers", json=transfer(debtor, creditor, 5_000), headers={"Idempotency-Key": key})
    assert (booked.status_code, booked.json()["status"]) == (201, "booked")


async def test_health_and_readiness_answer_anyone_but_refuse_a_wrong_credential(
    anyone: httpx.AsyncClient, client: httpx.AsyncClient
) -> None:
    for path in ("/healthz", "/readyz"):
        assert (await anyone.get(path)).status_code == 200, path
        assert (await client.get(path)).status_code == 200, path  # remit's token: its breaker's probe
        for credential in ("a wrong token", "remit's token as Basic", "the faults token"):
            refused = await anyone.get(path, headers=WRONG[credential])
            assert refused.status_code == 401, (path, credential)
    assert (await anyone.get("/openapi.json")).status_code == 200  # the contract is public


async def test_fault_injection_needs_its_own_token(core: CoreBank, anyone: httpx.AsyncClient) -> None:
    for credential in ("no credential", "a wrong token"):
        assert (await anyone.get("/_faults", headers=WRONG[credential])).status_code == 401, credential
    refused = await anyone.put("/_faults", json={"down_seconds": 60}, headers=bearer(CORE_TOKEN))  # remit's token
    assert (refused.status_code, refused.json()["error"]["code"]) == (401, "unauthenticated")
    assert (await anyone.get("/readyz")).status_code == 200  # nothing was injected
    assert (await anyone.get("/_faults", headers=core.fault_headers)).status_code == 200


@pytest.fixture
async def migrated_core_database() -> AsyncIterator[str]:
    url = await create_corebank_database()
    yield url
    await drop_database(url)


@pytest.mark.parametrize(
    ("clients", "faults", "says"),
    [
        ({}, False, "no client may call this core: set COREBANK_CLIENT_TOKENS"),
        ({"remit": ["short"]}, False, "client 'remit' has a token not of 32 to 512 visible ASCII characters"),
        ({"Remit!": [CORE_TOKEN]}, False, "a client's name must match"),
        ({"remit": [CORE_TOKEN], "teller": [CORE_TOKEN]}, False, "clients 'remit' and 'teller' share a token"),
        ({"remit": [FAULTS_TOKEN]}, True, "COREBANK_FAULTS_TOKEN is also a client's token"),
    ],
)
async def test_serve_refuses_to_start_without_usable_credentials(
    migrated_core_database: str, tmp_path: Path, clients: dict[str, list[str]], faults: bool, says: str
) -> None:
    core = start_corebank(migrated_core_database, tmp_path / "core.log", faults=faults, clients=clients)
    code = core.process.wait_exit(60)
    log = core.process.log()
    assert code == 2, log
    assert log.startswith("corebank: ")  # one line, no traceback
    assert says in log
    assert CORE_TOKEN not in log
    assert FAULTS_TOKEN not in log
    assert "Traceback" not in log


async def test_fault_injection_without_a_faults_token_does_not_start(
    migrated_core_database: str, tmp_path: Path
) -> None:
    core = start_corebank(migrated_core_database, tmp_path / "core.log", faults=True, faults_token="")
    assert core.process.wait_exit(60) == 2
    assert "corebank: fault injection needs COREBANK_FAULTS_TOKEN, a token of its own" in core.process.log()


async def test_client_tokens_from_a_file_are_read_again_when_it_changes(
    migrated_core_database: str, tmp_path: Path
) -> None:
    """Rotation without a restart: the file names the tokens; rewritten, the core follows within a second or
    two; a file that is not valid leaves the tokens in force (with a warning naming no token)."""
    old, new = "o" * 40, "n" * 40
    tokens_file = tmp_path / "clients.json"
    tokens_file.write_text(json.dumps({"remit": [old]}))
    core = start_corebank(migrated_core_database, tmp_path / "core.log", tokens_file=tokens_file)
    try:
        await wait_ready(core)
        async with httpx.AsyncClient(base_url=core.url, timeout=10) as anyone:

            async def answers(token: str) -> int:
                return (await anyone.get("/journal", headers=bearer(token))).status_code

            assert (await answers(old), await answers(new)) == (200, 401)
            replace(tokens_file, {"remit": [old, new]})
            assert await settles(answers, new, 200)
            assert await answers(old) == 200  # both valid at once
            tokens_file.write_text("{not json")
            await settles(answers, old, 401, seconds=2.5)  # it never comes: the tokens in force stay
            assert (await answers(old), await answers(new)) == (200, 200)
            replace(tokens_file, {"remit": [new]})
            assert await settles(answers, old, 401)
            assert await answers(new) == 200
    finally:
        core.process.stop()
    log = core.process.log_path.read_text()
    assert "client tokens not reloaded" in log
    assert old not in log
    assert new not in log


def replace(path: Path, clients: dict[str, list[str]]) -> None:
    """Rewritten as an operator should: a new file renamed over the old one (never half written)."""
    staged = path.with_suffix(".new")
    staged.write_text(json.dumps(clients))
    staged.replace(path)


async def settles(answers: Callable[[str], Awaitable[int]], token: str, status: int, seconds: float = 10.0) -> bool:
    """Whether the core answers the token with `status` within `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if await answers(token) == status:
            return True
        await asyncio.sleep(0.2)
    return False


@pytest.mark.parametrize(
    ("tls", "says"),
    [
        ({"tls_client_ca_file": Path("ca.pem")}, "mutual TLS) needs COREBANK_TLS_CERTFILE"),
        ({"tls_certfile": Path("core.pem")}, "COREBANK_TLS_CERTFILE and COREBANK_TLS_KEYFILE go together"),
    ],
)
def test_tls_settings_that_cannot_work_refuse_to_start(tls: dict[str, Path], says: str) -> None:
    settings = CoreBankSettings(client_tokens={"remit": [SecretStr(CORE_TOKEN)]}).model_copy(update=tls)
    with pytest.raises(BadCredentials, match=re.escape(says)):
        credentials_for(settings)
