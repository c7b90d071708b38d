"""A large pain.001 is read in a child process (app/bankfiles/reader_process.py): the same rows, the same
summary and the same refusals as reading it here, and a child that dies or is abandoned fails the read
cleanly instead of hanging or leaving a process behind."""

import os
import signal
from collections.abc import Generator
from pathlib import Path

import psutil
import pytest

from app.bankfiles import BankFile, BankRow, FileSummary
from app.bankfiles import reader as bank_reader
from app.bankfiles.reader_process import ReaderProcessFailed
from app.errors import FileRefused
from tests.unit.bankfiles.test_xml_hostile import LAUGHS
from tests.utils.bankfile_writers import PAIN_001_09, Block, GroupHeader, Tx, pain001, pain001_chunks

EXAMPLES = Path(__file__).parents[3] / "examples"


def read(path: Path, in_child: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[list[BankRow], FileSummary]:
    monkeypatch.setattr(bank_reader, "CHILD_MIN_BYTES", 0 if in_child else 1 << 62)
    with BankFile(path) as bank:
        rows = list(bank.rows())
        return rows, bank.summary


def refusal(path: Path, in_child: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    with pytest.raises(FileRefused) as caught:
        read(path, in_child, monkeypatch)
    return str(caught.value), caught.value.iso_code


def children() -> list[psutil.Process]:
    return [p for p in psutil.Process().children() if "app.bankfiles.reader_child" in " ".join(p.cmdline())]


def many(n: int) -> bytes:
    txs = [Tx(f"E2E-{i:07d}", "1.00", creditor_account=f"{10_000_000 + i}") for i in range(n)]
    return "".join(pain001_chunks(PAIN_001_09, GroupHeader("BIG", n, f"{n}.00"), [Block("B", txs)])).encode()


@pytest.mark.parametrize("example", sorted(EXAMPLES.glob("*.pain.001.*.xml")), ids=lambda p: p.name)
def test_an_example_reads_the_same_in_a_child(example: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert read(example, True, monkeypatch) == read(example, False, monkeypatch)


def test_rejected_rows_and_several_blocks_cross_unchanged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    iban = Tx("E-IBAN", "2.50", creditor_account_xml="<Id><IBAN>DE89370400440532013000</IBAN></Id>")
    path = tmp_path / "mixed.xml"
    path.write_bytes(
        "".join(
            pain001_chunks(
                PAIN_001_09,
                GroupHeader("MIXED", 4, "11.75"),
                [Block("B1", [Tx("E-1", "1.25"), iban]), Block("B2", [Tx("E-2", "3.00"), Tx("E-3", "5.00", "NZD")])],
            )
        ).encode()
    )
    in_child, here = read(path, True, monkeypatch), read(path, False, monkeypatch)
    assert in_child == here
    assert any(r.fields.get("__parse_error__") for r in here[0])  # the IBAN row is a rejection, in both


@pytest.mark.parametrize(
    ("content", "iso_code"),
    [
        (pain001(PAIN_001_09, [Tx("E-1", "1.00")], count=2), "AM19"),
        (pain001(PAIN_001_09, [Tx("E-1", "1.00")], message_id="&h;", extra_prolog=LAUGHS), "FF01"),
        (pain001(PAIN_001_09, [Tx("E-1", "1.00")])[:-40], "FF01"),  # truncated
    ],
    ids=["count-mismatch", "entity-expansion", "truncated"],
)
def test_a_refusal_in_the_child_is_the_same_refusal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: bytes, iso_code: str
) -> None:
    path = tmp_path / "refused.xml"
    path.write_bytes(content)
    in_child = refusal(path, True, monkeypatch)
    assert in_child == refusal(path, False, monkeypatch)
    assert in_child[1] == iso_code
    assert children() == []


def test_what_the_child_prints_cannot_corrupt_its_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Any module the child imports may print to stdout (here: before the reader's own code runs at all); the rows
    # travel on a pipe of their own, so they arrive whole and equal to an in-process read.
    noisy = tmp_path / "noisy"
    noisy.mkdir()
    (noisy / "sitecustomize.py").write_text("import sys\nprint('noise ' * 1000)\nsys.stdout.flush()\n")
    monkeypatch.setenv("PYTHONPATH", f"{noisy}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    path = tmp_path / "big.xml"
    path.write_bytes(many(2_000))
    assert read(path, True, monkeypatch) == read(path, False, monkeypatch)


def test_a_child_that_dies_fails_the_read_and_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "big.xml"
    path.write_bytes(many(20_000))
    monkeypatch.setattr(bank_reader, "CHILD_MIN_BYTES", 0)
    with BankFile(path) as bank:
        rows: Generator[BankRow, None, None] = bank.rows()
        next(rows)
        [child] = children()
        os.kill(child.pid, signal.SIGKILL)
        with pytest.raises(ReaderProcessFailed, match=r"ended without an answer \(exit code -9\)"):
            list(rows)
    assert children() == []


def test_a_read_given_up_half_way_leaves_no_child(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "big.xml"
    path.write_bytes(many(20_000))
    monkeypatch.setattr(bank_reader, "CHILD_MIN_BYTES", 0)
    with BankFile(path) as bank:
        rows = bank.rows()
        next(rows)
        [child] = children()
        rows.close()  # what an ingest does when a later step fails: the generator is closed
    assert not child.is_running() or child.status() == psutil.STATUS_ZOMBIE
    assert children() == []


@pytest.mark.parametrize(("over", "expect_child"), [(0, True), (1, False)])
def test_a_file_of_the_threshold_size_is_read_in_a_child(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, over: int, expect_child: bool
) -> None:
    path = tmp_path / "edge.xml"
    path.write_bytes(many(3))
    monkeypatch.setattr(bank_reader, "CHILD_MIN_BYTES", path.stat().st_size + over)
    with BankFile(path) as bank:
        rows = bank.rows()
        next(rows)
        assert bool(children()) is expect_child
        rows.close()


def test_small_files_are_read_here_and_large_ones_in_a_child(tmp_path: Path) -> None:
    # The switch is the file's size: under the threshold a child's start-up would cost more than it saves.
    small, large = tmp_path / "small.xml", tmp_path / "large.xml"
    small.write_bytes(many(10))
    large.write_bytes(many(1 + bank_reader.CHILD_MIN_BYTES // 380))  # a transaction is about 400 bytes
    for path, expect_child in ((small, False), (large, True)):
        with BankFile(path) as bank:
            rows = bank.rows()
            next(rows)
            assert bool(children()) is expect_child
            rows.close()
