"""A row of a bulk payment file as validation takes it, numbered as the user sees it, and the control totals
a file may state. app/bankfiles/ reads every format into these rows."""

from dataclasses import dataclass
from typing import Any

PAYMENT = "payment"
CONTROL = "control"
# The fields of a payment row: a CSV's header names exactly these, plus OPTIONAL_FIELDS if it has control
# records (app/bankfiles/text_formats.py); a JSON Lines object has these keys.
PAYMENT_FIELDS = (
    "payment_reference",
    "amount_cents",
    "currency",
    "debtor_bsb",
    "debtor_account",
    "creditor_bsb",
    "creditor_account",
)
OPTIONAL_FIELDS = ("record_type", "control_count")  # a control record: record_type control, its count


def expected_fields() -> str:
    return f"{', '.join(PAYMENT_FIELDS)} (and, for control records, {' and '.join(OPTIONAL_FIELDS)})"


def header_problem(names: list[str]) -> str | None:
    """What is wrong with a CSV header's column names, naming the missing, the unexpected and the expected."""
    missing = [f for f in PAYMENT_FIELDS if f not in names]
    unexpected = [n for n in names if n not in PAYMENT_FIELDS and n not in OPTIONAL_FIELDS]
    if not missing and not unexpected:
        return None
    wrong = [
        f"missing {', '.join(missing)}" if missing else "",
        f"unexpected {', '.join(unexpected)}" if unexpected else "",
    ]
    return f"{'; '.join(w for w in wrong if w)}. The columns are: {expected_fields()}"


@dataclass(frozen=True, slots=True)
class RawRow:
    number: int  # line number in the file (pain.001: transaction position), for error messages
    fields: dict[str, Any]
    typed: bool = True  # JSON values keep their types; CSV cells are all text

    @property
    def record_type(self) -> str:
        return str(self.fields.get("record_type") or PAYMENT)


@dataclass(frozen=True, slots=True)
class ControlTotal:
    """What a file says it holds in one currency: a CSV control record, a pain.001 or ABA file total."""

    currency: str
    count: int
    amount_cents: int
