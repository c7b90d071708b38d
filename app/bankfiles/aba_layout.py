"""The ABA (Cemtex, BECS direct entry) record layout as data: 120-character records, 1-based positions.

The layout of the design's reference (reference/aba-direct-entry.md, checked against public annotated samples
and banks' guides); docs/bank-files.md shows it field by field with examples.
"""

from dataclasses import dataclass

RECORD_LENGTH = 120
DESCRIPTIVE, DETAIL, FILE_TOTAL = "0", "1", "7"
DEBIT_CODE = "13"
# 50 general credit, 51 Australian Government security interest, 52 family allowance, 53 pay, 54 pension,
# 55 allotment, 56 dividend, 57 debenture or note interest: all credits to the detail record's account.
CREDIT_CODES = frozenset({"50", "51", "52", "53", "54", "55", "56", "57"})
INDICATORS = frozenset({" ", "N", "W", "X", "Y"})


@dataclass(frozen=True, slots=True)
class Field:
    name: str
    first: int  # 1-based, inclusive, as the bank guides write them
    last: int

    def cut(self, record: str) -> str:
        return record[self.first - 1 : self.last]

    @property
    def where(self) -> str:
        return f"positions {self.first}-{self.last}"


DESCRIPTIVE_FIELDS = {
    f.name: f
    for f in (
        Field("reel", 19, 20),
        Field("bank", 21, 23),
        Field("user_name", 31, 56),
        Field("user_id", 57, 62),
        Field("description", 63, 74),
        Field("date", 75, 80),
    )
}
DETAIL_FIELDS = {
    f.name: f
    for f in (
        Field("bsb", 2, 8),
        Field("account", 9, 17),
        Field("indicator", 18, 18),
        Field("code", 19, 20),
        Field("amount", 21, 30),
        Field("title", 31, 62),
        Field("lodgement_reference", 63, 80),
        Field("trace_bsb", 81, 87),
        Field("trace_account", 88, 96),
        Field("remitter", 97, 112),
        Field("withholding_tax", 113, 120),
    )
}
FILE_TOTAL_FIELDS = {
    f.name: f
    for f in (
        Field("bsb_filler", 2, 8),
        Field("net_total", 21, 30),
        Field("credit_total", 31, 40),
        Field("debit_total", 41, 50),
        Field("count", 75, 80),
    )
}
FILE_TOTAL_BSB = "999-999"


def cut(record: str, layout: dict[str, Field]) -> dict[str, str]:
    return {name: f.cut(record) for name, f in layout.items()}
