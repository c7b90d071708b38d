"""The forms remit's time options take (`--since`, `--until`, `--as-of`, the API's since/until), named in one
place so that a time remit cannot read gets an error that says what it can."""

ISO_TIME = "an ISO 8601 date or time (2025-05-01, 2025-05-01T09:00Z, 2025-05-01T19:00+10:00; UTC if no offset)"
AGE = "an age meaning that long ago (30m, 2h, 7d)"


def not_a_time(option: str, value: str, *forms: str) -> str:
    """The error for a time option's value that is none of `forms` (default: an ISO time or an age)."""
    forms = forms or (ISO_TIME, AGE)
    accepted = forms[0] if len(forms) == 1 else f"{', '.join(forms[:-1])} or {forms[-1]}"
    return f"{option} {value!r} is not a time remit reads: use {accepted}"
