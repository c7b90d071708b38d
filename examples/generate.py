"""Generate the demo bulk files (deterministic): `python examples/generate.py`.

Each file has valid payments in several currencies plus a few duplicates and a few invalid rows, and
EXPECTED.json records exactly what a correct run accepts, rejects and processes (examples/generate_bankfiles.py
adds the tenants of the pain.001 and ABA examples).
"""

import csv
import json
import random
from collections import defaultdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
CURRENCIES = ("AUD", "AUD", "AUD", "NZD", "USD")
# The demo's reference core (its own process, `remit demo`) holds these creditor accounts this way:
CLOSED = "100000001"  # closed in the core: refused (account_closed), dead-lettered at once
OUTAGE = "200000001"  # held by the core's fault injection during the outage: retries exhausted, replayed later
FLAKY = "300000001"  # held once, then booked on the first retry
CORE_BANKING = {"closed_accounts": [CLOSED], "outage_accounts": [OUTAGE], "flaky_accounts": [FLAKY]}
COLUMNS = [
    "payment_reference",
    "amount_cents",
    "currency",
    "debtor_bsb",
    "debtor_account",
    "creditor_bsb",
    "creditor_account",
]


def _valid(rng: random.Random, prefix: str, n: int) -> dict[str, Any]:
    return {
        "payment_reference": f"PAY-{prefix}-2025-{n:08d}",
        "amount_cents": rng.randint(100, 5_000_000),
        "currency": rng.choice(CURRENCIES),
        "debtor_bsb": f"{rng.randint(10, 999):03d}-{rng.randint(0, 999):03d}",
        "debtor_account": str(rng.randint(100_000_000, 999_999_999)),
        "creditor_bsb": f"{rng.randint(10, 999):03d}-{rng.randint(0, 999):03d}",
        "creditor_account": str(rng.randint(100_000_000, 999_999_999)),
    }


def _invalid(base: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {**base, "payment_reference": base["payment_reference"] + "F", "amount_cents": "1500.00"},
        {**base, "payment_reference": base["payment_reference"] + "B", "debtor_bsb": "012345"},
        {**base, "payment_reference": base["payment_reference"] + "C", "currency": "ABC"},
        {**base, "payment_reference": base["payment_reference"] + "Z", "amount_cents": 0},
        {**base, "payment_reference": base["payment_reference"] + "A", "creditor_account": "12AB5678"},
        {
            **base,
            "payment_reference": base["payment_reference"] + "S",
            "creditor_bsb": base["debtor_bsb"],
            "creditor_account": base["debtor_account"],
        },
    ]


def _by_currency(rows: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for row in rows:
        totals[row["currency"]][0] += 1
        totals[row["currency"]][1] += row["amount_cents"]
    return {c: {"count": n, "amount_cents": cents} for c, (n, cents) in sorted(totals.items())}


def _special(rows: list[dict[str, Any]], rng: random.Random) -> dict[str, list[dict[str, Any]]]:
    picked = rng.sample(rows, 9)
    groups = {"closed": picked[:3], "outage": picked[3:5], "flaky": picked[5:]}
    for name, account in (("closed", CLOSED), ("outage", OUTAGE), ("flaky", FLAKY)):
        for row in groups[name]:
            row["creditor_account"] = account
    return groups


def build(prefix: str, seed: int, valid: int, duplicates: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    rng = random.Random(seed)
    rows = [_valid(rng, prefix, n) for n in range(1, valid + 1)]
    special = _special(rows, rng)
    ids = {id(r) for r in special["closed"] + special["outage"]}
    expected: dict[str, Any] = {
        "accepted": valid,
        "rejected": 0,
        "by_currency": _by_currency(rows),
        # during the outage: closed and outage accounts dead-lettered, everything else processed
        "processed_during_outage": _by_currency([r for r in rows if id(r) not in ids]),
        "dead_lettered_closed": _by_currency(special["closed"]),
        "dead_lettered_outage": _by_currency(special["outage"]),
        # after the outage ends and the retries_exhausted dead letters are replayed
        "processed_final": _by_currency([r for r in rows if r["creditor_account"] != CLOSED]),
    }
    extra = [dict(rows[rng.randrange(valid)]) for _ in range(duplicates)] + _invalid(_valid(rng, prefix, 999_999))
    for row in extra:
        rows.insert(rng.randrange(len(rows) // 2, len(rows)), row)
    expected["rejected"] = len(extra)
    return rows, expected


def main() -> None:
    anz_rows, anz = build("ANZ", seed=42, valid=600, duplicates=4)
    with (HERE / "anz_20250501.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(anz_rows)
    wbc_rows, wbc = build("WBC", seed=7, valid=500, duplicates=3)
    with (HERE / "westpac_20250501.jsonl").open("w") as f:
        f.writelines(json.dumps(row) + "\n" for row in wbc_rows)
    path = HERE / "EXPECTED.json"
    others = json.loads(path.read_text())["tenants"] if path.exists() else {}  # generate_bankfiles.py's tenants
    expected = {
        "core_banking": CORE_BANKING,
        "tenants": {
            **others,
            "anz": {"file": "anz_20250501.csv", "format": "csv", **anz},
            "westpac": {"file": "westpac_20250501.jsonl", "format": "jsonl", **wbc},
        },
    }
    path.write_text(json.dumps(expected, indent=2) + "\n")


if __name__ == "__main__":
    main()
