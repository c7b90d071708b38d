"""Write examples/accounts.jsonl: the accounts the example files' payments move money between, for a core to load
before remit books the examples there (`python examples/generate_accounts.py [directory]`; docs/core-banking.md,
"The examples' accounts in your core").

What the demo opens in its reference core (app/cli/demo_core.py, `accounts_for`), read from the files themselves with
remit's own readers and validation: every payment remit accepts from them, each debtor funded with exactly what it pays
in each currency, each creditor open at zero, and the creditor account EXPECTED.json names closed (its payments are
refused: AC04). One account per line, the body of the core contract's `POST /accounts`, in (BSB, account, currency)
order. tests/integration/test_example_accounts.py holds the file to what the demo computes after submitting the files.
"""

import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from app.bankfiles import BankFile  # noqa: E402
from app.cli.demo_core import accounts_for  # noqa: E402
from app.payment_rules import PaymentRules  # noqa: E402
from app.publisher.validation import BatchContext, validate_rows  # noqa: E402
from app.settings import Settings  # noqa: E402
from contracts import PaymentMessage  # noqa: E402

NAME = "accounts.jsonl"


def accepted(path: Path, settings: Settings) -> list[PaymentMessage]:
    """The payments remit accepts from one example file under the default settings and a tenant's default limits."""
    ctx = BatchContext(
        tenant_id="examples",
        correlation_id="examples",
        now=datetime.now(UTC),
        ttl_seconds=settings.default_ttl_seconds,
        rules=PaymentRules.from_settings(settings),
        max_message_bytes=65_536,
        known_references=frozenset(),
    )
    with BankFile(path) as bank:
        return validate_rows(list(bank.rows()), ctx).accepted


def example_accounts() -> list[dict[str, Any]]:
    expected = json.loads((HERE / "EXPECTED.json").read_text())
    settings = Settings.model_construct()  # the defaults, whatever REMIT_* this shell has set
    payments = [p for spec in expected["tenants"].values() for p in accepted(HERE / spec["file"], settings)]
    accounts = accounts_for(payments, set(expected["core_banking"]["closed_accounts"]))
    return sorted(accounts, key=lambda a: (a["bsb"], a["account_number"], a["currency"]))


def as_lines(accounts: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(a) + "\n" for a in accounts)


if __name__ == "__main__":
    out = (Path(sys.argv[1]) if len(sys.argv) > 1 else HERE) / NAME
    accounts = example_accounts()
    out.write_text(as_lines(accounts))
    print(f"wrote {out}: {len(accounts)} accounts")
