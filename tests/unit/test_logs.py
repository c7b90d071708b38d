"""Log lines are JSON with the message identity fields, and never carry a whole account number."""

import io
import json
import logging
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import sqlalchemy.exc

from app.logs import (
    LibraryNoise,
    MaskAccounts,
    MessageFields,
    TerminalSafe,
    configure_logging,
    mask_account,
    mask_text,
)


def test_mask_account_keeps_the_last_three_digits() -> None:
    assert mask_account("900000123") == "******123"


@pytest.mark.parametrize(
    ("raw", "masked"),
    [
        # After a BSB, in free text.
        ("creditor account 033-001 900000123 is closed", "creditor account 033-001 ******123 is closed"),
        # JSON: a string value, a number, and JSON escaped inside another JSON string.
        ('{"debtor_account": "123456789", "x": 1}', '{"debtor_account": "******789", "x": 1}'),
        ('{"creditor_account":987654321}', '{"creditor_account":******321}'),
        (
            '{"error": "{\\"debtor_account\\": \\"123456789\\"}"}',
            '{"error": "{\\"debtor_account\\": \\"******789\\"}"}',
        ),
        # Python: a dict, a pydantic/dataclass repr, key=value, prose.
        (
            "{'debtor_account': '123456789', 'amount_cents': 150000}",
            "{'debtor_account': '******789', 'amount_cents': 150000}",
        ),
        (
            "PaymentMessage(creditor_account='987654321', retry_count=0)",
            "PaymentMessage(creditor_account='******321', retry_count=0)",
        ),
        (
            "booking failed debtor_account=123456789 amount_cents=150000",
            "booking failed debtor_account=******789 amount_cents=150000",
        ),
        ("Account 12345678 is closed", "Account *****678 is closed"),
        # Positional reprs: a tuple of values, and one list per column (unnest arrays).
        ("[parameters: ('t1', '012-345', '123456789', 1000)]", "[parameters: ('t1', '012-345', '******789', 1000)]"),
        (
            "(['012-345', '012-345'], ['123456789', '123456780'])",
            "(['012-345', '012-345'], ['******789', '******780'])",
        ),
        # Not accounts: ids, amounts, sizes and references stay readable.
        ("message 01a1fdee-4aee-7ddf-984a-859abfb8838c", "message 01a1fdee-4aee-7ddf-984a-859abfb8838c"),
        ("amount_cents=150000 body is 31457280 bytes", "amount_cents=150000 body is 31457280 bytes"),
        ("'PAY-123456789' 'bulk_20250501_123456'", "'PAY-123456789' 'bulk_20250501_123456'"),
    ],
)
def test_mask_text(raw: str, masked: str) -> None:
    assert mask_text(raw) == masked


def test_a_statement_error_with_its_parameters_leaves_no_account_behind() -> None:
    """The text SQLAlchemy makes of a failed statement when parameters are not hidden, as logged."""
    params = (["012-345", "012-345"], ["123456789", "123456780"], ["033-001"], ["987654321"])
    error = sqlalchemy.exc.IntegrityError(
        "INSERT INTO ledger SELECT * FROM unnest($1, $2, $3, $4)", params, Exception("duplicate key")
    )
    text = str(error)
    assert "123456789" in text  # the format under test really quotes them
    masked = mask_text(text)
    assert not any(a in masked for a in ("123456789", "123456780", "987654321")), masked
    assert "******789" in masked


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
    assert {type(f) for f in handler.filters} == {MaskAccounts, TerminalSafe, MessageFields, LibraryNoise}


def _line(emit: Callable[[logging.Logger], None]) -> dict[str, Any]:
    configure_logging("INFO", "json")
    stream = io.StringIO()
    logging.getLogger().handlers[0].setStream(stream)  # type: ignore[attr-defined]
    emit(logging.getLogger("remit.test"))
    parsed: dict[str, Any] = json.loads(stream.getvalue().splitlines()[-1])
    return parsed


@pytest.mark.usefixtures("restore_root_logger")
def test_a_logged_exception_traceback_is_masked() -> None:
    def emit(logger: logging.Logger) -> None:
        try:
            raise ValueError("[parameters: ('012-345', '123456789')]")
        except ValueError:
            logger.exception("commit failed")

    line = _line(emit)
    assert "ValueError" in line["exc_info"]
    assert "123456789" not in json.dumps(line)
    assert "'******789'" in line["exc_info"]


@pytest.mark.usefixtures("restore_root_logger")
def test_extra_fields_and_the_stack_are_masked() -> None:
    def emit(logger: logging.Logger) -> None:
        logger.warning("booking failed", extra={"detail": "debtor_account=123456789"}, stack_info=True)

    line = _line(emit)
    assert line["detail"] == "debtor_account=******789"
    assert "123456789" not in json.dumps(line)


@pytest.mark.usefixtures("restore_root_logger")
def test_plain_text_lines_are_masked_too() -> None:
    configure_logging("INFO", "text")
    stream = io.StringIO()
    logging.getLogger().handlers[0].setStream(stream)  # type: ignore[attr-defined]
    try:
        raise RuntimeError("{'creditor_account': '987654321'}")
    except RuntimeError:
        logging.getLogger("remit.test").exception("failed for account 123456789")
    text = stream.getvalue()
    assert "987654321" not in text
    assert "123456789" not in text
    assert "account ******789" in text
    assert "'******321'" in text


HOSTILE = "PAY-1\x1b]0;owned\x07\x1b[1A\x1b[2K\u202eSECURITY\x9b2J\nforged INFO line"


@pytest.mark.usefixtures("restore_root_logger")
@pytest.mark.parametrize("fmt", ["plain", "json"])
def test_a_tenants_control_characters_reach_no_log_line(fmt: str) -> None:
    """Message, `extra=` fields and an exception's text: every control and bidi character shown escaped, a
    message's newline too (it would forge the next line); the traceback keeps its own lines."""
    configure_logging("INFO", fmt)
    stream = io.StringIO()
    logging.getLogger().handlers[0].setStream(stream)  # type: ignore[attr-defined]
    logger = logging.getLogger("remit.test")
    try:
        raise ValueError(f"bad reference {HOSTILE}")
    except ValueError:
        logger.exception("refused %s", HOSTILE, extra={"correlation_id": HOSTILE})
    written = stream.getvalue()
    for unsafe in ("\x1b", "\x07", "\u202e", "\x9b"):
        assert unsafe not in written
    escaped = r"PAY-1\x1b]0;owned\x07\x1b[1A\x1b[2K\u202eSECURITY\u009b2J\x0aforged INFO line"
    if fmt == "json":
        [record] = written.splitlines()  # one line, the traceback's own inside it, escaped by JSON
        line = json.loads(record)
        assert line["message"] == f"refused {escaped}"
        assert line["correlation_id"] == escaped
        assert line["exc_info"].count("\n") >= 2
    else:
        assert f"refused {escaped}" in written.splitlines()[0]
        assert "Traceback (most recent call last):" in written.splitlines()[1]


def _lines(level: str, emit: Callable[[], None]) -> list[dict[str, Any]]:
    configure_logging(level, "json")
    stream = io.StringIO()
    logging.getLogger().handlers[0].setStream(stream)  # type: ignore[attr-defined]
    emit()
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def _poll() -> None:
    """What httpx logs of each request remit sends (a management API poll), as httpx logs it."""
    url = "http://127.0.0.1:15672/api/queues/remit"
    logging.getLogger("httpx").info('HTTP Request: %s %s "%s %d %s"', "GET", url, "HTTP/1.1", 200, "OK")


@pytest.mark.usefixtures("restore_root_logger")
def test_httpx_request_lines_go_out_at_debug() -> None:
    assert _lines("INFO", _poll) == []
    [line] = _lines("DEBUG", _poll)
    assert (line["logger"], line["level"]) == ("httpx", "DEBUG")
    assert line["message"].startswith("HTTP Request: GET http://127.0.0.1:15672/api/queues/remit")
    # Only those lines: anything else httpx says, and remit's own INFO lines, keep their level.
    other = _lines("INFO", lambda: logging.getLogger("httpx").warning("something else"))
    assert [(line["logger"], line["level"]) for line in other] == [("httpx", "WARNING")]
    own = _lines("INFO", lambda: logging.getLogger("remit.test").info("HTTP Request: not a library's line"))
    assert [line["level"] for line in own] == ["INFO"]
