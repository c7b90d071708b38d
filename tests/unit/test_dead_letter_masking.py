"""Account numbers are masked to their last three digits; other numbers and ids are left alone."""

import json

import pytest

from app.deadletters.masking import mask_account, mask_json, mask_text, readable_body
from tests.utils.factories import make_wire_dict, to_wire_bytes


def test_an_account_number_keeps_only_its_last_three_digits() -> None:
    assert mask_account("123456789") == "******789"
    assert mask_account("12") == "**"


def test_a_json_body_has_its_account_fields_masked_and_nothing_else() -> None:
    wire = make_wire_dict(debtor_account="123456789", creditor_account="987654321", amount_cents=1234567)
    data, text = readable_body(to_wire_bytes(wire), unmask=False)
    assert data["debtor_account"] == "******789"
    assert data["creditor_account"] == "******321"
    assert data["amount_cents"] == 1234567
    assert data["message_id"] == wire["message_id"]
    assert "123456789" not in text
    assert "987654321" not in text


def test_unmask_shows_the_body_as_it_is() -> None:
    body = to_wire_bytes(make_wire_dict(debtor_account="123456789"))
    data, text = readable_body(body, unmask=True)
    assert data["debtor_account"] == "123456789"
    assert text == body.decode()


def test_account_numbers_in_free_text_are_masked_but_not_uuids_or_batch_ids() -> None:
    text = "account 123456789 closed; message 01934567-89ab-7def-8123-456789012345 batch bulk_anz_20250501"
    masked = mask_text(text)
    assert "******789" in masked
    assert "01934567-89ab-7def-8123-456789012345" in masked
    assert "bulk_anz_20250501" in masked


def test_a_body_that_is_not_json_is_masked_as_text() -> None:
    data, text = readable_body(b"debtor=123456789;x", unmask=False)
    assert data is None
    assert text == "debtor=******789;x"
    assert json.dumps(text)


def test_headers_keep_times_and_counters_but_mask_accounts_in_error_text() -> None:
    header_values = {
        "remit-error": "creditor account 987654321 is closed",
        "remit-failed-at": "2026-11-21T12:07:18.870256+00:00",
        "x-death": [{"original-expiration": "86386102", "count": 1}],
    }
    assert mask_json(header_values) == {
        "remit-error": "creditor account ******321 is closed",
        "remit-failed-at": "2026-11-21T12:07:18.870256+00:00",
        "x-death": [{"original-expiration": "86386102", "count": 1}],
    }


@pytest.mark.parametrize("depth", [33, 900, 10_000])
def test_a_deeply_nested_body_is_shown_as_text_and_never_raises(depth: int) -> None:
    for body in (b"[" * depth + b"]" * depth, b'{"a":' * depth + b'"123456789"' + b"}" * depth):
        data, text = readable_body(body, unmask=False)
        assert data is None
        assert "123456789" not in text
        json.dumps(text)


def test_a_body_nested_to_the_limit_is_still_shown_as_json() -> None:
    data, _ = readable_body(b"[" * 32 + b"]" * 32, unmask=False)
    assert data is not None


def test_a_stored_prefix_is_shown_as_text_even_when_it_parses() -> None:
    data, text = readable_body(b'{"creditor_account": "987654321"}', unmask=False, complete=False)
    assert data is None
    assert "987654321" not in text


def test_masking_deep_json_stops_at_the_limit() -> None:
    value: object = {"debtor_account": "123456789"}
    for _ in range(2_000):
        value = [value]
    masked = mask_json(value)
    json.dumps(masked)
    assert "123456789" not in json.dumps(masked)
