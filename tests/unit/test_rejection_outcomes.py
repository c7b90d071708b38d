"""A row rejected at ingress is reported with the outcome (so the ISO reason code) of why: checked on the
example files' rejections, which hold one of each kind, and on the precedence when a row breaks several rules."""

import json
from pathlib import Path

import pytest

from app.bankfiles import BankFile, iso_status
from app.bankfiles.outcomes import Outcome
from app.publisher.bulk_file import RawRow
from app.publisher.rejection_outcomes import rejection_outcome
from app.publisher.validation import validate_rows
from tests.utils.factories import batch_context

EXAMPLES = Path(__file__).parents[2] / "examples"

# file -> row -> ISO reason code of its rejection
EXPECTED_CODES = {
    "acme_20250501.pain.001.001.09.xml": {
        21: "AC01",  # an IBAN
        22: "AC01",  # an agent with a BIC only
        23: "AM05",  # an EndToEndId seen before
        39: "AC01",  # another clearing system
        40: "CH20",  # 1250.005 AUD
        41: "CH16",  # EqvtAmt
        42: "AC01",  # an account the contract refuses
    },
    "globex_20250501.pain.001.001.03.xml": {6: "CH16", 7: "CH20", 8: "CH16"},
    "initech_20250501.aba": {8: "CH16", 9: "CH16", 10: "CH16", 11: "CH16", 34: "CH16"},
}


@pytest.mark.parametrize("name", sorted(EXPECTED_CODES))
def test_the_examples_rejections_carry_their_reason_codes(name: str) -> None:
    with BankFile(EXAMPLES / name) as bank:
        batch = validate_rows(list(bank.rows()), batch_context())
    codes = {r.row_number: iso_status(r.outcome).reason for r in batch.rejected}
    assert codes == EXPECTED_CODES[name]


def test_the_csv_examples_duplicates_and_bad_accounts() -> None:
    rows = [RawRow(2, _payment("P-1")), RawRow(3, _payment("P-1")), RawRow(4, _payment("P-2", creditor_bsb="012345"))]
    outcomes = {r.row_number: r.outcome for r in validate_rows(rows, batch_context()).rejected}
    assert outcomes == {3: Outcome.DUPLICATE, 4: Outcome.INVALID_ACCOUNT}


@pytest.mark.parametrize(
    ("errors", "outcome"),
    [
        (["amount_cents 100000001 is over the per-payment limit of 100000000"], Outcome.OVER_LIMIT),
        (["payment_reference 'X' was already accepted in an earlier batch"], Outcome.DUPLICATE),
        # a duplicate is said first, whatever else is wrong: told anything else, a customer sends it again
        (
            ["duplicate payment_reference 'X' (first seen at line 2)", "creditor_account: String should match"],
            Outcome.DUPLICATE,
        ),
        (
            ["PmtInf/PmtMtd is 'CHK': remit makes credit transfers (TRF) only; debtor account is an IBAN"],
            Outcome.INVALID_ACCOUNT,
        ),
        (["debtor and creditor are the same account"], Outcome.INVALID),
        (["currency: Value error, 'ABC' is not an active ISO 4217 currency code"], Outcome.INVALID),
        ([], Outcome.INVALID),
    ],
)
def test_precedence(errors: list[str], outcome: Outcome) -> None:
    assert rejection_outcome(errors) is outcome


def _payment(reference: str, **overrides: str) -> dict[str, object]:
    fields: dict[str, object] = {
        "payment_reference": reference,
        "amount_cents": 1500,
        "currency": "AUD",
        "debtor_bsb": "012-345",
        "debtor_account": "123456789",
        "creditor_bsb": "033-001",
        "creditor_account": "987654321",
    }
    return {**fields, **overrides}


def test_examples_file_lists_every_rejected_row() -> None:
    expected = json.loads((EXAMPLES / "bankfiles_expected.json").read_text())
    for name, codes in EXPECTED_CODES.items():
        assert sorted(codes) == sorted(int(row) for row in expected[name]["rejected"])
