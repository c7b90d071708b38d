"""Generate the demo bank files (deterministic): `python examples/generate_bankfiles.py [directory]`.

- acme_20250501.pain.001.001.09.xml: ISO 20022 pain.001.001.09, Acme Pty Ltd pays its suppliers from two
  accounts (two PmtInf blocks), AUD;
- globex_20250501.pain.001.001.03.xml: pain.001.001.03 (the version many banks still send), AUD and NZD;
- initech_20250501.aba: an ABA direct-entry payroll file with a self-balancing debit record.

Each has a few rows remit must reject, one of each kind, and one payment to the demo's closed account.
bankfiles_expected.json records, per file, what a correct run reads and accepts, and why each bad row is
rejected (tests/unit/bankfiles/test_examples.py holds remit to it). EXPECTED.json gets the demo's tenant of
each file (acme, globex, initech): what it accepts, processes and dead-letters; run examples/generate.py
first, whose files and tenants (anz, westpac) are not touched.
"""

import json
import random
import sys
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from tests.utils.bankfile_writers import (  # noqa: E402
    PAIN_001_03,
    PAIN_001_09,
    AbaDetail,
    AbaFile,
    Block,
    GroupHeader,
    Tx,
    pain001_chunks,
)

# The demo's closed account (examples/generate.py's core accounts, as EXPECTED.json records them).
CLOSED = json.loads((HERE / "EXPECTED.json").read_text())["core_banking"]["closed_accounts"][0]
SUPPLIERS = ["Bright Office Supplies", "Harbour Freight Co", "Kookaburra Catering", "Southern Cross Cleaning"]
SUPPLIERS += ["Red Gum Timber", "Coral Coast Logistics", "Blue Mountains Print", "Wattle IT Services"]
STAFF = ["J SMITH", "A NGUYEN", "P PATEL", "M ROSSI", "L CHEN", "S O'BRIEN", "K MORGAN", "T WILLIAMS"]
IBAN = "<Id><IBAN>DE89370400440532013000</IBAN></Id>"
BIC_ONLY = "<FinInstnId><BICFI>WPACAU2SXXX</BICFI></FinInstnId>"
US_ROUTING = (
    "<FinInstnId><ClrSysMmbId><ClrSysId><Cd>USABA</Cd></ClrSysId><MmbId>021000021</MmbId></ClrSysMmbId></FinInstnId>"
)
PAYROLL = {"title": "J SMITH", "remitter": "INITECH PAYROLL"}
EQUIVALENT = '<EqvtAmt><Amt Ccy="AUD">250.00</Amt><CcyOfTrf>USD</CcyOfTrf></EqvtAmt>'


def _bsb(rng: random.Random) -> str:
    return f"{rng.randint(10, 999):03d}-{rng.randint(0, 999):03d}"


def _supplier_payment(rng: random.Random, ref: str, currency: str = "AUD", **bad: Any) -> Tx:
    cents = rng.randint(5_000, 2_500_000)
    amount = str(Decimal(cents).scaleb(-2))
    name = rng.choice(SUPPLIERS)
    fields: dict[str, Any] = {"creditor_bsb": _bsb(rng), "creditor_account": str(rng.randint(10_000_000, 999_999_999))}
    fields |= {"creditor_name": name, "remittance": f"Invoice {ref.split('-')[-1]} {name}"}
    return Tx(ref, bad.pop("amount", amount), currency, **(fields | bad))


def _pain001_file(version: str, message_id: str, blocks: list[Block], party: str) -> str:
    every = [t for b in blocks for t in b.txs]
    total = sum((Decimal(t.amount) for t in every), Decimal(0))
    header = GroupHeader(message_id, len(every), str(total), created="2025-05-01T08:45:12", initiating_party=party)
    return "".join(pain001_chunks(version, header, blocks))


def _block(block_id: str, txs: list[Tx], debtor_bsb: str, debtor_account: str, debtor: str) -> Block:
    total = sum((Decimal(t.amount) for t in txs), Decimal(0))
    return Block(block_id, txs, debtor_bsb, debtor_account, len(txs), str(total), debtor_name=debtor)


def acme() -> tuple[str, dict[str, Any]]:
    rng = random.Random(20250501)
    first = [_supplier_payment(rng, f"ACME-INV-{n:05d}", instruction_id=f"ACME-I-{n:05d}") for n in range(1, 21)]
    second = [_supplier_payment(rng, f"ACME-INV-{n:05d}") for n in range(21, 36)]
    bad = {
        "creditor account is an IBAN": _supplier_payment(rng, "ACME-INV-90001", creditor_account_xml=IBAN),
        "creditor agent has a BIC only": _supplier_payment(rng, "ACME-INV-90002", creditor_agent_xml=BIC_ONLY),
        "clearing system 'USABA'": _supplier_payment(rng, "ACME-INV-90003", creditor_agent_xml=US_ROUTING),
        "more decimal places than AUD's 2": _supplier_payment(rng, "ACME-INV-90004", amount="1250.005"),
        "EqvtAmt": _supplier_payment(rng, "ACME-INV-90005", amount="250.00", amount_xml=EQUIVALENT),
        "creditor_account": _supplier_payment(rng, "ACME-INV-90006", creditor_account="12AB5678"),
        "duplicate payment_reference": first[3],
    }
    first += [
        bad["creditor account is an IBAN"],
        bad["creditor agent has a BIC only"],
        bad["duplicate payment_reference"],
    ]
    second += [bad[k] for k in list(bad)[2:6]]
    second[4] = replace(second[4], creditor_account=CLOSED)
    blocks = [
        _block("ACME-PMT-20250501-OPS", first, "063-019", "10442871", "Acme Pty Ltd"),
        _block("ACME-PMT-20250501-CAP", second, "063-019", "10442898", "Acme Pty Ltd Capital"),
    ]
    text = _pain001_file(PAIN_001_09, "ACME-20250501-0001", blocks, "Acme Pty Ltd")
    return text, _expected(blocks, bad, "ACME-20250501-0001", PAIN_001_09)


def globex() -> tuple[str, dict[str, Any]]:
    rng = random.Random(20250502)
    txs = [_supplier_payment(rng, f"GLX-2025-{n:04d}", rng.choice(["AUD", "AUD", "NZD"])) for n in range(1, 23)]
    bad = {
        "EndToEndId is NOTPROVIDED": _supplier_payment(rng, "NOTPROVIDED"),
        "more decimal places than JPY's 0": _supplier_payment(rng, "GLX-2025-9001", "JPY", amount="15000.5"),
        "no minor unit": _supplier_payment(rng, "GLX-2025-9002", "XAU", amount="2"),
    }
    txs[7] = replace(txs[7], creditor_account=CLOSED)
    txs[5:5] = list(bad.values())
    blocks = [_block("GLX-PMT-0001", txs, "082-001", "55120034", "Globex Australia Pty Ltd")]
    text = _pain001_file(PAIN_001_03, "GLX-20250501-PAY-001", blocks, "Globex Australia Pty Ltd")
    return text, _expected(blocks, bad, "GLX-20250501-PAY-001", PAIN_001_03)


def _expected(blocks: list[Block], bad: dict[str, Tx], identity: str, fmt: str) -> dict[str, Any]:
    every = [t for b in blocks for t in b.txs]
    rejected = {n: reason for n, t in enumerate(every, start=1) for reason, b in bad.items() if t is b}
    # the duplicate's first occurrence is accepted; only the repeat is rejected
    rejected = {n: r for n, r in rejected.items() if not (r.startswith("duplicate") and n == every.index(bad[r]) + 1)}
    closed = [n for n, t in enumerate(every, start=1) if t.creditor_account == CLOSED]
    accepted = [(t.currency, _cents(t.amount), t.creditor_account) for n, t in enumerate(every, 1) if n not in rejected]
    return {
        "format": fmt,
        "identity": identity,
        "rows": len(every),
        "accepted": len(every) - len(rejected),
        "rejected": {str(n): r for n, r in sorted(rejected.items())},
        "closed_account_rows": closed,
        "demo": _demo(accepted),
    }


def _cents(amount: str) -> int:
    cents = Decimal(amount).scaleb(2)  # every accepted payment here is in a currency of two decimals
    assert cents == cents.to_integral_value(), amount
    return int(cents)


def _demo(accepted: list[tuple[str, int, str]]) -> dict[str, Any]:
    """What the demo (EXPECTED.json) says of the file's accepted payments: the closed account's are
    dead-lettered, every other one processed; none goes to the outage's account."""
    paid = [(currency, cents) for currency, cents, account in accepted if account != CLOSED]
    closed = [(currency, cents) for currency, cents, account in accepted if account == CLOSED]
    return {
        "accepted": len(accepted),
        "by_currency": _by_currency([(c, cents) for c, cents, _ in accepted]),
        "processed_during_outage": _by_currency(paid),
        "dead_lettered_closed": _by_currency(closed),
        "dead_lettered_outage": {},
        "processed_final": _by_currency(paid),
    }


def _by_currency(payments: list[tuple[str, int]]) -> dict[str, dict[str, int]]:
    totals: dict[str, dict[str, int]] = {}
    for currency, cents in sorted(payments):
        total = totals.setdefault(currency, {"count": 0, "amount_cents": 0})
        total["count"] += 1
        total["amount_cents"] += cents
    return totals


def initech() -> tuple[str, dict[str, Any]]:
    rng = random.Random(20250503)
    pays = [
        AbaDetail(
            _bsb(rng),
            str(rng.randint(100_000, 999_999_999)),
            rng.randint(180_000, 950_000),
            f"PAY MAY25 {n:04d}",  # blanks: remit reads it as PAY_MAY25_0001
            title=STAFF[n % len(STAFF)],
            remitter="INITECH PAYROLL",
        )
        for n in range(1, 29)
    ]
    bad = {
        "the lodgement reference (positions 63-80) is blank": AbaDetail("062-000", "45678123", 250_000, "", **PAYROLL),
        "cannot be a payment_reference": AbaDetail("062-000", "45678124", 250_000, "PAY#MAY25#0099", **PAYROLL),
        "the indicator (position 18)": AbaDetail(
            "062-000", "45678125", 250_000, "PAY MAY25 0098", indicator="Z", **PAYROLL
        ),
        "neither a credit (50-57) nor a debit (13)": AbaDetail(
            "062-000", "45678126", 250_000, "PAY MAY25 0097", code="99", **PAYROLL
        ),
    }
    pays[11] = replace(pays[11], account=CLOSED)
    pays[6:6] = list(bad.values())
    credits = sum(d.amount_cents for d in pays if "50" <= d.code <= "57")
    balance = AbaDetail(
        "033-000", "87654321", credits, "INITECH PAYROLL", "13", "INITECH PTY LTD", remitter="INITECH PAYROLL"
    )
    bad["is a debit"] = balance
    details = [*pays, balance]
    aba = AbaFile(details, user_name="INITECH PTY LTD", user_id=492011, description="PAYROLL", bank="WBC")
    rejected = {str(n + 2): reason for n, d in enumerate(details) for reason, b in bad.items() if d is b}
    accepted = [("AUD", d.amount_cents, d.account) for n, d in enumerate(details) if str(n + 2) not in rejected]
    expected = {
        "format": "aba",
        "identity": "sha256",
        "rows": len(details),
        "accepted": len(details) - len(rejected),
        "rejected": rejected,
        "closed_account_rows": [n + 2 for n, d in enumerate(details) if d.account == CLOSED],
        "demo": _demo(accepted),
    }
    return aba.text(), expected


FILES = {
    "acme_20250501.pain.001.001.09.xml": acme,
    "globex_20250501.pain.001.001.03.xml": globex,
    "initech_20250501.aba": initech,
}
DEMO_TENANTS = {  # EXPECTED.json's tenant of each file: the demo submits one file of each format
    "acme_20250501.pain.001.001.09.xml": "acme",
    "globex_20250501.pain.001.001.03.xml": "globex",
    "initech_20250501.aba": "initech",
}


def generate(directory: Path) -> None:
    expected = {}
    demo = json.loads((HERE / "EXPECTED.json").read_text())  # examples/generate.py's, with its tenants
    for name, build in FILES.items():
        text, facts = build()
        (directory / name).write_text(text, newline="")
        tenant = facts.pop("demo")
        rejected = {"rejected": len(facts["rejected"]), "format": facts["format"]}
        demo["tenants"][DEMO_TENANTS[name]] = {"file": name, **rejected, **tenant}
        expected[name] = facts
    (directory / "bankfiles_expected.json").write_text(json.dumps(expected, indent=2) + "\n")
    (directory / "EXPECTED.json").write_text(json.dumps(demo, indent=2) + "\n")


if __name__ == "__main__":
    generate(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
