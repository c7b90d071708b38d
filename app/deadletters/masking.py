"""PII in dead letters: account numbers are shown as their last three digits unless asked otherwise."""

import json
import re
from typing import Any

KEEP = 3
# A run of 6-10 digits standing alone (not part of a UUID, a batch id or a longer number): an account
# number in free text such as an error message or a body that is not JSON.
ACCOUNT_IN_TEXT = re.compile(r"(?<![\w-])\d{6,10}(?![\w-])")


def mask_account(value: str) -> str:
    if len(value) <= KEEP:
        return "*" * len(value)
    return "*" * (len(value) - KEEP) + value[-KEEP:]


def mask_text(text: str) -> str:
    return ACCOUNT_IN_TEXT.sub(lambda m: mask_account(m.group()), text)


def mask_json(value: Any) -> Any:
    """Every value under a key naming an account is masked, at any depth, and so is free text in error
    fields. Other values (times, counters, ids) are left alone so the evidence stays readable."""
    if isinstance(value, dict):
        return {k: _mask_field(k, v) for k, v in value.items()}
    if isinstance(value, list):
        return [mask_json(v) for v in value]
    return value


def _mask_field(key: str, value: Any) -> Any:
    name = key.lower()
    if "account" in name and isinstance(value, str | int) and not isinstance(value, bool):
        return mask_account(str(value))
    if "error" in name and isinstance(value, str):
        return mask_text(value)
    return mask_json(value)


def readable_body(body: bytes, unmask: bool) -> tuple[Any, str]:
    """(the body as JSON, or None when it is not JSON; the body as text), masked unless `unmask`."""
    text = body.decode("utf-8", "replace")
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return None, text if unmask else mask_text(text)
    if unmask:
        return data, text
    masked = mask_json(data)
    return masked, json.dumps(masked)
