"""A bank file's own control totals, held to its rows the same way in every format that states them.

pain.001 states NbOfTxs and CtrlSum (pain001.py), ABA its file total record (aba.py), remit's CSV and JSON Lines
their control records (`record_type` `control`, one per currency: its `control_count` and `amount_cents`), read
here. Every reader compares what the file says with its rows as written, rejected rows included (their amount
when it can be read), once it has read the last row; a file whose totals disagree is refused whole
(FileRefused: nothing of it is accepted, its rows already written roll back with the batch's transaction), in
the one wording `totals_disagree` gives, naming what the file says and what its rows hold.
"""

import re
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from app.bankfiles.money import MAX_DIGITS, digit_count, too_many_digits, whole_number
from app.bankfiles.rows import PARSE_ERROR, FileFacts
from app.errors import FileRefused
from app.publisher.bulk_file import CONTROL, PAYMENT, ControlTotal

DISAGREE = "its control totals disagree with its rows, so nothing of it was accepted"
_CURRENCY = re.compile(r"^[A-Z]{3}$")  # the contract's pattern (contracts/message.py: CURRENCY_PATTERN)
_MAX_COUNT = 2**31 - 1  # what batch_totals.control_count (integer) holds; an amount of 18 digits fits its bigint
_NEEDS = "a control record needs currency (3 capital letters), control_count and amount_cents (whole numbers)"


def totals_disagree(name: str, detail: str, iso_code: str) -> FileRefused:
    """The refusal of a file whose stated totals are not its rows', in every format's words: `detail` says what
    the file states and what its rows hold (pain.001: AM16/AM17/AM19/AM20, ABA and control records: AM10/AM18)."""
    return FileRefused(f"{name}: {DISAGREE}: {detail}", iso_code)


def unreadable_totals(name: str, detail: str) -> FileRefused:
    """A file whose stated totals cannot be read cannot be checked: refused whole, as an unreadable trailer is."""
    return FileRefused(f"{name}: {detail}; the file's totals cannot be checked, so nothing of the file was accepted")


@dataclass(slots=True)
class ControlRecords:
    """The control records of a CSV or JSON Lines file and the rows they speak for, read line by line.

    `record` takes each row the reader read (its fields as read: CSV text, JSON values); a control record is
    kept here and is not a payment row, every other row is one and counts towards its currency's totals. `facts`
    checks them at the end of the file."""

    name: str
    stated: dict[str, tuple[int, ControlTotal]] = field(default_factory=dict)  # currency -> (line, total)
    _written: dict[str, list[int]] = field(default_factory=lambda: defaultdict(lambda: [0, 0]))

    def record(self, line: int, fields: Mapping[str, Any]) -> bool:
        """True when the row is a control record (kept here, not a payment row); FileRefused when it is one that
        cannot be read or repeats a currency's."""
        record_type = str(fields.get("record_type") or PAYMENT)
        if record_type == CONTROL:
            self._control(line, fields)
            return True
        if record_type == PAYMENT:
            self._payment(fields)
        return False  # another record type is validation's to reject, and no payment

    def facts(self) -> FileFacts:
        """The stated totals once every row was read; FileRefused when they are not the rows'."""
        if not self.stated:
            return FileFacts()
        for currency in sorted(self._written.keys() | self.stated.keys()):
            self._check(currency)
        totals = tuple(total for _, total in sorted(self.stated.values(), key=lambda s: s[1].currency))
        return FileFacts(stated_count=sum(t.count for t in totals), controls=totals)

    def _check(self, currency: str) -> None:
        count, cents = self._written.get(currency, (0, 0))
        has = f"{count} {currency} payments of {cents} cents"
        if currency not in self.stated:
            raise totals_disagree(self.name, f"the file states no control record for {currency}; it has {has}", "AM18")
        line, total = self.stated[currency]
        if (total.count, total.amount_cents) != (count, cents):
            says = f"{total.count} {currency} payments of {total.amount_cents} cents"
            code = "AM18" if total.count != count else "AM10"
            detail = f"the control record on line {line} says {says}; the file has {has}"
            raise totals_disagree(self.name, detail, code)

    def _payment(self, fields: Mapping[str, Any]) -> None:
        currency = fields.get("currency")
        if not isinstance(currency, str):
            return  # counted in no currency: a control record cannot have stated it
        written = self._written[currency]
        written[0] += 1
        written[1] += _amount(fields.get("amount_cents")) or 0

    def _control(self, line: int, fields: Mapping[str, Any]) -> None:
        total = _control_total(fields)
        if isinstance(total, str):
            raise unreadable_totals(self.name, f"the control record on line {line} cannot be read ({total})")
        if total.currency in self.stated:
            first, _ = self.stated[total.currency]
            raise unreadable_totals(
                self.name, f"the control records on lines {first} and {line} both state {total.currency} totals"
            )
        self.stated[total.currency] = (line, total)


def _amount(value: Any) -> int | None:
    """A payment row's amount as written, when it can be read: digits (CSV) or a JSON integer."""
    if isinstance(value, str):
        return whole_number(value)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _control_total(fields: Mapping[str, Any]) -> ControlTotal | str:
    """The total a control record states, or why it cannot be read."""
    if PARSE_ERROR in fields:  # a JSON number of more than MAX_DIGITS digits, already named
        return str(fields[PARSE_ERROR])
    currency = fields.get("currency")
    count, cents = _number(fields, "control_count"), _number(fields, "amount_cents")
    if isinstance(count, str) or isinstance(cents, str):
        return count if isinstance(count, str) else str(cents)
    if not isinstance(currency, str) or not _CURRENCY.match(currency) or count is None or cents is None:
        return _NEEDS
    if count > _MAX_COUNT:
        return f"control_count {count} is over {_MAX_COUNT}"
    return ControlTotal(currency, count, cents)


def _number(fields: Mapping[str, Any], key: str) -> int | str | None:
    """A control record's whole number: digits (CSV) or a JSON integer, of at most MAX_DIGITS digits, never
    negative; a longer one is named by its digit count, never its digits. None: missing or not a number."""
    value = fields.get(key)
    if isinstance(value, str):
        number = whole_number(value)
        if number is None and value.isascii() and value.isdigit() and digit_count(value) > MAX_DIGITS:
            return too_many_digits(key, digit_count(value))
        return number
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None
