"""The contract reads its two text formats as Python's own parsers do.

The UUID and the timestamp are checked and parsed inside pydantic-core (contracts/wire_formats.py); here
the standard library is the independent reading: for every string of the documented form, the contract
accepts exactly what `datetime.fromisoformat` / `uuid.UUID` read, at the same value, from JSON and from Python.
"""

import re
from datetime import UTC, datetime, timedelta
from uuid import UUID

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from pydantic import ValidationError

from contracts import PaymentMessage
from contracts.wire_formats import TIMESTAMP_PATTERN, UUID_PATTERN
from tests.utils.factories import make_message, make_wire_dict, to_wire_bytes

# Of the documented form, often impossible (month 47, second 60): the parse decides those.
timestamp_texts = st.from_regex(TIMESTAMP_PATTERN, fullmatch=True)
# And real instants at offset zero or not, in the spellings the form allows.
written_timestamps = st.builds(
    lambda moment, offset, sep, fraction, zone: (
        moment.strftime(f"%Y-%m-%d{sep}%H:%M:%S") + fraction + (zone if offset == 0 else f"+{offset:02d}:00")
    ),
    st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30)),
    st.integers(min_value=0, max_value=14),
    st.sampled_from("Tt"),
    st.sampled_from(["", ".5", ".421", ".123456", ".1234567", ".999999999"]),
    st.sampled_from(["Z", "z", "+00:00", "-00:00"]),
)


def _stdlib_reading(text: str) -> datetime | None:
    """What the contract should accept: a real date-time at offset zero, as Python reads it."""
    if not re.match(TIMESTAMP_PATTERN, text):
        return None
    try:
        moment = datetime.fromisoformat(text.upper())
    except ValueError:
        return None
    if moment.tzinfo is None or moment.utcoffset() != timedelta(0):
        return None
    return moment


def _contract_reading(text: str) -> datetime | None:
    try:
        return PaymentMessage.from_wire(to_wire_bytes(make_wire_dict(timestamp_utc=text))).timestamp_utc
    except ValidationError as exc:
        refused_at = [error["loc"] for error in exc.errors()]
    assert refused_at == [("timestamp_utc",)]
    return None


@given(text=st.one_of(timestamp_texts, written_timestamps))
@example(text="2025-05-01T23:59:60Z")  # a leap second: neither reads it
@example(text="2024-02-29T02:14:33Z")
@example(text="2025-02-29T02:14:33Z")
@example(text="2025-05-01T02:14:33.1234567891Z")  # beyond microseconds: truncated
@example(text="2025-05-01T02:14:33+00:01")
def test_a_timestamp_is_accepted_exactly_when_python_reads_it_at_utc(text: str) -> None:
    expected, read = _stdlib_reading(text), _contract_reading(text)

    assert read == expected
    if read is not None:
        assert read.tzinfo is UTC


@given(text=st.one_of(timestamp_texts, written_timestamps))
def test_python_strings_are_read_as_json_strings_are(text: str) -> None:
    try:
        from_python: datetime | None = make_message(timestamp_utc=text).timestamp_utc
    except ValidationError:
        from_python = None

    assert from_python == _contract_reading(text)


@given(value=st.uuids())
def test_a_canonical_uuid_in_either_case_is_its_uuid(value: UUID) -> None:
    for text in (str(value), str(value).upper()):
        assert re.match(UUID_PATTERN, text)
        message = PaymentMessage.from_wire(to_wire_bytes(make_wire_dict(message_id=text)))
        assert type(message.message_id) is UUID
        assert message.message_id == value
        assert make_message(message_id=text).message_id == value


@pytest.mark.parametrize("text", ["{7f3a91bc-4e2d-4c8a-b1f0-9d3e2a1c5b7d}", "7f3a91bc-4e2d-4c8a-b1f0-9d3e2a1c5b7d "])
def test_other_spellings_uuid_reads_are_refused_from_python_too(text: str) -> None:
    assert UUID(text.strip())  # the standard library reads them

    with pytest.raises(ValidationError, match="canonical"):
        make_message(message_id=text)
