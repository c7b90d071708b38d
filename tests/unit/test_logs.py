"""Log lines are JSON with the message identity fields, and never carry a whole account number."""

import io
import json
import logging
from collections.abc import Iterator

import pytest

from app.logs import MaskAccounts, MessageFields, configure_logging, mask_account, mask_text


def test_mask_account_keeps_the_last_three_digits() -> None:
    assert mask_account("900000123") == "******123"


@pytest.mark.parametrize(
    ("raw", "masked"),
    [
        ("creditor account 033-001 900000123 is closed", "creditor account 033-001 ******123 is closed"),
        ('{"debtor_account": "123456789", "x": 1}', '{"debtor_account": "******789", "x": 1}'),
        ("message 01a1fdee-4aee-7ddf-984a-859abfb8838c", "message 01a1fdee-4aee-7ddf-984a-859abfb8838c"),
    ],
)
def test_mask_text(raw: str, masked: str) -> None:
    assert mask_text(raw) == masked


@pytest.fixture
def restore_root_logger() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


@pytest.mark.usefixtures("restore_root_logger")
def test_json_lines_carry_identity_fields_and_mask_accounts() -> None:
    configure_logging("INFO", "json")
    stream = io.StringIO()
    handler = logging.getLogger().handlers[0]
    handler.setStream(stream)  # type: ignore[attr-defined]
    logging.getLogger("remit.test").warning(
        "account %s %s failed", "033-001", "900000123", extra={"tenant_id": "anz", "message_id": "m-1", "attempt": 2}
    )
    line = json.loads(stream.getvalue().splitlines()[-1])
    assert line["message"] == "account 033-001 ******123 failed"
    assert (line["tenant_id"], line["message_id"], line["attempt"]) == ("anz", "m-1", 2)
    assert line["correlation_id"] is None
    assert line["level"] == "WARNING"
    assert {type(f) for f in handler.filters} == {MaskAccounts, MessageFields}
