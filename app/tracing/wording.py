"""How a trace reads to a person, the same in the terminal and in the console."""

from datetime import UTC, datetime

from app.tracing.model import IN_PROCESS_LEDGER, Booking, ReconciliationVerdict

UNITS = (("d", 86_400), ("h", 3_600), ("m", 60))


def delay(seconds: float | None) -> str:
    """+0.21s, +4.0s, +3m 5s, +2h 0m, +1d 3h: precise when short, rounded when long."""
    if seconds is None:
        return ""
    if seconds < 10:
        return f"+{seconds:.2f}s"
    if seconds < 60:
        return f"+{seconds:.1f}s"
    return "+" + age(seconds)


def age(seconds: float) -> str:
    """3m 5s, 2h 0m, 1d 3h: the two largest units."""
    whole = int(seconds)
    for i, (unit, size) in enumerate(UNITS):
        if whole >= size:
            smaller, small_size = UNITS[i + 1] if i + 1 < len(UNITS) else ("s", 1)
            return f"{whole // size}{unit} {whole % size // small_size}{smaller}"
    return f"{whole}s"


def moment(value: datetime | None) -> str:
    return "" if value is None else value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + " UTC"


def verdict(value: ReconciliationVerdict | None) -> str:
    if value is None:
        return "no reconciliation run has finished yet"
    run = f"the run as of {moment(value.as_of)}"
    if value.verdict == "break":
        held = f", {age(value.age_seconds)} old then" if value.age_seconds is not None else ""
        seen = f"first seen {moment(value.first_seen_at)}{held}"
        return f"BREAK ({value.break_status}) in {run}: {value.detail or ''}; {seen}"
    if value.verdict == "not yet reconciled":
        return f"not yet reconciled: the last was {run}, before this payment"
    return f"no break in {run}"


def booking(value: Booking | None) -> str:
    """Where the money moved, named as the system that moved it knows it: a support desk is sent there."""
    if value is None:
        return "not booked"
    if value.system == IN_PROCESS_LEDGER:
        return f"ledger transfer {value.transfer_id} at {moment(value.booked_at)} (in-process ledger)"
    when = (
        f"at {moment(value.booked_at)} by the core's clock" if value.booked_at else "(the core's time was not recorded)"
    )
    copy = f"; remit's copy: ledger row {value.ledger_transfer_id}" if value.ledger_transfer_id is not None else ""
    return f"core transfer {value.transfer_id} in {value.core} {when}, key {value.core_key}{copy}"
