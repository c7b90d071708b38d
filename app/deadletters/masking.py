"""PII in dead letters: account numbers are shown as their last three digits unless asked otherwise."""

import json
import re
from typing import Any

KEEP = 3
# A run of 6-10 digits standing alone (not part of a UUID, a batch id or a longer number): an account
# number in free text such as an error message or a body that is not JSON.
ACCOUNT_IN_TEXT = re.compile(r"(?<![\w-])\d{6,10}(?![\w-])")
# Shown as JSON to this many levels of nesting; deeper bodies are shown as text. Payments nest 3 levels
# (the checks list); the bound keeps every renderer (JSON encoders, templates) far from the recursion limit.
MAX_DEPTH = 32
TOO_DEEP = "(nested too deep to show)"


def mask_account(value: str) -> str:
    if len(value) <= KEEP:
        return "*" * len(value)
    return "*" * (len(value) - KEEP) + value[-KEEP:]


def mask_text(text: str) -> str:
    return ACCOUNT_IN_TEXT.sub(lambda m: mask_account(m.group()), text)


def mask_json(value: Any, depth: int = 0) -> Any:
    """Every value under a key naming an account is masked, at any depth up to MAX_DEPTH, and so is free
    text in error fields. Other values (times, counters, ids) are left alone so the evidence stays
    readable. Deeper than MAX_DEPTH a value is replaced by a note: nothing below it is shown."""
    if depth > MAX_DEPTH:
        return TOO_DEEP
    if isinstance(value, dict):
        return {k: _mask_field(k, v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [mask_json(v, depth + 1) for v in value]
    return value


def _mask_field(key: str, value: Any, depth: int) -> Any:
    name = key.lower()
    if "account" in name and isinstance(value, str | int) and not isinstance(value, bool):
        return mask_account(str(value))
    if "error" in name and isinstance(value, str):
        return mask_text(value)
    return mask_json(value, depth)


def readable_body(body: bytes, unmask: bool, complete: bool = True) -> tuple[Any, str]:
    """(the body as JSON, or None when it is not JSON; the body as text), masked unless `unmask`. Never
    raises: a body that is only a stored prefix (`complete` false) or nests deeper than MAX_DEPTH is shown
    as text, as is anything json cannot read."""
    text = body.decode("utf-8", "replace")
    data = _json_or_none(body) if complete else None
    if data is None or _depth(data) > MAX_DEPTH:
        return None, text if unmask else mask_text(text)
    if unmask:
        return data, text
    masked = mask_json(data)
    return masked, json.dumps(masked)


def _json_or_none(body: bytes) -> Any:
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        return None


def _depth(value: Any) -> int:
    """How deep lists and objects nest, counted without recursion (json.loads accepts ~1,000 levels)."""
    deepest, stack = 0, [(value, 1)]  # the outermost list or object is level 1
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if depth <= MAX_DEPTH and isinstance(item, dict | list):
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return deepest
