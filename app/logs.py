"""Logging for every remit process: JSON lines (one object per line) with the message's identity fields,
account numbers masked and control characters shown escaped before anything is written."""

import logging
import re
import sys

from pythonjsonlogger.json import JsonFormatter

from app.terminal_text import terminal_safe

MESSAGE_FIELDS = ("tenant_id", "message_id", "correlation_id", "attempt")
# Where an account number shows up in what reaches a log (keeping its last three digits):
# - after a BSB in free text: "033-001 900000001";
# - after a key naming an account, in JSON (plain or escaped inside another string), a Python dict or a
#   pydantic repr, key=value, or prose: "debtor_account": "900000001", 'creditor_account': '900000001',
#   creditor_account=900000001, account 900000001;
# - as a quoted run of 6-10 digits (the contract's account format) on its own, which is how a positional
#   repr shows it: SQLAlchemy's "[parameters: ('012-345', '900000001')]", or a list of them per column.
_ACCOUNT_AFTER_BSB = re.compile(r"\b(\d{3}-\d{3}) (\d{2,7})(\d{3})\b")
_ACCOUNT_AFTER_KEY = re.compile(r"""(?i)(account\w*(?:\\*["'])?(?:\s*[:=]\s*|\s+)(?:\\*["'])?)(\d+)(\d{3})(?!\d)""")
_ACCOUNT_QUOTED = re.compile(r"""(?<![\w-])(\\*["'])(\d{3,7})(\d{3})\1""")
# Attributes every LogRecord has; anything else on a record came in through `extra=`.
_RECORD_ATTRIBUTES = frozenset(logging.makeLogRecord({}).__dict__) | {"message", "asctime"}


def mask_account(account: str) -> str:
    return "*" * max(len(account) - 3, 0) + account[-3:]


def mask_text(text: str) -> str:
    text = _ACCOUNT_AFTER_BSB.sub(lambda m: f"{m[1]} {'*' * len(m[2])}{m[3]}", text)
    text = _ACCOUNT_AFTER_KEY.sub(lambda m: f"{m[1]}{'*' * len(m[2])}{m[3]}", text)
    return _ACCOUNT_QUOTED.sub(lambda m: f"{m[1]}{'*' * len(m[2])}{m[3]}{m[1]}", text)


class MaskAccounts(logging.Filter):
    """Last line of defence: whatever a log line says, account numbers leave it masked: the message, an
    exception's traceback (its text quotes the exception, e.g. a statement's parameters), the stack and
    every string given through `extra=`."""

    _formatter = logging.Formatter()

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = mask_text(record.getMessage())
        record.args = None
        if record.exc_info:
            # Formatters use exc_text when exc_info is gone: the text is made, and masked, once here.
            record.exc_text = self._formatter.formatException(record.exc_info)
            record.exc_info = None
        if record.exc_text:
            record.exc_text = mask_text(record.exc_text)
        if record.stack_info:
            record.stack_info = mask_text(record.stack_info)
        for name, value in list(vars(record).items()):
            if name not in _RECORD_ATTRIBUTES and isinstance(value, str):
                setattr(record, name, mask_text(value))
        return True


class TerminalSafe(logging.Filter):
    """What a tenant wrote reaches log lines (an error quoting a payment reference, a correlation id, a header),
    and log lines reach terminals (`tail -f`, `journalctl`, a plain-text format on stderr): every control and
    invisible format character is shown escaped (app/terminal_text.py), in the message and every `extra=`
    string. A message is one line: a newline in it is escaped too, so that it cannot forge the next line; a
    traceback and a stack keep theirs. Runs after MaskAccounts, which has already formatted the message."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = terminal_safe(record.getMessage(), keep_newlines=False)
        record.args = None
        if record.exc_text:
            record.exc_text = terminal_safe(record.exc_text)
        if record.stack_info:
            record.stack_info = terminal_safe(record.stack_info)
        for name, value in list(vars(record).items()):
            if name not in _RECORD_ATTRIBUTES and isinstance(value, str):
                setattr(record, name, terminal_safe(value, keep_newlines=False))
        return True


# Library lines that go out at DEBUG, whatever level their library gave them:
# - aiormq logs each failed connect of a reconnecting connection as an ERROR (and a connection cut as a WARNING with
#   a traceback) while aio-pika logs the same event as one line of its own ("Connection attempt ... failed ...
#   Reconnecting after N seconds"): duplicates that turn a broker restart into a page of errors. aio-pika's line per
#   try goes too: every robust connection of remit's (its own and FastStream's) is a BackingOffConnection, which
#   logs the outage once per change of state (app/messaging/reconnect.py);
# - httpx logs every request it sends at INFO: each poll of RabbitMQ's management API (the queue gauges, every
#   REMIT_QUEUE_METRICS_SECONDS) and each request to an external core. A failure is remit's to log, with what it
#   means; httpcore's own lines are DEBUG already;
# - alembic says which dialect it uses each time `/readyz` checks that migrations are at head.
_DEMOTED = {
    "aiormq.connection": ("error when creating transport", "Cancelling cause reader exited abnormally"),
    "aio_pika.robust_connection": ("Connection attempt to",),
    "httpx": ("HTTP Request:",),
    "alembic.runtime.migration": ("Context impl ", "Will assume "),
}


class LibraryNoise(logging.Filter):
    """The lines of _DEMOTED at DEBUG: shown only when the process logs at DEBUG."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not str(record.msg).startswith(_DEMOTED.get(record.name, ())):
            return True
        record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return logging.getLogger().isEnabledFor(logging.DEBUG)


class MessageFields(logging.Filter):
    """Every line carries the message identity keys, empty when the line is not about a message."""

    def filter(self, record: logging.LogRecord) -> bool:
        for name in MESSAGE_FIELDS:
            if not hasattr(record, name):
                setattr(record, name, None)
        return True


def configure_logging(level: str, fmt: str) -> None:
    """Every line to stderr, masked, with the message fields; `fmt` json or anything else for plain text."""
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(LibraryNoise())
    handler.addFilter(MaskAccounts())
    handler.addFilter(TerminalSafe())
    handler.addFilter(MessageFields())
    if fmt == "json":
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
    root.setLevel(level.upper())
