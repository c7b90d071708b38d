"""The reference core's OpenAPI document is true, with a credential and without one: Schemathesis (every check,
the coverage, fuzzing and stateful phases, tests/contract/runner.py) against `python -m corebank serve` as a
real process on a database of its own, as deployed (no fault injection).

With remit's token it finds nothing; its `ignored_auth` check also sends each request without the token and
requires the refusal the document promises. With no credential at all it finds nothing either, and no path but
/healthz, /readyz and the document itself answers anything but an error (hooks.py, nothing_for_the_anonymous).

What the first runs found, fixed in the core: a body that is not UTF-8 was a 400 the contract did not declare
(now 422 `validation_failed`); a 405 came without its `Allow` header; `OPTIONS /transfers/status` named the
wrong methods (the route of `GET /transfers/{key}` came first).
"""

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.contract.runner import RUN_SECONDS, assert_clean, run_schemathesis
from tests.utils.corebank import Acct, CoreBank, create_corebank_database, open_account, start_corebank, wait_ready
from tests.utils.services import drop_database

pytestmark = pytest.mark.e2e

ANYONE = ("/healthz", "/readyz", "/openapi.json")
# Rules JSON Schema cannot state, answered 422 (or 409) for input the schema allows: debtor and creditor must be
# different accounts; an amount is a JSON integer, never 1.0 (which JSON Schema counts as an integer); a key
# already used for another transfer is refused (422), one still being booked answered 409; an account holding
# that currency already is 409.
CONFIG = """
[[operations]]
include-path = "/transfers"
include-method = "POST"
checks.positive_data_acceptance.expected-statuses = ["2xx", "401", "409", "422"]

[[operations]]
include-path = "/transfers/batch"
include-method = "POST"
checks.positive_data_acceptance.expected-statuses = ["2xx", "401", "422"]

[[operations]]
include-path = "/accounts"
include-method = "POST"
checks.positive_data_acceptance.expected-statuses = ["2xx", "401", "409", "422"]
"""


@pytest.fixture
async def core(tmp_path: Path) -> AsyncIterator[tuple[CoreBank, list[Acct]]]:
    """The core with a few accounts whose numbers the runs use half of the time."""
    database_url = await create_corebank_database()
    running = start_corebank(database_url, tmp_path / "corebank.log", faults=False)
    try:
        await wait_ready(running)
        async with running.client(timeout=30) as client:
            accounts = [await open_account(client, 10_000), await open_account(client, status="closed")]
        yield running, accounts
    finally:
        running.process.stop()
        await drop_database(database_url)


def config(accounts: list[Acct]) -> str:
    dictionaries = {
        "bsb": [a.bsb for a in accounts],
        "number": [a.number for a in accounts],
        "currency": [a.currency for a in accounts],
    }
    bindings = {"path.bsb": "bsb", "path.account_number": "number", "path.currency": "currency"}
    lines = ["[parameters]"]
    lines += [f'"{key}" = {{ dictionary = "{name}", probability = 0.5 }}' for key, name in bindings.items()]
    for name, values in dictionaries.items():
        lines += [f"[dictionaries.{name}]", f"values = {json.dumps(values)}"]
    return "\n".join(lines) + "\n" + CONFIG


@pytest.mark.timeout(RUN_SECONDS + 120)
async def test_remits_token_finds_nothing(core: tuple[CoreBank, list[Acct]], tmp_path: Path) -> None:
    running, accounts = core
    header = f"Authorization: Bearer {running.token}"
    assert_clean(run_schemathesis(f"{running.url}/openapi.json", config(accounts), tmp_path, "core", {}, header))


@pytest.mark.timeout(RUN_SECONDS + 120)
async def test_without_a_credential_nothing_is_answered(core: tuple[CoreBank, list[Acct]], tmp_path: Path) -> None:
    running, accounts = core
    env = {"REMIT_CONTRACT_ANONYMOUS": ",".join(ANYONE)}
    run = run_schemathesis(f"{running.url}/openapi.json", config(accounts), tmp_path, "anonymous", env)
    assert_clean(run)
    assert running.token not in run.stdout + run.stderr
