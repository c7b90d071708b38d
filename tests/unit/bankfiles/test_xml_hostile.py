"""Hostile pain.001 files: DTDs and entities, truncation, wrong encodings, files built to exhaust memory.

Each is refused with a clear answer before remit resolves an entity, reads another file or holds more than
one transaction of the file in memory. Rows yielded before a refusal found at the end are provisional: the
caller accepts a batch whole or not at all.
"""

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.bankfiles import BankFile
from app.bankfiles.pain001 import CHUNK_BYTES, MAX_UNIT_BYTES
from app.errors import FileRefused
from tests.unit.bankfiles.conftest import Read
from tests.utils.bankfile_writers import PAIN_001_09, GroupHeader, Tx, pain001

LAUGHS = (
    '<!DOCTYPE Document [<!ENTITY a "lol"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">'
    '<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;"><!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;">'
    '<!ENTITY e "&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;"><!ENTITY f "&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;">'
    '<!ENTITY g "&f;&f;&f;&f;&f;&f;&f;&f;&f;&f;"><!ENTITY h "&g;&g;&g;&g;&g;&g;&g;&g;&g;&g;">]>\n'
)
GOOD = pain001(PAIN_001_09, [Tx(f"E-{n}", "1.00") for n in range(3)])


def with_prolog(prolog: str, message_id: str = "M-1") -> bytes:
    return pain001(PAIN_001_09, [Tx("E-1", "1.00")], message_id=message_id, extra_prolog=prolog)


@pytest.mark.parametrize(
    ("prolog", "message_id"),
    [
        (LAUGHS, "&h;"),  # a billion laughs: 10^7 "lol"s from a few hundred bytes
        ('<!DOCTYPE Document [<!ENTITY x SYSTEM "file:///etc/passwd">]>\n', "&x;"),
        ('<!DOCTYPE Document [<!ENTITY % p SYSTEM "file:///etc/passwd"> %p;]>\n', "M-1"),
        ('<!DOCTYPE Document SYSTEM "http://127.0.0.1:9/pain.dtd">\n', "M-1"),
        ("<!DOCTYPE Document>\n", "M-1"),
    ],
)
def test_a_doctype_is_refused_before_any_entity_is_used(read: Read, prolog: str, message_id: str) -> None:
    started = time.perf_counter()
    for override in (None, "pain.001.001.09"):  # told by content, or named: refused the same way
        with pytest.raises(FileRefused, match="declares a DOCTYPE: refused") as caught:
            read(with_prolog(prolog, message_id), override)
        assert "root:" not in str(caught.value)  # nothing of /etc/passwd
    assert time.perf_counter() - started < 2


def test_an_undeclared_entity_is_not_well_formed(read: Read) -> None:
    with pytest.raises(FileRefused, match="not well-formed XML at line 3: Entity '…' not defined"):
        read(GOOD.replace(b"<MsgId>MSG-0001", b"<MsgId>&nbsp;"))


def test_xinclude_is_not_processed(read: Read) -> None:
    include = '<xi:include xmlns:xi="http://www.w3.org/2001/XInclude" href="file:///etc/passwd" parse="text"/>'
    data = GOOD.replace(b"<Ustrd>Invoice E-0</Ustrd>", f"<Ustrd>{include}</Ustrd>".encode())
    with pytest.raises(FileRefused, match="does not conform") as caught:
        read(data)
    assert "root:" not in str(caught.value)


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=1, max_value=len(GOOD.rstrip()) - 1))
def test_every_truncation_of_a_file_is_refused(tmp_path_factory: pytest.TempPathFactory, cut: int) -> None:
    path = tmp_path_factory.mktemp("cut") / "truncated.xml"
    path.write_bytes(GOOD[:cut])
    with pytest.raises(FileRefused), BankFile(path, "pain.001.001.09") as bank:
        list(bank.rows())


def test_rows_before_the_truncation_are_yielded_then_the_file_is_refused(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    path = tmp_path_factory.mktemp("cut") / "truncated.xml"
    path.write_bytes(GOOD[: GOOD.index(b"</CdtTrfTxInf>", GOOD.index(b"E-1")) + 20])
    with BankFile(path) as bank:
        rows = bank.rows()
        seen = [next(rows).fields["payment_reference"], next(rows).fields["payment_reference"]]
        with pytest.raises(FileRefused, match="truncated"):
            next(rows)
    assert seen == ["E-0", "E-1"]  # provisional: the caller must roll them back with the refused file


def test_bytes_not_in_the_declared_encoding_are_refused_with_the_line(read: Read) -> None:
    data = GOOD.replace(b"<Nm>Acme Pty Ltd</Nm>", b"<Nm>Caf\xe9 Pty Ltd</Nm>", 1)
    with pytest.raises(FileRefused, match="not well-formed XML at line 3: Invalid bytes in character encoding"):
        read(data)


def test_a_file_that_declares_its_encoding_is_read_in_it(read: Read) -> None:
    data = GOOD.replace(b'encoding="UTF-8"', b'encoding="ISO-8859-1"').replace(
        b"<Nm>Acme Pty Ltd</Nm>", b"<Nm>Caf\xe9 Pty Ltd</Nm>"
    )
    assert len(read(data)[0]) == 3


@pytest.mark.parametrize(
    "data",
    [b"\xef\xbb\xbf" + GOOD, GOOD.replace(b"\n", b"\r\n"), GOOD.replace(b"\n", b"")],
    ids=["bom", "crlf", "one line"],
)
def test_a_bom_crlf_or_no_line_ends_read_the_same(read: Read, data: bytes) -> None:
    rows, _ = read(data)
    assert [r.fields["payment_reference"] for r in rows] == ["E-0", "E-1", "E-2"]


def _ustrd(total_bytes: int) -> bytes:
    return b"<Ustrd>x</Ustrd>" * (total_bytes // 16)


# The limit is checked once per 64 KiB chunk read: these boundaries sit two chunks either side of it.
@pytest.mark.parametrize(
    ("size", "refused"), [(MAX_UNIT_BYTES - 2 * CHUNK_BYTES, False), (MAX_UNIT_BYTES + 2 * CHUNK_BYTES, True)]
)
def test_a_transaction_longer_than_the_unit_limit_is_refused(read: Read, size: int, refused: bool) -> None:
    # RmtInf/Ustrd may repeat without limit: one transaction could otherwise hold the whole file in memory.
    data = GOOD.replace(b"<Ustrd>Invoice E-1</Ustrd>", _ustrd(size))
    if not refused:
        assert len(read(data)[0]) == 3
        return
    with pytest.raises(FileRefused, match=f"runs past {MAX_UNIT_BYTES} bytes"):
        read(data)


def test_a_giant_text_node_is_refused_before_it_is_held(read: Read) -> None:
    data = GOOD.replace(b"<MsgId>MSG-0001", b"<MsgId>" + b"M" * 12_000_000)
    with pytest.raises(FileRefused, match=f"runs past {MAX_UNIT_BYTES} bytes"):
        read(data)


def test_nesting_deeper_than_libxml2s_limit_is_refused(read: Read) -> None:
    deep = "<Envlp>" + "<a>" * 3000 + "</a>" * 3000 + "</Envlp>"
    data = GOOD.replace(b"</RmtInf>", f"</RmtInf><SplmtryData>{deep}</SplmtryData>".encode(), 1)
    with pytest.raises(FileRefused, match="nested deeper than 256 levels"):
        read(data)


def test_a_second_root_or_trailing_garbage_is_refused(read: Read) -> None:
    for tail in (b"<Document/>", b"garbage"):
        with pytest.raises(FileRefused, match="not well-formed XML"):
            read(GOOD + tail)


def test_a_header_in_the_wrong_place_is_refused_by_the_schema(read: Read) -> None:
    data = GOOD.replace(b"</CstmrCdtTrfInitn>", GroupHeader("M-2", 1).xml().encode() + b"</CstmrCdtTrfInitn>")
    with pytest.raises(FileRefused, match="does not conform"):
        read(data)


def _comment(length: int) -> bytes:
    return b"<!--" + b"x" * (length - 7) + b"-->"


def _free_chunks(where: str, chunks: int) -> bytes:
    """GOOD with a comment that leaves exactly `chunks` chunks read without the end of a header, block or
    transaction: before the group header ends, between it and the first transaction's end, or after the last
    block (to the end of the file). The ends either side sit mid-chunk, where the parser reports them."""
    half = CHUNK_BYTES // 2
    if where == "before the group header":
        end = GOOD.index(b"</GrpHdr>") + len(b"</GrpHdr>") - 1
        at = GOOD.index(b"<GrpHdr>")
        return GOOD[:at] + _comment(chunks * CHUNK_BYTES + half - end) + GOOD[at:]
    if where == "between two ends":
        at = GOOD.index(b"</GrpHdr>") + len(b"</GrpHdr>")
        assert at < half
        end = GOOD.index(b"</CdtTrfTxInf>") + len(b"</CdtTrfTxInf>") - 1
        return GOOD[:at] + _comment((chunks + 1) * CHUNK_BYTES + half - end) + GOOD[at:]
    assert where == "after the last block"
    assert len(GOOD) < half
    return GOOD + _comment((chunks + 1) * CHUNK_BYTES - len(GOOD))


@pytest.mark.parametrize("where", ["before the group header", "between two ends", "after the last block"])
@pytest.mark.parametrize(("chunks", "refused"), [(MAX_UNIT_BYTES // CHUNK_BYTES, False), (17, True)])
def test_the_unit_limit_is_its_chunks_exactly(read: Read, where: str, chunks: int, refused: bool) -> None:
    """16 chunks (MAX_UNIT_BYTES) read without an element ending are allowed, a 17th is not: the count starts
    at 0, restarts at 0 after each end, and the end of the file adds nothing."""
    assert MAX_UNIT_BYTES // CHUNK_BYTES == 16
    data = _free_chunks(where, chunks)
    if not refused:
        assert len(read(data, name="big.xml")[0]) == 3
        return
    with pytest.raises(FileRefused) as caught:
        read(data, name="big.xml")
    assert str(caught.value) == (
        f"big.xml: a header or transaction runs past {MAX_UNIT_BYTES} bytes; not a payment file remit reads"
    )
