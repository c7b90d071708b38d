"""Logging for every remit process: JSON lines (one object per line) with the message's identity fields,
and account numbers masked before anything is written."""

import logging
import os
import re
import sys

from pythonjsonlogger.json import JsonFormatter

MESSAGE_FIELDS = ("tenant_id", "message_id", "correlation_id", "attempt")
# An account number appears either after a BSB ("033-001 900000001") or as a JSON field value.
_ACCOUNT_AFTER_BSB = re.compile(r"\b(\d{3}-\d{3}) (\d{2,7})(\d{3})\b")
_ACCOUNT_FIELD = re.compile(r'("(?:debtor|creditor)_account"\s*:\s*")(\d{2,7})(\d{3})"')


def mask_account(account: str) -> str:
    return "*" * max(len(account) - 3, 0) + account[-3:]


def mask_text(text: str) -> str:
    text = _ACCOUNT_AFTER_BSB.sub(lambda m: f"{m[1]} {'*' * len(m[2])}{m[3]}", text)
    return _ACCOUNT_FIELD.sub(lambda m: f'{m[1]}{"*" * len(m[2])}{m[3]}"', text)


class MaskAccounts(logging.Filter):
    """Last line of defence: whatever a log line says, account numbers leave it masked."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = mask_text(record.getMessage())
        record.args = None
        return True


class MessageFields(logging.Filter):
    """Every line carries the message identity keys, empty when the line is not about a message."""

    def filter(self, record: logging.LogRecord) -> bool:
        for name in MESSAGE_FIELDS:
            if not hasattr(record, name):
                setattr(record, name, None)
        return True


def configure_logging(level: str | None = None, fmt: str | None = None) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(MaskAccounts())
    handler.addFilter(MessageFields())
    if (fmt or os.environ.get("REMIT_LOG_FORMAT", "json")) == "json":
        handler.setFormatter(
            JsonFormatter(
                "{asctime}{levelname}{name}{message}" + "".join(f"{{{f}}}" for f in MESSAGE_FIELDS),
                style="{",
                rename_fields={"asctime": "time", "levelname": "level", "name": "logger"},
            )
        )
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel((level or os.environ.get("REMIT_LOG_LEVEL", "INFO")).upper())
