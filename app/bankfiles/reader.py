"""Open a bank file of any format remit reads: its rows as a one-pass stream, then what it said about itself."""

import io
import os
from collections.abc import Callable, Generator
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import BinaryIO, Self

from app.bankfiles.formats import SNIFF_BYTES, UTF8_BOM, BankFormat, check_readable, detect_format, parse_format
from app.bankfiles.pain001 import read_pain001
from app.bankfiles.reader_process import read_in_child
from app.bankfiles.rows import BankRow, FileFacts, FileSummary
from app.bankfiles.streams import HashingReader
from app.bankfiles.text_formats import read_csv, read_jsonl
from app.errors import UsageError

Reader = Callable[[BinaryIO, str], Generator[BankRow, None, FileFacts]]


def _read_aba(stream: BinaryIO, name: str) -> Generator[BankRow, None, FileFacts]:
    # Imported when an ABA file is read: it checks references with the contract's pattern, and importing the
    # contract (pydantic) is a third of the start-up of the process that reads a large pain.001 (reader_child).
    from app.bankfiles.aba import read_aba

    return read_aba(stream, name)


READERS: dict[BankFormat, Reader] = {
    BankFormat.CSV: read_csv,
    BankFormat.JSONL: read_jsonl,
    BankFormat.PAIN_001_09: partial(read_pain001, message=BankFormat.PAIN_001_09.value),
    BankFormat.PAIN_001_03: partial(read_pain001, message=BankFormat.PAIN_001_03.value),
    BankFormat.ABA: _read_aba,
}
_BUFFER_BYTES = 64 * 1024
# Read in a child process (reader_process.py): pain.001 files from this size on. Starting the child (about 0.1 s)
# and the pipes' traffic cost more than the overlap saves on a smaller file.
CHILD_READERS: frozenset[BankFormat] = frozenset({BankFormat.PAIN_001_09, BankFormat.PAIN_001_03})
CHILD_MIN_BYTES = 4 * 1024 * 1024


class BankFile:
    """An open bank file. Use as a context manager:

        with BankFile(path) as bank:          # the format is told by the content; or BankFile(path, "aba")
            for row in bank.rows():            # BankRows, lazily; FileRefused may come at any row or at the end
                ...
            bank.summary                       # identity, SHA-256, stated totals: once every row was read

    Rows are provisional until rows() has returned: a truncated file or a wrong trailer is found at the end.
    """

    def __init__(self, path: Path, bank_format: BankFormat | str | None = None) -> None:
        self.name = path.name
        try:
            self._file = path.open("rb")
        except OSError as exc:
            raise UsageError(f"cannot read {path}: {exc.strerror}. Check the path and permissions.") from exc
        try:
            self.format = self._format(bank_format)
        except BaseException:
            self._file.close()
            raise
        self._hashing = HashingReader(self._file)
        self._stream = io.BufferedReader(self._hashing, _BUFFER_BYTES)
        if self._stream.peek(len(UTF8_BOM)).startswith(UTF8_BOM):
            self._stream.read(len(UTF8_BOM))  # still hashed: the identity is the file's bytes as sent
        self._started = False
        self._summary: FileSummary | None = None

    def _format(self, bank_format: BankFormat | str | None) -> BankFormat:
        head = self._file.read(SNIFF_BYTES)
        self._file.seek(0)
        if bank_format is None:
            return detect_format(head, self.name)
        check_readable(head, self.name)
        return parse_format(bank_format) if isinstance(bank_format, str) else bank_format

    def rows(self) -> Generator[BankRow, None, None]:
        if self._started:
            raise RuntimeError("a bank file's rows can be read once")
        self._started = True
        reader = READERS[self.format]
        if self.format in CHILD_READERS and self.size >= CHILD_MIN_BYTES:
            rows = read_in_child(self.format, self._stream, self.name)
        else:
            rows = reader(self._stream, self.name)
        count = 0
        try:
            while True:
                try:
                    row = next(rows)
                except StopIteration as done:
                    facts: FileFacts = done.value
                    break
                count += 1
                yield row
        finally:
            rows.close()  # closed with this generator: a reader child stops at once, not when collected
        while self._stream.read(_BUFFER_BYTES):
            pass  # whatever the reader left (nothing, normally) still belongs to the file's hash
        sha256 = self._hashing.hexdigest()
        self._summary = FileSummary(
            name=self.name,
            format=self.format.value,
            identity=facts.identity or sha256,
            sha256=sha256,
            rows=count,
            stated_count=facts.stated_count,
            stated_sum=facts.stated_sum,
            controls=facts.controls,
        )

    @property
    def size(self) -> int:
        """The file's size in bytes."""
        return os.fstat(self._file.fileno()).st_size

    @property
    def bytes_read(self) -> int:
        """How far into the file reading has got (read ahead by at most a buffer), for progress."""
        return self._hashing.bytes_read

    @property
    def summary(self) -> FileSummary:
        if self._summary is None:
            raise RuntimeError("a bank file's summary is known once all its rows have been read")
        return self._summary

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
