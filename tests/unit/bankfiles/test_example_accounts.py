"""examples/accounts.jsonl is what examples/generate_accounts.py writes from the example files, and a core's accounts
file: each line a valid body of the core contract's `POST /accounts`, every account once, the debtors funded with what
they pay, the demo's closed account closed (tests/integration/test_example_accounts.py holds it to the demo)."""

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

from corebank.schemas import AccountOpen

EXAMPLES = Path(__file__).parents[3] / "examples"
CLOSED = json.loads((EXAMPLES / "EXPECTED.json").read_text())["core_banking"]["closed_accounts"]


def test_the_committed_accounts_are_the_generators_output(tmp_path: Path) -> None:
    subprocess.run([sys.executable, str(EXAMPLES / "generate_accounts.py"), str(tmp_path)], check=True)
    assert (tmp_path / "accounts.jsonl").read_bytes() == (EXAMPLES / "accounts.jsonl").read_bytes()


def test_each_line_opens_one_account_the_core_accepts() -> None:
    lines = (EXAMPLES / "accounts.jsonl").read_text().splitlines()
    accounts = [AccountOpen.model_validate_json(line) for line in lines]  # the reference core's own schema
    keys = Counter((a.bsb, a.account_number, a.currency) for a in accounts)
    assert max(keys.values()) == 1
    closed = {a.account_number for a in accounts if a.status == "closed"}
    assert closed == set(CLOSED)
    assert all(a.opening_balance_cents == 0 for a in accounts if a.status == "closed")
    assert sum(a.opening_balance_cents > 0 for a in accounts) > 0
