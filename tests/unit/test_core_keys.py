"""The idempotency key a payment carries to the core: stable forever, one per (tenant, message_id)."""

import re
from uuid import UUID

import pytest

from app.consumer.core_keys import transfer_key

# The reference core's key rule (docs/core-banking.md): 1 to 255 characters a URL path carries unescaped.
CORE_KEY = re.compile(r"^[A-Za-z0-9._~!$&'()*+,;=:@-]{1,255}$")


def test_the_key_is_tenant_colon_canonical_message_id() -> None:
    message_id = UUID("0190d3c4-5e6f-7a8b-9c0d-1e2f3a4b5c6d")
    assert transfer_key("anz", message_id) == "anz:0190d3c4-5e6f-7a8b-9c0d-1e2f3a4b5c6d"


def test_every_spelling_of_a_message_id_gives_the_same_key() -> None:
    spellings = [
        "0190D3C4-5E6F-7A8B-9C0D-1E2F3A4B5C6D",
        "{0190d3c4-5e6f-7a8b-9c0d-1e2f3a4b5c6d}",
        "0190d3c45e6f7a8b9c0d1e2f3a4b5c6d",
    ]
    keys = {transfer_key("anz", UUID(s)) for s in spellings}
    assert keys == {"anz:0190d3c4-5e6f-7a8b-9c0d-1e2f3a4b5c6d"}


def test_two_tenants_with_the_same_message_id_are_two_keys() -> None:
    message_id = UUID("0190d3c4-5e6f-7a8b-9c0d-1e2f3a4b5c6d")
    assert transfer_key("anz", message_id) != transfer_key("westpac", message_id)
    assert transfer_key("a-b", UUID(int=1)) == "a-b:00000000-0000-0000-0000-000000000001"


def test_the_longest_key_fits_the_core_and_splits_back_at_the_first_colon() -> None:
    tenant = "t" + "x" * 31  # the contract's longest tenant id: 32 characters
    key = transfer_key(tenant, UUID("0190d3c4-5e6f-7a8b-9c0d-1e2f3a4b5c6d"))
    assert len(key) == 69
    assert CORE_KEY.match(key)
    assert key.split(":", 1) == [tenant, "0190d3c4-5e6f-7a8b-9c0d-1e2f3a4b5c6d"]


def test_a_later_generation_is_another_key_of_the_same_payment_and_the_first_is_unchanged() -> None:
    """A new attempt after the core refused the key for good (app/deadletters/replay.py): generation 1 is the key
    every payment ever sent had; generation n from 2 on appends `:n`."""
    message_id = UUID("0190d3c4-5e6f-7a8b-9c0d-1e2f3a4b5c6d")
    first = "anz:0190d3c4-5e6f-7a8b-9c0d-1e2f3a4b5c6d"
    assert transfer_key("anz", message_id, 1) == transfer_key("anz", message_id) == first
    assert transfer_key("anz", message_id, 2) == f"{first}:2"
    assert transfer_key("anz", message_id, 10) == f"{first}:10"
    tenant = "t" + "x" * 31
    longest = transfer_key(tenant, message_id, 2**31 - 1)  # the generation column is an integer
    assert CORE_KEY.match(longest)
    assert len(longest) == 80
    assert longest.split(":") == [tenant, str(message_id), str(2**31 - 1)]


def test_there_is_no_generation_before_the_first() -> None:
    for generation in (0, -1):
        with pytest.raises(ValueError, match="at least 1"):
            transfer_key("anz", UUID(int=1), generation)
